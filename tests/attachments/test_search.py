"""Attachment text is part of the conversation's Document, marked as the attachment's, so search finds a
word only the attachment holds: Claude.ai's extracted text, a text file the upload held, a PDF's words."""

from __future__ import annotations

import os

import pytest
from attachments.layouts import DAY, claude_zip, conversations, ingested, pdf, text_file_zip

from chatetl.graph.load import load_conversations
from chatetl.rag.documents import build_document
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.search import search
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE")


def test_claude_extracted_text_is_in_the_document_marked_as_attachment(tmp_path):
    store = LocalObjectStore(tmp_path)
    (conv,) = conversations(store, ingested(store, "raw/claude.zip", claude_zip()))
    doc = build_document(conv)
    assert "User attachment spec.txt: The widget must fold twice." in doc.content
    [span] = [s for s in doc.spans if "fold twice" in doc.content[s.start:s.end]]
    assert span.message_id == "m-1"


def test_text_file_and_pdf_the_upload_holds_give_their_words(tmp_path):
    store = LocalObjectStore(tmp_path)
    (conv,) = conversations(store, ingested(store, "raw/lechat.zip", text_file_zip()))
    content = build_document(conv).content
    assert "User attachment notes.txt: Packing: bring the marmalade umbrella.\n\nUser attachment report.pdf: Quarterly zeppelin" in content
    (att, pdf_att) = [a for m in conv.messages for a in m.attachments]
    assert att.mime_type == "text/plain" and pdf_att.mime_type == "application/pdf" and pdf_att.size == len(pdf())


@pytest.mark.integration
def test_search_finds_a_word_only_the_attachment_holds(clean_graph, tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = conversations(store, ingested(store, "raw/claude.zip", claude_zip()))
    load_conversations(clean_graph, convs, database=DB)
    write_upload_documents(store, clean_graph, DAY, "up-1", convs, DocumentsResult(), database=DB, embedder=None)
    [hit] = search(clean_graph, "widget fold", mode="text", database=DB)
    assert hit.conversation["conversation_id"] == "c-1" and "attachment spec.txt" in hit.text
