"""The assets' metadata helpers (assets.metadata): md_fenced shows text as a fenced block, cut to
its limit and fenced with more backticks than any run inside, so it can never close early."""

from __future__ import annotations

from assets.metadata import md_fenced


def test_md_fenced_cuts_and_outgrows_inner_fences():
    assert md_fenced("plain") == "```text\nplain\n```"
    assert md_fenced("a ``` b") == "````text\na ``` b\n````"
    assert md_fenced("x" * 10, limit=4) == "```text\nxxxx\n…\n```"
