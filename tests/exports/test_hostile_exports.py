"""Hostile content in the exports a person opens: no executable links, no raw control characters,
link text that cannot end its link early, and every such export still reads back."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from export_inputs import chat
from headless import needs_browser
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


@pytest.mark.parametrize("fmt", ["chat-export-md", "md"])
def test_markdown_sources_never_link_to_a_script_or_data(fmt):
    cites = [Citation(title=f"evil {i}", url=url) for i, url in enumerate(HOSTILE_URLS)] + [Citation(title="fine", url="https://example.org/a")]
    text = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), fmt).data.decode()
    links = _hrefs(text)
    assert links == [("https://example.org/a", "fine")]
    for i in range(len(HOSTILE_URLS)):
        assert f"evil {i}" in text  # the source is still named, as text


@pytest.mark.parametrize("fmt", ["chat-export-md", "md"])
def test_a_link_title_cannot_close_its_link_early(fmt):
    title = "click](javascript:alert(1)) [me\\"
    cites = [Citation(title=title, url="https://example.org/real")]
    text = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), fmt).data.decode()
    assert _hrefs(text) == [("https://example.org/real", title)]


def test_link_titles_with_brackets_read_back_from_markdown(tmp_path):
    cites = [Citation(title="a [b] c \\ d", url="https://example.org/x_(y)"), Citation(title="plain", url="https://example.org/(")]
    f = _file(chat([("user", "q"), ("assistant", "a")], citations=cites), "chat-export-md")
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


@pytest.mark.parametrize("fmt", ["chat-export-md", "yaml", "chat-export-json", "sharegpt"])
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


# ---- what renders a link, an image or HTML in a file a person opens, by any Markdown renderer ----

EVIL_LINK_TITLE = "Tips [click me](javascript:alert(1)) ![pixel](https://evil.example/t.png) <img src=https://evil.example/i.png> <https://evil.example/a>"
EVIL_MODEL = "![m](https://evil.example/model.png)<a href=javascript:alert(2)>gpt</a>"


def _active(markdown: str) -> list[tuple[str, str]]:
    """(kind, what) of every link, image and piece of HTML a permissive CommonMark renderer (markdown-it
    with HTML on and links of every scheme) makes of a text, and of the Markdown inside its ```md fences."""
    md = MarkdownIt("commonmark", {"html": True})
    md.validateLink = lambda url: True
    out = []
    for tok in md.parse(markdown):
        if tok.type == "fence" and tok.info.strip() == "md":
            out += _active(tok.content)
        if tok.type == "html_block":
            out.append(("html", tok.content))
        for child in tok.children or []:
            if child.type == "link_open":
                out.append(("link", child.attrs["href"]))
            elif child.type == "image":
                out.append(("image", child.attrs["src"]))
            elif child.type == "html_inline":
                out.append(("html", child.content))
    return out


@pytest.mark.parametrize("fmt", ["chat-export-md", "md"])
def test_titles_and_models_never_link_load_or_inject_html(fmt):
    conv = chat([("user", "q"), ("assistant", "a")], title=EVIL_LINK_TITLE, model=EVIL_MODEL,
                citations=[Citation(title="<img src=https://evil.example/c.png> [x](javascript:alert(3))", url="javascript:alert(4)"),
                           Citation(title="[ref]: javascript:alert(5)"), Citation(title="see [ref] and [more][ref]")])
    text = _file(conv, fmt).data.decode()
    assert _active(_markdown_part(text)) == []
    assert "click me" in text and "pixel" in text  # still said, as text


def _markdown_part(text: str) -> str:
    """What a note app renders as Markdown: the text after its YAML front matter (whose values it
    reads as data: YAML, checked here to hold the title and model exactly)."""
    if not text.startswith("---\n"):
        return text
    front, _, rest = text[4:].partition("\n---\n")
    meta = yaml.safe_load(front)
    assert meta["title"] == EVIL_LINK_TITLE and meta["model"] == EVIL_MODEL
    return rest


def test_a_title_without_link_syntax_keeps_its_bytes_and_reads_back(tmp_path):
    f = _file(chat([("user", "q"), ("assistant", "a")], title="Notes [draft] & a < b"), "chat-export-md")
    assert "title: Notes [draft] & a < b\n" in f.data.decode()
    path = tmp_path / f.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f.data)
    [back] = list(read_path(path, ReadReport()))
    assert back.title == "Notes [draft] & a < b"


# A Gemini answer as Takeout holds it: HTML whose text shows Markdown link syntax, an image whose alt
# text is a link, raw-looking tags and an autolink as characters, and code with brackets in it.
GEMINI_ANSWER = (
    "<p>Log in at [your bank](https://evil.example/login) to see it.</p>"
    '<p><img alt="[your bank](https://evil.example/alt)" src="https://img.example/chart.png"></p>'
    "<p>&lt;img src=https://evil.example/p.png&gt; and &lt;https://evil.example/auto&gt; and \\[still text](https://evil.example/b)</p>"
    "<p>A real link: <a href=\"https://docs.example/csv\">the docs</a>, code <code>d[\"k\"]</code>.</p>"
    "<pre><code>x = [1, 2][0]  # [a](b)\n</code></pre>"
)


def _gemini_chat(tmp_path):
    from chatetl.samples.common import zip_files
    from chatetl.samples.gemini import FOLDER, _row

    rows = [_row("Prompted Where do I log in?", 1.0, [GEMINI_ANSWER], "0123456789abcdef")]
    path = tmp_path / "takeout.zip"
    path.write_bytes(zip_files({f"{FOLDER}/MyActivity.json": json.dumps(rows).encode()}))
    report = ReadReport()
    [conv] = list(read_path(path, report))
    assert not report.errors and conv.source.value == "gemini"
    return conv


@pytest.mark.parametrize("fmt", ["chat-export-md", "md"])
def test_gemini_answers_show_their_literal_link_syntax_as_text(tmp_path, fmt):
    text = _file(_gemini_chat(tmp_path), fmt).data.decode()
    assert _active(text.partition("\n---\n")[2] if fmt == "md" else text) == []
    for shown in ("your bank", "chart.png", "the docs (https://docs.example/csv)", "x = [1, 2][0]  # [a](b)", '`d["k"]`'):
        assert shown in text, shown  # the text, the image's place, the real link's address and the code all still there


def _html_links(page: str) -> tuple[list[str], list[str]]:
    from html.parser import HTMLParser

    found: tuple[list[str], list[str]] = ([], [])

    class Links(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "a":
                found[0].append(a.get("href") or "")
            elif tag == "img":
                found[1].append(a.get("src") or "")

    Links().feed(page)
    return found


def test_gemini_answers_link_nothing_in_the_html_export(tmp_path):
    page = _file(_gemini_chat(tmp_path), "html").data.decode()
    hrefs, images = _html_links(page)
    assert images == [] and not [h for h in hrefs if "evil" in h], hrefs
    assert "[your bank](https://evil.example/login)" in page and "x = [1, 2][0]  # [a](b)" in page


@needs_browser
def test_gemini_answers_in_headless_chromium_open_no_link_and_load_nothing(tmp_path, browser):
    from selenium.webdriver.common.by import By

    f = _file(_gemini_chat(tmp_path), "html")
    path = tmp_path / f.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f.data)
    browser.get(path.as_uri())
    hrefs = browser.execute_script("return Array.from(document.links, a => a.href)")
    assert not [h for h in hrefs if "evil" in h], hrefs
    assert browser.execute_script("return document.images.length") == 0
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Log in at [your bank](https://evil.example/login) to see it." in body
    assert "<img src=https://evil.example/p.png> and <https://evil.example/auto>" in body
