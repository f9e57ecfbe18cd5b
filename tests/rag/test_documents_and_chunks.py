"""RAG documents and chunks (no services): the seed's Document properties, the visible text never cut,
the opt-ins, and chunking on turn and paragraph boundaries with overlap, offsets and message ids."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from export_inputs import chat, sample_conversations
from pydantic import ValidationError

from chatetl.graph.chunk_search import lucene_escape
from chatetl.model import Source
from chatetl.rag.chunking import ChunkOptions, chunk_document, chunk_spans, chunks_jsonl
from chatetl.rag.documents import Span, build_document, document_for
from chatetl.rag.embeddings import BUILTIN_MODEL, load_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.readers.platform_names import PLATFORM_ALIASES, platform_label
from chatetl.readers.timeutil import iso
from chatetl.selection import ContentOptions
from chatetl.settings import Settings
from chatetl.storage import LocalObjectStore


def test_document_has_the_seed_properties():
    trip = next(c for c in sample_conversations() if c.title == "Planning a rail trip")
    doc = document_for(trip)
    assert doc["title"] == "ChatGPT: Planning a rail trip"
    assert doc["template_id"] == "chat-import" and doc["template_name"] == "ChatGPT Conversation"
    assert doc["conversation_id"] == trip.conversation_id and doc["source"] == "chatgpt"
    assert doc["created_at"] == "2026-01-01T00:00:00Z"
    assert doc["content"] == (
        "User: Which is faster from Vienna to Zagreb: train or bus?\n\n"
        "Assistant: The direct train takes about 6.5 hours; the bus is usually 5 hours.\n\n"
        "User: Book-keeping aside, which is more comfortable?\n\n"
        "Assistant: The train: more legroom, a dining car and you can walk around."
    )
    claude = document_for(chat([("user", "hi")], platform="claude-ai", source=Source.CLAUDE_AI, title=None, conversation_id="u-1"))
    assert claude["title"] == "Claude AI: Untitled" and claude["template_name"] == "Claude AI Conversation" and claude["source"] == "claude-ai"


def test_every_platform_has_a_label():
    for platform in {*PLATFORM_ALIASES.values(), "chatgpt", "claude-ai", "claude-code", "rex", "unknown"}:
        label = platform_label(platform)
        assert label and label != platform and "-" not in label, platform
    assert platform_label("le-chat-pro") == "Le Chat Pro" and platform_label("") == "Unknown"


def test_content_is_never_truncated():
    long = "\n\n".join(f"Paragraph {i}: " + "word " * 400 for i in range(60))  # ~120,000 characters
    doc = build_document(chat([("user", "summarize"), ("assistant", long)]))
    assert doc.content.endswith(long) and len(doc.content) > 120_000
    assert doc.props["content_length"] == len(doc.content)


MARKERS = {
    "include_hidden": "HIDDEN-CONTEXT",
    "include_reasoning": "REASONING-TRACE",
    "include_tools": "TOOL-RESULT-OUTPUT",
    "include_branches": "ABANDONED-BRANCH",
}


def test_document_holds_only_the_visible_branch_by_default():
    content = document_for(chat([("user", "question"), ("assistant", "answer")], extras=True, branch=True))["content"]
    assert content == "User: question\n\nAssistant: answer"


@pytest.mark.parametrize("option", sorted(MARKERS))
def test_each_opt_in_lets_its_part_into_the_document(option):
    conv = chat([("user", "question"), ("assistant", "answer")], extras=True, branch=True)
    content = document_for(conv, ContentOptions(**{option: True}))["content"]
    for other, marker in MARKERS.items():
        assert (marker in content) == (other == option)


def test_opt_in_labels_say_what_each_part_is():
    conv = chat([("user", "question"), ("assistant", "answer")], extras=True, branch=True)
    everything = ContentOptions(include_reasoning=True, include_tools=True, include_hidden=True, include_branches=True)
    assert document_for(conv, everything)["content"] == (
        "System (hidden): HIDDEN-CONTEXT: custom instructions\n\n"
        "User: question\n\n"
        "Assistant (reasoning): REASONING-TRACE: think first\n\n"
        'Assistant (tool call: search): {"q": "TOOL-CALL-INPUT"}\n\n'
        "Tool (search): TOOL-RESULT-OUTPUT\n\n"
        "Assistant: answer\n\n"
        "[Other branch 1]\n\n"
        "Assistant: ABANDONED-BRANCH: an earlier regeneration"
    )


def test_content_options_from_the_environment(monkeypatch):
    monkeypatch.setenv("CHATETL_INCLUDE_TOOLS", "true")
    monkeypatch.setenv("CHATETL_RAG_INCLUDE_TOOLS", "0")
    monkeypatch.setenv("CHATETL_EXPORT_INCLUDE_HIDDEN", "yes")
    assert ContentOptions.from_env("RAG") == ContentOptions()
    assert ContentOptions.from_env("EXPORT") == ContentOptions(include_tools=True, include_hidden=True)
    monkeypatch.setenv("CHATETL_INCLUDE_BRANCHES", "maybe")
    with pytest.raises(ValueError, match="CHATETL_INCLUDE_BRANCHES"):
        ContentOptions.from_env()


# ------------------------------------------------------------------------------------ chunking


def _doc(turn_texts: list[str]):
    return build_document(chat([("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turn_texts)]))


def _check_invariants(doc, chunks, options: ChunkOptions) -> None:
    content = doc.content
    assert [c.position for c in chunks] == list(range(len(chunks)))
    covered = [False] * len(content)
    for c in chunks:
        assert c.text == content[c.char_start:c.char_end]
        assert 0 < len(c.text) <= options.max_chars
        for i in range(c.char_start, c.char_end):
            covered[i] = True
        # the messages a chunk comes from: exactly those whose text it overlaps
        expect = [s.message_id for s in doc.spans if s.message_id and s.start < c.char_end and s.end > c.char_start]
        assert c.message_ids == expect
    assert all(covered[i] for i, ch in enumerate(content) if not ch.isspace())  # nothing left out
    for a, b in itertools.pairwise(chunks):
        assert b.char_start > a.char_start and b.char_end > a.char_end
        assert a.char_end - b.char_start <= options.overlap_chars  # overlap within bounds


def _never_mid_word(content: str, chunks) -> None:
    for c in chunks:
        assert c.char_start == 0 or not content[c.char_start - 1].isalnum() or not content[c.char_start].isalnum(), c
        assert c.char_end == len(content) or not content[c.char_end].isalnum() or not content[c.char_end - 1].isalnum(), c


def test_chunks_cut_on_paragraph_boundaries_and_overlap_by_whole_paragraphs():
    paras = [f"Paragraph {i} " + " ".join(f"w{i}x{j}" for j in range(12)) for i in range(30)]  # ~80 characters each
    doc = _doc(["\n\n".join(paras[:15]), "\n\n".join(paras[15:])])
    options = ChunkOptions(max_chars=400, overlap_chars=120)
    chunks = chunk_document(doc, options)
    _check_invariants(doc, chunks, options)
    content = doc.content
    for a, b in itertools.pairwise(chunks):
        assert content[a.char_end:a.char_end + 2] == "\n\n"  # ends at a paragraph end
        assert b.char_start < a.char_end  # overlaps...
        assert content[b.char_start - 2:b.char_start] in ("\n\n", ": ")  # ...starting at a paragraph start
    assert len(chunks) > 6


def test_a_turn_boundary_wins_over_a_later_paragraph_boundary():
    first = "\n\n".join(["alpha " * 10] * 4)  # one turn of ~250 characters
    second = "\n\n".join(["beta " * 10] * 4)
    doc = _doc([first, second])
    chunks = chunk_document(doc, ChunkOptions(max_chars=400, overlap_chars=0))
    assert chunks[0].char_end == doc.spans[0].end  # cut where the turn ends, though more would fit
    assert chunks[1].char_start == doc.spans[1].start and chunks[1].message_ids == ["m001"]


def test_code_blocks_with_blank_lines_stay_in_one_piece():
    code = "```python\ndef f():\n\n    return 1\n\n\nprint(f())\n```"
    doc = _doc(["intro " * 30 + "\n\n" + code + "\n\n" + "outro " * 30])
    chunks = chunk_document(doc, ChunkOptions(max_chars=200, overlap_chars=40))
    assert any(code in c.text for c in chunks)
    assert not any("```python" in c.text and not c.text.rstrip().endswith("```") and "print(f())\n```" not in c.text for c in chunks)


def test_long_paragraphs_split_on_lines_then_words_never_mid_word():
    para = " ".join(f"token{i}" for i in range(400))  # one 3,000-character line
    lines = "\n".join(f"line {i} " + "z" * 40 for i in range(40))  # one paragraph of short lines
    doc = _doc([para, lines])
    options = ChunkOptions(max_chars=300, overlap_chars=60)
    chunks = chunk_document(doc, options)
    _check_invariants(doc, chunks, options)
    _never_mid_word(doc.content, chunks)
    in_lines = [c for c in chunks if c.char_start >= doc.spans[1].start]
    assert all(doc.content[c.char_end] == "\n" or c.char_end == len(doc.content) for c in in_lines[:-1])  # whole lines


def test_only_a_single_word_longer_than_a_chunk_is_cut():
    word = "x" * 1000
    doc = _doc([f"before {word} after"])
    chunks = chunk_document(doc, ChunkOptions(max_chars=300, overlap_chars=50))
    _check_invariants(doc, chunks, ChunkOptions(max_chars=300, overlap_chars=50))
    assert "".join(c.text for c in chunks if set(c.text) == {"x"}) .count("x") >= 600


@pytest.mark.parametrize("max_chars,overlap", [(120, 0), (120, 60), (500, 100), (2000, 200)])
def test_invariants_hold_on_messy_text(max_chars, overlap):
    rng_words = re.findall(r"\S+", " ".join(
        ["Lorem", "ipsum", "dolor", "sit", "amet,", "consectetur", "adipiscing", "elit.", "Ünïcödé", "世界", "🚀", "https://example.org/a/very/long/url?with=query"] * 40))
    texts = []
    for t in range(7):
        words = rng_words[t * 37:(t * 37) + 90 + 40 * t]
        paras = [" ".join(words[i:i + 13 + t]) for i in range(0, len(words), 13 + t)]
        texts.append(("\n\n\n" if t % 2 else "\n\n").join(paras) + ("\n```\ncode\n\nblock\n```" if t == 3 else ""))
    doc = _doc(texts)
    options = ChunkOptions(max_chars=max_chars, overlap_chars=overlap)
    chunks = chunk_document(doc, options)
    _check_invariants(doc, chunks, options)
    _never_mid_word(doc.content, chunks)
    assert chunk_spans(doc.content, doc.spans, options) == [(c.char_start, c.char_end) for c in chunks]


def test_chunk_options_are_validated_and_read_from_the_environment(monkeypatch):
    with pytest.raises(ValidationError):
        ChunkOptions(max_chars=100, overlap_chars=80)
    with pytest.raises(ValidationError):
        ChunkOptions(max_chars=5)
    monkeypatch.setenv("CHATETL_CHUNK_MAX_CHARS", "800")
    monkeypatch.setenv("CHATETL_CHUNK_OVERLAP_CHARS", "100")
    assert ChunkOptions.from_env() == ChunkOptions(max_chars=800, overlap_chars=100)


def test_an_empty_conversation_has_a_document_and_no_chunks():
    doc = build_document(chat([]))
    assert doc.content == "" and chunk_document(doc) == []
    assert chunk_spans("", [Span(0, 0, "m", 0)], ChunkOptions()) == []


def test_bucket_files_per_upload_and_a_rerun_changes_nothing(tmp_path):
    store = LocalObjectStore(tmp_path)
    result = DocumentsResult()
    write_upload_documents(store, None, "2026-01-01", "up-1", sample_conversations(), result, chunking=ChunkOptions(max_chars=80, overlap_chars=20))
    assert result.written == ["rag/documents/date=2026-01-01/up-1.jsonl", "rag/chunks/date=2026-01-01/up-1.jsonl"]
    docs = [json.loads(x) for x in store.get_bytes(result.written[0]).splitlines()]
    chunks = [json.loads(x) for x in store.get_bytes(result.written[1]).splitlines()]
    assert len(docs) == 3 and sum(d["chunk_count"] for d in docs) == len(chunks) == result.chunks
    by_key = {d["key"]: d["content"] for d in docs}
    for c in chunks:
        assert by_key[c["document_key"]][c["char_start"]:c["char_end"]] == c["text"]
        assert c["id"] == f"{c['document_key']}#{c['position']}" and c["message_ids"]
    again = DocumentsResult()
    write_upload_documents(store, None, "2026-01-01", "up-1", sample_conversations(), again, chunking=ChunkOptions(max_chars=80, overlap_chars=20))
    assert again.written == [] and len(again.unchanged) == 2


def test_jsonl_and_lucene_helpers():
    doc = _doc(["hello world"])
    (line,) = list(chunks_jsonl(chunk_document(doc)))
    row = json.loads(line)
    assert row["text"] == "User: hello world" and "embedding" not in row
    assert lucene_escape('C++ (fast) "x" a:b/c? AND') == 'C\\+\\+ \\(fast\\) \\"x\\" a\\:b\\/c\\? AND'
    off = Settings.from_env({"CHATETL_EMBEDDINGS": "off"})
    assert load_embedder("", settings=off) is None and load_embedder("pkg.mod:fn", settings=off) is None
    assert load_embedder("", settings=Settings.from_env({})).name == BUILTIN_MODEL  # on by default: the built-in model
    with pytest.raises(ValueError):
        load_embedder("no-colon")


def test_a_turn_that_fits_is_never_cut_in_two_however_short_the_chunk_before_it():
    short, long_ = "A short question about the boiler?", "\n\n".join(["The answer goes on for a while here."] * 10)  # 34 and 378 characters
    doc = _doc([short, long_, short])
    options = ChunkOptions(max_chars=400, overlap_chars=0)
    chunks = chunk_document(doc, options)
    _check_invariants(doc, chunks, options)
    # a chunk a turn, each whole: the first the short turn alone (a paragraph's end further on would have filled it)
    assert [(c.char_start, c.char_end) for c in chunks] == [(span.start, span.end) for span in doc.spans]
    assert all(c.text.startswith(("User: ", "Assistant: ")) for c in chunks)  # each with its speaker


def test_a_long_message_splits_on_sentences_before_words():
    sentences = [f"Sentence {i} says something about item {i} and then stops." for i in range(60)]  # one line, ~3,500 characters
    doc = _doc([" ".join(sentences)])
    options = ChunkOptions(max_chars=300, overlap_chars=60)
    chunks = chunk_document(doc, options)
    _check_invariants(doc, chunks, options)
    _never_mid_word(doc.content, chunks)
    assert all(c.text.rstrip().endswith("stops.") for c in chunks[:-1])  # every cut at a sentence's end


def test_a_chunk_knows_who_speaks_in_it_and_when():
    trip = next(c for c in sample_conversations() if c.title == "Planning a rail trip")
    doc = build_document(trip)
    times = {m.message_id: m.created_at for m in trip.messages}
    assert [(s.role, s.at is not None) for s in doc.spans] == [("user", True), ("assistant", True)] * 2
    whole = chunk_document(doc)
    assert len(whole) == 1 and whole[0].roles == ["user", "assistant"]
    first, last = times[doc.spans[0].message_id], times[doc.spans[-1].message_id]
    assert first is not None and last is not None and first < last
    assert whole[0].created_at == iso(first) and whole[0].updated_at == iso(last)
    per_turn = chunk_document(doc, ChunkOptions(max_chars=90, overlap_chars=0))
    assert [c.roles for c in per_turn] == [["user"], ["assistant"], ["user"], ["assistant"]]
    assert [c.created_at for c in per_turn] == [s.at for s in doc.spans]
    row = per_turn[0].graph_row()
    assert row["roles"] == ["user"] and row["created_at"] == doc.spans[0].at
    undated = chunk_document(build_document(chat([("user", "no time here")])))[0]
    assert undated.roles == ["user"] and (undated.created_at is None) == ("created_at" not in undated.graph_row())
