"""What normalizing one upload keeps in quarantine: errors' bad parts, and warnings' bytes too, without
failing anything for a warning."""

from __future__ import annotations

import json

from chatetl.ingest.upload import normalize_upload
from chatetl.layout import quarantine_prefix, upload_id
from chatetl.storage import LocalObjectStore

DAY = "2026-03-01"


def _session_lines(cut: bool) -> bytes:
    sid = "5e5510e0-0000-4000-8000-000000000001"
    base = {"sessionId": sid, "cwd": "/w", "version": "2.1.0", "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": "Hi"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-03-01T10:00:01.000Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Hello"}]}},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    if cut:
        text += json.dumps({**base, "type": "assistant", "uuid": "a2", "parentUuid": "a1"})[:60]
    return text.encode()


def test_a_warning_keeps_its_bytes_in_quarantine_and_fails_nothing(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    key = f"raw/{DAY}/session.jsonl"
    info = store.put_bytes(key, _session_lines(cut=True))
    result = normalize_upload(store, info, DAY, workdir=tmp_path)
    assert result.report.errors == [] and len(result.report.warnings) == 1
    assert result.conversations == 1 and result.messages == 2
    prefix = quarantine_prefix(DAY, upload_id(key))
    kept = sorted(i.key for i in store.list(prefix))
    assert kept == [f"{prefix}errors.json", f"{prefix}warning-00000.bin"]
    assert store.get_bytes(f"{prefix}warning-00000.bin") == _session_lines(cut=True).rsplit(b"\n", 1)[1]
    listing = json.loads(store.get_bytes(f"{prefix}errors.json"))
    assert listing["errors"] == [] and [w["where"] for w in listing["warnings"]] == ["line 3"]

    # the same upload, finished later: nothing left in quarantine
    info = store.put_bytes(key, _session_lines(cut=False))
    result = normalize_upload(store, info, DAY, workdir=tmp_path)
    assert result.report.warnings == [] and list(store.list(prefix)) == []
