"""The read report (chatetl.readers.report.ReadReport): every error is reported, but the bad parts
it keeps for quarantine are bounded in bytes, and the ones dropped are counted."""

from __future__ import annotations

from chatetl.readers import ReadReport
from chatetl.readers import report as report_module


def test_bad_parts_kept_for_quarantine_are_bounded(monkeypatch):
    monkeypatch.setattr(report_module, "MAX_RAW_BYTES", 1000)
    report = ReadReport()
    for i in range(50):
        report.error("f.jsonl", f"line {i}", "invalid JSON", raw=b"x" * 100)
    assert len(report.errors) == 50  # every error is still reported
    assert sum(1 for e in report.errors if e.raw is not None) == 10
    assert report.raw_bytes == 1000 and report.raw_dropped == 40
