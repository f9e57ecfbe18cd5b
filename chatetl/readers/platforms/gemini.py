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
  as skipped; so are other products' MyActivity files (detection leaves them alone). A canvas
  row is also the account's Canvas (`ReadReport.kept`, chatetl.keepsakes), whether it names a
  conversation or not.
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
import mimetypes
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from chatetl.keepsakes import Canvas, derived_id
from chatetl.model import Attachment, Conversation, Message, MessageKind, Role, Source
from chatetl.readers.convert import convert_records, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, list_field, text_or_none
from chatetl.readers.htmltext import html_to_text
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platforms.gemini_html import cell_rows
from chatetl.readers.platforms.gemini_rows import (
    CANVAS_TITLED,
    IMAGE_EXTENSIONS,
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
from chatetl.readers.timeutil import parse_time

PLATFORM = "gemini"
# row text held in memory; past it a file's rows go to a temporary database (held rows take about 3x their text in
# RSS, so a bounded hold keeps a big MyActivity.json's memory flat, at a small cost in time); the README refers here
MAX_HELD_BYTES = 16 * 1024 * 1024
TITLE_CHARS = 80

KNOWN_ACTIVITY_FIELDS = frozenset(
    {"header", "title", "titleUrl", "time", "products", "activityControls", "safeHtmlItem", "subtitles", "details",
     "attachedFiles", "imageFile", "locationInfos"}
)
_KEPT_FIELDS = ("subtitles", "details", "locationInfos")  # known fields kept on the prompt as they are
_MIME = mimetypes.MimeTypes()  # the standard library's own table, not the machine's (the same everywhere)


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A Takeout `MyActivity.json`: its Gemini rows grouped into conversations."""
    rows = _activity_rows(entry, shape or Shape.ARRAY, report)
    yield from _conversations(entry, rows, report)


def read_html(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A Takeout `MyActivity.html`: the same conversations as its JSON would give."""
    yield from _conversations(entry, cell_rows(entry, report), report)



# ---- JSON rows -----------------------------------------------------------------------------


def _activity_rows(entry: Entry, shape: Shape, report: ReadReport) -> Iterator[Row | None]:
    for index, (where, record) in enumerate(iter_records(entry, shape, report)):
        try:
            yield row_from_activity(record, index, where, report)
        except RecursionError:
            report.error(entry.name, where, "activity nested too deeply", raw=raw_bytes(record))
        except Exception as exc:  # noqa: BLE001 (a bad row must never stop the rest of the file)
            report.error(entry.name, where, f"{type(exc).__name__}: {short(exc)}", raw=raw_bytes(record))


def row_from_activity(record: Any, index: int, where: str, report: ReadReport) -> Row | None:
    """One `MyActivity.json` row as a Row (None for another product's row, counted as skipped)."""
    record = expect_object(record, "an activity object")
    products = [p for p in list_field(record, "products", "product names") if isinstance(p, str)]
    if not is_gemini(record.get("header"), products):
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

    answers, images = _answers(record, extra, report)
    subtitles = [s for s in list_field(record, "subtitles", "subtitles") if isinstance(s, dict)]
    files = _prompt_files(record, subtitles)
    links: list[str] = []
    for d in list_field(record, "details", "details"):
        if isinstance(d, dict):
            links += [v for v in (d.get("url"), d.get("name")) if isinstance(v, str)]
    if isinstance(record.get("titleUrl"), str):
        links.append(record["titleUrl"])
    uploads = frozenset({record["imageFile"]} if isinstance(record.get("imageFile"), str) else ())
    return make_row(index, where, when.timestamp(), to_second(when), title, answers, images, files, links, subtitles, extra, report, uploads)


def _answers(record: dict[str, Any], extra: dict[str, Any], report: ReadReport) -> tuple[list[str], list[list[list[str]]]]:
    """The text of each `safeHtmlItem` and its images' [src, alt]; an item without HTML is kept in `extra`."""
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
    return answers, images


def _prompt_files(record: dict[str, Any], subtitles: list[dict[str, Any]]) -> list[list[Any]]:
    """[pointer, shown name] of the prompt's files: attached ones, its image, and subtitles linking a file beside the activity."""
    files: list[list[Any]] = []
    for f in list_field(record, "attachedFiles", "files"):
        name = f if isinstance(f, str) else text_or_none(f.get("name")) if isinstance(f, dict) else None
        if name:
            files.append([name, None])
    if text_or_none(record.get("imageFile")):
        files.append([record["imageFile"], None])
    for s in subtitles:
        url = text_or_none(s.get("url"))
        if url and is_local_file(url):
            files.append([url, shown_file_name(s.get("name"))])
    return files



# ---- rows into conversations ---------------------------------------------------------------


class _RowStore:
    """A file's rows grouped by conversation until they are all read: in memory while their text stays
    under `budget` bytes; past it, every row and every conversation's list of rows go to a temporary
    SQLite database (one row stored once, its conversations by index), so memory stays flat
    whatever the file's size: neither rows nor the per-row bookkeeping are held."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = MAX_HELD_BYTES if budget is None else budget
        self.held = 0
        self.rows: list[Row] = []
        self.groups: dict[str, list[int]] = {}  # conversation id -> its rows, in file order (newest activity first)
        self.db: sqlite3.Connection | None = None
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.count = 0

    def add(self, row: Row, conversations: list[str]) -> None:
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

    def _insert(self, index: int, row: Row, conversations: list[str]) -> None:
        assert self.db is not None
        self.db.execute("INSERT INTO rows VALUES (?, ?)", (index, orjson.dumps(tuple(row))))
        for conv_id in conversations:
            self.db.execute("INSERT OR IGNORE INTO convs VALUES (?, ?)", (conv_id, index))
            self.db.execute("INSERT OR IGNORE INTO members VALUES (?, ?)", (conv_id, index))

    def conversations(self) -> Iterator[tuple[str, list[Row]]]:
        """(id, its rows in file order) of each conversation, in the order of its newest activity."""
        if self.db is None:
            for conv_id, indexes in self.groups.items():
                yield conv_id, [self.rows[i] for i in indexes]
            return
        self.db.execute("COMMIT")
        reader = self.db.cursor()
        for (conv_id,) in self.db.execute("SELECT conv FROM convs ORDER BY first"):
            found = reader.execute("SELECT r.data FROM members m JOIN rows r ON r.idx = m.idx WHERE m.conv = ? ORDER BY m.idx", (conv_id,))
            yield conv_id, [Row(*orjson.loads(data)) for (data,) in found]

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None
        self.rows, self.groups = [], {}


def _conversations(entry: Entry, rows: Iterator[Row | None], report: ReadReport) -> Iterator[Conversation]:
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


def _canvas(entry: Entry, row: Row) -> Canvas:
    """A "Created Gemini Canvas titled …" row as the account's Canvas: its title, its text where the row has
    one, its conversation only where the row links one."""
    title = row.text.removeprefix(CANVAS_TITLED).strip()
    return Canvas(
        platform=PLATFORM, canvas_id=derived_id("canvas", row.second, title), title=title,
        created_at=datetime.fromtimestamp(row.time, tz=UTC) if row.time is not None else None,
        text="\n\n".join(a for a in row.answers if a) or None, conversation_id=row.conversations[0] if row.conversations else None,
        source_file=entry.name,
    )


def _derived_id(row: Row) -> str:
    """A stable id for a row that names no conversation: its time to the second and its prompt."""
    digest = hashlib.sha256(f"{row.second}\n{SPACES.sub(' ', row.text).strip()}".encode()).hexdigest()
    return f"activity-{digest[:16]}"


def _conversation(conv_id: str, rows: list[Row]) -> Conversation:
    """The rows of one conversation (any order) as a Conversation: turns in time order, regenerated
    answers as siblings (the last active), other activities in meta."""
    rows.sort(key=lambda r: (r.time if r.time is not None else float("-inf"), -r.place))
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
        kind="image" if extension in IMAGE_EXTENSIONS else "file", name=name, pointer=pointer,
        mime_type=_MIME.guess_type(pointer, strict=False)[0],
    )


def _image(src: str, alt: str) -> Attachment:
    inline = src.startswith("data:")
    name = alt or (None if inline or not src else src.split("?", 1)[0].rsplit("/", 1)[-1] or None)
    return Attachment.fast(kind="image", name=name, pointer=None if inline or not src else src)

