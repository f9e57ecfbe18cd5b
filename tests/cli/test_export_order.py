"""Two exports of one conversation with the same update time and different texts: `chatetl export a b` and
`chatetl export b a` write the same state, the one the bucket's export files keep (model.state_order; the graph
keeps it too: tests/graph/test_decide.py)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from graph_inputs import wipe

from chatetl.cli import main
from chatetl.exports.bucket import publish_conversation, read_manifest
from chatetl.exports.files import conversation_files
from chatetl.graph.load import load_conversations
from chatetl.model import newest, state_hash
from chatetl.readers import ReadReport, read_path
from chatetl.samples import chatgpt_conversations
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE") or None
QUESTION = "3c0033df-6984-5457-8be7-11c35b664f83"  # the first user turn of the sample's first chat
TEXTS = {"a": "Which is faster from Vienna to Zagreb, by train or by bus?",
         "b": "Vienna to Zagreb: is the train or the bus faster?"}


def _exports(folder: Path) -> dict[str, Path]:
    """a.json and b.json: ChatGPT exports of one conversation, the same update time, one question worded two ways."""
    folder.mkdir()
    paths = {}
    for name, text in TEXTS.items():
        conv = copy.deepcopy(chatgpt_conversations()[0])
        conv["mapping"][QUESTION]["message"]["content"]["parts"] = [text]
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps([conv]))
    return paths


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_export_writes_the_same_state_whatever_order_the_inputs_come_in(tmp_path):
    paths = _exports(tmp_path / "in")
    states = {name: next(read_path(path, ReadReport())) for name, path in paths.items()}
    assert states["a"].updated_at == states["b"].updated_at and state_hash(states["a"]) != state_hash(states["b"])
    runner = CliRunner()
    outputs = {}
    for order in ("ab", "ba"):
        out = tmp_path / order
        result = runner.invoke(main, ["export", *(str(paths[n]) for n in order), "--out", str(out), "--format", "all", "--zip", "all"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output.splitlines()[-1])["superseded"] == 1
        outputs[order] = _tree(out)
    assert outputs["ab"] == outputs["ba"]

    # the state the bucket keeps, published in either order
    kept = {}
    for order in ("ab", "ba"):
        store = LocalObjectStore(tmp_path / f"bucket-{order}")
        for name in order:
            conv = states[name]
            publish_conversation(store, conv, conversation_files(conv, ["md"]), ["md"])
        kept[order] = read_manifest(store, states["a"].key)["state_hash"]
    winner = newest(list(states.values()))
    assert kept["ab"] == kept["ba"] == state_hash(winner)
    md = [data.decode() for name, data in outputs["ab"].items() if name.startswith("md/")]
    assert len(md) == 1 and TEXTS[next(n for n, c in states.items() if c is winner)] in md[0]
    assert not any(TEXTS[n] in md[0] for n, c in states.items() if c is not winner)


@pytest.mark.integration
def test_the_graph_keeps_the_state_the_export_writes(clean_graph, tmp_path):
    paths = _exports(tmp_path / "in")
    states = {name: next(read_path(path, ReadReport())) for name, path in paths.items()}
    winner = newest(list(states.values()))
    for order in ("ab", "ba"):
        wipe(clean_graph, DB)
        for name in order:  # two loads, one state each
            load_conversations(clean_graph, [states[name]], database=DB)
        records, _, _ = clean_graph.execute_query("MATCH (c:Conversation) RETURN c.state_hash AS digest", database_=DB)
        assert [r["digest"] for r in records] == [state_hash(winner)], order
