"""Chunks for retrieval: a Document's content cut into overlapping pieces on natural boundaries.

Cutting: the content is split into pieces that never cross a turn; a turn is split into
paragraphs (blank lines outside fenced code blocks), a paragraph longer than a chunk into
lines, a line into sentences, a sentence into words, and only a single word longer than a
chunk is cut mid-word. Pieces are packed greedily up to `max_chars`; a chunk ends where a
turn ends whenever one does inside it, however short that leaves it (a turn that fits in a
chunk is never cut in two, so a question's answer stays with its speaker's label); else,
among the possible ends, a paragraph wins over a line, a line over a sentence, a sentence
over a word, as long as the chunk stays at least half full. The next chunk starts with the last pieces of the previous one
that fit in `overlap_chars` (whole paragraphs where they fit, else the last words).

Every chunk is an exact slice of its Document's content: `text == content[char_start:char_end]`,
`message_ids` names the messages whose text it holds, `roles` who speaks in it (in order) and
`created_at` / `updated_at` the times of its first and last message (the export's; None without).

Chunks are written to the bucket (chatetl.rag.partition) and to Neo4j (chatetl.graph.chunks);
their embeddings come from chatetl.rag.embeddings and go to the graph and to the bucket's
Parquet (chatetl.rag.vectors), never into the chunks' JSON Lines. `text_sha256` says what a
chunk's text is: a chunk whose text (and model) did not change is never embedded again.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chatetl.rag.documents import Document, Span
from chatetl.settings import Settings

# boundary strength before a piece
TURN, PARAGRAPH, LINE, SENTENCE, WORD, NONE = 5, 4, 3, 2, 1, 0


class ChunkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_chars: int = Field(default=2000, ge=20)
    overlap_chars: int = Field(default=200, ge=0)
    min_fill: float = Field(default=0.5, gt=0, le=1)  # prefer a stronger boundary only while the chunk stays this full

    @model_validator(mode="after")
    def _overlap_below_max(self) -> ChunkOptions:
        if self.overlap_chars * 2 > self.max_chars:
            raise ValueError(f"overlap_chars ({self.overlap_chars}) must be at most half of max_chars ({self.max_chars})")
        return self

    @classmethod
    def from_settings(cls, settings: Settings) -> ChunkOptions:
        """`CHATETL_CHUNK_MAX_CHARS` and `CHATETL_CHUNK_OVERLAP_CHARS`; unset: the defaults."""
        values = {"max_chars": settings.chunk_max_chars, "overlap_chars": settings.chunk_overlap_chars}
        return cls(**{k: v for k, v in values.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ChunkOptions:
        return cls.from_settings(Settings.from_env(environ))


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str  # `{document key}#{position}`
    document_key: str
    conversation_id: str
    source: str  # the platform, as on Document
    title: str
    position: int  # 0-based order within the document
    char_start: int
    char_end: int
    text: str
    message_ids: list[str]
    state_version: float
    roles: list[str] = Field(default_factory=list)  # the roles of its messages, each once, in order
    created_at: str | None = None  # its first message's time (ISO), where the export gives one
    updated_at: str | None = None  # its last message's time
    text_sha256: str = ""  # filled from `text` when not given
    embedding: list[float] | None = None
    embedding_model: str | None = None  # the model the embedding comes from (chatetl.rag.embeddings)

    def model_post_init(self, context: Any) -> None:
        if not self.text_sha256:
            self.text_sha256 = text_sha256(self.text)

    def graph_row(self) -> dict[str, Any]:
        row = self.model_dump(exclude={"title"})
        for name in ("embedding", "embedding_model", "created_at", "updated_at"):
            if row[name] is None:
                del row[name]
        return row


def text_sha256(text: str) -> str:
    """What a chunk's text is, in one value: the key under which its vector is reused."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Piece(NamedTuple):  # (a tuple: a message of millions of words is as many pieces, made fast)
    start: int
    end: int
    strength: int  # boundary strength before this piece


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")  # matched at a line's start (pattern.match(content, start))
_WORD = re.compile(r"\S+")
_SENTENCE = re.compile(r"\S.*?(?:[.!?…。！？]+(?=\s)|$)")  # up to its end mark and the space after it, or the line's end
_NONBLANK = re.compile(r"\S")  # (what str.strip() keeps: the same whitespace)
_span = re.Match.span


def _lines(content: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of content[start:end] (without its newline), absolute; nothing is copied."""
    pos = start
    while (newline := content.find("\n", pos, end)) >= 0:
        yield pos, newline
        pos = newline + 1
    yield pos, end


def _blank(content: str, start: int, end: int) -> bool:
    return _NONBLANK.search(content, start, end) is None


def _closes(content: str, start: int, end: int, fence: tuple[str, int]) -> bool:
    """Whether the line [start, end) closes `fence` (only its character, at least as many times, and blanks)."""
    first = _NONBLANK.search(content, start, end)
    if first is None or content[first.start()] != fence[0]:
        return False  # (most lines: told without copying them)
    stripped = content[start:end].strip()
    return set(stripped) == {fence[0]} and len(stripped) >= fence[1]


def _paragraphs(content: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Runs of non-blank lines; blank lines inside a fenced code block do not end a paragraph."""
    cur: tuple[int, int] | None = None
    fence: tuple[str, int] | None = None
    for s, e in _lines(content, start, end):
        blank = _blank(content, s, e)
        if fence is not None:
            if not blank and _closes(content, s, e, fence):
                fence = None
        else:
            m = _FENCE.match(content, s, e)
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
        if blank and fence is None:
            if cur is not None:
                yield cur
                cur = None
            continue
        if blank:
            continue  # a blank line inside a fence: the paragraph goes on
        cur = (cur[0], e) if cur is not None else (s, e)
    if cur is not None:
        yield cur


def _split_long(content: str, start: int, end: int, limit: int, first_strength: int) -> Iterator[_Piece]:
    """A paragraph longer than `limit`: lines, then words, then (a single huge word) hard cuts."""
    strength = first_strength
    for ls, le in _lines(content, start, end):
        if _blank(content, ls, le):
            continue
        if le - ls <= limit:
            yield _Piece(ls, le, strength)
        else:
            sentence_strength = strength
            for ss, se in map(_span, _SENTENCE.finditer(content, ls, le)):
                if se - ss <= limit:
                    yield _Piece(ss, se, sentence_strength)
                else:
                    yield from _words(content, ss, se, limit, sentence_strength)
                sentence_strength = SENTENCE
        strength = LINE


def _words(content: str, start: int, end: int, limit: int, strength: int) -> Iterator[_Piece]:
    """A sentence longer than `limit`: its words, and only a single word longer than that cut."""
    for ws, we in map(_span, _WORD.finditer(content, start, end)):
        while we - ws > limit:
            yield _Piece(ws, ws + limit, strength)
            ws += limit
            strength = NONE
        yield _Piece(ws, we, strength)
        strength = WORD


def _pieces(content: str, spans: Sequence[Span], limit: int) -> Iterator[_Piece]:
    """The pieces of the content in order, made as they are asked for (a message of 100 MB on one line is
    millions of words: never all held at once)."""
    for span in spans:
        strength = TURN
        for ps, pe in _paragraphs(content, span.start, span.end):
            if pe - ps <= limit:
                yield _Piece(ps, pe, strength)
            else:
                yield from _split_long(content, ps, pe, limit, strength)
            strength = PARAGRAPH


def chunk_spans(content: str, spans: Sequence[Span], options: ChunkOptions) -> list[tuple[int, int]]:
    """[start, end) of each chunk of `content` (see the module doc for the rules)."""
    return list(iter_chunk_spans(content, spans, options))


def iter_chunk_spans(content: str, spans: Sequence[Span], options: ChunkOptions) -> Iterator[tuple[int, int]]:
    """`chunk_spans` one chunk at a time, in memory that does not grow with the content: the pieces are made as
    they are needed and let go once a chunk has moved past them, so what is held is about one chunk's pieces (a
    huge message on one line is millions of words)."""
    source = _pieces(content, spans, options.max_chars)
    held: list[_Piece] = []  # the pieces from the first that ends after `start` on
    done = False

    def reach(upto: int, k: int = 0) -> None:
        """Hold pieces until one ends past `upto` and piece k is held, or there are no more."""
        nonlocal done
        while not done and (not held or held[-1].end <= upto or len(held) <= k):
            piece = next(source, None)
            if piece is None:
                done = True
            else:
                held.append(piece)

    reach(-1)
    if not held:
        return
    max_chars = options.max_chars
    start = held[0].start
    prev_end = -1
    while held:
        reach(start + max_chars)
        # candidate ends: ends of pieces 0.. that keep the chunk within max_chars (and go past the previous chunk)
        j = 0
        while j < len(held) and held[j].end - start <= max_chars:
            j += 1
        last = max(j - 1, 0)
        best_j = last
        reach(start + max_chars, last + 1)
        if last + 1 < len(held):  # not the end of the document: choose the strongest boundary that keeps the chunk full enough
            best_j = _strongest_boundary(held, last, start + options.min_fill * max_chars, prev_end)
        end = held[best_j].end
        yield start, end
        prev_end = end
        reach(start + max_chars, best_j + 1)
        if best_j + 1 >= len(held):
            break
        start = _next_start(content, held, best_j, start, end, options)
        i = 0
        while held[i].end <= start:
            i += 1
        del held[:i]


def _strongest_boundary(held: list[_Piece], last: int, floor: float, prev_end: int) -> int:
    """The piece, from `last` back, after which the chunk ends: the last turn's end in it, if any; else the
    strongest boundary among those that keep the chunk `floor` long at least (`last` itself always may);
    always past the previous chunk."""
    best_j, best_strength = last, -1
    for k in range(last, -1, -1):
        if held[k].end <= prev_end:
            break
        strength = held[k + 1].strength
        if strength == TURN:  # a turn's end wins at any fill: the turn after it starts the next chunk whole
            return k
        if held[k].end < floor and k != last:
            continue  # (a turn's end further back may still come)
        if strength > best_strength:
            best_strength, best_j = strength, k
    return best_j


def _next_start(content: str, held: list[_Piece], best_j: int, start: int, end: int, options: ChunkOptions) -> int:
    """Where the chunk after [start, end) begins: inside this one, as far back as overlap_chars allows
    and no further than lets it still take the next piece whole."""
    following = held[best_j + 1]
    lower = max(start + 1, end - options.overlap_chars, following.end - options.max_chars)
    if not (options.overlap_chars and lower < end):
        return following.start
    whole = next((p.start for p in held[:best_j + 1] if p.start >= lower), None)
    if whole is not None:
        return whole
    # no whole piece fits: the last lines that do, else the last words
    line = content.find("\n", lower - 1, end)
    while line != -1 and line + 1 < end and content[line + 1] == "\n":
        line += 1
    if line != -1 and line + 1 < end and content[line + 1:end].strip():
        return line + 1
    for w in _WORD.finditer(content, lower, end):
        if content[w.start() - 1].isspace():
            return w.start()
    return following.start


class _Said(NamedTuple):
    message_ids: list[str]
    roles: list[str]
    first_at: str | None
    last_at: str | None


def _said(spans: Sequence[Span], ends: list[int], start: int, end: int) -> _Said:
    """The messages whose text overlaps [start, end) (spans are in order and do not overlap), their roles
    and the times of the first and last that has one."""
    ids: list[str] = []
    roles: list[str] = []
    times: list[str] = []
    for k in range(bisect.bisect_right(ends, start), len(spans)):
        span = spans[k]
        if span.start >= end:
            break
        if span.message_id is not None and span.message_id not in ids:
            ids.append(span.message_id)
        if span.role is not None and span.role not in roles:
            roles.append(span.role)
        if span.at is not None:
            times.append(span.at)
    return _Said(ids, roles, times[0] if times else None, times[-1] if times else None)


def chunk_document(doc: Document, options: ChunkOptions | None = None) -> list[Chunk]:
    return list(iter_chunks(doc, options))


def iter_chunks(doc: Document, options: ChunkOptions | None = None,
                offsets: Iterable[tuple[int, int]] | None = None, first: int = 0) -> Iterator[Chunk]:
    """The Document's chunks one at a time (`chunk_document`'s, in order); given `offsets` (some of its
    `chunk_spans`, the first of them at position `first`), those chunks only: a big Document's chunks are
    made a window at a time."""
    options = options or ChunkOptions()
    content = doc.content
    props = doc.props
    ends = [span.end for span in doc.spans]
    for position, (start, end) in enumerate(iter_chunk_spans(content, doc.spans, options) if offsets is None else offsets, first):
        said = _said(doc.spans, ends, start, end)
        yield Chunk(
            id=f"{props['key']}#{position}",
            document_key=props["key"],
            conversation_id=props["conversation_id"],
            source=props["source"],
            title=props["title"],
            position=position,
            char_start=start,
            char_end=end,
            text=content[start:end],
            message_ids=said.message_ids,
            state_version=props["state_version"],
            roles=said.roles,
            created_at=said.first_at,
            updated_at=said.last_at,
        )


def chunks_jsonl(chunks: Iterable[Chunk]) -> Iterable[bytes]:
    """The chunks' JSON Lines: everything but the vectors (those are the Parquet beside them)."""
    for chunk in chunks:
        row = chunk.model_dump(exclude={"embedding", "embedding_model"})
        yield (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "replace")
