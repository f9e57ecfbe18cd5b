"""Gemini's Takeout activity as `MyActivity.html` (see chatetl.readers.platforms.gemini): one `outer-cell` div
per activity, cut as the file streams (each held alone, at most MAX_CELL_BYTES) and each read into the
`Row` its JSON row gives."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from chatetl.readers.entry import Entry
from chatetl.readers.htmltext import html_to_text
from chatetl.readers.platforms.gemini_rows import (
    SPACES,
    Row,
    is_gemini,
    is_local_file,
    make_row,
    short,
    shown_file_name,
    to_second,
)
from chatetl.readers.report import ReadReport

MAX_CELL_BYTES = 64 * 1024 * 1024  # one HTML activity cell; a longer one is reported and skipped
READ_BYTES = 1024 * 1024  # the HTML is read this much at a time

_CELL_START = b'<div class="outer-cell'
# The cell's patterns never re-scan past a closing they did not find (every scan of a cell stays linear in it,
# however many tags are left open): an element is its opening then the first closing after it, and once no
# closing follows an opening none follows a later one.
_CONTENT_CELL = re.compile(r'<div class="([^"]*)">')
_CONTENT_CLASS = re.compile(r"\bcontent-cell\b")
_HEADER_OPEN, _HEADER_CLOSE = '<p class="mdl-typography--title">', "</p>"
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_BLOCK_START = re.compile(r"<(?:p|h[1-6]|ul|ol|pre|table|blockquote|hr|div|dl|figure|section|img)\b", re.IGNORECASE)
_LINK_OPEN = re.compile(r"<(a|img)\s", re.IGNORECASE)
_LINK_CLOSE = re.compile(r"</a>", re.IGNORECASE)
_LINK_TARGET = {"a": re.compile(r'href="([^"]*)"'), "img": re.compile(r'src="([^"]*)"')}
_TAG = re.compile(r"<[^>]*>")
_CAPTION_OPEN, _CAPTION_CLOSE = "<b>", "</b>"


def cell_rows(entry: Entry, report: ReadReport) -> Iterator[Row | None]:
    for index, (where, cell) in enumerate(_iter_cells(entry, report)):
        try:
            yield row_from_cell(cell, index, where, report)
        except Exception as exc:  # noqa: BLE001 (a bad cell must never stop the rest of the file)
            report.error(entry.name, where, f"{type(exc).__name__}: {short(exc)}", raw=cell.encode()[:65536])


def _iter_cells(entry: Entry, report: ReadReport) -> Iterator[tuple[str, str]]:
    """(where, the text of one outer-cell div) for every activity, the file read READ_BYTES at a time:
    a cell ends where the next begins (an answer's own text cannot open one: it is escaped)."""
    marker = _CELL_START
    buf = bytearray()
    base = 0  # file offset of buf[0]
    start = -1  # where in buf the cell being read starts; -1 before the first cell
    search = 0  # where in buf the next cell start may be
    index = 0
    skipping = False  # the cell being read passed MAX_CELL_BYTES: dropped up to the next one
    with entry.open() as f:
        while True:
            chunk = f.read(READ_BYTES)
            buf += chunk
            while (nxt := buf.find(marker, search)) >= 0:
                if start >= 0:
                    if not skipping:
                        yield from _decoded(entry, report, index, base + start, bytes(buf[start:nxt]))
                    index += 1
                start, search, skipping = nxt, nxt + 1, False
            if not chunk:
                break
            search = max(search, len(buf) - len(marker) + 1)
            if start >= 0 and not skipping:
                if len(buf) - start <= MAX_CELL_BYTES:
                    if start:  # drop what was read before this cell, once a chunk
                        del buf[:start]
                        base, search, start = base + start, search - start, 0
                    continue
                report.error(entry.name, f"cell {index} (byte {base + start})", f"activity cell longer than {MAX_CELL_BYTES} bytes: skipped")
                skipping = True
            cut = max(0, len(buf) - (len(marker) - 1))  # the page's head or a skipped cell: only a cut cell start is kept
            del buf[:cut]
            base, search = base + cut, max(0, search - cut)
            start = 0 if start >= 0 else -1
    if start >= 0 and not skipping:
        yield from _decoded(entry, report, index, base + start, bytes(buf[start:]))


def _decoded(entry: Entry, report: ReadReport, index: int, offset: int, data: bytes) -> Iterator[tuple[str, str]]:
    where = f"cell {index} (byte {offset})"
    try:
        yield where, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.error(entry.name, where, f"not UTF-8 text: {exc.reason} at byte {offset + exc.start}", raw=data[:65536])


def row_from_cell(cell: str, index: int, where: str, report: ReadReport) -> Row | None:
    """One `outer-cell` of MyActivity.html as the Row its JSON row gives (None for another product's)."""
    header = _element(cell, _HEADER_OPEN, _HEADER_CLOSE)
    header_text = _plain(cell[header[1]:header[2]]) if header else None
    parts = _cell_parts(cell)
    body = parts.get("body")
    if body is None:
        raise ValueError("activity cell has no content cell")
    sections = _caption_sections(parts.get("caption", ""))
    products = [item["name"] for item in sections[0][1]] if sections else []
    if not is_gemini(header_text, products if header_text is None else []):
        report.skip("other product's activity")
        return None

    block = _BLOCK_START.search(body)
    head_end = block.start() if block else len(body)
    lines = _BR.split(body[:head_end])
    title_line = lines[0]
    title = _plain(title_line)
    time_at = next((i for i in range(1, len(lines)) if _takeout_time(_plain(lines[i])) is not None), None)
    extra: dict[str, Any] = {}
    if time_at is None:
        filled = [i for i in range(1, len(lines)) if _plain(lines[i])]
        if not filled:
            raise ValueError("activity cell has no time")
        time_at = filled[-1]
        extra["time_text"] = _plain(lines[time_at])
        report.unknown("gemini.html.time_format")
    time_text = _plain(lines[time_at])
    when = _takeout_time(time_text)

    subtitles = [_line_item(line) for line in lines[1:time_at] if _plain(line) or _first_anchor(line)]
    answer_html = "<br>".join(lines[time_at + 1:]) + body[head_end:]
    answers: list[str] = []
    images: list[list[list[str]]] = []
    if _BR.sub("", answer_html).strip():
        rendered = html_to_text(answer_html)
        answers.append(rendered.text)
        images.append([[src, alt] for src, alt in rendered.images])

    # the sections after "Products:", but for "Why is this here?" (the one linking the activity controls)
    details = [item for section, items in sections[1:] if "activitycontrols" not in section for item in items]
    if subtitles:
        extra["subtitles"] = subtitles
    if details:
        extra["details"] = details
    files: list[list[Any]] = []
    for src in _attachment_links(parts.get("right", "")):
        files.append([src, None])
    for s in subtitles:
        url = s.get("url")
        if isinstance(url, str) and is_local_file(url):
            files.append([url, shown_file_name(s.get("name"))])
    links = [href for href, _ in _anchors(title_line)]
    links = [*[v for d in details for v in (d.get("url"), d.get("name")) if isinstance(v, str)], *map(html.unescape, links)]
    second = to_second(when) if when else time_text
    return make_row(index, where, when.timestamp() if when else None, second, title, answers, images, files, links, subtitles, extra, report)


def _cell_parts(cell: str) -> dict[str, str]:
    """The inner HTML of a cell's content cells: "body" (the activity), "right", "caption"."""
    found = [m for m in _CONTENT_CELL.finditer(cell) if _CONTENT_CLASS.search(m.group(1))]
    parts: dict[str, str] = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(cell)
        inner = cell[m.end():end].rstrip()
        classes = m.group(1).split()
        if "mdl-typography--caption" in classes:
            name = "caption"
            inner = inner.split("</div>", 1)[0]
        elif "mdl-typography--text-right" in classes:
            name = "right"
            inner = inner.split("</div>", 1)[0]
        else:
            name = "body"
            inner = inner.removesuffix("</div>")
            if i + 1 == len(found):  # the last cell: the page's closing tags follow it
                inner = _without_page_end(inner)
        parts.setdefault(name, inner)
    return parts


def _caption_sections(caption: str) -> list[tuple[str, list[dict[str, str]]]]:
    """The caption's `<b>Label:</b><br>&emsp;line<br>...` sections (labels are translated): each
    section's HTML and its lines as items {name} or {name, url}."""
    sections: list[tuple[str, list[dict[str, str]]]] = []
    labels = list(_elements(caption, _CAPTION_OPEN, _CAPTION_CLOSE))
    for i, (_, _, end) in enumerate(labels):
        body = caption[end + len(_CAPTION_CLOSE): labels[i + 1][0] if i + 1 < len(labels) else len(caption)]
        sections.append((body, [_line_item(line) for line in _BR.split(body) if _plain(line)]))
    return sections


def _line_item(line: str) -> dict[str, str]:
    """A subtitle or caption line as the JSON has it: {"name"} or {"name", "url"} for a link."""
    anchor = _first_anchor(line)
    name = _plain(line)
    if anchor:
        return {"name": name, "url": html.unescape(anchor[0])}
    return {"name": name}


def _attachment_links(right: str) -> list[str]:
    """The files the right cell shows (images and links), in its order."""
    return [html.unescape(target) for _, target, _ in _links(right) if target]


def _plain(fragment: str) -> str:
    """A line of the cell as text: tags dropped, entities decoded, spaces as the JSON has them."""
    last = fragment.rfind(">") + 1  # (past the last ">" no tag ends: the rest is text, never scanned per "<")
    return html.unescape(_TAG.sub("", fragment[:last]) + fragment[last:]).strip()


def _elements(text: str, opening: str, closing: str) -> Iterator[tuple[int, int, int]]:
    """(start, content start, content end) of each `opening ... closing` element, in order."""
    pos = 0
    while (start := text.find(opening, pos)) >= 0:
        end = text.find(closing, start + len(opening))
        if end < 0:
            return
        yield start, start + len(opening), end
        pos = end + len(closing)


def _element(text: str, opening: str, closing: str) -> tuple[int, int, int] | None:
    return next(_elements(text, opening, closing), None)


def _links(fragment: str) -> Iterator[tuple[str, str, int]]:
    """(tag, its href or src, the position of its ">") of each `<a ...>` and `<img ...>`:
    a tag runs to its first ">" (one inside a tag is no tag of its own)."""
    pos = 0
    while opening := _LINK_OPEN.search(fragment, pos):
        end = fragment.find(">", opening.end())
        if end < 0:
            return
        kind = opening.group(1).lower()
        target = _LINK_TARGET[kind].search(fragment, opening.end(), end)
        pos = end + 1
        if target:
            yield kind, target.group(1), end


def _anchors(fragment: str) -> Iterator[tuple[str, str]]:
    """(href, inner HTML) of each closed `<a href="...">...</a>`."""
    after = 0  # the end of the last anchor read (a link inside it is its content)
    for kind, href, end in _links(fragment):
        if kind != "a" or end < after:
            continue
        closing = _LINK_CLOSE.search(fragment, end + 1)
        if closing is None:  # none closes after this one: none after a later one either
            return
        yield href, fragment[end + 1:closing.start()]
        after = closing.end()


def _first_anchor(fragment: str) -> tuple[str, str] | None:
    return next(_anchors(fragment), None)


def _without_page_end(inner: str) -> str:
    """The last cell without the page's closing tags after it (`</div>`s, then `</body>`, `</html>`)."""
    rest = inner.rstrip()
    for suffix in ("</html>", "</body>"):
        rest = rest.removesuffix(suffix).rstrip()
    closed = 0
    while rest.endswith("</div>"):
        rest, closed = rest[: -len("</div>")].rstrip(), closed + 1
    return rest if closed else inner


# Takeout writes times in the account's locale; English forms are read ("Sep 2, 2026, 1:26:27 PM PDT",
# "2 Sept 2026, 13:26:27 BST", "2026/09/02 13:26:27 JST", zones as "GMT+05:30" or a short name).
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_CLOCK = r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?(?: ?(?P<ampm>[AaPp]\.? ?[Mm]\.?))?"
_DATE_FORMS = (
    re.compile(r"^(?P<mon>[A-Za-z]{3,9})\.? (?P<d>\d{1,2}), (?P<y>\d{4}),? " + _CLOCK + r" (?P<tz>\S+)$"),
    re.compile(r"^(?P<d>\d{1,2}) (?P<mon>[A-Za-z]{3,9})\.? (?P<y>\d{4}),? " + _CLOCK + r" (?P<tz>\S+)$"),
    re.compile(r"^(?P<y>\d{4})[/-](?P<monn>\d{1,2})[/-](?P<d>\d{1,2}),? " + _CLOCK + r" (?P<tz>\S+)$"),
)
# Short zone names as Takeout writes them, read as their most common zone (CST: US Central; IST: India).
_ZONES = {
    "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "IST": 5.5, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3,
    "MSK": 3, "GST": 4, "PKT": 5, "ICT": 7, "WIB": 7, "SGT": 8, "HKT": 8, "AWST": 8, "JST": 9, "KST": 9,
    "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13, "HST": -10, "AKST": -9, "AKDT": -8,
    "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "CST": -6, "CDT": -5, "EST": -5, "EDT": -4, "AST": -4, "ADT": -3,
    "NST": -3.5, "NDT": -2.5, "BRT": -3, "ART": -3, "SAST": 2, "WAT": 1, "CAT": 2, "EAT": 3,
}
_OFFSET = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?$")


def _takeout_time(text: str) -> datetime | None:
    """A Takeout HTML time (English forms) as aware UTC, or None."""
    text = SPACES.sub(" ", text).strip()
    for form in _DATE_FORMS:
        m = form.match(text)
        if not m:
            continue
        offset = _zone_offset(m.group("tz"))
        if offset is None:
            return None
        month = int(m.group("monn")) if "monn" in m.groupdict() else _MONTHS.get(m.group("mon")[:3].lower())
        if month is None:
            return None
        hour = int(m.group("h"))
        ampm = (m.group("ampm") or "").replace(".", "").replace(" ", "").lower()
        if ampm:
            if not 1 <= hour <= 12:
                return None
            hour = hour % 12 + (12 if ampm == "pm" else 0)
        try:
            local = datetime(int(m.group("y")), month, int(m.group("d")), hour, int(m.group("mi")), int(m.group("s") or 0))
        except ValueError:
            return None
        return (local - offset).replace(tzinfo=UTC)
    return None


def _zone_offset(zone: str) -> timedelta | None:
    if zone.upper() in _ZONES:
        return timedelta(hours=_ZONES[zone.upper()])
    m = _OFFSET.match(zone.upper())
    if not m:
        return None
    delta = timedelta(hours=int(m.group("h")), minutes=int(m.group("m") or 0))
    return delta if m.group("sign") == "+" else -delta

