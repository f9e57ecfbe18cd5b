"""The words of a stored attachment, so search finds them: a text file's text, a PDF's (pypdf).

Bounded: a text file past MAX_TEXT_BYTES and a PDF past MAX_PDF_BYTES or MAX_PDF_PAGES are not read, and
the text kept is at most MAX_TEXT_CHARS. A PDF pypdf cannot read gives no text (the file is still kept).
"""

from __future__ import annotations

import logging
from pathlib import Path

from chatetl.attachments.sniff import is_text

MAX_TEXT_BYTES = 4 * 1024**2
MAX_PDF_BYTES = 64 * 1024**2
MAX_PDF_PAGES = 500
MAX_TEXT_CHARS = 1_000_000
WORDS_TYPES = ("text/plain", "application/pdf")  # the sniffed types whose words are read


def file_text(path: Path, mime_type: str | None, head: bytes, size: int) -> str | None:
    """The text of the file at `path` (its type sniffed, its first bytes `head`), or None."""
    if mime_type == "application/pdf":
        return _pdf_text(path) if size <= MAX_PDF_BYTES else None
    if mime_type == "text/plain" and size <= MAX_TEXT_BYTES and is_text(head):
        text = path.read_bytes().decode("utf-8", "replace")
        return text[:MAX_TEXT_CHARS] if "\x00" not in text else None
    return None


def _pdf_text(path: Path) -> str | None:
    from pypdf import PdfReader  # (imported when a PDF is met: most uploads hold none)
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # (a damaged PDF's warnings: the text is what matters)
    try:
        reader = PdfReader(path)
        pages = []
        length = 0
        for page in reader.pages[:MAX_PDF_PAGES]:
            text = page.extract_text() or ""
            pages.append(text)
            length += len(text)
            if length >= MAX_TEXT_CHARS:
                break
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError):
        return None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    return text[:MAX_TEXT_CHARS] or None
