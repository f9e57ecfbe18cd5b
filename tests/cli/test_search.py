"""`chatetl search QUERY` against the real Neo4j: a ranked list for a person, JSON lines with --json, filters,
and usage errors that say what is wrong."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from export_inputs import chat

from chatetl.cli import main
from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files
from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.load import load_conversations
from chatetl.model import Source
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.storage import LocalObjectStore

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


@pytest.fixture
def bucket(clean_graph, tmp_path):
    """Two generated chats in the graph (embedded) and their html exports in a bucket folder."""
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    start = datetime(2025, 9, 1, tzinfo=UTC)
    lisbon = chat([("user", "Three days in Lisbon: is tram 28 through Alfama worth the queue?"),
                   ("assistant", "Ride it early in the morning from Martim Moniz; the hills are steep on foot.")],
                  title="Lisbon weekend", conversation_id="lisbon", updated=start + timedelta(minutes=5))
    bread = chat([("user", "My sourdough starter smells like nail polish remover."),
                  ("assistant", "It is hungry: feed it twice a day with flour and water.")],
                 title="Sourdough", platform="claude-ai", source=Source.CLAUDE_AI, conversation_id="bread", model="claude-3-opus",
                 updated=start - timedelta(days=200))
    lisbon.created_at, bread.created_at = start, start - timedelta(days=200, minutes=5)
    store = LocalObjectStore(tmp_path / "bucket")
    load_conversations(clean_graph, [lisbon, bread], database=DB)
    write_upload_documents(store, clean_graph, "2025-09-01", "up-1", [lisbon, bread], DocumentsResult(), database=DB, embedder=builtin_embedder())
    for conv in (lisbon, bread):
        publish_conversation(store, conv, conversation_files(conv, ["html"]), ["html"])
    yield tmp_path / "bucket"
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


def run(bucket, *args: str, **env: str):
    env = {"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(bucket), **env}
    return CliRunner().invoke(main, ["search", *args], env=env)


def test_a_ranked_list_for_a_person_and_json_lines_for_a_program(bucket):
    result = run(bucket, "Alfama tram")
    assert result.exit_code == 0, result.output
    first = result.stdout.split("\n\n")[0].splitlines()
    assert first[0].startswith(" 1. Lisbon weekend  ·  chatgpt  ·  2025-09-01  (text #1, vector #1)")
    assert "**tram**" in first[1] and "**Alfama**" in first[1]
    assert first[2].startswith("    messages: m000") and first[3].startswith(f"    file: {bucket}/exports/html/")

    result = run(bucket, "Alfama tram", "--json", "-k", "1")
    assert result.exit_code == 0 and result.stderr == ""
    [line] = result.stdout.splitlines()
    hit = json.loads(line)
    assert hit["conversation"]["conversation_id"] == "lisbon" and hit["rank"] == 1 and hit["message_ids"] == ["m000", "m001"]
    assert hit["text"][hit["matches"][0][0]:hit["matches"][0][1]] == "tram" and os.path.isfile(hit["exports"]["html"][0])


def test_modes_and_filters(bucket):
    # the vector index finds the sourdough chat from words it does not hold
    result = run(bucket, "leaven culture with a solvent odour", "--mode", "vector", "--json", "-k", "1")
    assert json.loads(result.stdout)["conversation"]["conversation_id"] == "bread"
    assert run(bucket, "leaven culture with a solvent odour", "--mode", "text", "--json").stdout == ""
    for args, expected in ((["--platform", "claude"], ["bread"]), (["--since", "2025-08-01"], ["lisbon"]),
                           (["--until", "2025-03-01"], ["bread"]), (["--model", "gpt-4"], ["lisbon"]), (["--role", "user"], ["bread", "lisbon"])):
        result = run(bucket, "a question", "--json", *args)
        assert result.exit_code == 0, result.output
        assert sorted(json.loads(x)["conversation"]["conversation_id"] for x in result.stdout.splitlines()) == expected, args
    result = run(bucket, "xylophonics", "--mode", "text")
    assert result.exit_code == 0 and result.stdout == "" and "no hits for 'xylophonics'" in result.stderr


def test_usage_errors_say_what_is_wrong(bucket):
    result = run(bucket, "tram", "--since", "2025-13-01")
    assert result.exit_code == 2 and "expected a date, YYYY-MM-DD" in result.stderr
    result = run(bucket, "tram", "--mode", "vector", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 2 and "CHATETL_EMBEDDINGS" in result.stderr
    result = run(bucket, "tram", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 0 and "full-text search only" in result.stderr and "Lisbon weekend" in result.stdout
    result = run(bucket, "tram", "--since", "2025-09-02", "--until", "2025-09-01")
    assert result.exit_code == 2 and "after until" in result.stderr
    assert "Exit codes" in run(bucket, "--help").stdout
