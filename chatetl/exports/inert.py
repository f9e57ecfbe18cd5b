"""Markdown that shows text as text: what a source showed as plain characters never becomes a link,
an image or HTML in a file a person opens (the `md` and `chat-export-md` exports, and the `html`
export, which renders bodies from Markdown).

Four places need it. A one-line value (a title, a model, a source named without a link) is
escaped where it would make one (`inert_if_linked`: `](`, `]:`, `<tag`, `<scheme:`), so an ordinary title
keeps its bytes and reads back as it was; a heading that nothing reads back is escaped always
(`inert_line`). A turn whose text the reader rendered from HTML (Gemini's answers: links there
became `text (url)`, so every `[...](...)` in it was text on the page) has its brackets and angle
brackets escaped outside code (`inert_markdown`), and is checked with markdown-it, links of any
scheme counted: what still renders one is escaped everywhere. A tool's code or output is a fenced
code block (`code_block`), so its line breaks and indentation show as they were.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# a bracket or angle bracket and the backslashes before it: an even run (none included) is the text's
# own backslashes, each doubled (still shown as itself) and the character escaped, so a backslash of the
# text never cancels the escape; an odd run already escapes it (the Gemini reader writes its answers'
# literal brackets so) and is kept, so nothing is escaped twice
_OPENERS = re.compile(r"(\\*)([\[\]<])")
# an inline link or image; a link reference definition (without one, `[x]` and `[x][y]` are text);
# an HTML tag, comment or autolink
_LINKED = re.compile(r"\][(:]|<[A-Za-z/!?]")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def _escape(text: str) -> str:
    return _OPENERS.sub(lambda m: m.group() if len(m.group(1)) % 2 else m.group(1) * 2 + "\\" + m.group(2), text)


def code_block(text: str, language: str = "") -> str:
    """`text` as a fenced code block: a fence of more backticks than any run inside it, so no line
    of the text can close it; `language` (a plain word, or nothing) its info string."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    info = language if re.fullmatch(r"[A-Za-z0-9_+.-]*", language) else ""
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def inert_line(value: str) -> str:
    """A one-line value with every `[`, `]` and `<` escaped: it shows the same and links nothing."""
    return _escape(value) if "[" in value or "]" in value or "<" in value else value


def inert_if_linked(value: str) -> str:
    """`inert_line(value)` where the value would render a link, an image or HTML; else the value as it is."""
    return _escape(value) if _LINKED.search(value) else value


def inert_markdown(text: str) -> str:
    """Markdown-shaped text whose brackets and angle brackets were characters on the page, escaped
    outside code (fenced blocks and code spans keep theirs, shown as they are); if markdown-it
    still finds a link, an image or HTML in it, escaped everywhere."""
    if "[" not in text and "<" not in text:
        return text
    if not _renders_links(text):  # the reader's Markdown escapes what the page showed as text: kept as it is
        return text
    out = _outside_code(text)
    return out if not _renders_links(out) else _escape(text)


def _outside_code(text: str) -> str:
    """`_prose` on the lines outside fenced code blocks; the blocks as they are."""
    out: list[str] = []
    prose: list[str] = []
    fence: tuple[str, int] | None = None
    for line in text.split("\n"):
        if fence is None:
            m = _FENCE.match(line)
            if m is None:
                prose.append(line)
                continue
            if prose:
                out.append(_prose("\n".join(prose)))
                prose = []
            fence = (m.group(1)[0], len(m.group(1)))
        else:
            body = line.strip()
            if body and len(body) >= fence[1] and body == fence[0] * len(body):
                fence = None
        out.append(line)
    if prose:
        out.append(_prose("\n".join(prose)))
    return "\n".join(out)


def _prose(text: str) -> str:
    """Text outside fenced blocks: each paragraph's code spans kept, the rest escaped."""
    pieces = []
    pos = 0
    for brk in _PARAGRAPH_BREAK.finditer(text):
        pieces.append(_paragraph(text[pos:brk.start()]))
        pieces.append(brk.group())
        pos = brk.end()
    pieces.append(_paragraph(text[pos:]))
    return "".join(pieces)


def _paragraph(text: str) -> str:
    """One paragraph: a run of n backticks opens a code span the next run of exactly n closes
    (CommonMark), found in one pass over the runs; an unclosed run is text."""
    runs = list(_BACKTICKS.finditer(text))
    by_length: dict[int, list[int]] = {}
    for i, run in enumerate(runs):
        by_length.setdefault(len(run.group()), []).append(i)
    next_of: dict[int, int] = {}  # per length: where in its list the search goes on
    out, pos, i = [], 0, 0
    while i < len(runs):
        n = len(runs[i].group())
        same = by_length[n]
        k = next_of.get(n, 0)
        while k < len(same) and same[k] <= i:
            k += 1
        next_of[n] = k
        if k == len(same):  # no closing run: these backticks are text
            i += 1
            continue
        close = same[k]
        out.append(_escape(text[pos:runs[i].start()]))
        out.append(text[runs[i].start():runs[close].end()])  # the code span, as it is
        pos = runs[close].end()
        i = close + 1
    out.append(_escape(text[pos:]))
    return "".join(out)


@lru_cache(maxsize=1)
def _checker() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = lambda url: True  # type: ignore[method-assign]  # every scheme counts: the export's renderer is not the only one
    return md


def _renders_links(text: str) -> bool:
    for token in _checker().parse(text):
        if token.type == "html_block":
            return True
        for child in token.children or ():
            if child.type in ("link_open", "image", "html_inline"):
                return True
    return False
