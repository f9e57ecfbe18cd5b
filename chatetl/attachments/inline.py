"""Files a chat file carries inside itself as `data:` URLs (Open WebUI), found again by their id.

The reader gave each such attachment its bytes' digest as id (chatetl.readers.data_url); here the chat
file is streamed once, each JSON string that is a base64 data: URL decoded (one at a time, at most the
readers' bound on one value) and the wanted ones handed on. Memory stays that of one URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from chatetl.readers.data_url import decode_data_url, inline_id, max_data_url_chars

_BLOCK = 1024 * 1024
_START = b'"data:'


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
    """The JSON strings of the file that start with `data:` (without their quotes); one past the bound is skipped."""
    limit = max_data_url_chars()
    buf = b""
    url: bytearray | None = None  # the URL being read, across blocks
    skipping = False  # (a URL past the bound: its bytes let go until its closing quote)
    with opener() as f:
        while block := f.read(_BLOCK):
            buf += block
            while buf:
                if url is None and not skipping:
                    at = buf.find(_START)
                    if at < 0:
                        buf = buf[-(len(_START) - 1):]  # (a start cut at the block's end)
                        break
                    url, buf = bytearray(), buf[at + 1:]
                end = buf.find(b'"')
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
