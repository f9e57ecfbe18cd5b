"""Exports with internals opted in read back as what they were (reasoning, tool calls, tool results)."""

from __future__ import annotations

import subprocess
import sys

from chatetl.model import MessageKind
from chatetl.readers import ReadReport, read_path
from chatetl.samples import chatgpt_export


def test_internals_survive_the_round_trip(tmp_path):
    (tmp_path / "export.zip").write_bytes(chatgpt_export())
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "chatetl.cli", "export", str(tmp_path / "export.zip"), "--out", str(out),
         "--format", "chat-export-json,yaml,chat-export-md", "--include-reasoning", "--include-tools"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    for fmt in ("chat-export-json", "yaml", "chat-export-md"):
        report = ReadReport()
        convs = {c.title: c for c in read_path(out / fmt, report)}
        assert report.errors == [] and report.drift == {}, (fmt, report.summary())
        kinds = [m.kind for m in convs["Mean of a list"].active_branch]
        assert kinds == [
            MessageKind.TURN, MessageKind.REASONING, MessageKind.REASONING,
            MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT, MessageKind.TURN,
        ], fmt
        assert convs["Mean of a list"].message_count == 2  # internals are not visible turns
