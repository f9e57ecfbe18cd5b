"""Chat-export Markdown: fenced ```md blocks (`sys` meta, `user:`/`assistant:`/... role markers,
`sources`) with the message bodies between them, parsed line by line with a state machine
that knows the bodies' own code fences (`MarkdownState`; the Markdown exporter reads its
own output back with it).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from chatetl.model import Conversation
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.chat_export.builder import (
    MD_EXTRAS,
    conversation_from_export,
)
from chatetl.readers.report import ReadReport

_MD_MARKER = re.compile(r"^(`{3,})md[ \t]*$")  # a fence whose info string is exactly `md`, at column 0
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ROLE_LABEL = re.compile(r"^[a-z][a-z0-9 _.\-]*:$")
_KNOWN_ROLE_LABEL = re.compile(r"^(user|assistant|system|human):$", re.IGNORECASE)
_SOURCE_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+(.*?)\s*$")
_MD_LINK = re.compile(r"^\[(?P<title>.*)\]\((?P<url>[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)$")
_BARE_URL = re.compile(r"https?://\S+")
_LINK_ESCAPE = re.compile(r"\\([\\\[\]])")  # `\[`, `\]`, `\\` in a link's text (Markdown's backslash escapes)


def _closes(line: str, char: str, length: int) -> bool:
    """A closing fence: up to 3 spaces, at least `length` of `char`, nothing else but spaces."""
    stripped = line.rstrip()
    body = stripped.lstrip(" ")
    if len(stripped) - len(body) > 3 or len(body) < length:
        return False
    return body == char * len(body)


def _is_label(label: str) -> bool:
    return label in ("sys", "sources") or bool(_ROLE_LABEL.match(label) or _KNOWN_ROLE_LABEL.match(label))


def _is_role_label(label: str) -> bool:
    return label not in ("sys", "sources")


@dataclass
class _Candidate:
    """An open ```md fence: a marker, unless what follows shows it is a body's own code block."""

    ticks: int
    lines: list[str]
    label: str | None = None
    payload: list[str] = field(default_factory=list)


@dataclass
class MarkdownState:
    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    body: list[str] | None = None  # the current message's body lines while a body is open
    body_fence: tuple[str, int] | None = None  # an open code fence inside a body: (char, length)
    candidate: _Candidate | None = None
    stray: list[str] = field(default_factory=list)  # text outside any message body
    sys_lines: list[str] = field(default_factory=list)  # `sys` lines that are not `key: value`
    orphan_sources: list[dict[str, str]] = field(default_factory=list)  # `sources` before any message

    def text(self, line: str) -> None:
        if self.body is not None:
            self.body.append(line)
        elif line.strip():
            self.stray.append(line)

    def feed(self, line: str) -> None:
        cand = self.candidate
        if cand is not None:
            if _closes(line, "`", cand.ticks):
                cand.lines.append(line)
                self.finish(cand)
                return
            cand.lines.append(line)
            if cand.label is None:
                label = line.strip()
                # the one `sys` fence comes before the messages: a later one is a body's md code block
                if _is_label(label) and not (label == "sys" and self.messages):
                    cand.label = label
                else:
                    self.demote(cand)
                return
            if _is_role_label(cand.label) and line.strip():
                self.demote(cand)  # role markers are empty: this is an md code block in a body
                return
            cand.payload.append(line)
            return
        if self.body_fence is not None:
            self.text(line)
            if _closes(line, *self.body_fence):
                self.body_fence = None
            return
        m = _MD_MARKER.match(line)
        if m:
            self.candidate = _Candidate(ticks=len(m.group(1)), lines=[line])
            return
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            self.body_fence = (m.group(1)[0], len(m.group(1)))
        self.text(line)

    def demote(self, cand: _Candidate, closed: bool = False) -> None:
        """The ```md fence was a body's own code block: its lines are body text."""
        self.candidate = None
        for line in cand.lines:
            self.text(line)
        if not closed:
            self.body_fence = ("`", cand.ticks)

    def finish(self, cand: _Candidate) -> None:
        self.candidate = None
        label = cand.label
        if label is None:
            self.demote(cand, closed=True)  # an empty ```md block
            return
        if label == "sources" and not all(_SOURCE_LINE.match(p) for p in cand.payload if p.strip()):
            self.demote(cand, closed=True)  # not a numbered list of links: a body's md code block
            return
        self.close_body()
        if label == "sys":
            for raw in cand.payload:
                if not raw.strip():
                    continue
                key, sep, value = raw.partition(":")
                if sep and key.strip():
                    self.meta.setdefault(key.strip().lower().replace(" ", "_"), value.strip())
                else:
                    self.sys_lines.append(raw.strip())
        elif label == "sources":
            sources = _parse_sources(cand.payload)
            if self.messages:
                self.messages[-1].setdefault("sources", []).extend(sources)
            else:
                self.orphan_sources.extend(sources)
        else:
            tag = label[:-1].strip()
            self.messages.append({"role": tag, "role_tag": tag, "text": ""})
            self.body = []

    def close_body(self) -> None:
        if self.body is None or not self.messages:
            self.body = None
            return
        lines = self.body
        if lines and not lines[0].strip():
            lines = lines[1:]  # exactly one leading blank line (the one after the marker)
        end = len(lines)
        while end and not lines[end - 1].strip():
            end -= 1
        self.messages[-1]["text"] = "\n".join(lines[:end])
        self.body = None

    def end(self, report: ReadReport) -> None:
        cand = self.candidate
        if cand is not None:
            if cand.label is not None:
                self.finish(cand)  # a marker whose closing fence is missing at the end of the file
            else:
                self.demote(cand)
        if self.body_fence is not None:
            report.unknown("chat_export.md:unclosed-code-fence")
        self.close_body()


def _parse_sources(lines: list[str]) -> list[dict[str, str]]:
    out = []
    for raw in lines:
        m = _SOURCE_LINE.match(raw)
        if not m:
            continue
        item = m.group(1)
        link = _MD_LINK.match(item)
        if link:
            out.append({"title": _LINK_ESCAPE.sub(r"\1", link.group("title")), "url": link.group("url")})
            continue
        bare = _BARE_URL.search(item)
        if bare:
            title = item[: bare.start()].strip(" -–—:") or None
            out.append({"title": title, "url": bare.group(0).rstrip(").,;")} if title else {"url": bare.group(0).rstrip(").,;")})
        elif item:
            out.append({"title": item})
    return out


def parse_markdown_lines(lines: Iterator[str], report: ReadReport) -> MarkdownState:
    state = MarkdownState()
    for raw in lines:
        state.feed(raw.rstrip("\r\n"))
    state.end(report)
    return state


def read_markdown(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A Markdown export: ```md fences mark meta (`sys`), each message (`user:` ...) and `sources`."""

    def records() -> Iterator[tuple[str, Any]]:
        with entry.open() as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None)
            state = parse_markdown_lines(iter(text), report)
        if not state.messages:
            report.error(
                entry.name,
                "",
                "no chat-export role markers found (```md fences labelled user:, assistant:, ...): not a chat-export Markdown file",
            )
            return
        record: dict[str, Any] = dict(state.meta)
        extras: dict[str, Any] = {}
        if state.stray:
            report.unknown("chat_export.md:text-outside-messages")
            extras["text_outside_messages"] = "\n".join(state.stray)
        if state.sys_lines:
            report.unknown("chat_export.md:sys-line-without-key")
            extras["sys_lines"] = state.sys_lines
        if state.orphan_sources:
            report.unknown("chat_export.md:sources-before-any-message")
            extras["orphan_sources"] = state.orphan_sources
        record[MD_EXTRAS] = extras
        record["messages"] = state.messages
        yield "", record

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="md", file=entry.name)

    yield from convert_records(entry, records(), report, convert)


