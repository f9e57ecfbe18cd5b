"""A zip member inflated in fixed blocks (chatetl.readers.member_stream): where damage shows, the
bytes handed out before it are the same whatever sizes the reader asks for; and the splitter hands
out every record whole in them before raising the damage (chatetl.readers.splitter)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from chatetl.readers import member_stream
from chatetl.readers.member_stream import BLOCK, open_member
from chatetl.readers.splitter import ArraySplitter


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
