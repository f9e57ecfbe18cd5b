"""Generated raw inputs for the readers tests (never real people's data): a one-message ChatGPT
conversation record, zips built in memory (one with a damaged member), Claude Code JSONL lines."""

from __future__ import annotations

import io
import json
import zipfile


def chatgpt_record(conv_id: str, text: str = "hello") -> dict:
    """One ChatGPT conversation of a single user message, as in conversations.json."""
    return {
        "id": conv_id,
        "title": f"title {conv_id}",
        "create_time": 1767225600.0,
        "update_time": 1767225700.0,
        "current_node": "m1",
        "mapping": {
            "m1": {
                "id": "m1",
                "parent": None,
                "children": [],
                "message": {"id": "m1", "author": {"role": "user"}, "content": {"content_type": "text", "parts": [text]}},
            }
        },
    }


def zip_bytes(files: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def member_data_start(data: bytes | bytearray, info: zipfile.ZipInfo) -> int:
    """Where `info`'s stored or deflated bytes start in the zip `data`: past its local header (30 bytes)
    and the name and extra field that header gives the lengths of (its extra field may differ from the
    central directory's)."""
    header = data[info.header_offset:info.header_offset + 30]
    return info.header_offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")


def damaged_zip() -> bytes:
    """conversations-000.json with a flipped byte (bad CRC), conversations-001.json intact."""
    bad = json.dumps([chatgpt_record("c-bad", "x" * 5000)]).encode()
    good = json.dumps([chatgpt_record("c-good")]).encode()
    data = bytearray(zip_bytes({"conversations-000.json": bad, "conversations-001.json": good}))
    i = data.find(b"x" * 5000) + 2500
    data[i] = ord("y")
    return bytes(data)


def claude_code_line(i: int) -> bytes:
    """Line i of Claude Code session s1: a user prompt chained to line i - 1."""
    return json.dumps(
        {
            "type": "user", "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s1",
            "timestamp": f"2026-01-01T00:00:{i:02d}Z", "message": {"role": "user", "content": f"prompt {i}"},
        }
    ).encode() + b"\n"
