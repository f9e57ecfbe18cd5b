"""Markup in a message's text is read in time linear in its length, whatever tags it leaves open.

Each input here is small (a few hundred KB, a zip of a KB or two) and shaped the way a scan that
re-reads to the end of the value for every unclosed opening would take hours on: run by the
readers as they are, each finishes in about a second. The output is held too: an unclosed tag is
text, and the text stays linear in the markup (nested quotes and lists, padded tables).
"""

from __future__ import annotations

import io
import json
import zipfile

from chatetl.model import MessageKind, Role
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.htmltext import html_to_text
from chatetl.readers.platforms import gemini_html

ROW = {"header": "Gemini Apps", "title": "Prompted Hello", "time": "2026-07-20T15:00:00.000Z", "products": ["Gemini Apps"],
       "details": [{"name": "Conversation", "url": "https://gemini.google.com/app/7b0000000000aaaa"}]}


def read(name: str, data: bytes) -> tuple[list, ReadReport]:
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def answers(conv) -> list[str]:
    return [m.text for m in conv.messages if m.role is Role.ASSISTANT]


def test_a_gemini_answer_of_unclosed_tags_in_a_zip_of_1521_bytes_is_read():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("Takeout/My Activity/Gemini Apps/MyActivity.json",
                    json.dumps([{**ROW, "safeHtmlItem": [{"html": "<b " * 340000}]}]))
    assert len(buf.getvalue()) < 2048
    convs, report = read("takeout.zip", buf.getvalue())
    assert not report.errors
    [answer] = answers(convs[0])
    assert answer == ("\\<b " * 340000).strip()  # no tag ever closes: the text it is (kept text in Markdown)


def test_runs_of_unclosed_tags_comments_and_code_blocks_are_text():
    n = 200000
    assert html_to_text("<pre " * n).text == ("\\<pre " * n).strip()
    assert html_to_text("<strong " * n + "x").text == ("\\<strong " * n + "x")
    assert html_to_text("<!x" * n).text == "\\<!x" * n
    assert html_to_text('<p title="' * n).text == ('\\<p title="' * n)
    assert html_to_text("<pre>a</pre>" + "<pre>" * n).text.startswith("```\na\n```")
    # one tag left open with a quote: the tags after it still close
    assert html_to_text('<u "' + "<i>x</i>" * n).text == '\\<u "' + "*x*" * n


def test_nested_links_quotes_lists_and_wide_tables_give_text_linear_in_the_markup():
    n = 50000
    for markup in ("<a href='https://example.org'>x" * n, "<blockquote>x<br>" * n, "<ul><li>x" * n,
                   "<table><tr>" + "<td>x</td>" * n + "</tr>" + "<tr><td>y</td></tr>" * n + "</table>"):
        text = html_to_text(markup).text
        assert 0 < len(text) <= 4 * len(markup)
    assert html_to_text("<a href='https://a.org'>one<a href='https://b.org'>two</a>").text == "one (https://a.org)two (https://b.org)"
    deep = html_to_text("<blockquote>" * 40 + "deep" + "</blockquote>" * 40).text
    assert deep == "> " * 16 + "deep"


def test_a_gemini_html_cell_of_unclosed_anchors_and_labels_is_read():
    n = 100000
    body = '<a href="https://gemini.google.com/app/7b0000000000aaaa">' * n
    cell = ('<div class="outer-cell"><div class="header-cell"><p class="mdl-typography--title">Gemini Apps<br></p></div>'
            f'<div class="content-cell mdl-cell">Prompted {body}<br>Jul 20, 2026, 3:00:00 PM UTC<br><p>Hi</p></div>'
            '<div class="content-cell mdl-typography--caption">' + "<b>" * n + "</div></div>")
    row = gemini_html.row_from_cell(cell, 0, "cell 0", ReadReport())
    assert row is not None and row.answers == ["Hi"] and row.conversations == []


def test_claude_ai_unclosed_inline_elements_are_text():
    text = "<antThinking " * 200000
    conv = {"uuid": "c1", "name": "A chat", "created_at": "2024-05-01T10:00:00Z", "updated_at": "2024-05-01T10:00:00Z",
            "chat_messages": [
                {"uuid": "h", "text": "Hi", "sender": "human", "created_at": "2024-05-01T10:00:00Z", "attachments": [], "files": []},
                {"uuid": "a", "text": text, "sender": "assistant", "created_at": "2024-05-01T10:00:01Z", "attachments": [],
                 "files": [], "parent_message_uuid": "h"}]}
    convs, report = read("conversations.json", json.dumps([conv]).encode())
    assert not report.errors
    assert answers(convs[0]) == [text]


def test_open_webui_details_never_closed_or_all_closed_by_one_are_read():
    n = 200000
    for content in ("<details " * n + "></details>", "<details>" * n + "</details>", '<details type="x">' * n):
        msgs = {"u": {"id": "u", "parentId": None, "childrenIds": ["a"], "role": "user", "content": "Hi", "timestamp": 1},
                "a": {"id": "a", "parentId": "u", "childrenIds": [], "role": "assistant", "content": content, "timestamp": 2}}
        chat = {"id": "c1", "title": "t", "chat": {"history": {"messages": msgs, "currentId": "a"}}, "updated_at": 3, "created_at": 1}
        convs, report = read("owui.json", json.dumps([chat]).encode())
        assert not report.errors
        [answer] = [m for m in convs[0].messages if m.role is Role.ASSISTANT]
        assert answer.kind is MessageKind.TURN and answer.text == content
