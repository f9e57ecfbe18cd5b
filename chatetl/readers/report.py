"""What reading an upload found: counts, errors and warnings with their place, skipped records, format drift."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chatetl.keepsakes import Keepsake

# Bad parts kept for quarantine are held until the upload is read: past this many bytes the
# rest are reported without their bytes, so a file of bad lines cannot take the memory.
MAX_RAW_BYTES = 64 * 1024 * 1024


@dataclass
class ReadError:
    file: str  # the file, with its archive member path ("upload.zip!conversations.json")
    where: str  # line N, conversation N (id), byte offset ... ; "" for the whole file
    reason: str
    raw: bytes | None = None  # the bad part itself, kept for quarantine where it can be isolated

    def __str__(self) -> str:
        place = f" ({self.where})" if self.where else ""
        return f"{self.file}{place}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "where": self.where, "reason": self.reason}


@dataclass
class ReadReport:
    files: int = 0  # files that held chat data and were read
    conversations: int = 0
    messages: int = 0
    errors: list[ReadError] = field(default_factory=list)
    # what is worth saying but damages nothing (a log's last line cut while it was being written, a part
    # a manifest names that the upload lacks): kept with their bytes for quarantine, never a failure
    warnings: list[ReadError] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> count (non-chat files, other record types)
    drift: Counter[str] = field(default_factory=Counter)  # "chatgpt.content_type:foo" -> count
    formats: Counter[str] = field(default_factory=Counter)  # detected format -> files
    raw_bytes: int = 0  # bytes of bad parts kept (see MAX_RAW_BYTES)
    raw_dropped: int = 0  # bad parts reported without their bytes, past MAX_RAW_BYTES
    # what the account keeps beside its chats (projects, memories, canvases), in the order read: small beside
    # the chats (a project's docs, a canvas row's text), held until the upload's tables are written
    kept: list[Keepsake] = field(default_factory=list)

    def error(self, file: str, where: str, reason: str, raw: bytes | None = None) -> ReadError:
        err = ReadError(file=file, where=where, reason=reason, raw=self._keep(raw))
        self.errors.append(err)
        return err

    def warn(self, file: str, where: str, reason: str, raw: bytes | None = None) -> ReadError:
        warning = ReadError(file=file, where=where, reason=reason, raw=self._keep(raw))
        self.warnings.append(warning)
        return warning

    def _keep(self, raw: bytes | None) -> bytes | None:
        if raw is not None:
            if self.raw_bytes + len(raw) > MAX_RAW_BYTES:
                self.raw_dropped += 1
                return None
            self.raw_bytes += len(raw)
        return raw

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n

    def unknown(self, what: str, n: int = 1) -> None:
        """Count something the reader did not know (a content type, a block type, a field)."""
        self.drift[what] += n

    def summary(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "conversations": self.conversations,
            "messages": self.messages,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "skipped": dict(sorted(self.skipped.items())),
            "drift": dict(sorted(self.drift.items())),
            "formats": dict(sorted(self.formats.items())),
        }
