"""Timestamps as sources write them (epoch floats, ISO strings, millis) into aware UTC datetimes.

Epoch numbers: seconds below 10^12 (up to 9999-12-31T23:59:59, 253402300799 s), milliseconds from
10^12 (2001-09-09 in milliseconds; chat exports begin in 2022). So the seconds of year 10000
(253402300800) are not read as milliseconds of 1978: like every time past what a datetime holds
(years 1 to 9999, in UTC), they are None and counted (`out_of_range_count`), which the record loop
(chatetl.readers.jsonscan.records.convert_records) reports as drift `time.out_of_range`. What is no time
at all (None, "", a bool, text that is no date) is None and not counted.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

MILLISECONDS_FROM = 1e12
OUT_OF_RANGE = "time.out_of_range"  # the drift name


class _Tally(threading.local):
    out_of_range = 0


_TALLY = _Tally()  # per thread: two uploads read in two threads keep their own counts


def out_of_range_count() -> int:
    """Times read as None so far in this thread because no datetime holds them (only ever grows:
    a caller counts one record's by the difference)."""
    return _TALLY.out_of_range


def _out_of_range() -> None:
    _TALLY.out_of_range += 1


def parse_time(value: Any) -> datetime | None:
    """Epoch seconds (or milliseconds), ISO 8601 strings (with Z, offsets or none): UTC, or None."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        try:
            seconds = float(value)
            if seconds >= MILLISECONDS_FROM:
                seconds /= 1000.0
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):  # past year 9999 or before year 1, NaN
            _out_of_range()
            return None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return parse_time(number)
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            return dt.replace(tzinfo=UTC)
        try:
            return dt.astimezone(UTC)
        except OverflowError:  # 9999-12-31T23:00-05:00 is in year 10000 in UTC
            _out_of_range()
            return None
    return None


def parse_iso_time(value: Any) -> datetime | None:
    """`parse_time` for a reader whose times are ISO 8601 text (2026-01-01T08:00:00Z): such text is
    parsed directly (parse_time tries a number first: several times slower on ISO text); anything
    else, and ISO text past what a datetime holds, as parse_time reads (and counts) it."""
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] in "Tt ":
        try:
            when = datetime.fromisoformat(value)
            return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        except (ValueError, OverflowError):  # (no ISO time, or past what a datetime holds: counted there)
            return parse_time(value)
    return parse_time(value)


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, as every output writes timestamps."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
