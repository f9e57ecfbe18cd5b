"""The registry of readers: every format detection names has its reader, imported directly (a
reader that cannot be imported fails the import of chatetl.readers, never a file at read time)."""

from __future__ import annotations

import pytest

from chatetl.readers.inputs.detect import SIDECARS, Format
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms import chatgpt
from chatetl.readers.registry import READERS, Reader


def test_every_format_but_the_zips_and_the_sidecars_has_a_reader():
    assert set(READERS) == set(Format) - SIDECARS - {Format.ZIP}
    assert all(reader.format is fmt for fmt, reader in READERS.items())


def test_a_reader_converts_records_or_reads_its_file_one_way_only():
    with pytest.raises(ValueError, match="one of them"):
        Reader(Format.CHATGPT, Shape.ARRAY)
    with pytest.raises(ValueError, match="one of them"):
        Reader(Format.CHATGPT, Shape.ARRAY, converter=chatgpt.record_converter, read=lambda e, s, r: iter(()))
