"""Timestamps as sources write them (epoch floats, ISO strings, millis) into aware UTC datetimes."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """Epoch seconds (or milliseconds), ISO 8601 strings (with Z, offsets or none): UTC, or None."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        seconds = float(value)
        if seconds > 1e11:  # milliseconds
            seconds /= 1000.0
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        try:
            return parse_time(float(text))
        except ValueError:
            pass
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.astimezone(timezone.utc)
    return None


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, as every output writes timestamps."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
