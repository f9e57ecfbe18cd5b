"""A chat file cut short inside its first record is its format's error, naming it, and quarantined:
never skipped as "not a chat file" (exit 0, nothing kept) the way an unrelated file in a zip is."""

from __future__ import annotations

import io
import json
import zipfile

from chatetl.ingest.upload import normalize_upload
from chatetl.layout import quarantine_prefix, upload_id
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.storage import LocalObjectStore

LE_CHAT = [
    {"id": "m1", "version": 0, "chatId": "c1", "content": "Plan a trip to Lyon for three days", "contentChunks": None,
     "role": "user", "createdAt": "2026-01-05T10:00:00.000Z"},
    {"id": "m2", "version": 0, "chatId": "c1", "content": "Day one: the old town.", "contentChunks": [{"type": "text", "text": "Day one."}],
     "role": "assistant", "createdAt": "2026-01-05T10:00:05.000Z"},
]
AI_STUDIO = {"runSettings": {"temperature": 1.0, "model": "models/gemini-2.5-pro"}, "systemInstruction": {},
             "chunkedPrompt": {"chunks": [{"text": "What is 2+2?", "role": "user"}, {"text": "4.", "role": "model"}],
                               "pendingInputs": [{"text": "", "role": "user"}]}}
GEMINI = [{"header": "Gemini Apps", "title": "Prompted Hello there", "time": "2026-07-20T15:00:00.000Z", "products": ["Gemini Apps"]}]


def cut_inside_first_record(data: object, at: str) -> bytes:
    raw = json.dumps(data).encode()
    return raw[: raw.index(at.encode()) + len(at)]


def zipped(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


CUT = {
    "chat-c1.json": cut_inside_first_record(LE_CHAT, "Plan a trip"),
    "Takeout/Drive/Google AI Studio/Two and two": cut_inside_first_record(AI_STUDIO, '"model": "models/gem'),
    "Takeout/My Activity/Gemini Apps/MyActivity.json": cut_inside_first_record(GEMINI, '"title": "Prompted Hel'),
}


def test_a_le_chat_ai_studio_or_gemini_file_cut_in_its_first_record_is_an_error_naming_it():
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("export.zip", zipped({**CUT, "README.txt": b"notes"})), report))
    assert convs == []
    by_file = {e.file: e for e in report.errors}
    assert sorted(by_file) == sorted(f"export.zip!{name}" for name in CUT)
    assert by_file["export.zip!chat-c1.json"].reason == "cut short: starts as a le-chat file but ends inside its first record"
    assert "ai-studio" in by_file["export.zip!Takeout/Drive/Google AI Studio/Two and two"].reason
    assert "gemini" in by_file["export.zip!Takeout/My Activity/Gemini Apps/MyActivity.json"].reason
    assert report.skipped == {"not a chat file": 1}  # the README alone


def test_a_whole_file_beside_it_is_read_and_an_unrelated_cut_json_stays_skipped():
    report = ReadReport()
    files = {"chat-c1.json": json.dumps(LE_CHAT).encode(), "chat-c2.json": CUT["chat-c1.json"], "data.json": b'[{"x": 1, "y": "ab'}
    convs = list(read_entry(Entry.from_bytes("export.zip", zipped(files)), report))
    assert len(convs) == 1 and [e.file for e in report.errors] == ["export.zip!chat-c2.json"]
    assert report.skipped == {"not a chat file": 1}


def test_a_cut_file_in_an_upload_is_quarantined_and_counted(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    key = "raw/2026-03-01/lechat.zip"
    info = store.put_bytes(key, zipped({"chat-c1.json": json.dumps(LE_CHAT).encode(), "chat-c2.json": CUT["chat-c1.json"]}))
    result = normalize_upload(store, info, "2026-03-01", workdir=tmp_path)
    assert result.conversations == 1 and len(result.report.errors) == 1
    prefix = quarantine_prefix("2026-03-01", upload_id(key))
    listing = json.loads(store.get_bytes(f"{prefix}errors.json"))
    [error] = listing["errors"]
    assert error["file"].endswith("lechat.zip!chat-c2.json")
    assert error["reason"] == "cut short: starts as a le-chat file but ends inside its first record"
    kept = [i.key for i in store.list(prefix) if i.key.endswith(".bin")]
    assert [store.get_bytes(k) for k in kept] == [CUT["chat-c1.json"]]  # the cut file's bytes, kept
