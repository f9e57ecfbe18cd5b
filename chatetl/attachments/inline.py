"""Files a chat file carries inside itself as `data:` URLs (Open WebUI, Markdown), found again by their id.

The reader gave each such attachment its bytes' digest as id (chatetl.readers.data_url); here the chat
file is streamed once, each base64 data: URL (a JSON string, or a Markdown image's target) decoded one
at a time, at most the readers' bound on one value, and the wanted ones handed on. Memory stays that
of one URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from chatetl.readers.data_url import decode_data_url, inline_id, max_data_url_chars

_BLOCK = 1024 * 1024
# where a data: URL starts, and the byte that ends it
_STARTS = ((b'"data:', b'"'), (b"](data:", b")"), (b"](<data:", b">"))


def inline_files(opener: Callable[[], BinaryIO], wanted: set[str] | None) -> Iterator[tuple[str, str | None, bytes]]:
    """(id, stated MIME type, bytes) of each data: URL in the file whose id is in `wanted` (None: every one),
    each once."""
    left = None if wanted is None else set(wanted)
    seen: set[str] = set()
    if left is not None and not left:
        return
    for url in _data_urls(opener):
        decoded = decode_data_url(url)
        if decoded is None:
            continue
        ident = inline_id(decoded[1])
        if ident in seen or (left is not None and ident not in left):
            continue
        seen.add(ident)
        yield ident, decoded[0], decoded[1]
        if left is not None and not (left - seen):
            return


def _data_urls(opener: Callable[[], BinaryIO]) -> Iterator[bytes]:
    """The data: URLs of the file: JSON strings that start with `data:` (without their quotes) and the
    targets of Markdown images (`](data:…)`, `](<data:…>)`), in file order; one past the bound is skipped."""
    limit = max_data_url_chars()
    keep = max(len(start) for start, _ in _STARTS) - 1  # (a start cut at a block's end)
    buf = b""
    url: bytearray | None = None  # the URL being read, across blocks
    close = b""  # the byte that ends it
    skipping = False  # (a URL past the bound: its bytes let go until it ends)
    with opener() as f:
        while block := f.read(_BLOCK):
            buf += block
            while buf:
                if url is None and not skipping:
                    found = [(at, start, end) for start, end in _STARTS if (at := buf.find(start)) >= 0]
                    if not found:
                        buf = buf[-keep:]
                        break
                    at, start, close = min(found)
                    url, buf = bytearray(), buf[at + len(start) - len(b"data:"):]
                end = buf.find(close)
                part = buf if end < 0 else buf[:end]
                if url is not None and len(url) + len(part) > limit:
                    url, skipping = None, True
                if url is not None:
                    url += part
                if end < 0:
                    buf = b""
                    break
                buf = buf[end + 1:]
                if url is not None:
                    yield bytes(url)
                url, skipping = None, False
