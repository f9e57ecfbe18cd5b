"""The Chat Export extension's Markdown layout: a `sys` fence, one empty ```md fence per turn, sources.

    ```md            ```md             ```md
    sys              user:             sources
    platform: ...    ```               1. [Title](https://...)
    ```                                ```
                     <body, verbatim>

Bodies are written verbatim: their own code fences (```python, ~~~, even ```md blocks)
stay as they are, and chatetl's reader, which follows a body's fences, reads them back.
Two things a Markdown body cannot carry in this layout are adjusted so the file still
reads back into the same turns (each one keeps its rendering):

- a body that leaves a code fence open (a cut-off answer, a stray ```) would swallow the
  next turn's marker: a closing fence is added at its end;
- a ```md block at the top level of a body that looks exactly like a marker (a label
  such as `user:` and nothing else) or a `sources` list would be read as one: its opening
  line is written ``` md (the same info string to any Markdown renderer).

The writer checks its output with the reader's own parser and applies these only to the
bodies that need them (`MarkdownResult.adjusted`); bodies whose fence lines are all balanced
and hold no top-level ```md block read back as written and skip that check (`reads_back_plainly`). The layout also has no way to carry
line breaks as `\\r` or blank lines at the end of a body: `\\r\\n` and `\\r` become `\\n`,
trailing blank lines are dropped (`markdown_equivalent` says what a body reads back as).

The file's bytes come from `markdown_bytes`: for a chat without control characters whose bodies all
read back plainly (most), the render of its bodies, encoded, with one check of the whole file for
controls; for any other chat, `render_markdown`'s text. The same bytes either way (the golden files of
tests/exports/test_export_equivalence.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chatetl.exports.inert import inert_if_linked
from chatetl.exports.meta import ExportView, encode, has_controls_utf8, safe_link, source_list, without_controls
from chatetl.model import MessageKind, Role
from chatetl.readers.platforms.chat_export.markdown import parse_markdown_lines
from chatetl.readers.report import ReadReport
from chatetl.selection import OutputTurn

# assistant display tags that chatetl's reader (and the extension) read as the assistant
ASSISTANT_TAGS = frozenset({"assistant", "chatgpt", "claude", "grok", "gemini", "perplexity", "deepseek", "copilot", "mistral"})
_MD_LINE = re.compile(r"^(`{3,})md([ \t]*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _one_line(value: str) -> str:
    return " ".join(without_controls(value).split())  # a title with newlines must not break the fence


def _shown_line(value: str) -> str:
    """A value shown as text on one line (a title, a model, a source without a link): never a link, an image or HTML."""
    return inert_if_linked(_one_line(value))


def link_text(value: str) -> str:
    """A link's text on one line, with what would end the link early escaped (`\\`, `[`, `]`), and
    an HTML tag in it made text."""
    text = _LINK_SPECIAL.sub(r"\\\g<0>", _one_line(value))
    return text.replace("<", "\\<") if _TAG.search(text) else text


_LINK_SPECIAL = re.compile(r"[\\\[\]]")
_TAG = re.compile(r"<[A-Za-z/!?]")


def link_url(url: str) -> str:
    """A link's destination: whitespace percent-encoded, and parentheses too unless they pair up
    (`…/wiki/Foo_(bar)` stays as it is), so nothing in it ends the link early."""
    url = re.sub(r"\s", lambda m: f"%{ord(m.group(0)):02X}", url)
    depth = 0
    for ch in url:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            break
    if depth:
        url = url.replace("(", "%28").replace(")", "%29")
    return url


def markdown_equivalent(text: str) -> str:
    """What a body reads back as from this layout: `\\n` line breaks, no trailing blank lines."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    elif not text or not text[-1].isspace():
        return text  # (most bodies: nothing to take off the end)
    content = len(text.rstrip())  # the end of the last line that is not blank
    if not content:
        return ""
    end = text.find("\n", content)
    return text if end < 0 else text[:end]


_TURN, _ASSISTANT = MessageKind.TURN, Role.ASSISTANT
_ROLE_LABEL = {r: r.value for r in Role}
_PART_LABEL = {MessageKind.REASONING: "reasoning", MessageKind.TOOL_CALL: "tool_call", MessageKind.TOOL_RESULT: "tool_result",
               MessageKind.SUMMARY: "summary", MessageKind.HIDDEN: "system"}


def marker_label(turn: OutputTurn) -> str:
    """What a turn's marker says: its role (an assistant's display tag where the reader knows it), or the part it is."""
    if turn.kind is _TURN:
        if turn.role is _ASSISTANT and turn.tag in ASSISTANT_TAGS:
            return turn.tag
        return _ROLE_LABEL[turn.role]
    return _PART_LABEL.get(turn.kind, "system")


def _closes(line: str, char: str, length: int) -> bool:
    stripped = line.rstrip()
    body = stripped.lstrip(" ")
    return len(stripped) - len(body) <= 3 and len(body) >= length and body == char * len(body)


def adjust_body(text: str) -> str:
    """Defuse marker-shaped ```md lines at a body's top level and close a fence left open."""
    lines = text.split("\n")
    fence: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        if fence is not None:
            if _closes(line, *fence):
                fence = None
            continue
        m = _MD_LINE.match(line)
        if m:
            lines[i] = f"{m.group(1)} md{m.group(2)}"
            fence = ("`", len(m.group(1)))
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
    if fence is not None:
        lines.append(fence[0] * fence[1])
    return "\n".join(lines)


_MARKERS: dict[str, str] = {}  # label -> its marker's lines and the empty one after them, made once


def _render(view: ExportView, bodies: list[str]) -> str:
    out = ["```md", "sys"]
    meta = view.meta()
    if "exported_at" in meta:  # the extension's Markdown calls it `exported`
        meta = {("exported" if k == "exported_at" else k): v for k, v in meta.items()}
    out += [f"{k}: {_shown_line(str(v))}" for k, v in meta.items()]
    out += ["```", ""]
    add = out.extend
    for turn, body in zip(view.turns, bodies):
        if turn.kind is _TURN:  # (marker_label, inline: most turns)
            tag = turn.tag
            label = tag if turn.role is _ASSISTANT and tag in ASSISTANT_TAGS else _ROLE_LABEL[turn.role]
        else:
            label = marker_label(turn)
        marker = _MARKERS.get(label) or _MARKERS.setdefault(label, f"```md\n{label}:\n```\n")  # (its last line "" too)
        add((marker, body, ""))  # the lines "```md", "<label>:", "```", "", body, ""
        links = source_list(turn.citations) if turn.citations else None
        if links:
            out += ["```md", "sources"]
            for i, s in enumerate(links, 1):
                url = safe_link(s.get("url"))  # javascript:, data: ... are never links: their title (or the URL) as text
                title = s.get("title") or s.get("url") or ""
                out.append(f"{i}. [{link_text(title)}]({link_url(url)})" if url else f"{i}. {_shown_line(title)}")
            out += ["```", ""]
    return "\n".join(out)


def _read_back(text: str) -> list[str]:
    state = parse_markdown_lines(iter(text.split("\n")), ReadReport())
    return [m["text"] for m in state.messages]


@dataclass
class MarkdownResult:
    text: str
    adjusted: list[int] = field(default_factory=list)  # indexes of turns whose body had to be adjusted
    exact: bool = True  # False only if the reader still reads something else back (never seen: a bug)


# the lines that can open or close a code fence (CommonMark: up to 3 spaces, then ``` or ~~~), each after
# its line break: a pattern that opens with a literal character is searched for that character first,
# where `^` in multi-line mode is tried at every character (several times slower on a body with a fence)
_FENCE_LINES = re.compile(r"\n( {0,3}(?:```|~~~)[^\n]*)")


def fence_lines(body: str) -> list[str]:
    """The lines of `body` that can open or close a code fence, in order: what
    `^ {0,3}(?:`{3,}|~{3,})[^\\n]*$` (multi-line) finds, found after a line break put before the body."""
    return _FENCE_LINES.findall("\n" + body)


def reads_back_plainly(body: str) -> bool:
    """Whether the reader reads `body` back as written, decided from its fence lines alone (the only
    lines that can end a body): every fence it opens is closed, and no ```md block stands at its top
    level (which the reader might take for a marker). Everything else is text to the reader."""
    if ("`" not in body or "```" not in body) and ("~" not in body or "~~~" not in body):
        return True  # (one character is looked for at memchr speed, three several times slower)
    fence: tuple[str, int] | None = None
    for line in fence_lines(body):
        if fence is not None:
            if _closes(line, *fence):
                fence = None
            continue
        if "md" in line and _MD_LINE.match(line):
            return False
        f = _FENCE.match(line)
        if f and not (f.group(1)[0] == "`" and "`" in f.group(2)):
            fence = (f.group(1)[0], len(f.group(1)))
    return fence is None


def render_markdown(view: ExportView) -> MarkdownResult:
    bodies = [without_controls(markdown_equivalent(view.markdown(t))) for t in view.turns]
    text = _render(view, bodies)
    if all(reads_back_plainly(b) for b in bodies):
        return MarkdownResult(text)  # (most chats; tests/exports/test_roundtrip.py checks it on random bodies)
    back = _read_back(text)
    if back == bodies:
        return MarkdownResult(text)
    adjusted: list[int] = []
    for _ in range(len(bodies) + 1):
        back = _read_back(text)
        if back == bodies:
            return MarkdownResult(text, adjusted)
        # the first body that does not read back as written, and every later one, is suspect: fix the first
        bad = next((i for i, (a, b) in enumerate(zip(back, bodies)) if a != b), min(len(back), len(bodies)))
        if bad >= len(bodies) or bad in adjusted:
            break
        bodies[bad] = adjust_body(bodies[bad])
        adjusted.append(bad)
        text = _render(view, bodies)
    return MarkdownResult(text, adjusted, _read_back(text) == bodies)


def to_markdown(view: ExportView) -> str:
    return render_markdown(view).text


def markdown_bytes(view: ExportView) -> bytes:
    """The file's bytes: `to_markdown(view)` as UTF-8 (a lone surrogate as `?`), the common case first.

    Most chats hold no control character and no body that needs the read-back check: their file is
    the render of the bodies as they read back (`markdown_equivalent`), encoded. Whether a control
    is anywhere is decided once, on the encoded file (`has_controls_utf8`), rather than on every body:
    the marker and meta lines are made the same way on both paths, so a file without one has bodies
    without one. Any other chat goes the whole way (`render_markdown`)."""
    bodies = [markdown_equivalent(view.markdown(t)) for t in view.turns]
    data = encode(_render(view, bodies))
    if not has_controls_utf8(data) and all(reads_back_plainly(b) for b in bodies):
        return data
    return encode(render_markdown(view).text)
