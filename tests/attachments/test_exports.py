"""Exported files show attachments: images embedded and files linked by relative paths that still resolve
once the export folder is moved, a visible placeholder for a file the export did not contain."""

from __future__ import annotations

import shutil

from attachments.layouts import chatgpt_zip, claude_zip, conversations, ingested

from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files
from chatetl.layout import EXPORTS_PREFIX
from chatetl.storage import LocalObjectStore


def test_images_and_placeholders_in_markdown_and_html_survive_a_move(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    (conv,) = conversations(store, ingested(store, "raw/chatgpt.zip", chatgpt_zip()))
    files = conversation_files(conv, ["md", "html"])
    for f in files:
        publish_conversation(store, conv, [f], [f.format])
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "bucket" / EXPORTS_PREFIX, moved)  # (the export folder, moved away from the bucket)
    for f in files:
        text = (moved / f.path).read_text()
        links = [part.split(")")[0] for part in text.split("](../files/")[1:]] or [
            part.split('"')[0] for part in text.split('src="../files/')[1:]]
        assert len(set(links)) == 3, f.path  # the upload, the old-style upload, the drawn image
        assert all((moved / "files" / name).is_file() for name in links)
        assert "lost.png: not in the export" in text
    markdown = next(f for f in files if f.format == "md").data.decode()
    reply = markdown.split("Here is your watercolor.")[1]
    assert "![image](../files/" in reply  # the drawn image on the assistant's reply
    html = next(f for f in files if f.format == "html").data.decode()
    assert html.count("<img src=\"../files/") == 3


def test_claude_paste_is_a_placeholder_with_its_text_not_an_empty_block(tmp_path):
    store = LocalObjectStore(tmp_path)
    (conv,) = conversations(store, ingested(store, "raw/claude.zip", claude_zip()))
    files = {f.format: f.data.decode() for f in conversation_files(conv, ["chat-export-md", "md", "html"])}
    assert "> 📎 spec.txt: not in the export (its text is kept)" in files["md"]
    assert "The widget must fold twice." in files["html"] and "spec.txt: not in the export" in files["html"]
    assert "📎" not in files["chat-export-md"]  # (the Chat Export layout reads back into the same turns: no line is added to them)
