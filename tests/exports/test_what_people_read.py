"""What a person reads in the files they open: a tool's code and output as code blocks with their line
breaks, one name for an untitled chat and one per platform everywhere, a colour per platform."""

from __future__ import annotations

import html.parser

from export_inputs import T0, chat, message
from markdown_it import MarkdownIt

from chatetl.exports.archive import archive_entry, platform_colours, render_archive
from chatetl.exports.files import conversation_files
from chatetl.model import Conversation, MessageKind, Role, Source
from chatetl.rag.documents import build_document
from chatetl.readers.tree import resolve_branches
from chatetl.selection import ContentOptions

CODE = "import math\nfor i in range(3):\n    print(i, math.sqrt(i))"
OUTPUT = "0 0.0\n1 1.0\n2 1.4142135623730951"
TOOLS = ContentOptions(include_tools=True)


def _code_interpreter_chat() -> Conversation:
    messages = [
        message(0, Role.USER, "Print some square roots"),
        message(1, Role.ASSISTANT, CODE, MessageKind.TOOL_CALL, "m000", recipient="python"),
        message(2, Role.TOOL, OUTPUT, MessageKind.TOOL_RESULT, "m001", author_name="python"),
        message(3, Role.ASSISTANT, "Done.", parent="m002"),
    ]
    conv = Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="ci", title="Roots", created_at=T0,
                        current_node="m003", messages=messages)
    resolve_branches(conv)
    return conv


def test_code_and_its_output_are_code_blocks_in_markdown_with_their_line_breaks():
    (f,) = conversation_files(_code_interpreter_chat(), ["md"], TOOLS)
    fences = [t for t in MarkdownIt("commonmark").parse(f.data.decode()) if t.type == "fence"]
    assert [(t.info, t.content) for t in fences] == [("python", CODE + "\n"), ("", OUTPUT + "\n")]


class _Pre(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self._depth += 1
            self.blocks.append("")

    def handle_endtag(self, tag):
        if tag == "pre":
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.blocks[-1] += data


def test_code_and_its_output_are_preformatted_in_html():
    (f,) = conversation_files(_code_interpreter_chat(), ["html"], TOOLS)
    parser = _Pre()
    parser.feed(f.data.decode())
    assert parser.blocks == [CODE + "\n", OUTPUT + "\n"]
    assert 'class="language-python"' in f.data.decode()


def test_a_tools_text_cannot_close_its_code_block():
    conv = _code_interpreter_chat()
    conv.messages[2].text = "```\n# not a heading\n````"
    (f,) = conversation_files(conv, ["md"], TOOLS)
    tokens = MarkdownIt("commonmark").parse(f.data.decode())
    assert not any(t.type == "heading_open" and t.tag == "h1" and "not a heading" in (tokens[i + 1].content or "")
                   for i, t in enumerate(tokens))
    assert [t.content for t in tokens if t.type == "fence"][1] == "```\n# not a heading\n````\n"


def test_an_untitled_chat_has_one_name_everywhere():
    conv = chat([("user", "q"), ("assistant", "a")], title=None)
    files = {f.format: f.data.decode() for f in conversation_files(conv, ["md", "html"])}
    assert files["md"].startswith("---\ntitle: Untitled\n") and "\n# Untitled\n" in files["md"]
    assert "<title>Untitled</title>" in files["html"] and "<h1>Untitled</h1>" in files["html"]
    assert archive_entry(conv, None).title == "Untitled"
    assert build_document(conv).props["title"] == "ChatGPT: Untitled"
    assert all(f.path.split("/")[1].startswith("chatgpt-untitled-") for f in conversation_files(conv, ["md", "html"]))


def test_a_chat_without_a_platform_reads_unknown_on_every_page():
    conv = chat([("user", "q"), ("assistant", "a")], platform="unknown", source=Source.SHAREGPT)
    (page,) = [f.data.decode() for f in conversation_files(conv, ["html"])]
    assert "<dt>Platform</dt><dd>Unknown</dd>" in page
    archive = render_archive([archive_entry(conv, None)])
    assert '<option value="unknown" data-colour="#0072B2">Unknown</option>' in archive and ">Chat<" not in archive
    assert build_document(conv).props["title"].startswith("Unknown: ")


def test_every_platform_of_a_page_gets_a_colour_of_its_own():
    platforms = [f"platform-{i}" for i in range(40)]
    colours = platform_colours(platforms)
    assert len(set(colours.values())) == len(platforms)


def test_the_search_index_is_in_the_order_the_pages_script_compares_strings():
    from chatetl.exports.archive import search_index

    vocabulary, postings = search_index(["zebra \U00020000x \uff21b", "zebra apple"])
    words = vocabulary.split(" ")
    assert words == sorted(words, key=lambda w: w.encode("utf-16-be"))  # (JavaScript's `<`: UTF-16 code units)
    assert dict(zip(words, postings.split(" "), strict=True))["zebra"] == "0,1"  # rows 0 and 1, as gaps
