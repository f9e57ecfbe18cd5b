"""Sniff what an input is from its content, never from its name alone.

JSON is inspected with a streaming parser: only the top-level keys of the first
object are looked at, so a huge first conversation costs no memory.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

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
    CLAUDE_AI_MANIFEST = "claude-ai-manifest"  # 2026 downloads: manifest-*.json linking several zips
    GEMINI = "gemini"  # Takeout: My Activity/Gemini Apps/MyActivity.json (array of activities)
    GEMINI_HTML = "gemini-html"  # Takeout: My Activity/Gemini Apps/MyActivity.html
    DEEPSEEK = "deepseek"  # conversations.json: `mapping` tree rooted at "root", `fragments`
    GROK = "grok"  # prod-grok-backend.json: {"conversations": [{"conversation", "responses"}]}
    OPEN_WEBUI = "open-webui"  # chat export: [{"id", "title", "chat": {"history": {"messages", "currentId"}}}]
    AI_STUDIO = "ai-studio"  # Google AI Studio prompt file: {"runSettings", "chunkedPrompt": {"chunks"}}
    LE_CHAT = "le-chat"  # Mistral Le Chat chat-<uuid>.json: array of messages with `contentChunks`


SIDECARS = frozenset({Format.CHATGPT_SIDECAR, Format.CLAUDE_AI_SIDECAR, Format.CLAUDE_AI_MANIFEST})


# a ```md fence whose first line is a chat-export label (sys, sources, user:, assistant:, grok: ...):
# a Markdown note that merely shows a ```md code block is no chat export
_MD_LABELLED_FENCE = re.compile(r"^`{3,}md[ \t]*\n(?:sys|sources|[A-Za-z][A-Za-z0-9 _.\-]*:)[ \t]*$", re.MULTILINE)


class Layout(StrEnum):
    ARRAY = "array"  # top-level JSON array of records
    OBJECT = "object"  # one top-level JSON object
    JSONL = "jsonl"  # one JSON object per line
    TEXT = "text"


@dataclass
class Head:
    """What the head of a file shows of its first record: its top-level keys, a few of their scalar
    values, and the keys found under them (`inner["chat.history"]`, `inner["conversations.item"]`,
    `inner["mapping"]` the node ids, `inner["mapping.*"]` the keys of the nodes), three levels deep."""

    keys: set[str] = field(default_factory=set)
    scalars: dict[str, Any] = field(default_factory=dict)
    inner: dict[str, set[str]] = field(default_factory=dict)

    def under(self, path: str) -> set[str]:
        return self.inner.get(path, set())

    @classmethod
    def of(cls, record: dict) -> Head:
        """The head of a record already decoded (a JSON Lines line)."""
        head = cls(keys=set(record), scalars={k: record[k] for k in _SCALAR_KEYS if isinstance(record.get(k), (str, int, float))})
        _inner_of(record, "", head.inner, 0)
        _wildcard_mapping(head)
        return head


_SCALAR_KEYS = ("schema", "name", "type", "header", "title")
INNER_DEPTH = 3  # levels below the record's own keys that detection looks at
_INNER_KEYS_CAP = 64  # keys kept per path (a mapping of thousands of nodes needs only a few)


def _inner_of(value: Any, path: str, inner: dict[str, set[str]], depth: int) -> None:
    if depth >= INNER_DEPTH:
        return
    if isinstance(value, dict):
        if path:
            inner.setdefault(path, set()).update(list(value)[:_INNER_KEYS_CAP])
        for key, child in list(value.items())[:_INNER_KEYS_CAP]:
            _inner_of(child, f"{path}.{key}" if path else key, inner, depth + (1 if path else 0))
    elif isinstance(value, list) and path:
        for item in value[:3]:
            _inner_of(item, f"{path}.item", inner, depth + 1)


def classify(head: Head) -> Format | None:
    """Decide a JSON record's format from what its head shows. The rules for formats whose keys
    overlap come first and look one level deeper (DeepSeek's `mapping` is not ChatGPT's, Grok's
    `conversations` are not a ShareGPT record's)."""
    for rule, fmt in _SHAPE_RULES:
        if rule(head):
            return fmt
    return _classify_keys(head.keys, head.scalars)


def _is_deepseek(head: Head) -> bool:
    # {id, title, inserted_at, updated_at, mapping: {"root": {...}, "<n>": {id, parent, children, message: {fragments}}}}
    if "mapping" not in head.keys:
        return False
    nodes = head.under("mapping")
    return "inserted_at" in head.keys or ("root" in nodes and "current_node" not in head.keys and "create_time" not in head.keys)


def _is_grok(head: Head) -> bool:
    # prod-grok-backend.json: {"conversations": [{"conversation": {...}, "responses": [{"response": {...}}]}]}
    inner = head.under("conversations.item")
    return "conversations" in head.keys and "conversation" in inner and "responses" in inner


def _is_open_webui(head: Head) -> bool:
    # [{"id", "user_id", "title", "chat": {"history": {"messages", "currentId"}, "messages": [...]}, ...}]
    chat = head.under("chat")
    return "chat" in head.keys and ("history" in chat or ("messages" in chat and "models" in chat))


def _is_ai_studio(head: Head) -> bool:
    # {"runSettings": {...}, "systemInstruction": {...}, "chunkedPrompt": {"chunks": [...], "pendingInputs": [...]}}
    return "chunkedPrompt" in head.keys


def _is_le_chat(head: Head) -> bool:
    # chat-<uuid>.json: [{"id", "chatId", "role", "content", "contentChunks", "createdAt", ...}] (one record per message)
    return "chatId" in head.keys and "role" in head.keys and ("contentChunks" in head.keys or "content" in head.keys)


def _is_gemini_activity(head: Head) -> bool:
    # Takeout My Activity: [{"header": "Gemini Apps", "title": "Prompted ...", "time", "products": ["Gemini Apps"], "safeHtmlItem"}]
    if not ("header" in head.keys and "time" in head.keys and ("products" in head.keys or "title" in head.keys)):
        return False
    header = head.scalars.get("header")
    return isinstance(header, str) and ("Gemini" in header or "Bard" in header)


def _is_claude_ai_manifest(head: Head) -> bool:
    # 2026 Claude.ai downloads: manifest-*.json naming the zips of one export (conversations-000.zip, ...)
    return False


_SHAPE_RULES = (
    (_is_deepseek, Format.DEEPSEEK),
    (_is_grok, Format.GROK),
    (_is_open_webui, Format.OPEN_WEBUI),
    (_is_ai_studio, Format.AI_STUDIO),
    (_is_le_chat, Format.LE_CHAT),
    (_is_gemini_activity, Format.GEMINI),
    (_is_claude_ai_manifest, Format.CLAUDE_AI_MANIFEST),
)


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


def _first_record_head(head: bytes, array: bool) -> Head:
    """What the head of a file shows of its first record (keys, scalars, keys below them)."""
    out = Head()
    depth_target = 2 if array else 1
    record_prefix = "item" if array else ""
    depth = 0
    last_key = None
    try:
        for prefix, event, value in ijson.parse(DepthGuard(io.BytesIO(head)), buf_size=4096):
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
                if depth < depth_target:
                    break
            elif event == "map_key" and depth == depth_target:
                out.keys.add(value)
                last_key = value
                continue
            elif event == "map_key" and depth_target < depth <= depth_target + INNER_DEPTH:
                path = prefix[len(record_prefix) + 1 :] if record_prefix else prefix
                keys = out.inner.setdefault(path, set())
                if len(keys) < _INNER_KEYS_CAP:
                    keys.add(value)
            elif depth == depth_target and last_key in _SCALAR_KEYS and event in ("string", "number"):
                out.scalars[last_key] = value
            last_key = None if event != "map_key" else last_key
    except (ijson.common.IncompleteJSONError, ijson.common.JSONError, NestingTooDeep):
        pass  # the head is cut mid-document (or absurdly nested): what was seen so far decides
    _wildcard_mapping(out)
    return out


def _wildcard_mapping(head: Head) -> None:
    """`inner["<key>.*"]`: the keys of a dict-of-objects' values (a `mapping` of nodes by id)."""
    for path, keys in list(head.inner.items()):
        if "." in path:
            continue
        merged: set[str] = set()
        for key in keys:
            merged |= head.inner.get(f"{path}.{key}", set())
        if merged:
            head.inner.setdefault(f"{path}.*", set()).update(merged)


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
    return classify(Head.of(obj)), Layout.JSONL


def detect(entry: Entry, head: bytes | None = None) -> tuple[Format | None, Layout | None]:
    """Return (format, layout) of an entry, or (None, None) when it is no chat format known."""
    if head is None:
        head = entry.head()
    if head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        return Format.ZIP, None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return None, None
    if text[:1] == b"[":
        return classify(_first_record_head(text, array=True)), Layout.ARRAY
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
                    fmt = classify(Head.of(obj))
                    if fmt is not None:
                        return fmt, Layout.JSONL
            return None, Layout.JSONL
        if b"\n" not in text.strip():
            jsonl = _long_first_line_jsonl(entry)
            if jsonl is not None:
                return jsonl
        return classify(_first_record_head(text, array=False)), Layout.OBJECT
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
