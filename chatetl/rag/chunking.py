"""Chunks for retrieval: a Document's content cut into overlapping pieces on natural boundaries.

Cutting: the content is split into pieces that never cross a turn; a turn is split into
paragraphs (blank lines outside fenced code blocks), a paragraph longer than a chunk into
lines, a line into words, and only a single word longer than a chunk is cut mid-word.
Pieces are packed greedily up to `max_chars`; among the possible ends, a turn boundary
wins over a paragraph, a paragraph over a line, a line over a word, as long as the chunk
stays at least half full. The next chunk starts with the last pieces of the previous one
that fit in `overlap_chars` (whole paragraphs where they fit, else the last words).

Every chunk is an exact slice of its Document's content: `text == content[char_start:char_end]`,
and `message_ids` names the messages whose text it holds.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chatetl.rag.documents import Document, Span
from chatetl.settings import Settings

# boundary strength before a piece
TURN, PARAGRAPH, LINE, WORD, NONE = 4, 3, 2, 1, 0


class ChunkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_chars: int = Field(2000, ge=20)
    overlap_chars: int = Field(200, ge=0)
    min_fill: float = Field(0.5, gt=0, le=1)  # prefer a stronger boundary only while the chunk stays this full

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
    text_sha256: str = ""  # filled from `text` when not given
    embedding: list[float] | None = None
    embedding_model: str | None = None  # the model the embedding comes from (chatetl.rag.embeddings)

    def model_post_init(self, context: Any) -> None:
        if not self.text_sha256:
            self.text_sha256 = text_sha256(self.text)

    def graph_row(self) -> dict[str, Any]:
        row = self.model_dump(exclude={"title"})
        for name in ("embedding", "embedding_model"):
            if row[name] is None:
                del row[name]
        return row


def text_sha256(text: str) -> str:
    """What a chunk's text is, in one value: the key under which its vector is reused."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    strength: int  # boundary strength before this piece


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"\S+")


def _lines(text: str, base: int) -> list[tuple[int, int]]:
    """(start, end) of each line (without its newline), absolute."""
    out = []
    pos = 0
    for line in text.split("\n"):
        out.append((base + pos, base + pos + len(line)))
        pos += len(line) + 1
    return out


def _paragraphs(content: str, start: int, end: int) -> list[tuple[int, int]]:
    """Runs of non-blank lines; blank lines inside a fenced code block do not end a paragraph."""
    paras: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    fence: tuple[str, int] | None = None
    for s, e in _lines(content[start:end], start):
        line = content[s:e]
        blank = not line.strip()
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= fence[1]:
                fence = None
        else:
            m = _FENCE.match(line)
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
        if blank and fence is None:
            if cur is not None:
                paras.append(cur)
                cur = None
            continue
        if blank:
            continue  # a blank line inside a fence: the paragraph goes on
        cur = (cur[0], e) if cur is not None else (s, e)
    if cur is not None:
        paras.append(cur)
    return paras


def _split_long(content: str, start: int, end: int, limit: int, first_strength: int) -> list[_Piece]:
    """A paragraph longer than `limit`: lines, then words, then (a single huge word) hard cuts."""
    pieces: list[_Piece] = []
    strength = first_strength
    for ls, le in _lines(content[start:end], start):
        if not content[ls:le].strip():
            continue
        if le - ls <= limit:
            pieces.append(_Piece(ls, le, strength))
        else:
            word_strength = strength
            for w in _WORD.finditer(content, ls, le):
                ws, we = w.start(), w.end()
                while we - ws > limit:
                    pieces.append(_Piece(ws, ws + limit, word_strength))
                    ws += limit
                    word_strength = NONE
                pieces.append(_Piece(ws, we, word_strength))
                word_strength = WORD
        strength = LINE
    return pieces


def _pieces(content: str, spans: Sequence[Span], limit: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    for span in spans:
        strength = TURN
        for ps, pe in _paragraphs(content, span.start, span.end):
            if pe - ps <= limit:
                pieces.append(_Piece(ps, pe, strength))
            else:
                pieces.extend(_split_long(content, ps, pe, limit, strength))
            strength = PARAGRAPH
    return pieces


def chunk_spans(content: str, spans: Sequence[Span], options: ChunkOptions) -> list[tuple[int, int]]:
    """[start, end) of each chunk of `content` (see the module doc for the rules)."""
    pieces = _pieces(content, spans, options.max_chars)
    if not pieces:
        return []
    out: list[tuple[int, int]] = []
    start = pieces[0].start
    i = 0  # first piece that ends after `start`
    n = len(pieces)
    prev_end = -1
    while i < n:
        # candidate ends: ends of pieces i.. that keep the chunk within max_chars (and go past the previous chunk)
        j = i
        while j < n and pieces[j].end - start <= options.max_chars:
            j += 1
        last = max(j - 1, i)
        best_j = last
        if last + 1 < n:  # not the end of the document: choose the strongest boundary that keeps the chunk full enough
            floor = start + options.min_fill * options.max_chars
            best_strength = -1
            for k in range(last, i - 1, -1):
                if (pieces[k].end < floor and k != last) or pieces[k].end <= prev_end:
                    break
                strength = pieces[k + 1].strength
                if strength > best_strength:
                    best_strength, best_j = strength, k
        end = pieces[best_j].end
        out.append((start, end))
        prev_end = end
        if best_j + 1 >= n:
            break
        # overlap: the next chunk starts inside this one, as far back as overlap_chars allows
        # and no further than lets it still take the next piece whole
        following = pieces[best_j + 1]
        nxt = following.start
        lower = max(start + 1, end - options.overlap_chars, following.end - options.max_chars)
        if options.overlap_chars and lower < end:
            whole = next((p.start for p in pieces[i:best_j + 1] if p.start >= lower), None)
            if whole is not None:
                nxt = whole
            else:  # no whole piece fits: the last lines that do, else the last words
                line = content.find("\n", lower - 1, end)
                while line != -1 and line + 1 < end and content[line + 1] == "\n":
                    line += 1
                if line != -1 and line + 1 < end and content[line + 1:end].strip():
                    nxt = line + 1
                else:
                    for w in _WORD.finditer(content, lower, end):
                        if content[w.start() - 1].isspace():
                            nxt = w.start()
                            break
        start = nxt
        while pieces[i].end <= start:
            i += 1
    return out


def _message_ids(spans: Sequence[Span], ends: list[int], start: int, end: int) -> list[str]:
    """The messages whose text overlaps [start, end) (spans are in order and do not overlap)."""
    ids: list[str] = []
    for k in range(bisect.bisect_right(ends, start), len(spans)):
        span = spans[k]
        if span.start >= end:
            break
        if span.message_id is not None and span.message_id not in ids:
            ids.append(span.message_id)
    return ids


def chunk_document(doc: Document, options: ChunkOptions | None = None) -> list[Chunk]:
    options = options or ChunkOptions()
    content = doc.content
    props = doc.props
    ends = [span.end for span in doc.spans]
    chunks = []
    for position, (start, end) in enumerate(chunk_spans(content, doc.spans, options)):
        chunks.append(
            Chunk(
                id=f"{props['key']}#{position}",
                document_key=props["key"],
                conversation_id=props["conversation_id"],
                source=props["source"],
                title=props["title"],
                position=position,
                char_start=start,
                char_end=end,
                text=content[start:end],
                message_ids=_message_ids(doc.spans, ends, start, end),
                state_version=props["state_version"],
            )
        )
    return chunks


def chunks_jsonl(chunks: Iterable[Chunk]) -> Iterable[bytes]:
    """The chunks' JSON Lines: everything but the vectors (those are the Parquet beside them)."""
    for chunk in chunks:
        row = chunk.model_dump(exclude={"embedding", "embedding_model"})
        yield (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "replace")
