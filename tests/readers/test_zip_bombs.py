"""Zip bombs (issue 14, item 4): an upload whose zips declare more than CHATETL_MAX_INFLATE_RATIO
(100) times its own bytes is refused before anything is inflated, with an error naming it; the
bytes actually inflated are counted as the readers take them and reading stops past
CHATETL_MAX_INFLATED_BYTES (8 GiB), since headers can lie.

Before: a 1 MB zip holding one 1 GiB string was inflated and read whole (an hour of a worker).
The bombs are real deflate streams, made fast: after a full flush deflate starts afresh, so one
compressed megabyte repeated is a valid stream of that megabyte repeated.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

import pytest
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.limits import RATIO_FREE_BYTES, Limits
from chatetl.settings import SettingError, Settings

MB = 1024 * 1024


def deflate_repeated(prefix: bytes, block: bytes, times: int, suffix: bytes) -> tuple[bytes, int, int]:
    """(raw deflate stream, CRC-32, size) of prefix + block * times + suffix, compressed once per part."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    tail = c.compress(suffix) + c.flush()
    crc = zlib.crc32(prefix)
    for _ in range(times):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    return head + one * times + tail, crc, len(prefix) + len(block) * times + len(suffix)


def handmade_zip(members: list[tuple[str, bytes, int, int]], declared: dict[str, int] | None = None) -> bytes:
    """A zip of already-deflated members (name, deflate stream, CRC, size); `declared` overrides the
    size the headers give (a zip that lies)."""
    out = io.BytesIO()
    central = []
    for name, data, crc, size in members:
        size = (declared or {}).get(name, size)
        offset = out.tell()
        raw = name.encode()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw), 0) + raw + data)
        central.append(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw), 0, 0, 0, 0, 0, offset) + raw)
    start = out.tell()
    for entry in central:
        out.write(entry)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return out.getvalue()


def one_long_string(mb: int) -> tuple[bytes, int, int]:
    """A ChatGPT conversations.json whose one message is `mb` MiB of one string, deflated."""
    head, tail = json.dumps([chatgpt_record("c1", text="@")]).encode().split(b"@")
    return deflate_repeated(head, b"x" * MB, mb, tail)


def read(name: str, data: bytes) -> tuple[list, ReadReport]:
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def test_the_helpers_make_real_zips():
    stream, crc, size = deflate_repeated(b"[", b"ab" * 1000, 50, b"]")
    data = handmade_zip([("a.json", stream, crc, size)])
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.read("a.json") == b"[" + b"ab" * 50_000 + b"]"


def test_a_1_mb_zip_of_one_1_gib_string_is_refused_unread_naming_the_file():
    stream, crc, size = one_long_string(1024)
    bomb = handmade_zip([("conversations.json", stream, crc, size)])
    assert len(bomb) < 2 * MB
    convs, report = read("bomb.zip", bomb)
    assert convs == []
    [err] = report.errors
    assert err.file == "bomb.zip" and err.where == ""
    assert err.reason.startswith(f"zip bomb refused: its members declare {size} bytes (1 GiB), 1,011 times its own {len(bomb)} bytes")
    assert "CHATETL_MAX_INFLATE_RATIO" in err.reason and err.reason.endswith("not inflated")


def test_a_bomb_beside_good_members_refuses_the_whole_zip():
    good = json.dumps([chatgpt_record("c1")]).encode()
    bomb = handmade_zip([
        ("conversations-000.json", zlib.compress(good)[2:-4], zlib.crc32(good), len(good)),
        ("conversations-001.json", *one_long_string(200)),
    ])
    convs, report = read("up.zip", bomb)
    assert convs == [] and [e.file for e in report.errors] == ["up.zip"]


def test_nested_zips_add_up_against_the_upload():
    """Each level alone passes (the outer declares 60 MB, each inner zip stores its member): what
    they declare together, 100 times the upload's 120 KB and more, refuses the first inner zip."""
    inner = zip_bytes({"filler.json": b"[" + b" " * (30 * MB) + b"]"}, zipfile.ZIP_STORED)
    outer = zip_bytes({"a.zip": inner, "b.zip": inner}, zipfile.ZIP_DEFLATED)
    assert 60 * MB < RATIO_FREE_BYTES < 90 * MB and len(outer) < 200_000
    convs, report = read("up.zip", outer)
    assert convs == []
    [err] = report.errors
    assert err.file == "up.zip!a.zip"
    assert f"declare {30 * MB + 2} bytes (30 MiB); with the zips around it up.zip declares {2 * len(inner) + 30 * MB + 2} bytes (90 MiB)" in err.reason
    assert err.reason.endswith("not inflated, nor the rest of up.zip")


def test_a_zip_under_the_ratio_reads_as_before():
    records = [chatgpt_record(f"c{i}", text="the same words again " * 50) for i in range(200)]
    data = zip_bytes({"conversations.json": json.dumps(records).encode()}, zipfile.ZIP_DEFLATED)
    convs, report = read("up.zip", data)
    assert len(convs) == 200 and not report.errors


def test_headers_that_understate_a_member_cannot_make_it_inflate_more():
    """The central directory says 4 KB; the stream holds 1 GiB: zipfile inflates no more than the
    header says, the CRC then fails, and the member is reported as damaged, in its place."""
    stream, crc, _size = one_long_string(1024)
    lying = handmade_zip([("conversations.json", stream, crc, 4096)])
    convs, report = read("up.zip", lying)
    assert convs == []
    assert [e.file for e in report.errors] == ["up.zip!conversations.json"]


def test_bytes_inflated_are_counted_and_reading_stops_past_the_absolute_cap(monkeypatch):
    monkeypatch.setenv("CHATETL_MAX_INFLATED_BYTES", str(3 * MB))
    shards = {}
    for shard in range(3):
        records = [chatgpt_record(f"s{shard}-{i}", text=f"{shard} {i} " + "words " * 300) for i in range(1100)]
        shards[f"conversations-00{shard}.json"] = json.dumps(records).encode()
    assert all(2 * MB < len(s) < 3 * MB for s in shards.values())
    convs, report = read("up.zip", zip_bytes(shards, zipfile.ZIP_DEFLATED))
    assert {c.conversation_id.split("-")[0] for c in convs} == {"s0"}
    [err] = report.errors  # one, for the member being read; the third is never opened
    assert err.file == "up.zip!conversations-001.json"
    assert "inflated past 3145728 bytes (3 MiB) (CHATETL_MAX_INFLATED_BYTES)" in err.reason
    assert err.reason.startswith("reading stopped: the zips of up.zip")  # the cap's words, not "damaged zip member"


def test_the_caps_are_settings():
    s = Settings.from_env({"CHATETL_MAX_INFLATED_BYTES": "1000", "CHATETL_MAX_INFLATE_RATIO": "12.5"})
    assert (s.max_inflated_bytes, s.max_inflate_ratio) == (1000, 12.5)
    assert Settings.from_env({}).max_inflate_ratio == 100
    assert Limits(max_inflate_ratio=10).inflate_limit(100 * MB) == 1000 * MB
    assert Limits(max_inflate_ratio=10).inflate_limit(1) == RATIO_FREE_BYTES
    with pytest.raises(SettingError, match="CHATETL_MAX_INFLATE_RATIO"):
        Settings.from_env({"CHATETL_MAX_INFLATE_RATIO": "0.5"})
