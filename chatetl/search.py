"""Find anything you discussed: full-text and vector search over every chunk, blended by score.

    from chatetl.search import SearchFilters, search
    hits = search(driver, "proofing rye dough overnight", k=5, filters=SearchFilters(platform="claude", since=date(2025, 1, 1)))

Modes:
- `text`: the `chunk_text` full-text index (Lucene BM25 on the words, searched literally, in any
  of their forms: the index stems English words, chatetl.graph.chunks.FULLTEXT_ANALYZER);
- `vector`: the `chunk_embedding` vector index (cosine to the query's vector, from the model the
  chunks were embedded with: chatetl.rag.embeddings, the built-in one by default);
- `hybrid` (the default): both lists, blended by score (`blend`): each list's scores scaled to
  [0, 1] (BM25 by the list's best, cosine between the list's worst and best) and summed with a
  weight that follows the words (`words_weight`): the share `c` of the query's words that the
  full-text list's best chunk holds, in any form, gives the words `(1 + c) / 2`, meaning the
  rest. A query whose words are all found together is ranked as full-text search ranks it (a
  weak vector list cannot push a literal match down); a query whose words are scattered leans on
  meaning, and one whose words the best chunk holds only in other forms than typed ("changes"
  for "changed": the stems' chance matches) is ranked by meaning alone. Reciprocal rank fusion
  (`fusion="rrf"`, Σ 1 / (60 + rank)) stays available: it reads ranks only, so a weak keyword hit
  on one common word ranked first weighs as much as the best vector hit.

A query is read as people type it (chatetl.search_query): a quoted phrase must stand in the chunk
as it is quoted (`holds_phrase`: not in another form of its words); a question that asks when
(`when did …`, `what is the date of …`) prefers chunks that name a month and is ordered by its
words (`blend`'s `words_decide`: a date is said in words, and a chunk's vector does not tell
one); a time it names (`in March 2024`, `last May`, `2024-03-12`) puts what was said then first
(`in_window_first`, by the chunk's messages' times), the rest after.

Each list is ranked by conversation (its best chunk), so a long conversation does not fill the
list with its chunks (`per_conversation=False` ranks chunks); every candidate of each list takes
part in the fusion, and chunks of equal score share a rank: their order in the index's answer
means nothing (chunks holding the same query words score the same but for their length), and
fusion must not read it as a preference. Filters (platform, date range,
role, model) keep the best `pool` chunks of each index that pass them, however far down the index
ranks them (Neo4j 5.26's indexes cannot filter inside the index: the index is asked deeper until
enough pass, `chatetl.graph.chunk_search.chunk_matches`). The words go to the full-text index as
words, never as Lucene syntax (`AND`, `NOT`, brackets escaped), at most `MAX_TERMS` of them (a
note says when more were left out). A hit gives its conversation (title, platform,
dates, url), the chunk (text, offsets in the Document, message ids), `matches`: where in the
chunk text the query's words are, in any of their forms (a vector hit without them: the
sentence nearest the query; `matched` says which), its `kind`: a conversation, or what a person
keeps beside the chats (a project's document, a memory, a canvas: `kept` names it, the project and
the file; it has no conversation id, link or exported files), and with a store, the conversation's
exported files (exports/_conversations/ manifests) and links a person can open (`openable`: a
presigned URL for S3).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import Stemmer

from chatetl.exports.bucket import read_manifest
from chatetl.graph.chunk_search import FullTextQueryError, chunk_indexes, chunk_matches, lucene_escape
from chatetl.model import Role
from chatetl.rag.embeddings import BUILTIN_MODEL, Embedder, VectorsOf, as_embedder, builtin_embedder, load_embedder
from chatetl.readers.platform_names import normalize_platform
from chatetl.search_query import MONTHS, Asked, read_query
from chatetl.side_by_side import side_by_side
from chatetl.storage import ObjectStore, S3ObjectStore

if TYPE_CHECKING:
    from neo4j import Driver

log = logging.getLogger(__name__)

MODES = ("hybrid", "text", "vector")
FUSIONS = ("blend", "rrf")
RRF_K = 60
POOL = 100  # candidates per index at least ...
FILTERED_POOL = 1000  # ... and how deep the index is asked first with a filter (the filter drops most of them)
MAX_TERMS = 1000  # words given to the full-text index, below Lucene's clause limit (1024 in Neo4j 5)


class SearchError(ValueError):
    """A search that cannot run as asked (a mode without an embedder, vectors of another size)."""


class EmbedderMismatch(SearchError):
    """The query's model is not the one the graph's chunks were embedded with: the vectors differ in
    size, and Neo4j would refuse the vector query. A setting to fix (`CHATETL_EMBEDDER`), not a usage error."""

    def __init__(self, graph_dims: int | None, query_dims: int, model: str) -> None:
        graph = f"{graph_dims} dimensions" if graph_dims is not None else "vectors of another size"
        super().__init__(f"the graph's chunks were embedded into {graph}, the query's model {model!r} gives {query_dims}: "
                         "set CHATETL_EMBEDDER to the model the chunks were embedded with")


@dataclass(frozen=True)
class SearchFilters:
    """Which chunks count. `since` / `until`: the conversation's time span overlaps these days
    (both inclusive; an undated conversation is left out); `platform`: as the readers name it
    (`claude` is `claude-ai`); `role`: one of the chunk's messages has it; `model`: a prefix
    (any case) of the conversation's model or of one of the chunk's messages' models."""

    platform: str | None = None
    since: date | None = None
    until: date | None = None
    role: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in {r.value for r in Role}:
            raise SearchError(f"role {self.role!r}: expected one of {', '.join(r.value for r in Role)}")
        if self.since and self.until and self.since > self.until:
            raise SearchError(f"since {self.since} is after until {self.until}")

    @property
    def active(self) -> bool:
        return any(v is not None for v in asdict(self).values())

    def params(self) -> dict[str, Any]:
        """As chatetl.graph.chunk_search.chunk_matches takes them."""
        return {
            "platform": normalize_platform(self.platform) if self.platform else None,
            "since": self.since.isoformat() if self.since else None,
            # (until the last day there is: no end at all, rather than a day past the calendar's end)
            "until": (self.until + timedelta(days=1)).isoformat() if self.until and self.until < date.max else None,
            "role": self.role,
            "model": self.model.strip().lower() if self.model and self.model.strip() else None,
        }


CONVERSATION = "conversation"
KEPT = {"project_doc": "project document", "memory": "memory", "canvas": "canvas"}  # a keepsake's kind -> what a person reads


@dataclass
class Hit:
    rank: int
    score: float  # the fused score (hybrid), else the index's own (BM25, cosine)
    text_rank: int | None  # rank in the full-text list, None: not in it
    vector_rank: int | None
    conversation: dict[str, Any]  # key, conversation_id, title, platform, created_at, updated_at, url, model, message_count
    chunk_id: str
    position: int
    char_start: int  # the chunk's place in the Document's content
    char_end: int
    text: str
    message_ids: list[str]
    matches: list[tuple[int, int]] = field(default_factory=list)  # [start, end) in `text`
    exports: dict[str, list[str]] | None = None  # format -> where its files are (with a store)
    matched: str | None = None  # what `matches` are: "words" (the query's), "sentence" (the nearest by meaning), None
    links: dict[str, list[str]] | None = None  # format -> links a person can open (local paths, presigned URLs)
    kind: str = CONVERSATION  # what the hit is from: a conversation, or a keepsake (KEPT: a project's document, a memory, a canvas)
    kept: dict[str, Any] | None = None  # a keepsake's name, project and file name (its `conversation` has no id, no url)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["matches"] = [list(m) for m in self.matches]
        return out

    def snippet(self, width: int = 320) -> tuple[str, list[tuple[int, int]]]:
        """A window of the chunk around its first match (whole words), and the matches inside it."""
        text = self.text
        if len(text) <= width:
            return text, list(self.matches)
        first = self.matches[0][0] if self.matches else 0
        start = max(0, min(first - width // 4, len(text) - width))
        if start:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < start + 40 else start
        end = min(len(text), start + width)
        if end < len(text):
            space = text.rfind(" ", start, end)
            end = space if space > start + width // 2 else end
        inside = [(max(s, start) - start, min(e, end) - start) for s, e in self.matches if s < end and e > start]
        return text[start:end], inside


# --------------------------------------------------------------------------- matching the words

_WORD = re.compile(r"\w+")
# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET) and the words a question is made of
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with", "about", "am", "can", "could", "did", "do", "does", "from", "had", "has", "have", "how",
    "i", "me", "my", "our", "should", "so", "what", "when", "where", "which", "who", "why", "would", "you",
    "your",
])
_SENTENCE = re.compile(r"[^\n.!?]+[.!?]*")


def query_terms(query: str) -> list[str]:
    """The words of a query worth showing where they are (no stop words, no single letters)."""
    return list(dict.fromkeys(w for w in (m.lower() for m in _WORD.findall(query)) if len(w) > 1 and w not in _STOP))


# each of these is a term of its own to the full-text index's tokenizer (Unicode's word breaks)
_IDEOGRAPHS = re.compile("[\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _terms(word: str) -> int:
    """At least the terms the index makes of a word (a-b is two, each ideograph one)."""
    return len(_WORD.findall(word)) + len(_IDEOGRAPHS.findall(word))


def searched_words(query: str) -> tuple[list[str], int]:
    """The words of a query the full-text index is given, and how many more it had: without the stop
    words that every chunk holds (they would rank chunks by noise; all stop words: all kept), up to
    `MAX_TERMS` terms (more would exceed Lucene's clause limit)."""
    words = query.split()
    kept = [w for w in words if "".join(_WORD.findall(w)).lower() not in _STOP] or words
    terms = 0
    for i, word in enumerate(kept):
        terms += _terms(word)
        if terms > MAX_TERMS:
            return kept[:i], len(kept) - i
    return kept, 0


_OPERATORS = frozenset({"AND", "OR", "NOT"})  # Lucene's, in capitals only


def literal_word(word: str) -> str:
    """One word of a query as a Lucene term, never syntax: its special characters escaped, and an
    operator word (`AND`, `OR`, `NOT`) escaped as a whole (`\\AND`: the term `and`)."""
    return "\\" + word if word in _OPERATORS else lucene_escape(word)


def text_query(query: str) -> str:
    """The query for the full-text index: `searched_words`, literally (Lucene syntax escaped)."""
    return " ".join(literal_word(w) for w in searched_words(query)[0])


def phrase_query(phrase: str) -> str:
    """A quoted phrase as a Lucene phrase the chunk must hold (its words in this order; syntax escaped)."""
    return '+"' + " ".join(lucene_escape(w) for w in phrase.split()) + '"'


# a question that asks for a date prefers the chunks that name one (a month's name), below its own words
DATE_WORDS = "(" + " ".join(MONTHS) + ")^0.5"


def asked_query(asked: Asked) -> tuple[str, int]:
    """The full-text query of a query read (chatetl.search_query): its words (`searched_words`), each
    quoted phrase required, and, for a question that asks when, the months' names as a weaker
    alternative; and how many words were left out."""
    words, left_out = searched_words(asked.text) if asked.text.strip() else ([], 0)
    if asked.phrases and words and all("".join(_WORD.findall(w)).lower() in _STOP for w in words):
        words = []  # (only stop words beside a phrase: the phrase says what is looked for)
    parts = [literal_word(w) for w in words] + [phrase_query(p) for p in asked.phrases]
    if asked.asks_date and parts:
        parts.append(DATE_WORDS)
    return " ".join(parts), left_out


def word_forms(words: Iterable[str]) -> dict[str, str]:
    """Each word's stem, as the full-text index's analyzer (chatetl.graph.chunks.FULLTEXT_ANALYZER,
    Lucene's EnglishAnalyzer) stems it: lower case, no possessive `'s`, Porter's stemmer. (Lucene's
    Porter also turns a stem's last `logi` into `log`: a word that only that joins to the query's,
    "analogous" for "analogy", is found by the index and not shown as a match.)"""
    unique = list(set(words))
    stemmer = Stemmer.Stemmer("porter")  # (one a call: a stemmer holds the word it works on, one thread at a time)
    return dict(zip(unique, stemmer.stemWords([word.lower().removesuffix("'s") for word in unique]), strict=True))


def word_matches(text: str, terms: Sequence[str], any_form: bool = False) -> list[tuple[int, int]]:
    """Where these words stand in the text as whole words, any case; `any_form`: or another form of
    them (`word_forms`: "decided" for "decide"), as the full-text index matches them."""
    if not terms:
        return []
    words = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
    if not any_form:
        wanted = set(terms)
        return [(s, e) for s, e, word in words if word in wanted]
    forms = word_forms([w for _, _, w in words] + list(terms))
    stems = {forms[term] for term in terms}
    return [(s, e) for s, e, word in words if forms[word] in stems]


def holds_phrase(text: str, phrase: str) -> bool:
    """The phrase's words stand in the text in this order, whole, any case, with only spaces or
    punctuation between them: as the phrase was typed (not another form of its words, which the
    stemming full-text index also finds)."""
    words = _WORD.findall(phrase)
    return bool(words) and re.search(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", text, re.IGNORECASE) is not None


def sentences(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence or line of a text, without surrounding spaces."""
    out = []
    for m in _SENTENCE.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if _WORD.search(text, s, e):
            out.append((s, e))
    return out


SHORTLIST = 5  # sentences of a hit that a model other than the built-in one reads to choose its nearest
SHORTLIST_CHARS = 500  # of each, what that model reads (a sentence's start says what it is about: one window)


def _nearest_sentences(hits: list[Hit], query: str, query_vector: list[float], embedder: Embedder) -> None:
    """For hits without the query's words: the sentence of the chunk nearest the query by meaning, by
    the model the chunks were embedded with (`query_vector`: the query by it).

    The built-in model reads every sentence (an average of token vectors: microseconds a sentence).
    Another model costs milliseconds a sentence, and a chunk holds dozens: it reads only the
    `SHORTLIST` sentences of each hit that the built-in model ranks nearest the query (it compares a
    sentence with the query's text, never with a stored vector, so it ranks them whatever model
    embedded the chunks), each cut to `SHORTLIST_CHARS`: at most `SHORTLIST` sentences a hit."""
    todo = [(hit, found) for hit in hits if not hit.matches for found in [sentences(hit.text)] if found]
    if not todo:
        return
    if embedder.name == BUILTIN_MODEL:
        ordered = _by_nearness(embedder, query_vector, todo)
    else:
        longer = [(hit, found) for hit, found in todo if len(found) > SHORTLIST]
        cheap = builtin_embedder()
        ranked = iter(_by_nearness(cheap, cheap([query])[0], longer) if longer else [])  # (the built-in model loads only for these)
        shortlists = [(hit, next(ranked)[:SHORTLIST] if len(found) > SHORTLIST else found) for hit, found in todo]
        ordered = _by_nearness(embedder, query_vector, shortlists, SHORTLIST_CHARS)
    for (hit, _), nearest in zip(todo, ordered, strict=True):
        hit.matches = [nearest[0]]
        hit.matched = "sentence"


def _by_nearness(embedder: Embedder, query_vector: list[float], todo: list[tuple[Hit, list[tuple[int, int]]]],
                 chars: int | None = None) -> list[list[tuple[int, int]]]:
    """Each hit's sentences (`todo`: spans in its text), nearest the query first, equal scores in their
    order; one model call for all, each sentence's first `chars` read (None: all of it)."""
    import numpy as np

    similarity = (np.asarray(embedder([hit.text[s:e][:chars] for hit, found in todo for s, e in found])) @ np.asarray(query_vector)).tolist()
    ordered, start = [], 0
    for _, found in todo:
        scores, start = similarity[start:start + len(found)], start + len(found)
        ordered.append([span for _, span in sorted(zip(scores, found, strict=True), key=lambda pair: -pair[0])])
    return ordered


# --------------------------------------------------------------------------- fusion


def _ranked(rows: list[dict[str, Any]], per_conversation: bool) -> list[dict[str, Any]]:
    """A list best first; by conversation, each conversation's best chunk only."""
    if not per_conversation:
        return rows
    seen: set[str] = set()
    out = []
    for row in rows:
        if row["document_key"] not in seen:
            seen.add(row["document_key"])
            out.append(row)
    return out


def _ranks(rows: list[dict[str, Any]]) -> list[int]:
    """1-based ranks of rows best first, equal scores sharing the best rank ("1, 1, 3"): the order an
    index gives among equal scores is arbitrary (chunks that match the same words score the same
    but for their length), and fusion must not read it as a preference."""
    ranks: list[int] = []
    for i, row in enumerate(rows):
        tied = i and "score" in row and row["score"] == rows[i - 1].get("score")
        ranks.append(ranks[-1] if tied else i + 1)
    return ranks


def fuse(lists: dict[str, list[dict[str, Any]]], k: int, per_conversation: bool = True, window: int | None = None,
         ) -> list[tuple[float, dict[str, int], dict[str, Any]]]:
    """Reciprocal rank fusion of ranked lists (name -> rows, best first): (score, ranks per list, the row shown), best first.

    Each list's first `window` entries take part (default: all of them). Equal scores share a
    rank (`_ranks`). The row shown for a conversation is its best-ranked chunk over the lists
    (the full-text one on a tie: it holds the words)."""
    entries: dict[str, tuple[float, dict[str, int], dict[str, Any], int]] = {}
    for name, rows in lists.items():
        ranked = _ranked(rows, per_conversation)[:window]  # [:None]: all
        for rank, row in zip(_ranks(ranked), ranked, strict=True):
            key = row["document_key"] if per_conversation else row["chunk_id"]
            score, ranks, shown, shown_rank = entries.get(key, (0.0, {}, row, rank))
            ranks[name] = rank
            if rank < shown_rank:
                shown, shown_rank = row, rank
            entries[key] = (score + 1.0 / (RRF_K + rank), ranks, shown, shown_rank)
    ordered = sorted(entries.values(), key=lambda e: (-e[0], min(e[1].values()), e[2]["chunk_id"]))
    return [(score, ranks, shown) for score, ranks, shown, _ in ordered[:k]]


def word_share(text: str, terms: Sequence[str], any_form: bool = False) -> float:
    """The share of the query's words (`query_terms`) that stand in the text as whole words;
    `any_form`: in any of their forms (`word_forms`)."""
    if not terms:
        return 0.0
    found = {m.group().lower() for m in _WORD.finditer(text)}
    if any_form:
        forms = word_forms(list(found) + list(terms))
        found, terms = {forms[word] for word in found}, [forms[term] for term in terms]
    return sum(term in found for term in terms) / len(terms)


def words_weight(best: str, terms: Sequence[str]) -> float:
    """The words' weight in the blend, by the full-text list's best chunk `best`: half, and half
    the share `c` of the query's words it holds in any form (`(1 + c) / 2`: all of them, the
    words alone rank); none when it holds some in other forms and none as typed (the stems'
    chance matches, "changes" for "changed": the words found nothing the person typed, and
    meaning ranks)."""
    typed, any_form = word_share(best, terms), word_share(best, terms, any_form=True)
    return 0.0 if any_form > typed == 0 else (1.0 + any_form) / 2


def blend(lists: dict[str, list[dict[str, Any]]], terms: Sequence[str], k: int, per_conversation: bool = True,
          words_decide: bool = False) -> list[tuple[float, dict[str, int], dict[str, Any]]]:
    """The full-text and vector lists blended by score (see the module doc): (score in [0, 1], ranks per
    list, the row shown), best first. The row shown is the entry's best-ranked chunk over the lists (the
    full-text one on a tie: it holds the words); equal scores keep the better single rank first.
    `words_decide`: the full-text list alone orders what it found (a question that asks when: its
    answer is a date said in words, which a chunk's vector does not tell), the vector list's own
    conversations follow."""
    text = _ranked(lists.get("text") or [], per_conversation)
    vector = _ranked(lists.get("vector") or [], per_conversation)
    text_weight = 1.0 if words_decide else words_weight(text[0]["text"], terms) if text else 0.0
    weights = {"text": text_weight if vector else 1.0, "vector": 1.0 - text_weight if text else 1.0}
    entries: dict[str, tuple[float, dict[str, int], dict[str, Any], int]] = {}
    for name, rows in (("text", text), ("vector", vector)):
        if not rows:
            continue
        best, worst = rows[0]["score"], rows[-1]["score"]
        for rank, row in zip(_ranks(rows), rows, strict=True):
            if name == "text":
                scaled = row["score"] / best if best > 0 else 1.0
            else:
                scaled = (row["score"] - worst) / (best - worst) if best > worst else 1.0
            key = row["document_key"] if per_conversation else row["chunk_id"]
            score, ranks, shown, shown_rank = entries.get(key, (0.0, {}, row, rank))
            ranks[name] = rank
            if rank < shown_rank:
                shown, shown_rank = row, rank
            entries[key] = (score + weights[name] * scaled, ranks, shown, shown_rank)
    ordered = sorted(entries.values(), key=lambda e: (-e[0], min(e[1].values()), e[2]["chunk_id"]))
    return [(score, ranks, shown) for score, ranks, shown, _ in ordered[:k]]


def in_window_first(fused: list[tuple[float, dict[str, int], dict[str, Any]]], window: tuple[date, date] | None,
                    ) -> list[tuple[float, dict[str, int], dict[str, Any]]]:
    """The entries said during the days a query names (`window`, both inclusive) first, each group in
    its own order; the others follow (a time narrows what comes first, never what is found: the time
    may be the event's, told in a later conversation). When is the shown chunk's messages' times,
    else its conversation's time span."""
    if window is None:
        return fused
    since, until = window[0].isoformat(), (window[1] + timedelta(days=1)).isoformat()

    def inside(row: dict[str, Any]) -> bool:
        start = row.get("said_from") or row.get("created_at")
        end = row.get("said_until") or row.get("updated_at") or start
        return bool(start) and str(start) < until and str(end) >= since

    return sorted(fused, key=lambda entry: not inside(entry[2]))  # (a stable sort)


# --------------------------------------------------------------------------- search


def search(
    driver: Driver,
    query: str,
    *,
    k: int = 10,
    mode: str = "hybrid",
    filters: SearchFilters | None = None,
    embedder: Embedder | VectorsOf | None = None,
    store: ObjectStore | None = None,
    database: str | None = None,
    per_conversation: bool = True,
    pool: int | None = None,
    fusion: str = "blend",
) -> list[Hit]:
    """The `k` best hits for `query` (see the module doc). `embedder`: the model the chunks were
    embedded with (default: chatetl.rag.embeddings.load_embedder(), the settings' one); without
    one, `vector` is an error and `hybrid` is `text`. `store`: the bucket, to say where each
    conversation's exported files are. `fusion`: how `hybrid` joins its two lists, `blend` (by
    score) or `rrf` (by rank)."""
    if mode not in MODES:
        raise SearchError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    if fusion not in FUSIONS:
        raise SearchError(f"fusion {fusion!r}: expected one of {', '.join(FUSIONS)}")
    if not query.strip():
        raise SearchError("an empty query")
    if k < 1:
        raise SearchError(f"k={k}: expected at least 1")
    filters = filters or SearchFilters()
    params = filters.params()
    pool = pool or max(k * 5, POOL)
    depth = max(pool, FILTERED_POOL) if filters.active else pool
    model: Embedder | None = None
    if mode != "text":
        model = as_embedder(embedder) if embedder is not None else load_embedder()
        if model is None and mode == "vector":
            raise SearchError("vector search needs embeddings (CHATETL_EMBEDDINGS is off)")
    asked = read_query(query)
    lists, query_vector = _lists(driver, query, asked, mode, model, pool, depth, params, database)
    terms = query_terms(query)
    lists = {name: rows for name, rows in lists.items() if rows}  # a list that found nothing: the other's own scores
    every = sum(len(rows) for rows in lists.values())
    fused = fuse(lists, every, per_conversation) if fusion == "rrf" else blend(lists, terms, every, per_conversation, asked.asks_date)
    fused = in_window_first(fused, asked.window)[:k]
    hits = []
    for rank, (score, ranks, row) in enumerate(fused, start=1):
        if len(lists) == 1:  # one list: its own score (BM25, cosine) says more than its fused one
            score = row["score"]
        kind = row.get("kind") or CONVERSATION
        hits.append(Hit(
            rank=rank,
            score=score,
            text_rank=ranks.get("text"),
            vector_rank=ranks.get("vector"),
            conversation={
                "key": row["document_key"],
                "conversation_id": row["conversation_id"],
                "title": row["conversation"] if kind == CONVERSATION else row.get("name"),
                "document_title": row["title"],
                "platform": row["platform"],
                "created_at": row["created_at"],
                "updated_at": row["updated_at"],
                "url": row["url"],
                "model": row["model"],
                "message_count": row["message_count"],
            },
            chunk_id=row["chunk_id"],
            position=row["position"],
            char_start=row["char_start"],
            char_end=row["char_end"],
            text=row["text"],
            message_ids=list(row["message_ids"] or []),
            matches=word_matches(row["text"], terms, any_form=True),
            kind=kind,
            kept=None if kind == CONVERSATION else {"name": row.get("name"), "project": row.get("project"), "filename": row.get("filename")},
        ))
    for hit in hits:
        hit.matched = "words" if hit.matches else None
    if model is not None and query_vector is not None:
        _nearest_sentences(hits, query, query_vector, model)
    if store is not None:
        _add_exports(store, hits)
    return hits


def _lists(driver: Driver, query: str, asked: Asked, mode: str, model: Embedder | None, pool: int, depth: int,
           params: dict[str, Any], database: str | None) -> tuple[dict[str, list[dict[str, Any]]], list[float] | None]:
    """The lists a search fuses, `text` then `vector` (one the mode does not ask for, or whose index is
    missing, is absent), and the query's vector (None without the vector list). The two indexes are asked
    at once: each query waits on Neo4j, so a search takes the longer of the two, not their sum. Each is
    asked as if it were there; only a query that fails reads which indexes exist (`chunk_indexes`)."""

    def text_list() -> list[dict[str, Any]] | None:
        return _text_list(driver, asked, pool, depth, params, database) if mode != "vector" else None

    def vector_list() -> tuple[list[float], list[dict[str, Any]]] | None:
        if model is None:
            return None
        vector = model([query])[0]
        rows = _vector_list(driver, vector, model.name, pool, depth, params, database)
        return (vector, rows) if rows is not None else None

    text, nearest = side_by_side(text_list, vector_list) if model is not None else (text_list(), None)
    lists = {"text": text} if text is not None else {}
    if nearest is None:
        return lists, None
    lists["vector"] = nearest[1]
    return lists, nearest[0]


def _vector_list(driver: Driver, vector: list[float], model: str, pool: int, depth: int, params: dict[str, Any],
                 database: str | None) -> list[dict[str, Any]] | None:
    """The chunks nearest `vector`; None when there is no vector index (nothing embedded yet); a vector of
    another size than the index's is EmbedderMismatch."""
    from neo4j.exceptions import Neo4jError

    try:
        return chunk_matches(driver, vector=vector, limit=pool, pool=depth, filters=params, database=database)
    except Neo4jError as exc:
        dims = chunk_indexes(driver, database)["vector_dimensions"]
        if dims is None:
            return None
        if dims != len(vector):
            raise EmbedderMismatch(dims, len(vector), model) from exc
        raise


def _text_list(driver: Driver, asked: Asked, pool: int, depth: int, params: dict[str, Any], database: str | None) -> list[dict[str, Any]]:
    """The full-text list: `asked_query` (a note when some words were left out); none without the index;
    what the index cannot take is a SearchError saying why on one line."""
    from neo4j.exceptions import Neo4jError

    lucene, left_out = asked_query(asked)
    if left_out:
        log.warning("search: the full-text index takes %d words of this query, %d more were left out",
                    len(searched_words(asked.text)[0]), left_out)
    if not lucene:
        return []
    try:
        rows = chunk_matches(driver, query=lucene, limit=pool, pool=depth, filters=params, database=database)
    except FullTextQueryError as exc:
        raise SearchError(str(exc)) from None
    except Neo4jError:
        if chunk_indexes(driver, database)["fulltext"]:
            raise
        return []
    return [row for row in rows if all(holds_phrase(row["text"], phrase) for phrase in asked.phrases)]


LINK_SECONDS = 7 * 24 * 3600  # how long a presigned link opens its file (SigV4's longest)


def openable(store: ObjectStore, key: str) -> str:
    """A link a person can open: a local file's path, or an S3 object's presigned URL (a browser cannot open s3://)."""
    if isinstance(store, S3ObjectStore):
        url: str = store.client.generate_presigned_url(
            "get_object", Params={"Bucket": store.bucket, "Key": store.prefix + key}, ExpiresIn=LINK_SECONDS)
        return url
    return store.uri(key)


def _add_exports(store: ObjectStore, hits: list[Hit]) -> None:
    """Each hit's exported files (format -> where, and links a person opens), from its conversation's export
    manifest. Where the bucket cannot be read, hits keep `exports` None (a search still shows what it found)
    and a warning says why."""
    from botocore.exceptions import BotoCoreError, ClientError

    for hit in hits:
        if hit.kind != CONVERSATION:  # (a keepsake has no exported files)
            continue
        try:
            manifest = read_manifest(store, hit.conversation["key"]) or {}
            files = (manifest.get("files") or {}).items()
            hit.exports = {fmt: [store.uri(key) for key in keys] for fmt, keys in files}
            hit.links = {fmt: [openable(store, key) for key in keys] for fmt, keys in files}
        except (OSError, BotoCoreError, ClientError) as exc:  # the bucket is down or refuses: the hits still stand
            log.warning("search: the exported files are not known (%s: %s)", type(exc).__name__, exc)
            return
