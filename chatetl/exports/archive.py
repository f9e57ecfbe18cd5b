"""The archive: one static page listing every conversation, searchable, with charts that follow the filter.

    exports/archive/index.html           the whole bucket's history, rebuilt after each export run
    exports/_archive/date=D.json         what day D's conversations give the page (its rows and counts)

The page (`templates/archive.html.j2`) is a table of every conversation (title, platform, date,
visible messages, model), newest first, each title linking to its file of the `html` export, and an
activity chart: visible messages per month per platform, stacked bars drawn here as inline SVG
(rectangles computed in Python, written by the template; no charting library). The page's script
(`templates/archive_filter.js.j2`, plain JavaScript) filters: a row stays when every typed word is
in its title, platform or date, or begins a word of its messages (a prebuilt inverted index of the
messages' words and its attachments' names and kept text, `search_index`, in an attribute of the
page); a menu picks a platform. Columns
sort; the month chart and the charts the script draws from the rows' attributes (activity by hour
and weekday, platforms, conversation lengths, models over time) follow the filter; the table shows
the first rows that match and the rest on request, so 10,000 conversations stay readable.

Works opened from disk: nothing is fetched, links are relative (`../html/<name>.html`, the
file names of `chatetl.filenames`, percent-encoded), so a synced or unzipped `exports/` folder
(or `chatetl export --format archive`'s OUT folder, the same layout) browses as it is. A
Content-Security-Policy allows no remote load and only this page's own script, by its SHA-256
hash (CSP Level 2 `script-src 'sha256-…'`), so even a title that slipped through could not run
code. Everything from a chat (titles, platform names) goes through Jinja2's autoescape, as in
the `html` export; the script reads the rows' text from the page and never builds HTML.

Why one page for the whole bucket and not one per day: a person wants their whole history in
one place. Each day's export run writes that day's rows (`exports/_archive/date=D.json`, small,
written only when changed); the page is rebuilt from all days' rows (the winning state of each
conversation, model.state_order, as for the files) and written with `put_bytes_if_changed`, so a rerun writes
nothing. A row links only to an HTML file that is in the bucket when the page is built. Two runs
rebuilding at once: each checks after writing that no day's rows changed meanwhile, else builds
again, so the last page written has every day's rows. The day's zip can hold a page of its own
(`archive` among the zip's formats): that day's conversations, linking into the zip's `html/`.
"""

from __future__ import annotations

import hashlib
import json
import re
from base64 import b64encode
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from chatetl.exports.html import TEMPLATES
from chatetl.exports.meta import without_controls
from chatetl.labels import chat_title
from chatetl.layout import EXPORTS_PREFIX, export_prefix
from chatetl.model import Conversation, Message, StateOrder, order_of, state_hash, state_version
from chatetl.readers.platform_names import platform_label
from chatetl.side_by_side import side_by_side
from chatetl.storage import ObjectStore, put_bytes_if_changed

ARCHIVE = "archive"
ARCHIVE_PAGE = "index.html"
DAYS_PREFIX = f"{EXPORTS_PREFIX}_archive/"
CONTENT_TYPE = "text/html; charset=utf-8"
REBUILD_ATTEMPTS = 3
# the words of a chat's messages the page's search finds: 2 to 32 letters or digits, lowercase; a
# chat's first MAX_WORDS distinct words (a bound on the page's size for the longest chats)
_WORD = re.compile(r"[^\W_]{2,32}")
MAX_WORDS = 4000

# Okabe-Ito first (told apart with every common colour-vision deficiency), then Paul Tol's muted
# scheme: every platform of a page gets a colour of its own, up to PALETTE's length
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D1F", "#555555",
           "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")


def archive_key() -> str:
    """The bucket's archive page."""
    return f"{export_prefix(ARCHIVE)}{ARCHIVE_PAGE}"


def day_rows_key(day: str) -> str:
    """What day D's conversations give the archive page."""
    return f"{DAYS_PREFIX}date={day}.json"


@dataclass(frozen=True)
class ArchiveEntry:
    """One conversation's row on the page, and its visible messages per month ("YYYY-MM")."""

    key: str
    title: str
    platform: str
    date: str | None  # YYYY-MM-DD (UTC) of its start (created, else updated, else its first message)
    messages: int
    version: float  # state_version, with `source` and `state_hash` the row's place in model.state_order
    html: str | None  # its html export file, relative to the exports root: "html/<name>.html"
    months: dict[str, int] = field(default_factory=dict)
    undated: int = 0  # visible messages without any time to place them on the chart
    source: str = ""  # the format the state arrived through (a row written before it was kept: "")
    state_hash: str = ""
    model: str = ""  # the conversation's model ("": none said)
    hours: list[int] = field(default_factory=list)  # visible messages per hour of the day (UTC), 24 counts; []: none dated
    weekdays: list[int] = field(default_factory=list)  # ... per day of the week, Monday first, 7 counts
    words: str = ""  # the distinct words of its title and visible messages, space-separated, in order of appearance

    @property
    def state(self) -> StateOrder:
        """The row's state in model.state_order (a row without its hash: below every state of its time)."""
        return order_of(self.version, self.source, self.state_hash)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def archive_entry(conv: Conversation, html: str | None) -> ArchiveEntry:
    """The row of a conversation whose html export file is `html` (relative to the exports root)."""
    turns = conv.visible_turns
    fallback = conv.created_at or conv.updated_at
    start = fallback or min((m.created_at for m in turns if m.created_at is not None), default=None)
    months: dict[str, int] = {}
    hours, weekdays = [0] * 24, [0] * 7
    undated = 0
    for m in turns:
        when = m.created_at or fallback
        if when is None:
            undated += 1
            continue
        when = _utc(when)
        month = when.strftime("%Y-%m")
        months[month] = months.get(month, 0) + 1
        hours[when.hour] += 1
        weekdays[when.weekday()] += 1
    return ArchiveEntry(
        key=conv.key,
        title=chat_title(conv.title),
        platform=conv.platform,
        date=_utc(start).strftime("%Y-%m-%d") if start else None,
        messages=conv.message_count,
        version=state_version(conv),
        html=html,
        months=dict(sorted(months.items())),
        undated=undated,
        source=conv.source.value,
        state_hash=state_hash(conv),
        model=conv.model or "",
        hours=hours if any(hours) else [],
        weekdays=weekdays if any(weekdays) else [],
        words=" ".join(chat_words([conv.title or "", *(m.text for m in turns), *_attachment_texts(turns)])),
    )


def _attachment_texts(turns: Iterable[Message]) -> Iterator[str]:
    """The names and kept text of the turns' attachments: the page's search finds a chat by the files it shared."""
    for m in turns:
        for att in m.attachments:
            yield att.name or ""
            yield att.text or ""


def chat_words(texts: Iterable[str]) -> list[str]:
    """The distinct words of `texts` (lowercase, in order of appearance), at most MAX_WORDS."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in _WORD.findall(text.lower()):
            seen[word] = None
            if len(seen) >= MAX_WORDS:
                return list(seen)
    return list(seen)


def search_index(words_per_row: list[str]) -> tuple[str, str]:
    """The page's inverted index of the rows' words: the vocabulary (sorted, space-separated) and, for
    each word in the same order, the rows that hold it (ascending row numbers as base-36 gaps, comma-
    separated). The script finds a typed word's prefix range in the vocabulary by binary search."""
    postings: dict[str, list[int]] = {}
    for row, words in enumerate(words_per_row):
        for word in words.split():
            postings.setdefault(word, []).append(row)
    vocabulary = sorted(postings, key=lambda w: w.encode("utf-16-be"))  # JavaScript's order of strings: UTF-16 code units
    encoded = []
    for word in vocabulary:
        rows, previous, gaps = postings[word], 0, []
        for row in rows:
            gaps.append(_base36(row - previous))
            previous = row
        encoded.append(",".join(gaps))
    return " ".join(vocabulary), " ".join(encoded)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def _counts(values: dict[str, int] | list[int]) -> str:
    """`{"2025-02": 3}` or `[0, 2, ...]` as the attribute the page's script reads: `2025-02:3`, `1:2` ..."""
    items = values.items() if isinstance(values, dict) else enumerate(values)
    return " ".join(f"{k}:{n}" for k, n in items if n)


class NewestEntries:
    """Rows by conversation key, the winning state's (model.state_order; the same state twice keeps the first
    seen), so the page depends only on its inputs, never on their order."""

    def __init__(self) -> None:
        self.by_key: dict[str, ArchiveEntry] = {}

    def add(self, entry: ArchiveEntry) -> None:
        old = self.by_key.get(entry.key)
        if old is None or entry.state > old.state:
            self.by_key[entry.key] = entry

    def __len__(self) -> int:
        return len(self.by_key)

    def entries(self) -> list[ArchiveEntry]:
        return list(self.by_key.values())


# ---- the page ----

LEFT, TOP, PLOT_HEIGHT, BOTTOM, RIGHT = 44.0, 8.0, 160.0, 34.0, 8.0


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    fill: str
    platform: str
    label: str  # the platform as a person reads it
    month: str
    count: int


@dataclass
class Chart:
    """The activity chart's geometry: stacked bars per month, axes, legend (SVG user units)."""

    width: float
    height: float
    bars: list[Bar]
    y_ticks: list[tuple[float, int]]  # (y, value)
    x_labels: list[tuple[float, str, str]]  # (x, month label, year label or "")
    legend: list[tuple[str, str, str, int]]  # (platform, label, colour, messages)
    plot_left: float
    plot_bottom: float
    plot_right: float
    months: int
    plot_top: float = TOP


_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _month_range(first: str, last: str) -> list[str]:
    y, m = int(first[:4]), int(first[5:7])
    end = (int(last[:4]), int(last[5:7]))
    out = []
    while (y, m) <= end:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _nice_ceiling(value: int) -> int:
    """The smallest 1, 2, 2.5 (from 25 up) or 5 times a power of ten at or above `value` (the y axis' top)."""
    step = 1
    while True:
        for top in (step, 2 * step, 5 * step // 2 if step >= 10 else 2 * step, 5 * step):
            if top >= value:
                return top
        step *= 10


def platform_colour(index: int) -> str:
    """The colour of the page's index-th platform: PALETTE's, then hues a golden angle apart (never one seen before)."""
    if index < len(PALETTE):
        return PALETTE[index]
    hue = (index - len(PALETTE)) * 137.508 % 360
    lightness = (38, 52, 66)[(index - len(PALETTE)) % 3]
    return f"hsl({hue:.1f}, 60%, {lightness}%)"


def platform_colours(platforms: Iterable[str]) -> dict[str, str]:
    return {p: platform_colour(i) for i, p in enumerate(platforms)}


def chart_colours(entries: list[ArchiveEntry]) -> dict[str, str]:
    """Each platform's colour on the page: by its messages, the busiest first (the month chart's order),
    so a platform keeps its colour in every chart."""
    totals: Counter[str] = Counter()
    for e in entries:
        totals[e.platform] += sum(e.months.values())
    return platform_colours(sorted({e.platform for e in entries}, key=lambda p: (-totals[p], p)))


def activity_chart(entries: list[ArchiveEntry]) -> Chart | None:
    """Visible messages per month and platform as stacked bars (None: no dated message)."""
    per: dict[tuple[str, str], int] = {}
    totals: dict[str, int] = {}
    for e in entries:
        for month, n in e.months.items():
            per[(month, e.platform)] = per.get((month, e.platform), 0) + n
            totals[e.platform] = totals.get(e.platform, 0) + n
    if not per:
        return None
    platforms = sorted(totals, key=lambda p: (-totals[p], p))  # the busiest at the bottom of each bar
    colours = platform_colours(platforms)
    months = _month_range(min(m for m, _ in per), max(m for m, _ in per))
    step = max(4.0, min(40.0, 720.0 / len(months)))
    bar_width = max(2.0, round(step * 0.8, 2))
    per_month = [sum(per.get((m, p), 0) for p in platforms) for m in months]
    top = _nice_ceiling(max(per_month))
    scale = PLOT_HEIGHT / top
    bottom = TOP + PLOT_HEIGHT
    bars = []
    for i, month in enumerate(months):
        x = round(LEFT + i * step + (step - bar_width) / 2, 2)
        y = bottom
        for p in platforms:
            n = per.get((month, p), 0)
            if not n:
                continue
            h = round(n * scale, 2)
            y = round(y - h, 2)
            bars.append(Bar(x, y, bar_width, h, colours[p], p, platform_label(p), month, n))
    ticks = [(round(bottom - v * scale, 2), v) for v in sorted({0, top // 2, top})]
    every_month = len(months) <= 24
    labels = []
    for i, month in enumerate(months):
        first_or_january = i == 0 or month.endswith("-01")
        if every_month or first_or_january:
            labels.append((round(LEFT + i * step + step / 2, 2), _MONTH_NAMES[int(month[5:7]) - 1] if every_month else "",
                           month[:4] if first_or_january else ""))
    legend = [(p, platform_label(p), colours[p], totals[p]) for p in platforms]
    right = LEFT + len(months) * step
    return Chart(round(right + RIGHT, 2), TOP + PLOT_HEIGHT + BOTTOM, bars, ticks, labels, legend, LEFT, bottom, round(right, 2), len(months))


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)


@lru_cache(maxsize=1)
def filter_script() -> tuple[Markup, str]:
    """The page's filter script (a static file, never built from data) and its CSP hash source."""
    text = _environment().loader.get_source(_environment(), "archive_filter.js.j2")[0]  # type: ignore[union-attr]
    digest = b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return Markup(text), f"'sha256-{digest}'"


def link(html: str, prefix: str = "../") -> str:
    """A relative, percent-encoded link from the archive page to an export file."""
    return prefix + quote(html, safe="/")


def render_archive(entries: Iterable[ArchiveEntry], linked: set[str] | None = None, title: str = "Chat archive") -> str:
    """The page for `entries` (newest first); a row links to its html file when it has one and, if
    `linked` is given, only when that file (relative to the exports root) is in it."""
    rows = sorted(entries, key=lambda e: (e.title.casefold(), e.key))
    rows.sort(key=lambda e: e.date or "", reverse=True)  # newest first (stable: ties stay by title); undated last
    platforms = sorted({e.platform for e in rows}, key=lambda p: (platform_label(p).casefold(), p))
    chart = activity_chart(rows)
    colours = chart_colours(rows)
    script, script_hash = filter_script()
    dates = [e.date for e in rows if e.date]
    vocabulary, postings = search_index([e.words for e in rows])
    view = [
        {
            "title": e.title,
            "platform": e.platform,
            "platform_label": platform_label(e.platform),
            "date": e.date or "undated",
            "messages": e.messages,
            "model": e.model,
            "months": _counts(e.months),
            "hours": _counts(e.hours),
            "weekdays": _counts(e.weekdays),
            "href": link(e.html) if e.html and (linked is None or e.html in linked) else None,
        }
        for e in rows
    ]
    page = _environment().get_template("archive.html.j2").render(
        page_title=title,
        rows=view,
        platforms=[(p, platform_label(p), colours[p]) for p in platforms],
        vocabulary=vocabulary,
        postings=postings,
        chart=chart,
        messages=sum(e.messages for e in rows),
        undated=sum(e.undated for e in rows),
        first=min(dates) if dates else None,
        last=max(dates) if dates else None,
        script=script,
        script_hash=script_hash,
    )
    return without_controls(page)  # (everything in it is escaped text or the static script: taking controls out cannot make markup)


# ---- the bucket ----


def write_day_rows(store: ObjectStore, day: str, entries: Iterable[ArchiveEntry]) -> tuple[str, bool]:
    """Day D's rows (sorted by key, so the same conversations give the same bytes); (key, written).
    A day without a conversation leaves no file."""
    key = day_rows_key(day)
    rows = sorted((_row(e) for e in entries), key=lambda r: r["key"])
    if not rows:
        if store.head(key) is not None:
            store.delete(key)
            return key, True
        return key, False
    data = (json.dumps({"day": day, "conversations": rows}, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8", "replace")
    return key, put_bytes_if_changed(store, key, data, "application/json")


def _row(entry: ArchiveEntry) -> dict[str, Any]:
    """`asdict` of a row without its deep copy (its values are read, never changed)."""
    return {f.name: getattr(entry, f.name) for f in fields(entry)}


def read_day_rows(store: ObjectStore, key: str) -> list[ArchiveEntry] | None:
    """A day's rows (None when the file is damaged: that day's next export run rewrites it)."""
    try:
        data = json.loads(store.get_bytes(key))
        return [ArchiveEntry(**row) for row in data["conversations"]]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        return None


@dataclass
class ArchiveResult:
    key: str
    written: bool = False
    conversations: int = 0
    days: int = 0
    linked: int = 0  # rows whose html file is in the bucket
    damaged: list[str] = field(default_factory=list)  # day files that could not be read


def _day_files(store: ObjectStore) -> dict[str, str]:
    return {o.key: o.etag for o in store.list(DAYS_PREFIX)}


def _newest_rows(store: ObjectStore, days: dict[str, str]) -> tuple[NewestEntries, list[str]]:
    """The winning row of each conversation over the days' rows files; the files that could not be read."""
    newest = NewestEntries()
    damaged = []
    for key in sorted(days):
        rows = read_day_rows(store, key)
        if rows is None:
            damaged.append(key)
            continue
        for entry in rows:
            newest.add(entry)
    return newest, damaged


def write_archive(store: ObjectStore) -> ArchiveResult:
    """The bucket's archive page, rebuilt from every day's rows; written only when its bytes change."""
    result = ArchiveResult(archive_key())
    html_prefix = export_prefix("html")
    for _attempt in range(REBUILD_ATTEMPTS):
        days = _day_files(store)
        # the listing of every html file waits on the server: the days' rows are read meanwhile
        present, (newest, damaged) = side_by_side(lambda: {o.key[len(EXPORTS_PREFIX):] for o in store.list(html_prefix)},
                                                  partial(_newest_rows, store, days))
        entries = newest.entries()
        page = render_archive(entries, present).encode("utf-8", "replace")
        written = put_bytes_if_changed(store, result.key, page, CONTENT_TYPE)
        result.written = result.written or written
        result.conversations, result.days, result.damaged = len(entries), len(days) - len(damaged), damaged
        result.linked = sum(1 for e in entries if e.html in present)
        if _day_files(store) == days:  # no other run changed a day's rows meanwhile
            break
    return result
