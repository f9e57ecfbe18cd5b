"""ChatGPT citation markers taken out of the visible text keep their place: Citation.offset is the
index in Message.text where the marker stood, where the export ties the citation to its marker
(content_references: start_idx / matched_text; citations: start_ix). The offset reaches the
normalized tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatetl.readers import Entry, ReadReport, read_entry, read_path
from chatetl.samples import ChatGPTBuilder
from chatetl.tables import TableWriter, iter_conversations, read_rows

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "chatgpt" / "librechat-chatgpt-export.json"
CITE3 = "\ue200cite\ue202turn0search3\ue201"
CITE5 = "\ue200cite\ue202turn0search5\ue202turn0news1\ue201"


def _read(conv: dict):
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("conversations.json", json.dumps([conv]).encode()), report))
    assert report.errors == [] and report.drift == {}
    return convs[0]


def _ref(marker: str, raw: str, items: list[dict], **kw) -> dict:
    start = raw.index(marker)
    return {"matched_text": marker, "start_idx": start, "end_idx": start + len(marker), "type": "grouped_webpages", "items": items, **kw}


def _page(n: int) -> dict:
    return {"title": f"Page {n}", "url": f"https://example.org/{n}", "snippet": f"snippet {n}", "attribution": "example.org"}


def web_answer() -> dict:
    raw = f"Trams run every 5 minutes{CITE3}. At night every 15{CITE5}, and again every 15{CITE3}."
    b = ChatGPTBuilder("cites", "Trams", 1_700_000_000.0)
    b.text("user", "How often do trams run?")
    refs = [
        _ref(CITE3, raw, [_page(3)]),
        _ref(CITE5, raw, [_page(5), _page(1)]),
        {"matched_text": CITE3, "type": "grouped_webpages", "items": [_page(3)]},  # placed by its text: the next CITE3
        {"matched_text": " ", "start_idx": len(raw), "end_idx": len(raw), "type": "sources_footnote", "sources": [_page(3)]},
    ]
    b.text("assistant", raw, metadata={"model_slug": "gpt-4o", "content_references": refs,
                                       "search_result_groups": [{"domain": "example.org", "entries": [_page(9)]}]})
    return b.build()


def test_content_reference_markers_keep_their_place():
    conv = _read(web_answer())
    answer = conv.visible_turns[-1]
    assert answer.text == "Trams run every 5 minutes. At night every 15, and again every 15."
    assert answer.extra["raw_text"].count(CITE3) == 2
    got = [(c.url, c.offset) for c in answer.citations]
    first, second = answer.text.index("."), answer.text.index(",")
    assert got == [
        ("https://example.org/3", first),
        ("https://example.org/5", second),
        ("https://example.org/1", second),  # one marker, two sources: both at its place
        ("https://example.org/3", len(answer.text) - 1),  # the same source cited again, at its second place
        ("https://example.org/9", None),  # a search result no marker names
    ]
    for c in answer.citations[:4]:
        assert answer.text[: c.offset].endswith(("minutes", "15"))  # the text written before the marker
    assert answer.citations[0].title == "Page 3" and answer.citations[0].snippet == "snippet 3" and answer.citations[0].source == "example.org"


def test_old_source_markers_are_placed_by_start_ix():
    raw = "The T6.1 uses about 7 l/100 km【6†source】【7†source】 on the highway【13†source】."
    b = ChatGPTBuilder("old", "Van", 1_700_000_000.0)
    b.text("user", "Fuel use?")
    cites = [{"start_ix": raw.index(m), "end_ix": raw.index(m) + len(m), "citation_format_type": "tether_og",
              "metadata": {"type": "webpage", "title": t, "url": f"https://example.org/{t}", "text": ""}}
             for m, t in (("【6†source】", "six"), ("【7†source】", "seven"), ("【13†source】", "thirteen"))]
    cites.append({"start_ix": 3, "end_ix": 5, "metadata": {"title": "nowhere", "url": "https://example.org/x"}})  # no marker there
    b.text("assistant", raw, metadata={"citations": cites})
    answer = _read(b.build()).visible_turns[-1]
    assert answer.text == "The T6.1 uses about 7 l/100 km on the highway."
    km, highway = answer.text.index(" on"), answer.text.index(".", 10)
    assert [(c.title, c.offset) for c in answer.citations] == [("six", km), ("seven", km), ("thirteen", highway), ("nowhere", None)]


def test_markers_without_a_tie_are_removed_and_their_citations_unplaced():
    b = ChatGPTBuilder("untied", "Untied", 1_700_000_000.0)
    b.text("user", "q")
    b.text("assistant", f"An answer{CITE3}.", metadata={"citations": [{"metadata": {"title": "T", "url": "https://example.org/t"}}]})
    answer = _read(b.build()).visible_turns[-1]
    assert answer.text == "An answer." and [(c.title, c.offset) for c in answer.citations] == [("T", None)]


def test_offsets_reach_the_normalized_tables(tmp_path):
    conv = _read(web_answer())
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        writer.add(conv, upload_key="raw/x.json")
    rows = list(read_rows(tmp_path / "m.parquet", ["message_id", "citations"]))
    [cited] = [r for r in rows if r["citations"]]
    assert [(c["url"], c["offset"]) for c in cited["citations"]] == [(c.url, c.offset) for c in conv.visible_turns[-1].citations]
    [(back, _)] = list(iter_conversations(tmp_path / "c.parquet", tmp_path / "m.parquet"))
    assert back.visible_turns[-1].citations == conv.visible_turns[-1].citations


@pytest.mark.skipif(not SAMPLE.exists(), reason="shared samples not present")
def test_real_sample_markers_are_placed():
    convs = list(read_path(SAMPLE, ReadReport()))
    cited = [m for c in convs for m in c.visible_turns if m.citations and "raw_text" in m.extra]
    assert len(cited) == 3
    for m in cited:
        assert "【" not in m.text
        for c in m.citations:
            assert c.offset is not None and 0 < c.offset <= len(m.text)
            assert m.text[c.offset - 1] not in " "  # each marker sat right after a word or a stop
