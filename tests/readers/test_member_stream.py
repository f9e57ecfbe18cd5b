"""A zip member inflated in fixed blocks (chatetl.readers.inputs.member_stream): where damage shows, the
bytes handed out before it are the same whatever sizes the reader asks for; and the splitter hands
out every record whole in them before raising the damage (chatetl.readers.jsonscan.splitter)."""

from __future__ import annotations

import io
import json
import random
import zipfile
import zlib

import pytest
from reader_inputs import member_data_start

from chatetl.readers.inputs import member_stream
from chatetl.readers.inputs.member_stream import BLOCK, open_member
from chatetl.readers.jsonscan.splitter import ArraySplitter


class _BreaksAt(io.RawIOBase):
    """`data` read as zipfile reads a damaged member: a read that reaches `at` raises, its bytes lost."""

    def __init__(self, data: bytes, at: int) -> None:
        super().__init__()
        self.data, self.at, self.pos = data, at, 0
        self.asked: list[int] = []

    def read(self, n: int = -1) -> bytes:
        self.asked.append(n)
        end = len(self.data) if n < 0 else min(len(self.data), self.pos + n)
        if end > self.at:
            raise zipfile.BadZipFile("Bad CRC-32 for file 'x.json'")
        out, self.pos = self.data[self.pos:end], end
        return out


def _read_all(stream, sizes) -> tuple[bytes, BaseException | None]:
    got = bytearray()
    i = 0
    try:
        while True:
            chunk = stream.read(sizes[i % len(sizes)])
            i += 1
            if not chunk:
                return bytes(got), None
            got += chunk
    except zipfile.BadZipFile as exc:
        return bytes(got), exc


@pytest.mark.parametrize("sizes", [[BLOCK], [1000], [65536, 3 * BLOCK], [-1], [BLOCK + 7, 13]])
def test_the_bytes_before_the_damaged_block_are_handed_out_however_they_are_read(sizes):
    data = bytes(range(256)) * (3 * BLOCK // 256 + 100)
    at = 2 * BLOCK + 5000  # in the third block
    inner = _BreaksAt(data, at)
    got, exc = _read_all(member_stream._Blocks(inner), sizes)
    assert got == data[: 2 * BLOCK] and isinstance(exc, zipfile.BadZipFile)
    # the inner stream is asked for blocks that end where blocks end (the first may be a head read)
    ends = []
    pos = 0
    for n in inner.asked[:-1]:
        pos += n
        ends.append(pos)
    assert all(e % BLOCK == 0 for e in ends[1:]) and (ends[0] % BLOCK == 0 or ends[0] < BLOCK)


def test_lines_are_read_across_blocks():
    lines = [json.dumps({"i": i, "pad": "x" * (i % 500)}).encode() + b"\n" for i in range(20_000)]
    data = b"".join(lines)
    assert len(data) > 2 * BLOCK
    blocks = member_stream._Blocks(io.BytesIO(data))
    assert list(iter(blocks.readline, b"")) == lines
    limited = member_stream._Blocks(io.BytesIO(data))
    assert limited.readline(5) == lines[0][:5] and limited.readline() == lines[0][5:]


def test_a_real_member_reads_whole_and_its_bad_crc_after_its_last_block():
    records = [{"id": i, "text": f"{i} " * 200} for i in range(8000)]
    body = json.dumps(records).encode()
    assert len(body) > 2 * BLOCK
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("x.json", body)
    good = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(good)) as zf, open_member(zf, zf.getinfo("x.json")) as f:
        assert f.read() == body
    bad = bytearray(good)
    bad[bad.find(b'"id": 10,') + 7] = ord("9")  # a bad CRC, found at the member's end
    with zipfile.ZipFile(io.BytesIO(bytes(bad))) as zf, open_member(zf, zf.getinfo("x.json")) as f:
        splitter = ArraySplitter(f)
        ids = []
        with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"):
            for raw, value in splitter:
                ids.append(value["id"])
    whole = len(body) // BLOCK * BLOCK  # the bytes before the last block
    expected = [r["id"] for r in json.loads(body[: body.rfind(b"}, {", 0, whole) + 1] + b"]")]
    expected[10] = 19  # (the changed byte is in what was read)
    assert ids == expected


def test_a_deflated_member_is_inflated_by_isal_into_zlibs_bytes():
    """ISA-L in zlib's place (see the module): the decompressor is swapped, and the bytes, read in
    blocks or whole, are the member's, as zipfile with zlib reads them."""
    from isal import isal_zlib

    records = [{"id": i, "text": f"{i} word " * (i % 300), "n": i * 0.5} for i in range(6000)]
    body = json.dumps(records).encode()
    assert len(body) > 2 * BLOCK
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        zf.writestr("x.json", body)
        zf.writestr("stored.json", b"[1, 2]", compress_type=zipfile.ZIP_STORED)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        with zf.open("x.json") as plain:
            assert plain.read() == body  # zlib's reading
        member = open_member(zf, zf.getinfo("x.json"))
        assert isinstance(member._inner._decompressor, type(isal_zlib.decompressobj(-15)))
        got = b"".join(iter(lambda: member.read(100_000), b""))
        assert got == body
        assert [value["id"] for _, value in ArraySplitter(open_member(zf, zf.getinfo("x.json")))] == list(range(6000))
        assert open_member(zf, zf.getinfo("stored.json")).read() == b"[1, 2]"


def test_a_corrupt_deflate_stream_is_a_damaged_member_and_the_other_members_read():
    from chatetl.readers import Entry, ReadReport, read_entry

    words = random.Random(7)

    def record(cid: str, n: int) -> dict:
        root = {"id": "root", "message": None, "parent": None, "children": ["m0"]}
        nodes = {"root": root}
        for i in range(n):
            nodes[f"m{i}"] = {
                "id": f"m{i}", "parent": "root" if i == 0 else f"m{i - 1}", "children": [f"m{i + 1}"] if i + 1 < n else [],
                "message": {"id": f"m{i}", "author": {"role": "user" if i % 2 == 0 else "assistant"}, "create_time": 1700000000 + i,
                            "content": {"content_type": "text", "parts": [f"message {i} of {cid} " + " ".join(f"{words.random():.6f}" for _ in range(i % 50))]}},
            }
        return {"title": cid, "create_time": 1700000000, "update_time": 1700000100, "mapping": nodes, "conversation_id": cid, "current_node": f"m{n - 1}"}

    bad_body = json.dumps([record(f"c-bad-{i}", 40) for i in range(300)]).encode()
    good_body = json.dumps([record("c-good", 3)]).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations-000.json", bad_body)
        zf.writestr("conversations-001.json", good_body)
    data = bytearray(buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("conversations-000.json")
    start = member_data_start(data, info)
    for at in range(start + info.compress_size * 3 // 4, start + info.compress_size, 97):  # the deflate stream itself
        broken = bytearray(data)
        broken[at:at + 64] = b"\xff" * 64
        try:  # broken where zlib itself stops at it (not merely a bad CRC at the end)
            zlib.decompressobj(-15).decompress(bytes(broken[start:start + info.compress_size]))
        except zlib.error:
            data = broken
            break
    else:
        pytest.fail("no corruption found that zlib refuses")
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("up.zip", bytes(data)), report))
    ids = [c.conversation_id for c in convs]
    assert "c-good" in ids
    bad_read = [i for i in ids if i.startswith("c-bad-")]
    assert bad_read == [f"c-bad-{i}" for i in range(len(bad_read))] and 0 < len(bad_read) < 300  # those before the damage
    errors = [e for e in report.errors if e.file == "up.zip!conversations-000.json"]
    assert len(errors) == 1 and "damaged zip member" in errors[0].reason and "CRC" not in errors[0].reason, report.errors
