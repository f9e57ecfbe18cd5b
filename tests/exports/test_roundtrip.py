"""Round trips: what chatetl exports as chat-export/1 JSON, sharegpt/1, Markdown, YAML and ShareGPT JSONL,
chatetl's own readers (chatetl.readers.read_path, format detected from content) read back into the
same visible turns, role and text, for bodies that break naive writers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from export_inputs import MD_AMBIGUOUS, TRICKY, chat, sample_conversations, visible
from markdown_it import MarkdownIt

from chatetl.exports.files import conversation_files, training_lines
from chatetl.exports.markdown import adjust_body, markdown_equivalent, render_markdown
from chatetl.exports.meta import export_views
from chatetl.model import Citation, Source
from chatetl.readers import ReadReport, read_path

READABLE = ("chat-export-json", "sharegpt", "chat-export-md", "yaml")


def _turns(texts: list[str]) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]


def _write(tmp_path: Path, conv, fmt: str) -> Path:
    (f,) = [f for f in conversation_files(conv, [fmt]) if f.format == fmt]
    path = tmp_path / f.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f.data)
    return path


def _read_one(path: Path):
    report = ReadReport()
    convs = list(read_path(path, report))
    assert not report.errors, [str(e) for e in report.errors]
    assert len(convs) == 1
    return convs[0]


def _expected(conv, fmt: str) -> list[tuple[str, str]]:
    if fmt == "chat-export-md":
        return [(r, markdown_equivalent(t)) for r, t in visible(conv)]
    return visible(conv)


@pytest.mark.parametrize("fmt", READABLE)
def test_every_tricky_body_reads_back_as_written(tmp_path, fmt):
    conv = chat(_turns(TRICKY), title="Tricky: yes # - no", url="https://chatgpt.com/c/conv-1")
    back = _read_one(_write(tmp_path, conv, fmt))
    assert visible(back) == _expected(conv, fmt)
    # the same conversation comes back: platform, id, title and model survive, so the key matches
    assert (back.key, back.title, back.model) == (conv.key, conv.title, conv.model)


@pytest.mark.parametrize("fmt", READABLE)
@pytest.mark.parametrize("body", [t for t in TRICKY if t.strip()])
def test_each_tricky_body_alone(tmp_path, fmt, body):
    conv = chat([("user", body), ("assistant", body)])
    assert visible(_read_one(_write(tmp_path, conv, fmt))) == _expected(conv, fmt)


@pytest.mark.parametrize("fmt", ["chat-export-json", "sharegpt", "yaml"])
def test_json_and_yaml_keep_what_markdown_cannot(tmp_path, fmt):
    """Trailing newlines, CR line breaks, whitespace-only and empty bodies, NEL: exact in JSON and YAML."""
    texts = ["ends with newlines\n\n", "crlf\r\nline\rbreaks", "   ", "", "nel\x85inside", "ls\u2028ps\u2029", "x\n"]
    conv = chat(_turns(texts))
    assert visible(_read_one(_write(tmp_path, conv, fmt))) == visible(conv)


def test_sharegpt_jsonl_training_file_reads_back(tmp_path):
    convs = [chat(_turns(TRICKY[:10]), conversation_id="a"), chat(_turns(TRICKY[10:20]), conversation_id="b", platform="claude-ai")]
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"".join(line for c in convs for line in training_lines(c)))
    report = ReadReport()
    back = list(read_path(path, report))
    assert not report.errors
    assert [(b.key, visible(b)) for b in back] == [(c.key, visible(c)) for c in convs]


def test_markdown_bodies_with_fences_stay_verbatim(tmp_path):
    """Bodies with their own ``` fences (and ```md lines that are not markers) are written as they are."""
    bodies = [t for t in TRICKY if "```" in t]
    conv = chat(_turns(bodies))
    result = render_markdown(export_views(conv)[0])
    assert result.adjusted == [] and result.exact
    for body in bodies:
        assert body in result.text
    assert visible(_read_one(_write(tmp_path, conv, "chat-export-md"))) == visible(conv)


@pytest.mark.parametrize("body", MD_AMBIGUOUS)
def test_markdown_bodies_the_layout_cannot_hold_are_adjusted_and_render_the_same(tmp_path, body):
    conv = chat([("user", "question"), ("assistant", body), ("user", "next turn survives"), ("assistant", "ok")])
    result = render_markdown(export_views(conv)[0])
    assert result.adjusted == [1] and result.exact
    back = visible(_read_one(_write(tmp_path, conv, "chat-export-md")))
    # every turn still comes back, in order, with its role; only the adjusted body differs from the original...
    assert [r for r, _ in back] == ["user", "assistant", "user", "assistant"]
    assert back[0] == ("user", "question") and back[2:] == [("user", "next turn survives"), ("assistant", "ok")]
    assert back[1][1] == adjust_body(body) != body
    # ...and it renders exactly as the original did (the same info string, the fence closed where it ended)
    md = MarkdownIt("commonmark")

    def render(text: str) -> str:  # a code block closed at the end keeps its last line break: the same page
        return md.render(text).replace("\n</code>", "</code>")

    assert render(back[1][1]) == render(body)


def test_chat_export_role_tags_survive_markdown_and_json(tmp_path):
    conv = chat([("user", "hi"), ("assistant", "hello")], platform="grok", source=Source.CHAT_EXPORT)
    conv.messages[1].author_name = "grok"
    for fmt in ("chat-export-md", "chat-export-json"):
        back = _read_one(_write(tmp_path, conv, fmt))
        assert visible(back) == visible(conv)
        assert back.visible_turns[1].author_name == "grok"


def test_sources_survive_every_readable_format(tmp_path):
    cites = [Citation(title="Wikipedia: Paris", url="https://en.wikipedia.org/wiki/Paris_(city)"), Citation(title="No link")]
    conv = chat([("user", "capital?"), ("assistant", "Paris.")], citations=cites)
    for fmt in ("chat-export-md", "chat-export-json", "yaml"):
        back = _read_one(_write(tmp_path, conv, fmt))
        got = [(c.title, c.url) for c in back.visible_turns[1].citations]
        assert got == [("Wikipedia: Paris", "https://en.wikipedia.org/wiki/Paris_(city)"), ("No link", None)], fmt


def test_the_sample_export_round_trips_in_every_readable_format(tmp_path):
    for conv in sample_conversations():
        for fmt in READABLE:
            back = _read_one(_write(tmp_path / conv.conversation_id, conv, fmt))
            assert back.key == conv.key
            assert visible(back) == _expected(conv, fmt)


def test_json_is_pretty_with_a_trailing_newline_and_omits_missing_fields():
    conv = chat([("user", "hi"), ("assistant", "hello")], title=None, model=None, url=None)
    (f,) = conversation_files(conv, ["chat-export-json"])
    text = f.data.decode()
    assert text.endswith("}\n") and text.startswith('{\n  "schema": "chat-export/1",\n')
    record = json.loads(text)
    assert "title" not in record and "model" not in record and "url" not in record
    assert None not in record.values()
    assert record["messages"] == [{"role": "user", "role_tag": "user", "text": "hi"}, {"role": "assistant", "role_tag": "assistant", "text": "hello"}]


def test_yaml_uses_block_scalars_and_quotes_what_yaml_would_retype():
    conv = chat([("user", "What is the capital of France?"), ("assistant", "line one\nline two")], title="yes")
    (f,) = conversation_files(conv, ["yaml"])
    text = f.data.decode()
    assert "  text: |\n    What is the capital of France?\n" in text
    assert "  text: |\n    line one\n    line two\n" in text
    assert "title: 'yes'" in text and "schema" not in text
    assert yaml.safe_load(text)["title"] == "yes"


def test_yaml_fast_emitter_writes_what_the_python_emitter_writes():
    """Records without characters beyond U+FFFF go through LibYAML's emitter: byte for byte the same file."""
    from chatetl.exports.yaml_export import _Dumper, _FastDumper, yaml_record

    bmp = [t for t in TRICKY if not any(ord(ch) > 0xFFFF for ch in t)] + ["crlf\r\nx", "nel\x85x", "tab\tx", "ends\n\n"]
    record = yaml_record(export_views(chat(_turns(bmp), title="yes: no"))[0])
    kw = {"sort_keys": False, "allow_unicode": True, "default_flow_style": False, "width": 1_000_000}
    assert yaml.dump(record, Dumper=_FastDumper, **kw) == yaml.dump(record, Dumper=_Dumper, **kw)


def test_bodies_that_read_back_plainly_do_so_without_the_check():
    """render_markdown skips reading back bodies whose fences are balanced and hold no top-level ```md
    block (reads_back_plainly): the reader reads them back as written. Checked on random bodies made of
    the pieces that matter to the layout."""
    import random

    from chatetl.exports.markdown import _read_back, reads_back_plainly

    rng = random.Random(5)
    pieces = ["md", "user:", "sources", "sys", "``", "`", "~~", "~", " ", "   ", "    ", "\t", "\n", "\n\n", "\r\n",
              "1. [x](y)", "a", ":", "é", "```", "\n```\n", "\n```md\n", "\n~~~\n", "\n````\n", "\n```python\n", "\n ```\n", "\n```a`b\n"]
    checked = 0
    for _ in range(3000):
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12))) for _ in range(rng.randrange(1, 5))]
        turns = [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
        result = render_markdown(export_views(chat(turns))[0])
        bodies = [markdown_equivalent(t) for t in texts]
        if all(reads_back_plainly(b) for b in bodies):
            checked += 1
            assert result.adjusted == [] and _read_back(result.text) == bodies
        else:
            assert result.exact
    assert checked > 500


def test_markdown_equivalent_drops_exactly_the_trailing_blank_lines():
    import random

    def by_lines(text: str) -> str:  # the rule, line by line
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)

    rng = random.Random(3)
    pieces = ["a", " ", "\t", "\n", "\r", "\r\n", "\x85", "\u2028", "\x0b", "é", "  b  "]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 10)))
        assert markdown_equivalent(text) == by_lines(text), repr(text)


def test_note_markdown_is_refused_by_name_not_as_malformed_yaml(tmp_path):
    """`md` (note Markdown: YAML front matter, then the turns) is not read back: its front matter names a
    title and `messages:` as a YAML export does, and the reader says what the file is, naming it."""
    path = _write(tmp_path, chat(_turns(["a question", "## a heading in an answer"]), title="Notes"), "md")
    report = ReadReport()
    assert list(read_path(path, report)) == []
    (error,) = [str(e) for e in report.errors]
    assert path.name in error and "chatetl's note Markdown" in error and "not read back" in error
    assert "malformed YAML" not in error
