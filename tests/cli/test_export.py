"""`chatetl export --zip sharegpt-jsonl` without the training format chosen must not
touch OUT/sharegpt-jsonl/ (a training file written by an earlier run stays)."""

from __future__ import annotations

import json
import zipfile

from click.testing import CliRunner

from chatetl.cli import main


def _chat(path, chat_id: str, answer: str) -> None:
    record = {"schema": "chat-export/1", "platform": "claude", "title": "T", "chat_id": chat_id, "exported_at": "2026-03-14T10:00:00Z",
              "messages": [{"role": "user", "text": "question"}, {"role": "assistant", "role_tag": "claude", "text": answer}]}
    path.write_text(json.dumps(record))


def test_zip_only_training_file_leaves_an_earlier_training_file_alone(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    _chat(src / "a.json", "chat-a", "answer a")
    runner = CliRunner()
    first = runner.invoke(main, ["export", str(src), "--out", str(out), "--format", "sharegpt-jsonl"])
    assert first.exit_code == 0, first.output
    training = out / "sharegpt-jsonl" / "sharegpt.jsonl"
    before = training.read_bytes()

    _chat(src / "b.json", "chat-b", "answer b")
    second = runner.invoke(main, ["export", str(src), "--out", str(out), "--format", "md", "--zip", "sharegpt-jsonl"])
    assert second.exit_code == 0, second.output
    assert training.read_bytes() == before  # the earlier run's file is neither overwritten nor deleted
    with zipfile.ZipFile(out / "chats.zip") as zf:
        assert len(zf.read("sharegpt-jsonl/sharegpt.jsonl").splitlines()) == 2  # the zip still holds this run's lines
