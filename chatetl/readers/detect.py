"""Sniff what an input is from its content, never from its name alone.

JSON is inspected with a streaming parser: only the top-level keys of the first
object are looked at, so a huge first conversation costs no memory.
"""

from __future__ import annotations

import io
import json
import re
from enum import StrEnum

import ijson

from chatetl.readers.depthguard import DepthGuard, NestingTooDeep
from chatetl.readers.entry import Entry

ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"


class Format(StrEnum):
    ZIP = "zip"
    CHATGPT = "chatgpt"  # account export: array of conversations with `mapping`, or one such object
    CHATGPT_SIDECAR = "chatgpt-sidecar"  # export_manifest.json, user.json, ... (no conversations)
    CLAUDE_AI = "claude-ai"  # conversations.json array or conversations.jsonl
    CLAUDE_AI_SIDECAR = "claude-ai-sidecar"  # users.json, projects.json, memories.json
    CHAT_EXPORT_JSON = "chat-export-json"  # {"schema": "chat-export/1"}
    CHAT_EXPORT_SHAREGPT = "chat-export-sharegpt"  # {"schema": "sharegpt/1"}
    CHAT_EXPORT_MD = "chat-export-md"
    CHAT_EXPORT_YAML = "chat-export-yaml"
    SHAREGPT = "sharegpt"  # dataset: [{"id", "conversations": [{"from", "value"}]}] or JSONL
    REX = "rex"  # rex-* records, array or JSONL
    CLAUDE_CODE = "claude-code"  # session log JSONL


SIDECARS = frozenset({Format.CHATGPT_SIDECAR, Format.CLAUDE_AI_SIDECAR})


# a ```md fence whose first line is a chat-export label (sys, sources, user:, assistant:, grok: ...):
# a Markdown note that merely shows a ```md code block is no chat export
_MD_LABELLED_FENCE = re.compile(r"^`{3,}md[ \t]*\n(?:sys|sources|[A-Za-z][A-Za-z0-9 _.\-]*:)[ \t]*$", re.MULTILINE)


class Layout(StrEnum):
    ARRAY = "array"  # top-level JSON array of records
    OBJECT = "object"  # one top-level JSON object
    JSONL = "jsonl"  # one JSON object per line
    TEXT = "text"


def _classify_keys(keys: set[str], first: dict | None = None) -> Format | None:
    """Decide a JSON record's format from its top-level keys (and a few values)."""
    first = first or {}
    if "mapping" in keys or ("current_node" in keys and "title" in keys):
        return Format.CHATGPT
    if "chat_messages" in keys:
        return Format.CLAUDE_AI
    schema = first.get("schema")
    if schema == "chat-export/1":
        return Format.CHAT_EXPORT_JSON
    if schema == "sharegpt/1":
        return Format.CHAT_EXPORT_SHAREGPT
    name = first.get("name")
    if isinstance(name, str) and name.startswith(("rex-", "pdk-")) or "passive-data-metadata" in keys:
        return Format.REX
    if "conversations" in keys and ("id" in keys or "system" in keys or "tools" in keys or len(keys) <= 3):
        return Format.SHAREGPT
    if "sessionId" in keys or ("type" in keys and ("parentUuid" in keys or "leafUuid" in keys or "snapshot" in keys)):
        return Format.CLAUDE_CODE
    if "export_files" in keys or "logical_files" in keys:
        return Format.CHATGPT_SIDECAR
    if "uuid" in keys and ("email_address" in keys or "full_name" in keys):
        return Format.CLAUDE_AI_SIDECAR
    if "uuid" in keys and ("prompt_template" in keys or "docs" in keys or "is_private" in keys):
        return Format.CLAUDE_AI_SIDECAR
    if "conversations_memory" in keys or "project_memories" in keys:
        return Format.CLAUDE_AI_SIDECAR
    return None


_SCALAR_KEYS = ("schema", "name", "type")


def _first_record_keys(head: bytes, array: bool) -> tuple[set[str], dict]:
    """Top-level keys (and a few scalar values) of the first record, from the head of a file."""
    keys: set[str] = set()
    scalars: dict = {}
    depth_target = 2 if array else 1
    depth = 0
    last_key = None
    try:
        for _prefix, event, value in ijson.parse(DepthGuard(io.BytesIO(head)), buf_size=4096):
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
                if depth < depth_target:
                    break
            elif event == "map_key" and depth == depth_target:
                keys.add(value)
                last_key = value
                continue
            elif depth == depth_target and last_key in _SCALAR_KEYS and event in ("string", "number"):
                scalars[last_key] = value
            last_key = None if event != "map_key" else last_key
    except (ijson.common.IncompleteJSONError, ijson.common.JSONError, NestingTooDeep):
        pass  # the head is cut mid-document (or absurdly nested): what was seen so far decides
    return keys, scalars


def _decode_head(data: bytes) -> str | None:
    """Decode the head of a text file; None when it is not UTF-8 text (binary garbage)."""
    for cut in range(4):  # the head may end in the middle of a character
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


MAX_FIRST_LINE_BYTES = 256 * 1024 * 1024


def _long_first_line_jsonl(entry: Entry) -> tuple[Format | None, Layout] | None:
    """JSON Lines whose first line is longer than the head (a big Claude conversation): read that
    one line (bounded) and look past it; (format, JSONL) when more records follow, else None."""
    try:
        with entry.open() as f:
            first = b""
            for _ in range(1000):  # skip leading blank lines, boundedly
                first = f.readline(MAX_FIRST_LINE_BYTES)
                if first.strip() or not first:
                    break
            if not first.endswith(b"\n"):
                return None  # one line to the end (or longer than the cap): a single object
            following = f.read(65536).strip()
    except OSError:
        return None
    if not following.startswith(b"{"):
        return None
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    return _classify_keys(set(obj), obj), Layout.JSONL


def detect(entry: Entry, head: bytes | None = None) -> tuple[Format | None, Layout | None]:
    """Return (format, layout) of an entry, or (None, None) when it is no chat format known."""
    if head is None:
        head = entry.head()
    if head.startswith(ZIP_MAGIC) or head.startswith(EMPTY_ZIP_MAGIC):
        return Format.ZIP, None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return None, None
    if text[:1] == b"[":
        keys, scalars = _first_record_keys(text, array=True)
        return _classify_keys(keys, scalars), Layout.ARRAY
    if text[:1] == b"{":
        first_line = text.split(b"\n", 1)[0].strip()
        single_line_record = False
        if first_line.endswith(b"}"):
            try:
                obj = json.loads(first_line)
                single_line_record = isinstance(obj, dict)
            except (ValueError, RecursionError):
                single_line_record = False
        if single_line_record and b"\n" in text.strip():
            # JSON Lines: decide by the first record that says what it is
            for line in text.split(b"\n")[:50]:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(obj, dict):
                    fmt = _classify_keys(set(obj), obj)
                    if fmt is not None:
                        return fmt, Layout.JSONL
            return None, Layout.JSONL
        if b"\n" not in text.strip():
            jsonl = _long_first_line_jsonl(entry)
            if jsonl is not None:
                return jsonl
        keys, scalars = _first_record_keys(text, array=False)
        return _classify_keys(keys, scalars), Layout.OBJECT
    sample = _decode_head(text)
    if sample is None:
        return None, None
    if "\x00" in sample:
        return None, None
    sample = sample.replace("\r\n", "\n")  # files saved with Windows line ends
    if _MD_LABELLED_FENCE.search(sample):
        return Format.CHAT_EXPORT_MD, Layout.TEXT
    lines = sample.splitlines()[:200]
    has_messages = any(line.startswith("messages:") for line in lines)
    has_meta = any(line.startswith(("platform:", "title:", "url:", "exported_at:", "chat_id:")) for line in lines)
    if has_messages and has_meta:
        return Format.CHAT_EXPORT_YAML, Layout.TEXT
    return None, None
