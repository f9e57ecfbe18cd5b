"""Queries as people type them (no services): the time a query names, a question that asks when, quoted
phrases, and what the full-text index and the ranking make of them (chatetl.search_query, chatetl.search)."""

from __future__ import annotations

from datetime import date

import pytest

from chatetl.search import DATE_WORDS, asked_query, blend, in_window_first
from chatetl.search_query import read_query

TODAY = date(2026, 12, 6)  # a Sunday


@pytest.mark.parametrize(("query", "since", "until"), [
    ("notes from 2024-03-12", date(2024, 3, 12), date(2024, 3, 12)),
    ("the 2024-02 invoices", date(2024, 2, 1), date(2024, 2, 29)),
    ("what did I buy on 12 March 2024", date(2024, 3, 12), date(2024, 3, 12)),
    ("dentist March 12, 2025", date(2025, 3, 12), date(2025, 3, 12)),
    ("the lease in March 2024", date(2024, 3, 1), date(2024, 3, 31)),
    ("taxes in 2023", date(2023, 1, 1), date(2023, 12, 31)),
    ("what did I decide about the lease last May", date(2026, 5, 1), date(2026, 5, 31)),
    ("the boiler in December", date(2026, 12, 1), date(2026, 12, 31)),
    ("the boiler last December", date(2025, 12, 1), date(2025, 12, 31)),
    ("yesterday's recipe", date(2026, 12, 5), date(2026, 12, 5)),
    ("last week", date(2026, 11, 23), date(2026, 11, 29)),
    ("last month", date(2026, 11, 1), date(2026, 11, 30)),
    ("this year", date(2026, 1, 1), date(2026, 12, 6)),
])
def test_a_time_a_query_names_is_a_span_of_days(query, since, until):
    asked = read_query(query, TODAY)
    assert (asked.since, asked.until) == (since, until)


def test_a_query_without_a_real_date_has_no_time():
    for query in ("may I ask about it", "error 2024 in the log", "KX4417 stopped working"):
        assert read_query(query, TODAY).window is None, query
    assert read_query("the 31 February 2024 thing", TODAY).window == (date(2024, 2, 1), date(2024, 2, 29))  # (the month it names)


def test_relative_times_leave_the_words_searched_absolute_ones_stay():
    assert read_query("what did I decide about the lease last May", TODAY).text == "what did I decide about the lease"
    assert read_query("sold the bike in March 2024", TODAY).text == "sold the bike in March 2024"


def test_a_question_that_asks_when_prefers_chunks_that_name_a_month():
    for query in ("when did I sell the bike?", "What date is the dentist?", "what is the date of the tax deadline?"):
        assert read_query(query, TODAY).asks_date, query
    assert not read_query("what did I decide about the lease?", TODAY).asks_date
    lucene, left_out = asked_query(read_query("when did I sell the bike?", TODAY))
    assert lucene == "sell bike\\? " + DATE_WORDS and left_out == 0
    assert asked_query(read_query("when?", TODAY)) == ("when\\? " + DATE_WORDS, 0)  # (only stop words: kept, as before)


def test_quoted_phrases_are_required_phrases_and_escaped():
    asked = read_query('the "bike shop" on "Main St. (north)" near me', TODAY)
    assert asked.phrases == ["bike shop", "Main St. (north)"] and asked.text == "the on near me"
    assert asked_query(asked) == ('near +"bike shop" +"Main St. \\(north\\)"', 0)
    assert asked_query(read_query('what about "rye dough"', TODAY)) == ('+"rye dough"', 0)  # only stop words beside it: left out
    assert asked_query(read_query("yesterday", TODAY)) == ("", 0)  # a time alone: no words to search


def test_what_was_said_in_the_time_named_comes_first_the_rest_follows():
    def entry(name: str, said: str | None, created: str | None) -> tuple[float, dict[str, int], dict[str, object]]:
        return (1.0, {"text": 1}, {"chunk_id": name, "said_from": said, "said_until": said, "created_at": created, "updated_at": created})

    fused = [entry("old", "2024-01-02T10:00:00Z", "2024-01-02T10:00:00Z"),
             entry("march", "2024-03-31T23:00:00Z", "2024-01-01T00:00:00Z"),  # a long conversation: its chunk's own time counts
             entry("undated", None, None),
             entry("conversation in march", None, "2024-03-05T08:00:00Z")]
    ordered = in_window_first(fused, (date(2024, 3, 1), date(2024, 3, 31)))
    assert [e[2]["chunk_id"] for e in ordered] == ["march", "conversation in march", "old", "undated"]
    assert in_window_first(fused, None) is fused


def test_a_question_that_asks_when_is_ordered_by_its_words():
    def row(key: str, score: float) -> dict[str, object]:
        return {"document_key": key, "chunk_id": key + "#0", "score": score, "text": "it went"}

    lists = {"text": [row("said", 2.0), row("other", 1.9)], "vector": [row("other", 0.9), row("near", 0.8), row("said", 0.5)]}
    assert [r["document_key"] for _, _, r in blend(lists, ["sold"], k=3)] == ["other", "said", "near"]
    assert [r["document_key"] for _, _, r in blend(lists, ["sold"], k=3, words_decide=True)] == ["said", "other", "near"]
