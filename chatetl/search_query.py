"""What a search query asks, as people type it: its words, its quoted phrases, a time it names, a date it asks for.

`read_query("when did I sell the bike in March 2024?", today)` gives the text left to search (the
full-text index then leaves out the question's own words: chatetl.search), the time named (March
2024, the days `since` to `until`, both inclusive) and that the question asks for a date
(`asks_date`: the answer names one). Times: ISO days and months (`2024-03-12`, `2024-03`), a month with or without its day
and year (`12 March 2024`, `March 12, 2024`, `March 2024`, `in March`: the last March up to today),
`in 2024`, `last May`, `yesterday`, `today`, `last week`, `last month`, `last year`, `this month`,
`this year`. A time only ever narrows what comes first (chatetl.search), never what is found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
          "december")
_MONTH_OF = {name: i + 1 for i, name in enumerate(MONTHS)} | {name[:3]: i + 1 for i, name in enumerate(MONTHS)} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_OF, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"

# (pattern, what it is), tried in order: the first that is a real date is the query's time
_TIMES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b" + _YEAR + r"-(?P<mon>[01]\d)-(?P<dd>[0-3]\d)\b"), "iso day"),
    (re.compile(r"\b" + _YEAR + r"-(?P<mon>[01]\d)\b"), "iso month"),
    (re.compile(r"\b(?:on\s+)?(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.IGNORECASE), "day"),
    (re.compile(r"\b(?:on\s+)?" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.IGNORECASE), "day"),
    (re.compile(r"\b(?:in\s+|during\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.IGNORECASE), "month"),
    (re.compile(r"\b(?:in|during)\s+" + _YEAR + r"\b", re.IGNORECASE), "year"),
    (re.compile(r"\b(?P<which>last|this)\s+(?P<unit>week|month|year)\b", re.IGNORECASE), "relative"),
    (re.compile(r"\b(?P<which>yesterday|today)\b", re.IGNORECASE), "relative"),
    (re.compile(r"\b(?P<which>last|this)\s+" + _MONTH + r"(?!\w)", re.IGNORECASE), "named month"),
    (re.compile(r"\b(?:in|during)\s+" + _MONTH + r"(?!\w)", re.IGNORECASE), "named month"),
]
_SAID_RELATIVE = frozenset({"relative", "named month"})
# how a question asks for a date: its answer names one
_ASKS_DATE = re.compile(r"^\s*(?:when\b|what\s+(?:date|day|time)\b|which\s+(?:date|day)\b)|\b(?:the\s+date|what\s+date)\b", re.IGNORECASE)
_PHRASE = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class Asked:
    """A query read (`read_query`): `text` the query without its quoted phrases and a time named relative to today,
    `phrases` the quoted ones (searched as phrases), `since`/`until` the time named (None: none),
    `asks_date` the question asks when (`when did …`, `what is the date of …`)."""

    text: str
    phrases: list[str] = field(default_factory=list)
    since: date | None = None
    until: date | None = None
    asks_date: bool = False

    @property
    def window(self) -> tuple[date, date] | None:
        return (self.since, self.until) if self.since and self.until else None


def _month_span(year: int, month: int) -> tuple[date, date]:
    following = date(year + month // 12, month % 12 + 1, 1)
    return date(year, month, 1), following - timedelta(days=1)


def _last_month_named(month: int, today: date, skip_current: bool) -> tuple[date, date]:
    """The month of that name up to today (`last May` in May: the one a year before)."""
    year = today.year if (month < today.month or (month == today.month and not skip_current)) else today.year - 1
    return _month_span(year, month)


def _relative(which: str, unit: str | None, today: date) -> tuple[date, date]:
    which = which.lower()
    if which == "today":
        return today, today
    if which == "yesterday":
        return today - timedelta(days=1), today - timedelta(days=1)
    unit = (unit or "").lower()
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return (monday - timedelta(days=7), monday - timedelta(days=1)) if which == "last" else (monday, today)
    if unit == "month":
        first = today.replace(day=1)
        return _month_span((first - timedelta(days=1)).year, (first - timedelta(days=1)).month) if which == "last" else (first, today)
    return (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)) if which == "last" else (date(today.year, 1, 1), today)


def _span(kind: str, m: re.Match[str], today: date) -> tuple[date, date] | None:
    """The days a matched time covers (None: not a real date, e.g. 31 February)."""
    groups = m.groupdict()
    try:
        if kind == "iso day":
            day = date(int(groups["year"]), int(groups["mon"]), int(groups["dd"]))
            return day, day
        if kind == "iso month":
            return _month_span(int(groups["year"]), int(groups["mon"]))
        month = _MONTH_OF.get((groups.get("month") or "").lower(), 0)
        if kind == "day":
            day = date(int(groups["year"]), month, int(groups["day"]))
            return day, day
        if kind == "month":
            return _month_span(int(groups["year"]), month)
        if kind == "year":
            return date(int(groups["year"]), 1, 1), date(int(groups["year"]), 12, 31)
        if kind == "named month":
            return _last_month_named(month, today, skip_current=(groups.get("which") or "").lower() == "last")
        return _relative(groups["which"], groups.get("unit"), today)
    except ValueError:
        return None


def read_query(query: str, today: date | None = None) -> Asked:
    """The query as people type it (see the module doc); `today` for relative times (default: the clock's)."""
    today = today or date.today()
    phrases = [p.strip() for p in _PHRASE.findall(query) if p.strip()]
    rest = _PHRASE.sub(" ", query)
    since = until = None
    for pattern, kind in _TIMES:
        m = pattern.search(rest)
        if m is None:
            continue
        span = _span(kind, m, today)
        if span is None:
            continue
        since, until = span
        if kind in _SAID_RELATIVE:  # ("last", "yesterday": no chunk says them of that time; "12 March 2024" may be said)
            rest = rest[:m.start()] + " " + rest[m.end():]
        break  # (one time a query: the first, most precise, that is a real date)
    return Asked(text=" ".join(rest.split()), phrases=phrases, since=since, until=until, asks_date=bool(_ASKS_DATE.search(query)))
