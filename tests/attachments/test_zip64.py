"""An attachment past 2 GiB in the day's zip: its member is written with zip64 fields (zipfile cannot see a
streamed member's size and would refuse it), checked on a generated stream that never lies on disk whole."""

from __future__ import annotations

import io
import struct
import zipfile

from chatetl.exports.files import temporary_collector


class Zeros(io.RawIOBase):
    """`size` zero bytes, generated as they are read."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _local_header_zip64(path, info) -> bool:
    """Whether the member's local header carries the zip64 extra field (tag 1)."""
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        f.seek(name_len, 1)
        extra = f.read(extra_len)
    return extra[:2] == b"\x01\x00"


def test_a_member_near_the_limit_is_written_with_zip64_a_small_one_without(tmp_path):
    data = bytes(range(256)) * 8
    with temporary_collector(("html",)) as collector:
        collector.write_zip(tmp_path / "day.zip", streams=[("files/big.bin", lambda: io.BytesIO(data), len(data)),
                                                           ("files/small.bin", lambda: io.BytesIO(b"small"), 5)], zip64_limit=1000)
    with zipfile.ZipFile(tmp_path / "day.zip") as zf:
        big, small = zf.getinfo("files/big.bin"), zf.getinfo("files/small.bin")
        assert zf.read(big) == data and zf.read(small) == b"small"
    assert _local_header_zip64(tmp_path / "day.zip", big) and not _local_header_zip64(tmp_path / "day.zip", small)


def test_an_attachment_past_two_gib_goes_into_the_zip(tmp_path):
    size = 2 * 1024**3 + 4096
    with temporary_collector(("html",)) as collector:
        collector.write_zip(tmp_path / "day.zip", streams=[("files/huge.bin", lambda: io.BufferedReader(Zeros(size), 1024**2), size)])
    assert (tmp_path / "day.zip").stat().st_size < 16 * 1024**2  # (zeros deflate: nothing big ever lay on disk)
    with zipfile.ZipFile(tmp_path / "day.zip") as zf:
        (info,) = zf.infolist()
        assert info.file_size == size
        assert _local_header_zip64(tmp_path / "day.zip", info)
        with zf.open(info) as f:  # (its start inflates: the member is readable where it begins)
            assert f.read(4096) == bytes(4096)
