"""Rendered HTML (a chat answer exported as markup) back into the text a person read.

Gemini's Takeout activity holds each answer as the HTML the app rendered from the model's
Markdown (`p`, `h1`-`h6`, `ul`/`ol`/`li`, `pre`/`code`, `table`, `blockquote`, `hr`, `a`,
`img`, `strong`/`em`, `br`). This turns it back into Markdown-shaped plain text: paragraphs
apart by a blank line, headings with `#`, list items with `-` or `1.` (nested ones indented),
code blocks fenced, tables as `| a | b |` rows, links as `text (url)`, images as
`![alt](src)`; entities decoded, whitespace collapsed as a browser does (kept inside `pre`).
Nothing of the markup is kept: `script`, `style` and the like go with their content, a
`javascript:` link keeps only its text; a table's first row is its header. The markup is cut
into tags and text by one regular expression's split where every `<` opens a tag that ends, else
by an exact forward scan (the standard library's `html.parser` alone takes longer than this whole
conversion); it is lenient: unclosed, stray or broken tags never raise, a `<` that opens no tag is
text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape

_COLLAPSED = "\n\t\r\f"  # what HTML collapses besides the space (not a no-break space)
_BLANK_RUNS = re.compile(r"\n{3,}")
_SKIPPED = frozenset({"script", "style", "template", "noscript", "head", "title", "iframe", "object", "svg"})
_PARAGRAPHS = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "figure", "figcaption", "address",
     "details", "dl", "form", "fieldset", "center"}
)
_LINES = frozenset({"dt", "dd", "summary", "caption", "tr"})
_INLINE_MARKS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~", "strike": "~~"}
_SAFE_LINK = ("http://", "https://", "mailto:")
_MARKUP_START = re.compile(r"<(?=[A-Za-z/!?])")  # a "<" Markdown would read as a tag or an autolink
_MAX_NESTING = 16  # quote and list levels shown as prefixes
_PADDED_CELLS = 4096  # empty cells a table's short rows may gain beyond its own cells


@dataclass(frozen=True)
class HtmlText:
    text: str  # what the HTML showed, as Markdown-shaped plain text
    images: tuple[tuple[str, str], ...]  # (src, alt) of every <img>, in order


def html_to_text(html: str) -> HtmlText:
    """The text an HTML fragment shows, and the images it holds."""
    if "<" not in html and "&" not in html:  # plain text: only the whitespace collapses
        return HtmlText(_collapse_spaces(html).strip(), ())
    writer = _TextWriter()
    writer.feed(_inline_marks(html))
    return HtmlText(writer.result(), tuple(writer.images))


def _escaped(text: str) -> str:
    """Text a page showed as text, kept text in Markdown: `[`, `]` and a `<` that opens a tag
    backslash-escaped, so `[your bank](https://...)` or an `<img alt>` written in an answer never
    becomes a link, an image or markup in a Markdown export (`a < b` stays as it is)."""
    for c in "[]":
        if c in text:
            text = text.replace(c, "\\" + c)
    return _MARKUP_START.sub(r"\\<", text) if "<" in text else text


def _collapse_spaces(text: str) -> str:
    """Each run of HTML's whitespace (space, tab, line ends, form feed) as one space, as a browser shows
    text. By str.replace, at memchr speed: twice the rate of one regex substitution, which stepped
    through every character (bench/platforms/gemini.py's answers)."""
    for c in _COLLAPSED:
        if c in text:
            text = text.replace(c, " ")
    while "  " in text:  # (each pass halves the runs)
        text = text.replace("  ", " ")
    return text


_PRE_OPEN = re.compile(r"<pre\b", re.IGNORECASE)
_PRE_CLOSE = re.compile(r"</pre\s*>", re.IGNORECASE)
_INLINE_SUBS = (
    (re.compile(r"</?(?:strong|b)(?:\s[^>]*)?>", re.IGNORECASE), "**"),
    (re.compile(r"</?(?:em|i)(?:\s[^>]*)?>", re.IGNORECASE), "*"),
    (re.compile(r"</?(?:del|s|strike)(?:\s[^>]*)?>", re.IGNORECASE), "~~"),
    (re.compile(r"</?code(?:\s[^>]*)?>", re.IGNORECASE), "`"),
)


def _inline_marks(markup: str) -> str:
    """Whitespace collapsed, and bold, italics, strike-through and inline code as their Markdown marks,
    outside code blocks: done over the whole fragment at once (in the regex engine), so the text
    around them reaches the writer in one piece."""
    pieces = _pre_blocks(markup) if "<pre" in markup or "<PRE" in markup else [markup]
    for i in range(0, len(pieces), 2):  # (the odd pieces are the code blocks)
        piece = _collapse_spaces(pieces[i])  # whitespace collapsed, as HTML shows it outside code blocks
        # every mark ends at a ">": past the last one none matches, and tried there a pattern would
        # scan to the end for each opening (quadratic in a run of unclosed tags)
        last = piece.rfind(">") + 1
        head = piece[:last]
        for pattern, mark in _INLINE_SUBS:
            head = pattern.sub(mark, head)
        pieces[i] = head + piece[last:]
    return "".join(pieces)


def _pre_blocks(markup: str) -> list[str]:
    """`markup` split around its closed `<pre>` blocks (text, block, text, ...). Once no `</pre>`
    follows an opening, none follows a later one: the rest is text, found in one scan."""
    pieces: list[str] = []
    pos = 0
    while (opening := _PRE_OPEN.search(markup, pos)) and (closing := _PRE_CLOSE.search(markup, opening.end())):
        pieces += [markup[pos:opening.start()], markup[opening.start():closing.end()]]
        pos = closing.end()
    pieces.append(markup[pos:])
    return pieces


_TAG_OPEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_TAG_STOP = re.compile(r"[>\"']")


class _TagEnds:
    """Where a tag ends: at the first `>` outside its quoted values. A tag that never ends (the value
    ends first) has its `<` read as text; the scan that found so went to the value's end, so from
    then on a quote no longer hides a `>` (a tag ends at the next `>`, and with none left none
    does): every later scan stops at the `>` the reading jumps to, and a value is read in time
    linear in its length however many of its tags are left open."""

    def __init__(self, markup: str) -> None:
        self.markup = markup
        self.last = markup.rfind(">")
        self.quotes = True  # quoted values hide a ">" (until a scan for one ran to the end)

    def end(self, start: int) -> int:
        """The `>` of the tag whose attributes start at `start`, or -1."""
        markup = self.markup
        if start > self.last:
            return -1
        if not self.quotes:
            return markup.find(">", start)
        pos = start
        while stop := _TAG_STOP.search(markup, pos):
            at = stop.start()
            quote = markup[at]
            if quote == ">":
                return at
            pos = markup.find(quote, at + 1) + 1
            if not pos:
                break
        self.quotes = False
        return -1


_ATTRIBUTE = re.compile(r"""([A-Za-z_:][-A-Za-z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_ATTRIBUTES_READ = frozenset({"a", "img", "code", "ol"})  # the only tags whose attributes matter here
_NO_ATTRIBUTES: dict[str, str | None] = {}
_Attrs = list[tuple[str, str | None]]
# A tag that ends where the exact scan (_TagEnds) ends it: its name, then attributes holding no "<",
# ">" or "'" but in double-quoted values free of "<" and ">"; split() gives (text, "/" or "", name,
# attributes) per tag. A fragment where each "<" opens one needs no other scan.
_PLAIN_TAG = re.compile(r'<(/?)([A-Za-z][A-Za-z0-9-]*)([^<>"\']*(?:"[^"<>]*"[^<>"\']*)*)>')


def _attributes(raw: str) -> list[tuple[str, str | None]]:
    return [(a.lower(), unescape(v or w or x)) for a, v, w, x in _ATTRIBUTE.findall(raw)]


class _TextWriter:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.breaks = 0  # newlines wanted before the next text: 1 a line break, 2 a blank line
        self.col0 = True  # the next text starts a line
        self.prefixes: list[str] = []  # what each line starts with: "> " per quote, the indent of list items
        self.deeper = 0  # quotes and list items nested past _MAX_NESTING: no prefix of their own
        self.quotes = 0  # the quotes the last text was in
        self.marker: str | None = None  # a list item's "- " / "3. ", written before its first text
        self.lists: list[list[int]] = []  # [ordered, next number, an item open] (bools as ints)
        self.skip = 0  # inside script/style/...: nothing shows
        self.pre = 0  # inside <pre>: whitespace kept
        self.fence: str | None = None  # a code block's opening fence, written with its first text
        self.links: list[tuple[str | None, list[str]]] = []  # (href, the text shown) of each open link
        self.table: list[list[str]] | None = None  # the rows of the outermost table
        self.table_depth = 0
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.images: list[tuple[str, str]] = []
        self.code_span = False  # inside inline code: text kept as it is

    def feed(self, markup: str) -> None:
        """Cut `markup` into tags and text: at C speed when every "<" opens a tag that ends
        (`_PLAIN_TAG`, the common case), else by the exact scan (`_feed_exact`)."""
        pieces = _PLAIN_TAG.split(markup)
        if len(pieces) // 4 != markup.count("<"):
            self._feed_exact(markup)
            return
        data, start, end = self.handle_data, self.handle_starttag, self.handle_endtag
        text = pieces[0]
        if text:
            data(unescape(text) if "&" in text else text)
        for closing, name, raw, text in zip(pieces[1::4], pieces[2::4], pieces[3::4], pieces[4::4]):
            tag = name.lower()
            if closing:
                end(tag)
            elif not raw:
                start(tag, [])
            else:
                attrs = _attributes(raw) if tag in _ATTRIBUTES_READ else []
                if raw.endswith("/"):
                    self.handle_startendtag(tag, attrs)
                else:
                    start(tag, attrs)
            if text:
                data(unescape(text) if "&" in text else text)

    def _feed_exact(self, markup: str) -> None:
        """Cut `markup` into comments, tags and text in one forward pass: a comment, a tag (its
        attributes may hold a quoted ">"), a doctype or processing instruction, text; a "<" that
        opens none of them is text."""
        data, start, end = self.handle_data, self.handle_starttag, self.handle_endtag
        ends = _TagEnds(markup)
        size = len(markup)
        pos = 0
        lone = ""  # a "<" that opened no tag: text, read with the text after it (escaped as that makes it)
        while pos < size:
            lt = markup.find("<", pos)
            if lt < 0:
                lt = size
            if lt > pos or lone:
                text = markup[pos:lt]
                data(lone + (unescape(text) if "&" in text else text))
                lone = ""
            if lt == size:
                break
            opening = _TAG_OPEN.match(markup, lt)
            if opening:
                gt = ends.end(opening.end())
                if gt >= 0:
                    pos = gt + 1
                    tag, raw = opening.group(2).lower(), markup[opening.end():gt]
                    if opening.group(1):
                        end(tag)
                        continue
                    attrs = _attributes(raw) if raw and tag in _ATTRIBUTES_READ else []
                    if raw.endswith("/"):
                        self.handle_startendtag(tag, attrs)
                    else:
                        start(tag, attrs)
                    continue
            elif markup.startswith("<!--", lt):  # a comment: to its "-->", or to the end (bar a last line end)
                close = markup.find("-->", lt + 4)
                pos = close + 3 if close >= 0 else size - 1 if markup.endswith("\n") else size
                continue
            elif markup.startswith(("<!", "<?"), lt) and lt < ends.last:  # a doctype or instruction: nothing
                pos = markup.find(">", lt) + 1
                continue
            lone = "<"  # a "<" that opens no tag is text
            pos = lt + 1
        if lone:
            data(lone)

    # ---- writing ----

    def _block(self, n: int) -> None:
        if self.cell is not None:
            self.cell.append(" ")
        elif self.marker is None and n > self.breaks:  # a paragraph right inside a list item starts on the marker's line
            self.breaks = n

    def _write(self, text: str) -> None:
        """Text in the current line (no newlines in it)."""
        if not text:
            return
        if self.cell is not None:
            self.cell.append(text)
            return
        parts = self.parts
        if self.breaks:
            if parts:
                if self.breaks > 1:  # a blank line between two lines of one quote stays in it (">")
                    quotes = min(self.prefixes.count("> "), self.quotes) if self.quotes else 0
                    parts.append("\n" + ("> " * quotes).rstrip() + "\n" if quotes else "\n\n")
                else:
                    parts.append("\n")
                self.col0 = True
            self.breaks = 0
        if self.col0:
            self.quotes = self.prefixes.count("> ") if self.prefixes else 0
            if self.marker is not None:
                parts.append("".join(self.prefixes if self.deeper else self.prefixes[:-1]) + self.marker)
                self.marker = None
            elif self.prefixes:
                parts.append("".join(self.prefixes))
            text = text.lstrip(" ") if not self.pre else text
            self.col0 = False
            if not text:
                return
        parts.append(text)

    def _write_lines(self, text: str) -> None:
        """Text kept as it is (a code block's lines, a table's rows): one line at a time."""
        if self.pre and self.cell is None and self.marker is None and not self.prefixes and text[:1] not in ("", "\n"):
            self._write_code_lines(text.split("\n"))
            return
        for i, line in enumerate(text.split("\n")):
            if i:
                self.breaks = max(self.breaks, 1) if self.cell is None else 0
                if self.cell is not None:
                    self.cell.append(" ")
            if line:
                self._write(line)
            elif i:  # an empty line inside a code block: kept
                if self.parts:
                    self.parts.append("\n")
                self.breaks = 0
                self.col0 = True

    def _write_code_lines(self, lines: list[str]) -> None:
        """What _write_lines does with a code block's lines, the first one not empty, when no prefix
        starts a line: they go as they are, apart by line ends; the empty lines that end them stay
        parts of their own (a closing `</pre>` drops them)."""
        self._write(lines[0])
        if len(lines) == 1:
            return
        blank = len(lines)
        while not lines[blank - 1]:
            blank -= 1
        if blank > 1:
            self.parts.append("\n" + "\n".join(lines[1:blank]))
            self.quotes = 0
        self.parts += ["\n"] * (len(lines) - blank)
        self.col0 = blank < len(lines)

    def result(self) -> str:
        if self.fence is None and self.pre:
            self._write_lines("```")
        text = "".join(self.parts)
        text = "\n".join([line.rstrip() for line in text.split("\n")])
        return (_BLANK_RUNS.sub("\n\n", text) if "\n\n\n" in text else text).strip("\n")

    # ---- tags ----

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag in _SKIPPED:
                self.skip += 1
            return
        opener = _OPENERS.get(tag)
        if opener is not None:
            opener(self, tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "img", "hr"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag in _SKIPPED:
                self.skip -= 1
            return
        closer = _CLOSERS.get(tag)
        if closer is not None:
            closer(self, tag)

    # each opening and closing tag's effect (_OPENERS, _CLOSERS: the tags that have one)

    def _open_skipped(self, tag: str, attrs: _Attrs) -> None:
        self.skip += 1

    def _open_paragraph(self, tag: str, attrs: _Attrs) -> None:
        self._block(2)

    def _open_line(self, tag: str, attrs: _Attrs) -> None:
        self._block(1)

    def _open_br(self, tag: str, attrs: _Attrs) -> None:
        if self.cell is not None:
            self.cell.append(" ")
        elif self.pre:
            self._write_lines("\n")
        else:
            self.breaks = min(self.breaks + 1, 2) if self.parts else 0

    def _open_heading(self, tag: str, attrs: _Attrs) -> None:
        self._block(2)
        self._write("#" * int(tag[1]) + " ")

    def _open_list(self, tag: str, attrs: _Attrs) -> None:
        self._block(1 if self.lists else 2)
        start = dict(attrs).get("start") if attrs else None
        self.lists.append([tag == "ol", int(start) if start and start.isdigit() else 1, False])

    def _open_li(self, tag: str, attrs: _Attrs) -> None:
        self._open_item()

    def _open_blockquote(self, tag: str, attrs: _Attrs) -> None:
        self._block(2)
        self._nest("> ")

    def _open_pre(self, tag: str, attrs: _Attrs) -> None:
        self._block(2)
        self.pre += 1
        self.fence = "```"

    def _open_code(self, tag: str, attrs: _Attrs) -> None:
        if not self.pre:
            self._write("`")
            return
        classes = (dict(attrs).get("class") or "") if attrs else ""
        language = next((c[9:] for c in classes.split() if c.startswith("language-")), "")
        if self.fence == "```" and language:
            self.fence = "```" + language

    def _open_mark(self, tag: str, attrs: _Attrs) -> None:
        self._write(_INLINE_MARKS[tag])

    def _open_a(self, tag: str, attrs: _Attrs) -> None:
        if self.links:  # links do not nest: a new one ends the open one, as in a browser
            self.handle_endtag("a")
        self.links.append((dict(attrs).get("href") if attrs else None, []))

    def _open_img(self, tag: str, attrs: _Attrs) -> None:
        attr = dict(attrs) if attrs else _NO_ATTRIBUTES
        src, alt = (attr.get("src") or "").strip(), (attr.get("alt") or "").strip()
        self.images.append((src, alt))
        shown = src if src.startswith(("http://", "https://")) or (src and ":" not in src.split("/")[0]) else ""
        alt = _escaped(_collapse_spaces(alt))
        glued = not self.breaks and bool(self.parts) and not self.parts[-1][-1:].isspace() and self.cell is None
        if glued:  # right after a word: its own block, never glued to the sentence before it
            self._block(2)
        self._write(f"![{alt}]({shown})" if shown else f"![{alt}]")
        if glued:
            self._block(2)

    def _open_hr(self, tag: str, attrs: _Attrs) -> None:
        self._block(2)
        self._write("---")
        self._block(2)

    def _open_table(self, tag: str, attrs: _Attrs) -> None:
        self.table_depth += 1
        if self.table_depth == 1:
            self._block(2)
            self.table = []

    def _open_cell(self, tag: str, attrs: _Attrs) -> None:
        if self.table_depth == 1:
            if self.row is None:
                self.row = []
            self.cell = []

    def _close_paragraph(self, tag: str) -> None:
        self._block(2)

    def _close_line(self, tag: str) -> None:
        self._block(1)

    def _close_list(self, tag: str) -> None:
        if self.lists:
            self._close_item()
            self.lists.pop()
        self._block(1 if self.lists else 2)

    def _close_li(self, tag: str) -> None:
        self._close_item()

    def _close_blockquote(self, tag: str) -> None:
        if self.deeper:
            self.deeper -= 1
        elif "> " in self.prefixes:
            self.prefixes.reverse()
            self.prefixes.remove("> ")
            self.prefixes.reverse()
        self._block(2)

    def _close_pre(self, tag: str) -> None:
        if not self.pre:
            return
        self.pre -= 1
        if self.fence is None:  # the block had text: close it on the line after its last one
            while self.parts and not self.parts[-1].strip("\n"):
                self.parts.pop()
            self.breaks = 1
            self._write("```")
        self.fence = None
        self._block(2)

    def _close_code(self, tag: str) -> None:
        if not self.pre:
            self._write("`")

    def _close_mark(self, tag: str) -> None:
        self._write(_INLINE_MARKS[tag])

    def _close_a(self, tag: str) -> None:
        if not self.links:
            return
        href, texts = self.links.pop()
        if href and href.startswith(_SAFE_LINK) and self.cell is None:
            shown = "".join(texts).strip()
            if shown != href and shown != href.removeprefix("mailto:"):
                self._write(f" ({href})" if shown else href)

    def _close_cell(self, tag: str) -> None:
        if self.table_depth == 1 and self.cell is not None and self.row is not None:
            self.row.append(_collapse_spaces("".join(self.cell)).strip().replace("|", "\\|"))
            self.cell = None

    def _close_tr(self, tag: str) -> None:
        if self.table_depth == 1 and self.row is not None and self.table is not None:
            if self.row:
                self.table.append(self.row)
            self.row = None

    def _close_table(self, tag: str) -> None:
        if self.table_depth:
            self.table_depth -= 1
            if self.table_depth == 0:
                self._write_table()

    def _escaped_outside_code(self, text: str) -> str:
        """`text` with what Markdown would read as a link or markup escaped (`_escaped`), but inside
        inline code (between the backticks `<code>` became), where a backslash would show."""
        if "`" not in text:
            return text if self.code_span else _escaped(text)
        pieces = text.split("`")
        for i, piece in enumerate(pieces):
            if i:
                self.code_span = not self.code_span
            if not self.code_span:
                pieces[i] = _escaped(piece)
        return "`".join(pieces)

    def _open_item(self) -> None:
        if not self.lists:
            self.lists.append([False, 1, False])
        self._close_item()
        current = self.lists[-1]
        self.marker = f"{current[1]}. " if current[0] else "- "
        current[1] += 1
        current[2] = True
        self._nest(" " * len(self.marker))
        self.breaks = max(self.breaks, 1) if self.parts else 0

    def _close_item(self) -> None:
        if self.lists and self.lists[-1][2]:
            self.lists[-1][2] = False
            self.marker = None
            if self.deeper:
                self.deeper -= 1
            elif self.prefixes:
                self.prefixes.pop()
            self.breaks = 1  # the next item on the next line (a tight list), whatever its paragraphs asked

    def _nest(self, prefix: str) -> None:
        """One more quote or list level: its prefix on every line inside it, up to _MAX_NESTING
        levels (deeper ones show as the deepest: a line's prefix, and the text, stay linear in the
        markup however deep it nests)."""
        if len(self.prefixes) < _MAX_NESTING:
            self.prefixes.append(prefix)
        else:
            self.deeper += 1

    def _write_table(self) -> None:
        rows, self.table = self.table or [], None
        if self.cell is not None or self.row:
            rows.append(self.row or [])
        self.cell = self.row = None
        if not rows:
            return
        width = max(len(r) for r in rows)
        if sum(width - len(r) for r in rows) > sum(len(r) for r in rows) + _PADDED_CELLS:
            width = 0  # short rows padded only while that keeps the text linear in the markup (GFM pads them itself)
        lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
        lines.insert(1, "|" + " --- |" * (width or len(rows[0])))
        self._block(2)
        self._write_lines("\n".join(lines))
        self._block(2)

    def handle_data(self, data: str) -> None:
        if self.skip or not data:
            return
        if self.pre:
            if self.fence is not None:  # the code block's first text opens it
                fence, self.fence = self.fence, None
                self._write_lines(fence)
                self.breaks = 1
                data = data.removeprefix("\n")
            self._write_lines(data)
            return
        text = _collapse_spaces(data)
        if "[" in text or "]" in text or "<" in text or "`" in text:  # (else nothing to escape)
            text = self._escaped_outside_code(text)
        if text.startswith(" ") and (self.col0 or self.breaks or not self.parts or self.parts[-1].endswith(" ")):
            text = text[1:]
        if not text:
            return
        for _, texts in self.links:
            texts.append(text)
        self._write(text)


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# the tags that do something, and what: a tag of neither table shows only its text
_OPENERS: dict[str, Callable[[_TextWriter, str, _Attrs], None]] = {
    **dict.fromkeys(_SKIPPED, _TextWriter._open_skipped),
    **dict.fromkeys(_PARAGRAPHS, _TextWriter._open_paragraph),
    **dict.fromkeys(_LINES, _TextWriter._open_line),  # (a row too: its cells are read at their own tags)
    **dict.fromkeys(_HEADINGS, _TextWriter._open_heading),
    **dict.fromkeys(_INLINE_MARKS, _TextWriter._open_mark),
    "br": _TextWriter._open_br, "ul": _TextWriter._open_list, "ol": _TextWriter._open_list, "li": _TextWriter._open_li,
    "blockquote": _TextWriter._open_blockquote, "pre": _TextWriter._open_pre, "code": _TextWriter._open_code,
    "a": _TextWriter._open_a, "img": _TextWriter._open_img, "hr": _TextWriter._open_hr, "table": _TextWriter._open_table,
    "td": _TextWriter._open_cell, "th": _TextWriter._open_cell,
}
_CLOSERS: dict[str, Callable[[_TextWriter, str], None]] = {
    **dict.fromkeys(_PARAGRAPHS | set(_HEADINGS), _TextWriter._close_paragraph),
    **dict.fromkeys(_LINES - {"tr"}, _TextWriter._close_line),
    **dict.fromkeys(_INLINE_MARKS, _TextWriter._close_mark),
    "ul": _TextWriter._close_list, "ol": _TextWriter._close_list, "li": _TextWriter._close_li,
    "blockquote": _TextWriter._close_blockquote, "pre": _TextWriter._close_pre, "code": _TextWriter._close_code,
    "a": _TextWriter._close_a, "td": _TextWriter._close_cell, "th": _TextWriter._close_cell, "tr": _TextWriter._close_tr,
    "table": _TextWriter._close_table,
}
