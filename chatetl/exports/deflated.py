"""Zip members deflated once: kept compressed, and copied into a zip as they are.

`deflate` compresses a file the way zipfile does when it writes a member (raw deflate at the default
level, fed in `BLOCK`s), and `append_deflated` writes such a member into a `zipfile.ZipFile` open for writing
with the header zipfile itself would write: the zip's bytes are those of writing the member's content
through zipfile, without compressing it again. A day's zip is put together from the pieces of its
uploads this way (chatetl.exports.pieces), each member read where it lies in its piece's zip (`stored_span`).
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass

BLOCK = 1024 * 1024  # what ExportCollector.write_zip copies into zipfile at a time
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip member's local file header (APPNOTE 4.3.7), up to its name


@dataclass(frozen=True)
class Deflated:
    data: bytes  # the raw deflate stream
    crc: int
    size: int  # of the content


@dataclass(frozen=True)
class Span:
    """Bytes lying in a file on disk, `length` of them from `offset` (a member stored in a zip, a whole file)."""

    path: str
    offset: int
    length: int

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(self.length)
        if len(data) != self.length:
            raise ValueError(f"{self.path}: {self.length} bytes expected at {self.offset}, {len(data)} found")
        return data


@dataclass(frozen=True)
class DeflatedAt:
    """A `Deflated` whose raw deflate stream lies in a file (read when the zip is written, never all in memory)."""

    span: Span
    crc: int
    size: int  # of the content

    def read(self) -> Deflated:
        return Deflated(self.span.read(), self.crc, self.size)


def stored_span(zf: zipfile.ZipFile, name: str) -> Span:
    """Where the bytes of member `name` lie in the zip's file; the member must be stored (not compressed)."""
    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 or zf.filename is None:
        raise ValueError(f"{zf.filename}: {name} is not a stored member of a zip on disk")
    fp = zf.fp
    assert fp is not None  # (open)
    fp.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(fp.read(_LOCAL_HEADER.size))
    if header[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"{zf.filename}: bad local header for {name}")
    name_length, extra_length = header[-2], header[-1]  # (the local header's, which may differ from the directory's)
    return Span(zf.filename, info.header_offset + _LOCAL_HEADER.size + name_length + extra_length, info.compress_size)


def deflate(content: bytes) -> Deflated:
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)  # (zipfile's own compressor)
    parts = [compressor.compress(content[i:i + BLOCK]) for i in range(0, len(content), BLOCK)]
    parts.append(compressor.flush())
    return Deflated(b"".join(parts), zlib.crc32(content), len(content))


def append_deflated(zf: zipfile.ZipFile, info: zipfile.ZipInfo, member: Deflated) -> None:
    """`member` written as zipfile writes `info` (ZIP_DEFLATED, a seekable file, no zip64) with its content."""
    if member.size * 1.05 > zipfile.ZIP64_LIMIT or len(member.data) > zipfile.ZIP64_LIMIT:
        raise ValueError(f"{info.filename}: too big to copy into a zip without zip64")
    info.compress_type = zipfile.ZIP_DEFLATED
    info.flag_bits = 0
    info.file_size, info.compress_size, info.CRC = member.size, len(member.data), member.crc
    fp = zf.fp
    assert fp is not None  # (open for writing)
    fp.seek(zf.start_dir)
    info.header_offset = fp.tell()
    fp.write(info.FileHeader(False))
    fp.write(member.data)
    zf.filelist.append(info)
    zf.NameToInfo[info.filename] = info
    zf.start_dir = fp.tell()
    zf._didModify = True  # type: ignore[attr-defined]  # (zipfile writes the central directory on close only then)
