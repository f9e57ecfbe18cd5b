"""Members deflated once and copied into a zip give the bytes zipfile writes when it compresses them itself."""

from __future__ import annotations

import random
import shutil
import zipfile

import pytest

from chatetl.exports.deflated import BLOCK, append_deflated, deflate, stored_span


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    info.create_system = 3
    return info


def test_a_copied_member_has_the_bytes_zipfile_writes(tmp_path):
    rng = random.Random(5)
    words = ["chat", "export", "día", "世界", "\n", "```", "<html>"]
    members = {
        "md/empty.md": b"",
        "md/small.md": b"hello\n",
        "html/gro\u00dfe-\u4e16\u754c.html": " ".join(rng.choice(words) for _ in range(200_000)).encode(),  # more than BLOCK
        "chat-export-json/noise.json": rng.randbytes(3 * BLOCK + 17),
    }
    assert len(members["html/gro\u00dfe-\u4e16\u754c.html"]) > BLOCK
    sources = {}
    for i, (name, data) in enumerate(members.items()):
        sources[name] = tmp_path / f"{i}"
        sources[name].write_bytes(data)
    with zipfile.ZipFile(tmp_path / "zipfile.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name in sorted(members):
            with open(sources[name], "rb") as f, zf.open(_info(name), "w") as dst:
                shutil.copyfileobj(f, dst, BLOCK)
    with zipfile.ZipFile(tmp_path / "copied.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name in sorted(members):
            if name.startswith("md/"):  # the two ways mixed in one zip
                with open(sources[name], "rb") as f, zf.open(_info(name), "w") as dst:
                    shutil.copyfileobj(f, dst, BLOCK)
            else:
                append_deflated(zf, _info(name), deflate(members[name]))
    assert (tmp_path / "copied.zip").read_bytes() == (tmp_path / "zipfile.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "copied.zip") as zf:
        assert zf.testzip() is None
        assert {n: zf.read(n) for n in zf.namelist()} == members


def test_a_stored_member_is_read_where_it_lies_in_its_zip(tmp_path):
    """A piece's members stay in its zip until the day's zip is written: their spans hold their bytes."""
    members = {"0/0": b"deflated bytes", "0/lines": b'{"a": 1}\n{"b": 2}\n', "ñame-世/1": bytes(range(256)) * 300}
    with zipfile.ZipFile(tmp_path / "piece.zip", "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    with zipfile.ZipFile(tmp_path / "piece.zip") as zf:
        spans = {name: stored_span(zf, name) for name in members}
    assert {name: span.read() for name, span in spans.items()} == members
    with zipfile.ZipFile(tmp_path / "deflated.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x", b"compressed")
    with zipfile.ZipFile(tmp_path / "deflated.zip") as zf, pytest.raises(ValueError, match="not a stored member"):
        stored_span(zf, "x")
