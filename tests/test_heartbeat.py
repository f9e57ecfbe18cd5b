"""chatetl.heartbeat: the items pass through unchanged, and a progress line goes out once the interval
has passed since the start or the last line (a fake clock: no timing in the test)."""

from __future__ import annotations

from chatetl.heartbeat import heartbeat


def test_a_line_each_time_the_interval_passed_the_items_unchanged():
    ticks = iter([0, 1, 5, 11, 12, 25, 26])  # the start, then one reading after each item
    lines: list[str] = []
    items = list(heartbeat(range(6), lines.append, "upload 1, conversations rendered", every_seconds=10, clock=lambda: next(ticks)))
    assert items == list(range(6))
    assert lines == ["upload 1, conversations rendered: 3 so far", "upload 1, conversations rendered: 5 so far"]


def test_without_a_callback_nothing_is_timed():
    assert list(heartbeat(iter("abc"), None, "x", clock=lambda: 1 / 0)) == ["a", "b", "c"]
