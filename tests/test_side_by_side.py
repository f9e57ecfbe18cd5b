"""chatetl.side_by_side: two calls at once, with the outcome of running them one after the other."""

from __future__ import annotations

import threading

import pytest

from chatetl.side_by_side import side_by_side


def test_both_results_in_order():
    assert side_by_side(lambda: "first", lambda: 2) == ("first", 2)


def test_the_two_calls_run_at_the_same_time():
    both_there = threading.Barrier(2, timeout=30)  # one after the other, the first would wait here alone and break it
    threads = side_by_side(lambda: (both_there.wait(), threading.get_ident())[1],
                           lambda: (both_there.wait(), threading.get_ident())[1])
    assert threads[1] == threading.get_ident() and threads[0] != threads[1]


def test_the_first_ones_exception_wins_as_it_would_have_come_first():
    def first():
        raise KeyError("first")

    def second():
        raise ValueError("second")

    with pytest.raises(KeyError):
        side_by_side(first, second)
    with pytest.raises(KeyError):
        side_by_side(first, lambda: 2)
    with pytest.raises(ValueError, match="second"):
        side_by_side(lambda: 1, second)


def test_the_first_has_ended_when_the_second_raises():
    ended = threading.Event()
    started = threading.Event()

    def first():
        started.wait(30)
        ended.set()

    def second():
        started.set()
        raise ValueError("second")

    with pytest.raises(ValueError):
        side_by_side(first, second)
    assert ended.is_set()  # nothing left running behind the caller
