"""Zip members deflated once: kept compressed, and copied into a zip as they are.

`deflate` compresses a file the way zipfile does when it writes a member (raw deflate at the default
level, fed in `BLOCK`s), and `append_deflated` writes such a member into a `zipfile.ZipFile` open for writing
with the header zipfile itself would write: the zip's bytes are those of writing the member's content
through zipfile, without compressing it again. A day's zip is put together from the pieces of its
uploads this way (chatetl.exports.pieces).
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass

BLOCK = 1024 * 1024  # what ExportCollector.write_zip copies into zipfile at a time


@dataclass(frozen=True)
class Deflated:
    data: bytes  # the raw deflate stream
    crc: int
    size: int  # of the content


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
