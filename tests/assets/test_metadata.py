"""The assets' metadata helpers (assets.metadata): md_fenced shows text as a fenced block, cut to
its limit and fenced with more backticks than any run inside, so it can never close early;
run_and_totals names this run's counts apart from the totals."""

from __future__ import annotations

from assets.metadata import md_fenced, run_and_totals


def test_md_fenced_cuts_and_outgrows_inner_fences():
    assert md_fenced("plain") == "```text\nplain\n```"
    assert md_fenced("a ``` b") == "````text\na ``` b\n````"
    assert md_fenced("x" * 10, limit=4) == "```text\nxxxx\n…\n```"


def test_run_and_totals_names_whose_counts_they_are():
    metadata = run_and_totals({"documents": 0, "chunks": 2}, {"documents": 7, "chunks": None})
    assert {k: v for k, v in metadata.items() if k != "this_run_and_total"} == {"documents_this_run": 0, "chunks_this_run": 2, "documents_total": 7}
    table = metadata["this_run_and_total"].value
    assert "| what | this run | total now |" in table and "| documents | 0 | 7 |" in table and "| chunks | 2 | - |" in table
