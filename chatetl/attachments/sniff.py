"""A file's type from its first bytes (the signatures chat exports carry), never from its name."""

from __future__ import annotations

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"\x1aE\xdf\xa3", "video/webm"),
)


def mime_of(head: bytes) -> str | None:
    """The MIME type the bytes' signature says, or None where it says none known."""
    for magic, mime in _SIGNATURES:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and len(head) >= 12:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}.get(head[8:12])
    if head[4:8] == b"ftyp":
        return "image/heic" if head[8:12] in (b"heic", b"heix", b"mif1") else "video/mp4"
    return None


def is_text(head: bytes) -> bool:
    """Whether the bytes read as text (UTF-8, no NUL): a file whose words search may find."""
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # (a character cut at the head's end)
    return True
