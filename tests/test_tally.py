"""chatetl.tally: one rule for adding up results (numbers add, lists extend, counters and dicts
of numbers add per key, nested tallies add, optional fields keep the first value), and the
results that use it add up as their own code did."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from chatetl.tally import Tally, all_passed, capped, summed_by


@dataclass
class Inner(Tally):
    n: int = 0


@dataclass
class Outer(Tally):
    name: str = ""
    count: int = 0
    seconds: float = 0.0
    keys: list[str] = field(default_factory=list)
    per: Counter = field(default_factory=Counter)
    files: dict[str, int] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    inner: Inner = field(default_factory=Inner)
    by_source: dict[str, Inner] = field(default_factory=dict)
    first: dict | None = None
    ok: bool = summed_by(all_passed, default=True)
    shown: list[int] = summed_by(capped(3), default_factory=list)  # noqa: RUF009 - a field() with its rule


def test_every_kind_of_field_adds_up():
    a = Outer("day-1", 1, 0.5, ["a"], Counter(x=1), {"md": 1}, {"k": "first"}, Inner(1), {"s": Inner(1)}, None, True, [1, 2])
    b = Outer("day-2", 2, 1.0, ["b"], Counter(x=2, y=1), {"md": 2, "html": 1}, {"k": "second", "j": "only"}, Inner(2),
              {"s": Inner(2), "t": Inner(5)}, {"title": "kept"}, False, [3, 4])
    c = Outer(first={"title": "not kept"})
    total = Outer.total([a, b, c], "range")
    assert (total.name, total.count, total.seconds, total.keys) == ("range", 3, 1.5, ["a", "b"])
    assert total.per == Counter(x=3, y=1) and total.files == {"md": 3, "html": 1} and total.why == {"k": "first", "j": "only"}
    assert total.inner == Inner(3) and total.by_source == {"s": Inner(3), "t": Inner(5)}
    assert total.first == {"title": "kept"} and total.ok is False and total.shown == [1, 2, 3]
    assert b.by_source["t"] == Inner(5) and total.by_source["t"] is not b.by_source["t"]  # parts are not changed


def test_a_flag_needs_its_own_rule():
    @dataclass
    class Flagged(Tally):
        flag: bool = False

    with pytest.raises(TypeError, match="Flagged.flag"):
        Flagged().add(Flagged(True))


def test_the_stage_results_add_up():
    from chatetl.check_report import MAX_PROBLEMS, CheckReport
    from chatetl.exports.partition import ExportsResult
    from chatetl.graph.chunks import ChunkLoadSummary
    from chatetl.graph.load import LoadSummary
    from chatetl.ingest.partition import PREVIEW_ROWS, PartitionIngest
    from chatetl.rag.partition import DocumentsResult

    assert LoadSummary.total([LoadSummary(messages_written=2), LoadSummary(messages_written=3, traces_written=1)]) == LoadSummary(
        messages_written=5, traces_written=1)
    docs = DocumentsResult.total([DocumentsResult(documents=1, chunks_in_graph=ChunkLoadSummary(chunks=2)),
                                  DocumentsResult(documents=2, chunks_in_graph=ChunkLoadSummary(chunks=3), first_document={"title": "t"})])
    assert (docs.documents, docs.chunks_in_graph.chunks, docs.first_document) == (3, 5, {"title": "t"})
    ex = ExportsResult.total([ExportsResult(files={"md": 1}, written=["a"]), ExportsResult(files={"md": 1, "html": 2}, preview_key="p")])
    assert (ex.files, ex.items, ex.written, ex.preview_key) == ({"md": 2, "html": 2}, 4, ["a"], "p")

    failing = CheckReport()
    for i in range(MAX_PROBLEMS):
        failing.fail(f"problem {i}")
    report = CheckReport.total([CheckReport(counts=Counter(files=1)), failing, failing])
    assert not report.passed and report.problem_count == 2 * MAX_PROBLEMS and len(report.problems) == MAX_PROBLEMS
    assert report.counts == Counter(files=1) and CheckReport.total([CheckReport(), CheckReport()]).passed

    d1, d2 = PartitionIngest("2026-01-01", uploads=1), PartitionIngest("2026-01-02", uploads=2)
    d1.sources["chatgpt"].new += 1
    d2.sources["chatgpt"].new += 2
    d2.sources["rex"].updated += 1
    d1.preview = d2.preview = [{}] * PREVIEW_ROWS
    d2.rows_written["messages"] += 7
    total = PartitionIngest.total([d1, d2], d1.day)
    assert (total.day, total.uploads, total.rows_written["messages"], len(total.preview)) == ("2026-01-01", 3, 7, PREVIEW_ROWS)
    assert (total.sources["chatgpt"].new, total.sources["rex"].updated) == (3, 1)
