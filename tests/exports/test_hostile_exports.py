"""Hostile content in the exports a person opens: no executable links, no raw control characters,
link text that cannot end its link early, and every such export still reads back."""

from __future__ import annotations

import re

import pytest
from export_inputs import chat
from markdown_it import MarkdownIt

from chatetl.exports.files import conversation_files
from chatetl.exports.formats import PER_CONVERSATION
from chatetl.model import Citation
from chatetl.readers import ReadReport, read_path

HOSTILE_URLS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(document.cookie)",
    "  javascript:alert(2)",
    "java\tscript:alert(3)",
    "data:text/html,<script>alert(4)</script>",
    "vbscript:msgbox(5)",
    "file:///etc/passwd",
]
RAW_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f]")


def _file(conv, fmt: str):
    (f,) = [f for f in conversation_files(conv, [fmt]) if f.format == fmt]
    return f


def _hrefs(markdown: str) -> list[tuple[str, str]]:
    """(href, text) of every link markdown-it renders from a Markdown text, and from the Markdown inside
    its ```md fences (the chat-export layout's `sources` blocks, which its viewer renders as Markdown)."""
    out = []
    md = MarkdownIt("commonmark")
    tokens = md.parse(markdown)
    for tok in tokens:
        if tok.type == "fence" and tok.info.strip() == "md":
            out += _hrefs(tok.content)
    for block in tokens:
        children = block.children or []
        for i, tok in enumerate(children):
            if tok.type == "link_open":
                close = next(j for j in range(i + 1, len(children)) if children[j].type == "link_close")
                text = "".join(t.content for t in children[i + 1 : close] if t.type in ("text", "code_inline"))
                out.append((tok.attrs["href"], text))
    return out


@pytest.mark.parametrize("fmt", ["md", "md-frontmatter"])
def test_markdown_sources_never_link_to_a_script_or_data(fmt):
    cites = [Citation(title=f"evil {i}", url=url) for i, url in enumerate(HOSTILE_URLS)] + [Citation(title="fine", url="https://example.org/a")]
    text = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), fmt).data.decode()
    links = _hrefs(text)
    assert links == [("https://example.org/a", "fine")]
    for i in range(len(HOSTILE_URLS)):
        assert f"evil {i}" in text  # the source is still named, as text


@pytest.mark.parametrize("fmt", ["md", "md-frontmatter"])
def test_a_link_title_cannot_close_its_link_early(fmt):
    title = "click](javascript:alert(1)) [me\\"
    cites = [Citation(title=title, url="https://example.org/real")]
    text = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), fmt).data.decode()
    assert _hrefs(text) == [("https://example.org/real", title)]


def test_link_titles_with_brackets_read_back_from_markdown(tmp_path):
    cites = [Citation(title="a [b] c \\ d", url="https://example.org/x_(y)"), Citation(title="plain", url="https://example.org/(")]
    f = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), "md")
    path = tmp_path / f.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f.data)
    report = ReadReport()
    [back] = list(read_path(path, report))
    assert not report.errors
    got = [(c.title, c.url) for c in back.visible_turns[1].citations]
    assert got == [("a [b] c \\ d", "https://example.org/x_(y)"), ("plain", "https://example.org/%28")]


@pytest.mark.parametrize("fmt", [f for f in sorted(PER_CONVERSATION) if "json" not in f and f != "sharegpt"])
def test_no_raw_control_character_reaches_an_export(fmt):
    """(JSON escapes C0 controls itself; DEL and C1 are plain characters to JSON, kept as the chat had them.)"""
    nasty = "bell\x07 nul\x00 esc\x1b[31m red del\x7f csi\x9b2J"
    conv = chat([("user", nasty), ("assistant", "answer " + nasty)], title="title \x00\x1b[2J", citations=[Citation(title="src \x00", url="https://example.org/\x1b")])
    data = _file(conv, fmt).data.decode("utf-8")
    assert not RAW_CONTROLS.search(data), repr(RAW_CONTROLS.search(data))
    assert "bell" in data and "red" in data  # the text around them stays


@pytest.mark.parametrize("fmt", ["md", "yaml", "chat-export-json", "sharegpt"])
def test_exports_of_text_with_controls_read_back(tmp_path, fmt):
    conv = chat([("user", "hi\x00 there"), ("assistant", "ok\x1b done")], title="A \x00 title")
    f = _file(conv, fmt)
    path = tmp_path / f.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f.data)
    report = ReadReport()
    back = list(read_path(path, report))
    assert not report.errors, [str(e) for e in report.errors]
    [conv_back] = back
    texts = [m.text for m in conv_back.visible_turns]
    assert [t.replace("\x00", "").replace("\x1b", "") for t in texts] == ["hi there", "ok done"]
