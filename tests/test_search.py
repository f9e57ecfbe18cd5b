"""Hybrid search (chatetl.search): the fusion and the matching without services, then against the real Neo4j
on generated chats: a vector query finds a paraphrase the words cannot, a hybrid query finds what both
lists rank, filters by platform, dates, role and model, and each hit's conversation, chunk, message ids
and exported files."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from export_inputs import chat

from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files
from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.load import load_conversations
from chatetl.model import Source
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import Embedder, builtin_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.search import (
    Hit,
    SearchError,
    SearchFilters,
    blend,
    fuse,
    holds_phrase,
    query_terms,
    search,
    searched_words,
    sentences,
    text_query,
    word_matches,
    word_share,
    words_weight,
)
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE")


# --------------------------------------------------------------------------- without services


def _row(doc: str, n: int = 0) -> dict:
    return {"document_key": doc, "chunk_id": f"{doc}#{n}"}


def test_reciprocal_rank_fusion_adds_one_over_60_plus_the_rank():
    lists = {"text": [_row("a"), _row("b"), _row("a", 1), _row("c")], "vector": [_row("c"), _row("b", 2), _row("d")]}
    fused = fuse(lists, k=10)
    scores = {row["document_key"]: (score, ranks) for score, ranks, row in fused}
    # by conversation: a's second chunk does not count, so c is third in the text list
    assert scores["b"] == (pytest.approx(1 / 62 + 1 / 62), {"text": 2, "vector": 2})
    assert scores["c"] == (pytest.approx(1 / 63 + 1 / 61), {"text": 3, "vector": 1})
    assert scores["a"][1] == {"text": 1} and scores["d"][1] == {"vector": 3}
    assert [row["document_key"] for _, _, row in fused] == ["c", "b", "a", "d"]  # both lists beat one list's first
    shown = {row["document_key"]: row["chunk_id"] for _, _, row in fused}
    assert shown["b"] == "b#0"  # the conversation's best-ranked chunk is the one shown
    # every candidate takes part (a rank of 31 still adds), unless a window says otherwise
    deep = {"text": [_row(f"t{i}") for i in range(30)] + [_row("x")], "vector": [_row("x")]}
    assert fuse(deep, k=5)[0][1:] == ({"text": 31, "vector": 1}, _row("x"))
    assert {row["document_key"]: r for _, r, row in fuse(deep, k=5, window=10)}["x"] == {"vector": 1}
    assert [r["chunk_id"] for _, _, r in fuse({"text": [_row("a"), _row("a", 1)]}, k=5, per_conversation=False)] == ["a#0", "a#1"]
    # equal scores share a rank: the index's order among them is no preference
    tied = {"text": [{**_row("a"), "score": 2.0}, {**_row("b"), "score": 2.0}, {**_row("c"), "score": 1.0}],
            "vector": [{**_row("b"), "score": 0.9}, {**_row("a"), "score": 0.8}]}
    fused = fuse(tied, k=3)
    assert [(r["document_key"], ranks) for _, ranks, r in fused] == [
        ("b", {"text": 1, "vector": 1}), ("a", {"text": 1, "vector": 2}), ("c", {"text": 3})]


def _scored(doc: str, score: float, text: str = "", n: int = 0) -> dict:
    return {**_row(doc, n), "score": score, "text": text}


def test_blend_follows_the_words_when_they_are_found_together_and_meaning_when_not():
    terms = query_terms("averaging three numbers")
    # a weak keyword hit on one common word ranked first by the words, the best vector hit second there
    weak = {"text": [_scored("three", 4.0, "three cats"), _scored("mean", 2.0, "average of numbers")],
            "vector": [_scored("mean", 0.9), _scored("other", 0.7), _scored("three", 0.6)]}
    fused = blend(weak, terms, k=10)
    assert fused[0][2]["document_key"] == "mean"
    assert all(0.0 <= score <= 1.0 for score, _, _ in fused)
    assert fused[0][1] == {"text": 2, "vector": 1}
    # every word found together: the full-text order stands, whatever the vector list says
    found = {"text": [_scored("exact", 4.0, "averaging three numbers in Python"), _scored("near", 3.9, "three numbers")],
             "vector": [_scored("near", 0.95), _scored("far", 0.9), _scored("exact", 0.5)]}
    assert [row["document_key"] for _, _, row in blend(found, terms, k=2)] == ["exact", "near"]
    # one list: its order; chunks of one conversation: its best only, unless per chunk
    assert [r["document_key"] for _, _, r in blend({"vector": [_scored("a", 0.9), _scored("b", 0.8)]}, terms, k=5)] == ["a", "b"]
    same = {"text": [_scored("a", 2.0, "three", 0), _scored("a", 1.0, "three", 1)]}
    assert [r["chunk_id"] for _, _, r in blend(same, terms, k=5)] == ["a#0"]
    assert [r["chunk_id"] for _, _, r in blend(same, terms, k=5, per_conversation=False)] == ["a#0", "a#1"]


def test_words_found_only_in_other_forms_leave_the_ranking_to_meaning():
    terms = query_terms("what to do when the drum head has changed colour")
    # the stemming index matched "changes" and "change" only: the vector list's order stands
    stems = {"text": [_scored("a", 0.8, "humidity changes the wood"), _scored("b", 0.6, "change it weekly")],
             "vector": [_scored("c", 0.6), _scored("b", 0.55), _scored("a", 0.5)]}
    assert [row["document_key"] for _, _, row in blend(stems, terms, k=3)] == ["c", "b", "a"]
    assert words_weight("humidity changes the wood", terms) == 0.0
    # one word as typed: the words weigh half and half the share found in any form
    assert words_weight("the drum head changes", terms) == pytest.approx((1 + 3 / 4) / 2)
    text = "I decided to sell the Bikes; decidedly not the bike's bell"
    assert [text[s:e] for s, e in word_matches(text, query_terms("decide selling bike"), any_form=True)] == [
        "decided", "sell", "Bikes", "bike"]
    assert word_share(text, ["decide", "bike"]) == 0.5 and word_share(text, ["decide", "bike"], any_form=True) == 1.0
    assert holds_phrase("Meet at Main St. (North) at noon", "main st north") and not holds_phrase("I decided to sell", "decide to sell")
    assert not holds_phrase("the mainstreet", "main street") and not holds_phrase("anything", "?!")


def test_the_words_a_query_matches_and_where():
    assert text_query("What did I say about the C++ (fast) build?") == "say C\\+\\+ \\(fast\\) build\\?"
    assert text_query("what is it") == "what is it"  # only stop words: kept
    assert query_terms("The KeyError in my Python dict") == ["keyerror", "python", "dict"]
    text = "User: my dict raised KeyError; keyerrors aside, Python dicts"
    assert [text[s:e] for s, e in word_matches(text, query_terms("KeyError dict python"))] == ["dict", "KeyError", "Python"]
    prose = "One. Two!\n\n  Three"
    assert [prose[s:e] for s, e in sentences(prose)] == ["One.", "Two!", "Three"]
    hit = Hit(rank=1, score=1.0, text_rank=1, vector_rank=None, conversation={}, chunk_id="x", position=0, char_start=0, char_end=0,
              text="word " * 100 + "NEEDLE " + "word " * 100, message_ids=[], matches=[(500, 506)])
    snippet, spans = hit.snippet(width=120)
    assert len(snippet) <= 120 and [snippet[s:e] for s, e in spans] == ["NEEDLE"] and not snippet.startswith(" ")
    with pytest.raises(SearchError):
        SearchFilters(role="wizard")
    with pytest.raises(SearchError):
        SearchFilters(since=date(2025, 2, 1), until=date(2025, 1, 1))
    assert SearchFilters(platform="Claude", until=date(2025, 1, 31), model=" GPT-4 ").params() == {
        "platform": "claude-ai", "since": None, "until": "2025-02-01", "role": None, "model": "gpt-4"}


# --------------------------------------------------------------------------- against the real Neo4j


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


# (id, title, platform, source, model, day, what the user said, what the assistant said)
CHATS = [
    ("bread", "Sourdough starter", "chatgpt", Source.CHATGPT, "gpt-4o", "2025-03-10",
     "My sourdough starter smells like nail polish remover after a week on the counter.",
     "That acetone smell means it is hungry: feed it twice a day with equal weights of flour and water."),
    ("bike", "Slipping chain", "claude-ai", Source.CLAUDE_AI, "claude-3-opus", "2025-06-02",
     "The chain on my bicycle keeps jumping off the rear cog when I pedal hard uphill.",
     "Adjust the derailleur limit screws and check the cable tension before replacing anything."),
    ("tax", "Home office", "chatgpt", Source.CHATGPT, "gpt-4", "2024-11-20",
     "Can I deduct the spare bedroom I use as a home office on my income tax return?",
     "If the room is used exclusively and regularly for work you may claim part of the rent."),
    ("roses", "Aphids", "grok", Source.CHATGPT, "grok-2", "2025-08-15",
     "Tiny green aphids are all over the buds of my climbing roses.",
     "Hose them off with water, or release ladybirds, which eat aphids by the hundred."),
    ("python", "KeyError", "claude-ai", Source.CLAUDE_AI, "claude-3-5-sonnet", "2025-01-05",
     "My Python script raises KeyError when it reads a missing entry from the config dict.",
     "Use dict.get with a default value, or check membership with the in operator first."),
    ("lisbon", "Lisbon weekend", "chatgpt", Source.CHATGPT, "gpt-4o", "2025-09-01",
     "Three days in Lisbon: is tram 28 through Alfama worth the queue?",
     "Ride it early in the morning from Martim Moniz; the old quarter's hills are steep on foot."),
]


def _chats():
    convs = []
    for cid, title, platform, source, model, day, said, answered in CHATS:
        start = _at(day)
        conv = chat([("user", said), ("assistant", answered)], title=title, platform=platform, conversation_id=cid,
                    source=source, model=model, updated=start + timedelta(minutes=5))
        conv.created_at = start
        for i, m in enumerate(conv.messages):
            m.created_at = start + timedelta(seconds=i)
            m.model = model if m.role.value == "assistant" else None
        convs.append(conv)
    return convs


@pytest.fixture
def loaded(clean_graph, tmp_path):
    """The chats in the graph, embedded with the built-in model, each turn its own chunk; html exports in a bucket folder."""
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    convs = _chats()
    load_conversations(clean_graph, convs, database=DB)
    store = LocalObjectStore(tmp_path / "bucket")
    result = DocumentsResult()
    write_upload_documents(store, clean_graph, "2025-09-01", "up-1", convs, result, database=DB,
                           chunking=ChunkOptions(max_chars=120, overlap_chars=0), embedder=builtin_embedder())
    assert result.chunks == 2 * len(convs)  # one chunk per turn: the role filter can tell them apart
    for conv in convs:
        publish_conversation(store, conv, conversation_files(conv, ["html"]), ["html"])
    yield clean_graph, store, {c.conversation_id: c for c in convs}
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


def _ids(hits):
    return [h.conversation["conversation_id"] for h in hits]


@pytest.mark.integration
def test_a_vector_query_finds_the_paraphrase_the_words_cannot(loaded):
    driver, _, _ = loaded
    query = "leaven culture giving off a solvent odour"  # no word of it is in the sourdough chat
    assert "bread" not in _ids(search(driver, query, mode="text", database=DB))
    hits = search(driver, query, mode="vector", k=3, database=DB)
    assert _ids(hits)[0] == "bread" and hits[0].vector_rank == 1 and hits[0].text_rank is None
    [(start, end)] = hits[0].matches  # no word matches: the sentence nearest the query is shown
    assert (start, end) in sentences(hits[0].text)


@pytest.mark.integration
def test_a_hybrid_query_gives_the_conversation_its_chunk_and_files(loaded):
    driver, store, convs = loaded
    hits = search(driver, "riding the Alfama tram in the old town", k=3, store=store, database=DB)
    top = hits[0]
    assert top.conversation["conversation_id"] == "lisbon" and top.text_rank == 1 and top.vector_rank is not None
    assert top.conversation["title"] == "Lisbon weekend" and top.conversation["platform"] == "chatgpt"
    assert top.conversation["created_at"] == "2025-09-01T00:00:00Z" and top.conversation["model"] == "gpt-4o"
    assert [top.text[s:e] for s, e in top.matches] == ["tram", "Alfama"]
    lisbon = convs["lisbon"]
    assert set(top.message_ids) <= {m.message_id for m in lisbon.messages} and top.message_ids
    assert top.text == "User: " + lisbon.messages[0].text
    [html] = top.exports["html"]
    assert Path(html).is_file() and "Alfama" in Path(html).read_text()
    row = top.to_dict()
    assert row["conversation"]["title"] == "Lisbon weekend" and row["matches"] == [list(m) for m in top.matches]


@pytest.mark.integration
def test_other_forms_of_the_words_are_found_and_shown_and_a_phrase_stands_as_typed(loaded):
    driver, _, _ = loaded
    [hit] = search(driver, "chains jumped", mode="text", database=DB)  # the chat says "chain", "jumping"
    assert hit.conversation["conversation_id"] == "bike" and hit.matched == "words"
    assert [hit.text[s:e] for s, e in hit.matches] == ["chain", "jumping"]
    assert _ids(search(driver, '"keeps jumping"', mode="text", database=DB)) == ["bike"]
    assert search(driver, '"keep jumping"', mode="text", database=DB) == []  # the index's stems match it; the phrase does not


@pytest.mark.integration
def test_filters_by_platform_dates_role_and_model(loaded):
    driver, _, _ = loaded
    query = "what to do about a problem"
    every = _ids(search(driver, query, k=10, database=DB))
    assert sorted(every) == sorted(c[0] for c in CHATS)  # hybrid: the vector list finds them all
    assert set(_ids(search(driver, query, filters=SearchFilters(platform="claude"), database=DB))) == {"bike", "python"}
    dated = search(driver, query, filters=SearchFilters(since=date(2025, 3, 10), until=date(2025, 8, 15)), database=DB)
    assert set(_ids(dated)) == {"bread", "bike", "roses"}  # both ends inclusive
    assert set(_ids(search(driver, query, filters=SearchFilters(model="CLAUDE-3"), database=DB))) == {"bike", "python"}
    # a word only the assistant said: found with role assistant, not with role user
    assert _ids(search(driver, "ladybirds", mode="text", filters=SearchFilters(role="assistant"), database=DB)) == ["roses"]
    assert search(driver, "ladybirds", mode="text", filters=SearchFilters(role="user"), database=DB) == []
    users = search(driver, "aphids", mode="text", filters=SearchFilters(role="user"), database=DB)
    assert _ids(users) == ["roses"] and users[0].text.startswith("User: ")


@pytest.mark.integration
def test_without_embeddings_hybrid_is_text_and_vector_is_refused(loaded, monkeypatch):
    driver, _, _ = loaded
    monkeypatch.setenv("CHATETL_EMBEDDINGS", "off")
    hits = search(driver, "KeyError", database=DB)
    assert _ids(hits) == ["python"] and hits[0].vector_rank is None
    with pytest.raises(SearchError, match="CHATETL_EMBEDDINGS"):
        search(driver, "KeyError", mode="vector", database=DB)
    other = Embedder(name="other", vectors_of=lambda texts: [[1.0, 0.0, 0.5] for _ in texts])
    with pytest.raises(SearchError, match="256 dimensions"):
        search(driver, "KeyError", embedder=other, database=DB)


@pytest.mark.integration
def test_the_two_indexes_asked_at_once_find_what_one_after_the_other_finds(loaded, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from chatetl import search as search_module

    driver, _, _ = loaded
    asked = [said for *_, said, _ in CHATS] + ["leaven culture giving off a solvent odour", "when did I ask about aphids?"]
    ways = [("hybrid", None, "blend"), ("hybrid", None, "rrf"), ("hybrid", SearchFilters(platform="claude"), "blend"),
            ("vector", SearchFilters(role="user", since=date(2025, 1, 1)), "blend")]
    cases = [(query, *way) for query in asked for way in ways]

    def found(case):
        query, mode, filters, fusion = case
        return [h.to_dict() for h in search(driver, query, k=4, mode=mode, filters=filters, fusion=fusion, database=DB)]

    at_once = [found(case) for case in cases]
    with ThreadPoolExecutor(4) as searches:  # several searches at a time, each asking both indexes at once
        crowded = list(searches.map(found, cases))
    monkeypatch.setattr(search_module, "side_by_side", lambda first, second: (first(), second()))
    one_after_the_other = [found(case) for case in cases]
    assert at_once == one_after_the_other and crowded == one_after_the_other
    both = [hit for hits in at_once for hit in hits if hit["text_rank"] is not None and hit["vector_rank"] is not None]
    assert len(both) >= len(asked)  # the hybrid cases did fuse two lists


@pytest.mark.integration
def test_an_index_that_is_not_there_gives_no_list(loaded):
    from chatetl.graph.chunks import FULLTEXT_INDEX, ensure_chunk_schema

    driver, _, _ = loaded
    query = "riding the Alfama tram in the old town"
    words = [h.to_dict() for h in search(driver, query, mode="text", database=DB)]
    driver.execute_query(f"DROP INDEX {VECTOR_INDEX}", database_=DB)  # nothing embedded yet, as after a load without a model
    assert [h.to_dict() for h in search(driver, query, database=DB)] == words  # hybrid: the full-text list alone
    assert search(driver, query, mode="vector", database=DB) == []
    driver.execute_query(f"DROP INDEX {FULLTEXT_INDEX}", database_=DB)
    try:
        assert search(driver, query, database=DB) == []
    finally:
        ensure_chunk_schema(driver, DB)


# --------------------------------------------------------------------------- hostile queries and deep filters


@pytest.fixture
def crowded(clean_graph, tmp_path):
    """A word on every one of 1,100 short chunks of one chatgpt chat, and once in a longer grok answer:
    the grok chunk ranks below the 1,100 others in both indexes."""
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    start = _at("2025-05-01")
    herd = "zebra zebra zebra stripes {} grazing with the whole herd on the open plain at dusk"  # one turn per chunk
    crowd = chat([("user" if i % 2 == 0 else "assistant", herd.format(i)) for i in range(1100)],
                 title="Zebras", conversation_id="crowd", updated=start)
    lone = chat([("user", "Which animals live on the savanna near the river in the dry season?"),
                 ("assistant", "Lions, elephants, giraffes, wildebeest and the occasional zebra, with hippos in the river itself.")],
                title="Savanna", platform="grok", source=Source.GROK, conversation_id="lone", model="grok-2", updated=start + timedelta(days=31))
    crowd.created_at, lone.created_at = start, start + timedelta(days=31)
    load_conversations(clean_graph, [crowd, lone], database=DB)
    store = LocalObjectStore(tmp_path / "bucket")
    result = DocumentsResult()
    write_upload_documents(store, clean_graph, "2025-05-01", "up-1", [crowd, lone], result, database=DB,
                           chunking=ChunkOptions(max_chars=120, overlap_chars=0), embedder=builtin_embedder())
    assert result.chunks >= 1102
    yield clean_graph
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


@pytest.mark.integration
def test_a_filter_finds_a_chunk_ranked_below_a_thousand_others(crowded):
    driver = crowded
    every = search(driver, "zebra", mode="text", k=1200, database=DB, per_conversation=False, pool=1200)
    assert [h.conversation["conversation_id"] for h in every].index("lone") >= 1000  # below a thousand chunks of the crowd
    for mode in ("text", "vector", "hybrid"):
        hits = search(driver, "zebra", mode=mode, filters=SearchFilters(platform="grok"), database=DB)
        assert _ids(hits) == ["lone"], mode
    # the other filters too: the grok chat's model, its role, its dates
    assert _ids(search(driver, "zebra", mode="text", filters=SearchFilters(model="grok"), database=DB)) == ["lone"]
    assert _ids(search(driver, "zebra", mode="vector", filters=SearchFilters(model="grok", role="assistant"), database=DB)) == ["lone"]
    assert _ids(search(driver, "zebra", mode="text", filters=SearchFilters(since=date(2025, 6, 1)), database=DB)) == ["lone"]
    # each step of the widening: a pool of 10, then 100, then every match of the words
    from chatetl.graph.chunk_search import chunk_matches

    [row] = chunk_matches(driver, query="zebra", limit=5, pool=10, filters={"platform": "grok"}, database=DB)
    assert row["conversation_id"] == "lone" and row["platform"] == "grok"
    # a filter both pass: what an unfiltered search finds, the crowd first
    assert _ids(search(driver, "zebra", mode="text", filters=SearchFilters(since=date(2025, 5, 1)), database=DB)) == ["crowd"]


@pytest.mark.integration
@pytest.mark.parametrize("query", ["NOT", "is it AND", "AND OR NOT", "tram AND", "(a OR b", "[a TO", "title:x", "a\\", "~", "*"])
def test_any_query_is_taken_as_words(loaded, query):
    driver, _, _ = loaded
    hits = search(driver, query, mode="text", database=DB)  # no Lucene error: the words are searched
    assert isinstance(hits, list)


@pytest.mark.integration
def test_a_query_of_more_words_than_lucene_takes_is_cut_with_a_note(loaded, caplog):
    driver, _, _ = loaded
    query = " ".join(f"word{i}" for i in range(1500)) + " ladybirds"
    with caplog.at_level("WARNING", logger="chatetl.search"):
        search(driver, query, mode="text", database=DB)
    assert "takes 1000 words of this query, 501 more were left out" in caplog.text
    hyphens = "-".join(["a"] * 3000)  # one word the tokenizer cuts into 3,000 terms
    with caplog.at_level("WARNING", logger="chatetl.search"):
        assert search(driver, f"aphids {hyphens}", mode="text", database=DB)[0].conversation["conversation_id"] == "roses"
    assert searched_words("漢字" * 600) == ([], 1)  # 1,200 ideographs, each a term


def test_lucene_syntax_is_escaped_word_by_word():
    assert text_query("is it AND") == "is it \\AND"
    assert text_query("NOT") == "\\NOT"
    assert text_query("ANDROID OR-gate OR") == "ANDROID OR\\-gate"  # (OR, a stop word, left out among other words)
    assert searched_words("one two three") == (["one", "two", "three"], 0)


@pytest.mark.integration
def test_a_query_the_index_still_refuses_is_one_line(loaded, monkeypatch):
    from chatetl import search as search_module

    driver, _, _ = loaded
    monkeypatch.setattr(search_module, "literal_word", lambda word: word)  # raw Lucene, as before the escaping
    with pytest.raises(SearchError) as refused:
        search(driver, "is it AND", mode="text", database=DB)
    assert str(refused.value).startswith("the full-text index cannot take this query: ParseException: Encountered")
    assert "\n" not in str(refused.value)


def test_the_last_day_there_is_is_a_filter_without_an_end():
    assert SearchFilters(until=date.max).params()["until"] is None
    assert SearchFilters(since=date.max, until=date.max).params()["since"] == "9999-12-31"


@pytest.mark.integration
def test_exported_files_in_s3_come_with_links_a_browser_opens(s3_bucket):
    import urllib.request

    from chatetl.search import _add_exports
    from chatetl.storage import S3ObjectStore, s3_client

    store = S3ObjectStore(s3_client(os.environ["CHATETL_S3_ENDPOINT_URL"]), s3_bucket, "some/prefix")
    conv = _chats()[0]
    publish_conversation(store, conv, conversation_files(conv, ["html"]), ["html"])
    hit = Hit(rank=1, score=1.0, text_rank=1, vector_rank=None, conversation={"key": conv.key}, chunk_id="x", position=0,
              char_start=0, char_end=0, text="", message_ids=[])
    _add_exports(store, [hit])
    [uri], [link] = hit.exports["html"], hit.links["html"]
    assert uri.startswith(f"s3://{s3_bucket}/some/prefix/exports/html/") and link.startswith("http")
    with urllib.request.urlopen(link, timeout=10) as answer:  # presigned: no credentials needed to open it
        assert answer.read() == store.get_bytes(uri.split("/some/prefix/", 1)[1])
