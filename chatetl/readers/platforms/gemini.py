"""Google Gemini activity from Takeout: `Takeout/My Activity/Gemini Apps/MyActivity.json` (or `.html`).

Gemini chats are not exported as chats: Takeout's "My Activity" holds one row per activity of
the account, newest first, in a file per product (`My Activity/<product>/MyActivity.json`, or
`MyActivity.html` when HTML was chosen; folder and file names are translated into the
account's language, so the file is known by its content). A Gemini row:

    {"header": "Gemini Apps", "title": "Prompted <the prompt>", "time": "2026-02-02T07:24:02.806Z",
     "products": ["Gemini Apps"], "activityControls": ["Gemini Apps Activity"],
     "safeHtmlItem": [{"html": "<p>the answer</p>"}, {"html": "<p>a regenerated one</p>"}],
     "subtitles": [{"name": "Attached 1 file."}, {"name": "-  image_89b1bd.png", "url": "image_89b1bd-1e98.png"},
                   {"name": "MyGem was used in this chat. Manage your Gems.", "url": "https://gemini.google.com/gems/..."}],
     "details": [{"name": "...", "url": "https://gemini.google.com/app/<16 hex>"}],
     "titleUrl": "https://gemini.google.com/app/<id>", "attachedFiles": ["notes.pdf"], "imageFile": "image_89b1bd-1e98.png"}

What becomes what:
- A prompt row ("Prompted …", older "Asked …", "Live Prompt …", a branch's "Branched …", a
  shared chat's "Added chat from link: …", and a few translated prefixes) is a user turn (the
  title less its prefix) and one assistant turn per `safeHtmlItem` (its HTML as readable text,
  `chatetl.readers.htmltext`); several items are regenerated answers: siblings under the prompt,
  the last one active (the one the app showed last), the next prompt following it.
- The conversation is the `gemini.google.com/app/<id>` link (also `/u/N/app/<id>`,
  `/gem/<gem>/<id>` and Bard's `bard.google.com/chat/<id>`) in `details[].url` (where a measured
  real export has it, one to four per row: a branched chat repeats the turns before the fork, so
  such a row belongs to each of them) or `titleUrl`. Links in `subtitles` and in the answer are
  content (a link the user pasted, one the model wrote) and are never used. The app id is the
  conversation id and gives the url; rows of one id are put in time order. A row that names no
  conversation is a conversation of its own (never merged into a neighbour by time), its id
  `activity-<hash of its time to the second and its prompt>`: the same in the JSON and the HTML.
- Attachments: `attachedFiles`, `imageFile` and subtitles linking a file beside the activity file
  are the prompt's (pointer: that file name); `<img>` in an answer are that answer's.
- Other rows ("Created Gemini Canvas titled …", "Gave feedback: …", "Selected preferred draft",
  "Used an Assistant feature", …) are no turns: kept in their conversation's `meta["activities"]`,
  or counted as skipped when they name none. Rows of other products (a mixed file) are counted
  as skipped; so are other products' MyActivity files (detection leaves them alone).
- Kept as they are: `subtitles`, `details`, `locationInfos` (the prompt's extra), a Gem (`gem`)
  and a model (`Model: …` subtitle). Unknown fields are drift, kept on the prompt.
- There is no title in the source: the title is the first prompt's first line (`meta["title_from"]`).

The HTML variant (`read_html`) is the same rows as Takeout renders them, one `outer-cell` div per
activity: a header cell (the product), a body cell (the title line, its titleUrl as the link; a
line per subtitle; the time as the account's locale writes it, e.g. "Sep 2, 2026, 1:26:27 PM PDT";
then the answer's HTML), a right cell (the attachments, as links or images) and a caption
(products, `Details:` lines with the conversation link, "Why is this here?"). The file is cut
into cells as it streams (each held alone, at most MAX_CELL_BYTES) and each cell read into the
row the JSON would give. The HTML carries less: times to the second (the JSON's have
milliseconds), several regenerated answers as one, and English dates only (a date in another
locale keeps the row, without its time, as drift `gemini.html.time_format`).

Memory: a conversation needs all of its rows and the file is newest first, so the rows of a file
are held until its end as compact tuples (the texts already converted, not the raw records), up
to MAX_HELD_BYTES of text; past that they all go to a temporary SQLite database (rows and which
conversation holds which), read back one conversation at a time, so memory stays flat whatever
the file's size. Conversations come out in the order of their newest activity (the file's order).

Researched from: a measured real export's field report (`details[].url` with the app id, rows in
2-4 branches, `attachedFiles`/`imageFile`, rows without details) and a Japanese field report (the
`title` prefixes, regenerated `safeHtmlItem`s, subtitles of Gems and files), both found by
meaning in the code corpus; Superkikim/nexus-ai-chat-importer (src/providers/gemini:
gemini-types.ts, gemini-converter.ts: prefixes, `imageFile`, `<img>` of answers);
jetpack3331/ai-chat-history-manager (parsers/gemini_parser.py, examples/gemini.html: the HTML
cells); a real MyActivity.html snippet quoted in a public chat note (header cell, `Prompted`
line, subtitle link line, time, answer, caption); Takeout caption `Details:` lines from several
public Takeout parsers' fixtures; gemini-exporter (OTLFrostA, scripts/framework/cases/takeout.py:
app links with `/u/N/`).
"""

from __future__ import annotations

import hashlib
import html
import mimetypes
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlparse

import orjson

from chatetl.keepsakes import Canvas, derived_id
from chatetl.model import Attachment, Conversation, Message, MessageKind, Role, Source
from chatetl.readers.convert import convert_records, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, list_field, text_or_none
from chatetl.readers.htmltext import html_to_text
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time

PLATFORM = "gemini"
# row text held in memory; past it a file's rows go to a temporary database (held rows take about 3x their text in
# RSS, so a bounded hold keeps a big MyActivity.json's memory flat, at a small cost in time); the README refers here
MAX_HELD_BYTES = 16 * 1024 * 1024
MAX_CELL_BYTES = 64 * 1024 * 1024  # one HTML activity cell; a longer one is reported and skipped
READ_BYTES = 1024 * 1024  # the HTML is read this much at a time
TITLE_CHARS = 80

KNOWN_ACTIVITY_FIELDS = frozenset(
    {"header", "title", "titleUrl", "time", "products", "activityControls", "safeHtmlItem", "subtitles", "details",
     "attachedFiles", "imageFile", "locationInfos"}
)
_KEPT_FIELDS = ("subtitles", "details", "locationInfos")  # known fields kept on the prompt as they are

# The conversation a link names: the app's own chats, a Gem's chats, and Bard's older links.
_APP_LINK = re.compile(
    r"https?://(?:gemini\.google\.com/(?:u/\d+/)?(?:app|gem/[^/?#\s\"'<>]+)|bard\.google\.com/(?:u/\d+/)?chat)/([A-Za-z0-9_-]{6,})"
)
_GEM_LINK = re.compile(r"https?://gemini\.google\.com/(?:u/\d+/)?gems?/")
_GEM_USED = re.compile(r"^(?P<gem>.+?) was used in this chat\b")

# Title prefixes of a prompt (English and a few translations met in public exports), longest first.
_PROMPT = re.compile(
    r"^(?:Prompted|Live Prompt|Asked:?|Submitted query|Query submitted|Branched|Added chat from link:|Prompt\s*:|Pokyn"
    r"|Υποβλήθηκε το ερώτημα)(?:[ \t\u00a0]+|$)"
)
_CANVAS_TITLED = "Created Gemini Canvas titled"
# Rows that are no prompt, by their English titles: (prefix, what the activity is).
_ACTIVITIES = (
    (_CANVAS_TITLED, "canvas"),
    ("Gave feedback", "feedback"),
    ("Cleared previous feedback", "feedback-cleared"),
    ("Selected preferred draft", "preferred-draft"),
    ("Used an Assistant feature", "assistant-feature"),
    ("Used Gemini Apps", "used"),
    ("Answered survey question", "survey"),
    ("Created", "created"),
    ("Used", "used"),
    ("Shared", "shared"),
    ("Deleted", "deleted"),
)
_GENERATED = re.compile(r"^\d+ generated images?\.?$")  # a subtitle of a row whose answer made images
_IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "heic", "heif", "bmp", "svg", "avif"})
_MIME = mimetypes.MimeTypes()  # the standard library's own table, not the machine's (the same everywhere)


class _Row(NamedTuple):
    """One activity, as compact as a conversation needs it (held until the file's end)."""

    index: int  # place in the file (0: the first, the newest)
    where: str  # the place in the file, for errors
    time: float | None  # epoch seconds (the JSON's with milliseconds, the HTML's to the second)
    second: str  # the time to the second, as both variants carry it (or the HTML's own words)
    activity: str | None  # None for a prompt, else what the row is (feedback, canvas ...)
    text: str  # the prompt, or the activity's title
    answers: list[str]  # the text of each answer (regenerations in order)
    answer_images: list[list[list[str]]]  # [src, alt] of each answer's images
    files: list[list[Any]]  # [pointer, shown name] of the prompt's attachments
    conversations: list[str]  # the app ids it belongs to
    model: str | None
    extra: dict[str, Any]  # kept fields (subtitles, details ...), unknown ones


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A Takeout `MyActivity.json`: its Gemini rows grouped into conversations."""
    rows = _activity_rows(entry, shape or Shape.ARRAY, report)
    yield from _conversations(entry, rows, report)


def read_html(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A Takeout `MyActivity.html`: the same conversations as its JSON would give."""
    yield from _conversations(entry, _cell_rows(entry, report), report)


# ---- JSON rows -----------------------------------------------------------------------------


def _activity_rows(entry: Entry, shape: Shape, report: ReadReport) -> Iterator[_Row | None]:
    for index, (where, record) in enumerate(iter_records(entry, shape, report)):
        try:
            yield row_from_activity(record, index, where, report)
        except RecursionError:
            report.error(entry.name, where, "activity nested too deeply", raw=raw_bytes(record))
        except Exception as exc:  # noqa: BLE001 (a bad row must never stop the rest of the file)
            report.error(entry.name, where, f"{type(exc).__name__}: {_short(exc)}", raw=raw_bytes(record))


def row_from_activity(record: Any, index: int, where: str, report: ReadReport) -> _Row | None:
    """One `MyActivity.json` row as a _Row (None for another product's row, counted as skipped)."""
    record = expect_object(record, "an activity object")
    products = [p for p in list_field(record, "products", "product names") if isinstance(p, str)]
    if not _is_gemini(record.get("header"), products):
        report.skip("other product's activity")
        return None
    title = record.get("title")
    if not isinstance(title, str):
        raise TypeError("activity has no title")
    raw_time = record.get("time")
    when = parse_time(raw_time)
    if when is None:
        raise ValueError(f"activity time missing or unreadable ({raw_time!r})")

    extra: dict[str, Any] = {}
    for key in _KEPT_FIELDS:
        if record.get(key) not in (None, [], {}):
            extra[key] = record[key]
    keep_unknown(record, KNOWN_ACTIVITY_FIELDS, extra, report, "gemini.activity_field")

    answers: list[str] = []
    images: list[list[list[str]]] = []
    for item in list_field(record, "safeHtmlItem", "answers"):
        if not isinstance(item, dict) or not isinstance(item.get("html"), str):
            report.unknown("gemini.safe_html_item:not-html")
            extra.setdefault("unread_answers", []).append(item)
            continue
        if item.keys() - {"html"}:
            keep_unknown(item, frozenset({"html"}), extra.setdefault("answer_fields", {}), report, "gemini.safe_html_field")
        rendered = html_to_text(item["html"])
        answers.append(rendered.text)
        images.append([[src, alt] for src, alt in rendered.images])

    subtitles = [s for s in list_field(record, "subtitles", "subtitles") if isinstance(s, dict)]
    files: list[list[Any]] = []
    for f in list_field(record, "attachedFiles", "files"):
        name = f if isinstance(f, str) else text_or_none(f.get("name")) if isinstance(f, dict) else None
        if name:
            files.append([name, None])
    if text_or_none(record.get("imageFile")):
        files.append([record["imageFile"], None])
    for s in subtitles:
        url = text_or_none(s.get("url"))
        if url and _is_local_file(url):
            files.append([url, _shown_file_name(s.get("name"))])

    links: list[str] = []
    for d in list_field(record, "details", "details"):
        if isinstance(d, dict):
            links += [v for v in (d.get("url"), d.get("name")) if isinstance(v, str)]
    if isinstance(record.get("titleUrl"), str):
        links.append(record["titleUrl"])
    uploads = frozenset({record["imageFile"]} if isinstance(record.get("imageFile"), str) else ())
    return _row(index, where, when.timestamp(), _second(when), title, answers, images, files, links, subtitles, extra, report, uploads)


def _is_gemini(header: Any, products: list[str]) -> bool:
    """Whether a row is Gemini's (or Bard's): by its header or products; a row that names neither
    is taken as the file's own (the file was detected as Gemini's)."""
    names = [n for n in [header, *products] if isinstance(n, str) and n]
    return not names or any("Gemini" in n or "Bard" in n for n in names)


def _row(
    index: int, where: str, time: float | None, second: str, title: str, answers: list[str], images: list[list[list[str]]],
    files: list[list[Any]], links: list[str], subtitles: list[dict], extra: dict[str, Any], report: ReadReport,
    uploads: frozenset[str] = frozenset(),
) -> _Row:
    """The parts both variants read, made one row the same way."""
    prompt = _PROMPT.match(title)
    activity = None
    if prompt:
        text = title[prompt.end():].strip()
    else:
        text = title.strip()
        activity = next((kind for prefix, kind in _ACTIVITIES if text.startswith(prefix)), None)
        if activity is None:
            # A title of no known kind (another language's prompt?): a turn when it was answered.
            report.unknown(f"gemini.title:{text.split(' ', 1)[0][:40]}")
            activity = None if answers else "other"
    model = gem = None
    for s in subtitles:
        name = text_or_none(s.get("name"))
        if name and name.startswith("Model:"):
            model = name[len("Model:"):].strip() or None
        url = s.get("url")
        if name and isinstance(url, str) and _GEM_LINK.match(url):
            used = _GEM_USED.match(name)
            gem = used.group("gem") if used else name
    if gem:
        extra["gem"] = gem
    conversations: list[str] = []
    for link in links:
        for app_id in _APP_LINK.findall(link):
            if app_id not in conversations:
                conversations.append(app_id)
    seen: dict[str, list[Any]] = {}
    for pointer, shown in files:
        if pointer in seen:
            seen[pointer][1] = shown or seen[pointer][1]
        else:
            seen[pointer] = [pointer, shown]
    _generated_to_answer(seen, images, subtitles, uploads)
    return _Row(index, where, time, second, activity, text, answers, images, list(seen.values()), conversations, model, extra)


def _generated_to_answer(files: dict[str, list[Any]], images: list[list[list[str]]], subtitles: list[dict], uploads: frozenset[str]) -> None:
    """A row lists the images its answer generated among its files: a file the answer shows (an
    `<img>` of the same name) is the answer's alone, and when a subtitle says "N generated
    image(s)." the row's other image files are too (added to the last answer), but for the
    person's own (`imageFile`, or a file a subtitle names as attached)."""
    if not images or not files:
        return
    shown = {_file_name(src) for answer in images for src, _ in answer if src}
    generated = any(_GENERATED.match(text_or_none(s.get("name")) or "") for s in subtitles)
    for pointer in list(files):
        name = _file_name(pointer)
        if name in shown:
            del files[pointer]
        elif generated and name.rsplit(".", 1)[-1].lower() in _IMAGE_EXTENSIONS and not files[pointer][1] and pointer not in uploads:
            del files[pointer]
            images[-1].append([pointer, ""])


def _file_name(pointer: str) -> str:
    return pointer.split("?", 1)[0].rsplit("/", 1)[-1]


def _second(when: datetime) -> str:
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _is_local_file(url: str) -> bool:
    """A file beside the activity file (an attachment), not a web address."""
    try:
        parsed = urlparse(url)
    except ValueError:
        return False
    return not parsed.scheme and not parsed.netloc and not url.startswith(("/", "#"))


def _shown_file_name(name: Any) -> str | None:
    """"-  image_89b1bd.png" (a subtitle naming an attached file) as "image_89b1bd.png"."""
    return text_or_none(name.strip().lstrip("-").strip()) if isinstance(name, str) else None


# ---- HTML rows -----------------------------------------------------------------------------

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
_SPACES = re.compile(r"[\s\u00a0\u202f]+")


def _cell_rows(entry: Entry, report: ReadReport) -> Iterator[_Row | None]:
    for index, (where, cell) in enumerate(_iter_cells(entry, report)):
        try:
            yield row_from_cell(cell, index, where, report)
        except Exception as exc:  # noqa: BLE001 (a bad cell must never stop the rest of the file)
            report.error(entry.name, where, f"{type(exc).__name__}: {_short(exc)}", raw=cell.encode()[:65536])


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


def row_from_cell(cell: str, index: int, where: str, report: ReadReport) -> _Row | None:
    """One `outer-cell` of MyActivity.html as the _Row its JSON row gives (None for another product's)."""
    header = _element(cell, _HEADER_OPEN, _HEADER_CLOSE)
    header_text = _plain(cell[header[1]:header[2]]) if header else None
    parts = _cell_parts(cell)
    body = parts.get("body")
    if body is None:
        raise ValueError("activity cell has no content cell")
    sections = _caption_sections(parts.get("caption", ""))
    products = [item["name"] for item in sections[0][1]] if sections else []
    if not _is_gemini(header_text, products if header_text is None else []):
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
        if isinstance(url, str) and _is_local_file(url):
            files.append([url, _shown_file_name(s.get("name"))])
    links = [href for href, _ in _anchors(title_line)]
    links = [*[v for d in details for v in (d.get("url"), d.get("name")) if isinstance(v, str)], *map(html.unescape, links)]
    second = _second(when) if when else time_text
    return _row(index, where, when.timestamp() if when else None, second, title, answers, images, files, links, subtitles, extra, report)


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
    text = _SPACES.sub(" ", text).strip()
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


# ---- rows into conversations ---------------------------------------------------------------


class _RowStore:
    """A file's rows grouped by conversation until they are all read: in memory while their text stays
    under `budget` bytes; past it, every row and every conversation's list of rows go to a temporary
    SQLite database (one row stored once, its conversations by index), so memory stays flat
    whatever the file's size: neither rows nor the per-row bookkeeping are held."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = MAX_HELD_BYTES if budget is None else budget
        self.held = 0
        self.rows: list[_Row] = []
        self.groups: dict[str, list[int]] = {}  # conversation id -> its rows, in file order (newest activity first)
        self.db: sqlite3.Connection | None = None
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.count = 0

    def add(self, row: _Row, conversations: list[str]) -> None:
        index, self.count = self.count, self.count + 1
        if self.db is None:
            self.held += 256 + len(row.text) + sum(len(a) for a in row.answers) + 64 * len(conversations)
            if self.held <= self.budget:
                self.rows.append(row)
                for conv_id in conversations:
                    self.groups.setdefault(conv_id, []).append(index)
                return
            self._spill()
        self._insert(index, row, conversations)

    def _spill(self) -> None:
        """From now on the rows live in a temporary database: those held go there first."""
        self.folder = tempfile.TemporaryDirectory(prefix="chatetl-gemini-")
        self.db = sqlite3.connect(os.path.join(self.folder.name, "rows.db"), isolation_level=None)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
            "CREATE TABLE rows (idx INTEGER PRIMARY KEY, data BLOB);"
            "CREATE TABLE convs (conv TEXT PRIMARY KEY, first INTEGER);"
            "CREATE TABLE members (conv TEXT, idx INTEGER, PRIMARY KEY (conv, idx)) WITHOUT ROWID;"
        )
        self.db.executemany("INSERT INTO rows VALUES (?, ?)", ((i, orjson.dumps(tuple(r))) for i, r in enumerate(self.rows)))
        for conv_id, indexes in self.groups.items():
            self.db.execute("INSERT INTO convs VALUES (?, ?)", (conv_id, indexes[0]))
            self.db.executemany("INSERT INTO members VALUES (?, ?)", ((conv_id, i) for i in indexes))
        self.rows, self.groups = [], {}

    def _insert(self, index: int, row: _Row, conversations: list[str]) -> None:
        assert self.db is not None
        self.db.execute("INSERT INTO rows VALUES (?, ?)", (index, orjson.dumps(tuple(row))))
        for conv_id in conversations:
            self.db.execute("INSERT OR IGNORE INTO convs VALUES (?, ?)", (conv_id, index))
            self.db.execute("INSERT OR IGNORE INTO members VALUES (?, ?)", (conv_id, index))

    def conversations(self) -> Iterator[tuple[str, list[_Row]]]:
        """(id, its rows in file order) of each conversation, in the order of its newest activity."""
        if self.db is None:
            for conv_id, indexes in self.groups.items():
                yield conv_id, [self.rows[i] for i in indexes]
            return
        self.db.execute("COMMIT")
        reader = self.db.cursor()
        for (conv_id,) in self.db.execute("SELECT conv FROM convs ORDER BY first"):
            found = reader.execute("SELECT r.data FROM members m JOIN rows r ON r.idx = m.idx WHERE m.conv = ? ORDER BY m.idx", (conv_id,))
            yield conv_id, [_Row(*orjson.loads(data)) for (data,) in found]

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None
        self.rows, self.groups = [], {}


def _conversations(entry: Entry, rows: Iterator[_Row | None], report: ReadReport) -> Iterator[Conversation]:
    store = _RowStore()
    try:
        for row in rows:
            if row is None:
                continue
            if row.activity == "canvas":
                report.kept.append(_canvas(entry, row))
            if not row.conversations and row.activity is not None:
                report.skip(f"gemini activity outside a conversation ({row.activity})")
                continue
            store.add(row, row.conversations or [_derived_id(row)])
        records = ((f"{group[0].where} (conversation {cid})", (cid, group)) for cid, group in store.conversations())
        yield from convert_records(entry, records, report, lambda group, where: _conversation(group[0], group[1]))
    finally:
        store.close()


def _canvas(entry: Entry, row: _Row) -> Canvas:
    """A "Created Gemini Canvas titled …" row as the account's Canvas: its title, its text where the row has
    one, its conversation only where the row links one."""
    title = row.text.removeprefix(_CANVAS_TITLED).strip()
    return Canvas(
        platform=PLATFORM, canvas_id=derived_id("canvas", row.second, title), title=title,
        created_at=datetime.fromtimestamp(row.time, tz=UTC) if row.time is not None else None,
        text="\n\n".join(a for a in row.answers if a) or None, conversation_id=row.conversations[0] if row.conversations else None,
        source_file=entry.name,
    )


def _derived_id(row: _Row) -> str:
    """A stable id for a row that names no conversation: its time to the second and its prompt."""
    digest = hashlib.sha256(f"{row.second}\n{_SPACES.sub(' ', row.text).strip()}".encode()).hexdigest()
    return f"activity-{digest[:16]}"


def _conversation(conv_id: str, rows: list[_Row]) -> Conversation:
    """The rows of one conversation (any order) as a Conversation: turns in time order, regenerated
    answers as siblings (the last active), other activities in meta."""
    rows.sort(key=lambda r: (r.time if r.time is not None else float("-inf"), -r.index))
    messages: list[Message] = []
    activities: list[dict[str, Any]] = []
    used_keys: dict[str, int] = {}
    leaf: str | None = None
    model = None
    for r in rows:
        when = datetime.fromtimestamp(r.time, tz=UTC) if r.time is not None else None
        if r.activity is not None:
            activity: dict[str, Any] = {"time": r.second, "kind": r.activity, "title": r.text}  # (to the second: as both variants have it)
            if r.answers:
                activity["text"] = "\n\n".join(a for a in r.answers if a)
            if r.extra:
                activity["extra"] = r.extra
            activities.append(activity)
            continue
        key = f"{r.second}-{hashlib.sha1(r.text.encode()).hexdigest()[:8]}"
        used_keys[key] = used_keys.get(key, 0) + 1
        if used_keys[key] > 1:
            key = f"{key}-{used_keys[key]}"
        prompt_id = f"{key}:prompt"
        messages.append(
            Message.fast(
                message_id=prompt_id, parent_id=leaf, role=Role.USER, kind=MessageKind.TURN, text=r.text, created_at=when,
                content_type="prompt", attachments=[_file(pointer, shown) for pointer, shown in r.files], extra=dict(r.extra),
            )
        )
        leaf = prompt_id
        model = r.model or model
        drafts = len(r.answers)
        for i, (answer, images) in enumerate(zip(r.answers, r.answer_images)):
            answer_id = f"{key}:answer" if i == 0 else f"{key}:answer-{i + 1}"
            extra: dict[str, Any] = {"draft": i + 1, "drafts": drafts} if drafts > 1 else {}
            attachments = [_image(src, alt) for src, alt in images]
            shown = bool(answer.strip()) or bool(attachments)
            if not shown:
                extra["empty"] = True
            messages.append(
                Message.fast(
                    message_id=answer_id, parent_id=prompt_id, role=Role.ASSISTANT,
                    kind=MessageKind.TURN if shown else MessageKind.HIDDEN, text=answer, created_at=when, model=r.model,
                    content_type="html", attachments=attachments, extra=extra,
                )
            )
            leaf = answer_id  # the last answer: the one the app showed, the next prompt's parent
    times = [r.time for r in rows if r.time is not None]
    meta: dict[str, Any] = {}
    first_prompt = next((r.text for r in rows if r.activity is None and r.text.strip()), None)
    title = None
    if first_prompt:
        line = first_prompt.strip().split("\n", 1)[0].strip()
        title = line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
        meta["title_from"] = "first prompt"
    elif file := next((f for r in rows if r.activity is None for f in r.files), None):
        attachment = _file(*file)  # prompts of files alone: the first file, as the app shows it
        title = f"{'Image' if attachment.kind == 'image' else 'File'}: {attachment.name}"[:TITLE_CHARS]
        meta["title_from"] = "first prompt's file"
    if conv_id.startswith("activity-"):
        meta["id_from"] = "time and prompt"
    gems = sorted({r.extra["gem"] for r in rows if isinstance(r.extra.get("gem"), str)})
    if gems:
        meta["gems"] = gems
    if activities:
        meta["activities"] = activities
    is_app = not conv_id.startswith("activity-")
    return Conversation.fast(
        source=Source.GEMINI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=title,
        created_at=datetime.fromtimestamp(min(times), tz=UTC) if times else None,
        updated_at=datetime.fromtimestamp(max(times), tz=UTC) if times else None,
        model=model,
        url=f"https://gemini.google.com/app/{conv_id}" if is_app else None,
        current_node=leaf,
        messages=messages,
        meta=meta,
    )


def _file(pointer: str, shown: str | None) -> Attachment:
    name = shown or pointer.rsplit("/", 1)[-1]
    extension = pointer.rsplit(".", 1)[-1].lower() if "." in pointer else ""
    return Attachment.fast(
        kind="image" if extension in _IMAGE_EXTENSIONS else "file", name=name, pointer=pointer,
        mime_type=_MIME.guess_type(pointer, strict=False)[0],
    )


def _image(src: str, alt: str) -> Attachment:
    inline = src.startswith("data:")
    name = alt or (None if inline or not src else src.split("?", 1)[0].rsplit("/", 1)[-1] or None)
    return Attachment.fast(kind="image", name=name, pointer=None if inline or not src else src)


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
