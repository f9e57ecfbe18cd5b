"""The counting stream the inflate cap and the progress bar read through (chatetl.readers.inputs.counting_stream)."""

from __future__ import annotations

import io

import pytest

from chatetl.readers.inputs.counting_stream import CountingStream


def test_each_read_tells_the_position_and_passes_the_bytes_through() -> None:
    data = b"first line\nsecond line\n" + bytes(range(256)) * 40
    positions: list[int] = []
    stream = io.BufferedReader(CountingStream(io.BytesIO(data), positions.append), 1024)
    assert stream.readline() == b"first line\n"
    assert stream.read() == data[len(b"first line\n"):]
    assert positions == sorted(positions)
    assert positions[-1] == len(data)  # the end told once reached; an empty read tells nothing more
    assert stream.read() == b""
    assert positions[-1] == len(data) and positions.count(len(data)) == 1


def test_readline_and_readinto_count_like_read() -> None:
    positions: list[int] = []
    stream = CountingStream(io.BytesIO(b"ab\ncdef"), positions.append)
    assert stream.readline() == b"ab\n"
    buffer = bytearray(10)
    assert stream.readinto(buffer) == 4 and bytes(buffer[:4]) == b"cdef"
    assert positions == [3, 7]


def test_a_check_that_raises_stops_reading_before_any_byte_is_taken() -> None:
    stop = False

    def check() -> None:
        if stop:
            raise OSError("stopped")

    positions: list[int] = []
    stream = CountingStream(io.BytesIO(b"0123456789"), positions.append, check)
    assert stream.read(4) == b"0123"
    stop = True
    with pytest.raises(OSError, match="stopped"):
        stream.read(4)
    with pytest.raises(OSError, match="stopped"):
        stream.readline()
    assert positions == [4]


def test_closing_closes_the_inner_stream() -> None:
    inner = io.BytesIO(b"x")
    stream = CountingStream(inner, lambda pos: None)
    stream.close()
    assert inner.closed and stream.closed
    stream.close()  # twice is fine
