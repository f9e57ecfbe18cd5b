"""Sniff what an input is from its content, never from its name alone.

A JSON file is judged by what its head shows of its first record (`head.Head`: its keys and
the keys below them), so a huge first conversation costs no memory.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum

from chatetl.readers.entry import Entry
from chatetl.readers.inputs import claude_ai_manifest
from chatetl.readers.inputs.head import Head, first_record_head
from chatetl.readers.jsonscan.records import Shape

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
    DEEPSEEK_API = "deepseek-api"  # a saved web-API answer: {"data": {"biz_data": {"chat_session", "chat_messages"}}}
    GROK = "grok"  # prod-grok-backend.json: {"conversations": [{"conversation", "responses"}]}
    GROK_WEB = "grok-web"  # a grok.com capture: {"conversation": {"conversationId", ...}, "responses": [...]}
    OPEN_WEBUI = "open-webui"  # chat export: [{"id", "title", "chat": {"history": {"messages", "currentId"}}}]
    AI_STUDIO = "ai-studio"  # Google AI Studio prompt file: {"runSettings", "chunkedPrompt": {"chunks"}}
    LE_CHAT = "le-chat"  # Mistral Le Chat chat-<uuid>.json: array of messages with `contentChunks`
    CODEX_CLI = "codex-cli"  # ~/.codex/sessions/.../rollout-*.jsonl: {timestamp, type, payload} lines
    CODEX_CLI_SIDECAR = "codex-cli-sidecar"  # session_index.jsonl, history.jsonl (no conversations)
    GEMINI_CLI = "gemini-cli"  # ~/.gemini/tmp/<project>/chats/session-*.json(l)
    GEMINI_CLI_SIDECAR = "gemini-cli-sidecar"  # logs.json: the prompt log (prompts only)
    OPENCODE = "opencode"  # a session bundle: {"info": session, "messages": [{"info", "parts"}]}


SIDECARS = frozenset({
    Format.CHATGPT_SIDECAR, Format.CLAUDE_AI_SIDECAR, Format.CLAUDE_AI_MANIFEST, Format.CODEX_CLI_SIDECAR,
    Format.GEMINI_CLI_SIDECAR,
})


# a ```md fence whose first line is a chat-export label (sys, sources, user:, assistant:, grok: ...):
# a Markdown note that merely shows a ```md code block is no chat export
_MD_LABELLED_FENCE = re.compile(r"^`{3,}md[ \t]*\n(?:sys|sources|[A-Za-z][A-Za-z0-9 _.\-]*:)[ \t]*$", re.MULTILINE)


def classify(head: Head) -> Format | None:
    """Decide a JSON record's format from what its head shows. The rules for formats whose keys
    overlap come first and look one level deeper (DeepSeek's `mapping` is not ChatGPT's, Grok's
    `conversations` are not a ShareGPT record's)."""
    for rule, fmt in _SHAPE_RULES:
        if rule(head):
            return fmt
    return _classify_keys(head)


def _is_deepseek(head: Head) -> bool:
    # {id, title, inserted_at, updated_at, mapping: {"root": {...}, "<n>": {id, parent, children, message: {fragments}}}}
    # A mapping alone is ChatGPT's too: DeepSeek's says so by `inserted_at` or by messages made of `fragments`,
    # and a record with ChatGPT's own keys (create_time, current_node, ...) is never DeepSeek's.
    # An exporter may wrap DeepSeek's mapping in ChatGPT's keys: its messages still say whose they are (fragments,
    # no author or content).
    keys = head.keys
    if "mapping" not in keys:
        return False
    messages = [inner for path, inner in head.inner.items() if path.startswith("mapping.") and path.endswith(".message")]
    if keys & _CHATGPT_ONLY_KEYS:
        return bool(messages) and all("fragments" in inner and not inner & {"author", "content"} for inner in messages)
    if "inserted_at" in keys:
        return True
    return any("fragments" in inner for inner in messages)


_CHATGPT_ONLY_KEYS = frozenset({"create_time", "update_time", "current_node", "conversation_id", "default_model_slug"})


def _is_deepseek_api(head: Head) -> bool:
    # DeepSeek's web API answer as userscripts save it: {"code", "msg", "data": {"biz_code", "biz_data":
    # {"chat_session": {...}, "chat_messages": [...]}}}; or its `biz_data`, or the two keys at the top
    body = {"chat_session", "chat_messages"}
    return body <= head.keys or body <= head.under("biz_data") or body <= head.under("data.biz_data")


def _is_grok(head: Head) -> bool:
    # prod-grok-backend.json: {"conversations": [{"conversation": {...}, "responses": [{"response": {...}}]}],
    # "projects": [...], "tasks": [...], "media_posts": [...]}; a ShareGPT record's `conversations` hold {from, value}
    if "conversations" not in head.keys:
        return False
    item = head.under("conversations.item")
    if "conversation" in item:
        return "responses" in item or bool(head.under("conversations.item.conversation") & _GROK_CONVERSATION_KEYS)
    # no conversation in the head (an export without chats: `"conversations": []`): its other sections say what it is
    return not item and bool(head.keys & _GROK_SECTIONS)


def _is_grok_capture(head: Head) -> bool:
    # a grok.com web capture (the REST bodies saved together), one conversation an object or a line:
    # {"conversation": {"conversationId", "title", "createTime", ...}, "responses": [{"responseId", "parentResponseId",
    # "sender", "message", ...}] | {"responses": [...]}}; or one item of an export saved on its own
    if not {"conversation", "responses"} <= head.keys:
        return False
    conversation = head.under("conversation")
    responses = head.under("responses.item") | head.under("responses.responses.item")
    return bool(conversation & _GROK_CAPTURE_IDS) or bool(responses & _GROK_CAPTURE_RESPONSE_KEYS)


_GROK_CAPTURE_IDS = frozenset({"conversationId", "conversation_id"})
_GROK_CAPTURE_RESPONSE_KEYS = frozenset({"responseId", "parentResponseId", "response", "parent_response_id"})
_GROK_CONVERSATION_KEYS = frozenset({"leaf_response_id", "modify_time", "system_prompt_name", "starred", "temporary"})
_GROK_SECTIONS = frozenset({"projects", "tasks", "media_posts"})


def _is_open_webui(head: Head) -> bool:
    # a chat row [{"id", "user_id", "title", "chat": {"models", "history": {"messages", "currentId"}, "messages"}, ...}],
    # or a bare chat (what its importer also takes) {"id", "title", "models", "history": {...}, "messages": [...]}
    tree = {"messages", "currentId"}
    if "chat" in head.keys:
        chat, history = head.under("chat"), head.under("chat.history")
        if "history" in chat:  # (the head may end inside a long history: its keys, or the row's, still say it)
            return bool(history & tree) or (not history and ("models" in chat or "user_id" in head.keys))
        return "messages" in chat and "models" in chat  # an old chat without a history
    return bool(head.under("history") & tree) and bool(head.keys & {"models", "messages", "params"})


def _is_ai_studio(head: Head) -> bool:
    # {"runSettings": {...}, "systemInstruction": {...}, "chunkedPrompt": {"chunks": [...], "pendingInputs": [...]}}
    if "chunkedPrompt" not in head.keys:
        return False
    return bool(head.under("chunkedPrompt") & {"chunks", "pendingInputs"}) or bool(head.keys & {"runSettings", "systemInstruction"})


def _is_le_chat(head: Head) -> bool:
    # chat-<uuid>.json: [{"id", "version", "chatId", "role", "content", "contentChunks", "createdAt", ...}] (one
    # record per message); every Le Chat message has `contentChunks` (null for plain text), other apps' messages not
    return {"chatId", "role", "contentChunks"} <= head.keys and bool(head.keys & {"createdAt", "content"})


def _is_gemini_activity(head: Head) -> bool:
    # Takeout My Activity (My Activity/Gemini Apps/MyActivity.json): [{"header": "Gemini Apps", "title": "Prompted ...",
    # "time", "products": ["Gemini Apps"], "activityControls", "safeHtmlItem": [{"html"}], "titleUrl", "subtitles", "details"}].
    # Every activity row has header, title and time and one more activity field; the header names the product (translated,
    # the brand kept: "Gemini 앱"), so other products' MyActivity.json (Search, YouTube ...) are left alone.
    keys = head.keys
    if not {"header", "title", "time"} <= keys or not keys & _ACTIVITY_KEYS:
        return False
    header = head.scalars.get("header")
    return isinstance(header, str) and ("Gemini" in header or "Bard" in header)


_ACTIVITY_KEYS = frozenset({"products", "activityControls", "safeHtmlItem", "titleUrl", "subtitles", "details"})
# MyActivity.html: a <style> block, then one <div class="outer-cell ..."> per activity, its header cell naming the product
_ACTIVITY_HTML_PRODUCT = re.compile(r'class="outer-cell[^"]*">.{0,2000}?<p class="mdl-typography--title">([^<]*)', re.DOTALL)
_HTML_LOOK_FURTHER = 1024 * 1024  # a head that ends inside the page's <style>: the first activity is looked for this far


def _is_gemini_activity_html(entry: Entry, sample: str) -> bool:
    """Takeout's MyActivity.html of Gemini Apps (or Bard): its first activity's header cell says so."""
    if not sample.startswith("<"):
        return False
    found = _ACTIVITY_HTML_PRODUCT.search(sample)
    if found is None and len(sample) >= 60000 and sample.rfind("<style") > sample.rfind("</style>"):
        found = _ACTIVITY_HTML_PRODUCT.search(_decode_head(entry.head(_HTML_LOOK_FURTHER)) or "")
    return found is not None and ("Gemini" in found.group(1) or "Bard" in found.group(1))


def _is_claude_ai_manifest(head: Head) -> bool:
    # 2026 Claude.ai downloads: manifest-*.json naming the zips of one export:
    # {"total_files", "data_files": [{"category", "export_url", "filename": "conversations-000.zip"}]}.
    # Liberal in the keys (chatetl.readers.inputs.claude_ai_manifest); detect() then checks every item names a .zip.
    return any(
        key in head.keys and bool(head.under(f"{key}.item") & _MANIFEST_NAME_KEYS) for key in claude_ai_manifest.LIST_KEYS
    )


_MANIFEST_NAME_KEYS = frozenset(claude_ai_manifest.NAME_KEYS)


def _is_codex_line(head: Head) -> bool:
    # a rollout line {"timestamp", "type": "session_meta" | "response_item" | ..., "payload": {...}}; an older rollout's
    # bare meta line {"id", "timestamp", "instructions", "git"?} or its state line {"record_type": "state"}
    keys = head.keys
    if "payload" in keys and "timestamp" in keys:
        return head.scalars.get("type") in _CODEX_ENVELOPES
    if keys == {"record_type"}:
        return True
    if "session" in keys and "items" in keys:  # the TypeScript CLI's {"session": {"id", "timestamp", ...}, "items": [...]}
        return {"id", "timestamp"} <= head.under("session") and not head.under("items.item") - _RESPONSE_ITEM_KEYS
    return {"id", "timestamp"} <= keys and bool(keys & {"instructions", "originator", "cli_version"}) and not keys & {"type", "sessionId"}


_RESPONSE_ITEM_KEYS = frozenset({"type", "id", "role", "content", "status", "call_id", "name", "arguments", "output", "summary",
                                  "encrypted_content", "action"})
_CODEX_ENVELOPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def _is_codex_sidecar(head: Head) -> bool:
    # session_index.jsonl {"id", "thread_name", "updated_at"}; history.jsonl {"session_id", "ts", "text"}
    return head.keys == {"id", "thread_name", "updated_at"} or head.keys == {"session_id", "ts", "text"}


def _is_gemini_cli(head: Head) -> bool:
    # a session's header (the JSONL's first line, or the older one-object file with its `messages`):
    # {"sessionId", "projectHash", "startTime", "lastUpdated", ...}; the patches {"$set": {...}}, {"$rewindTo": id};
    # a message line of a file whose header is lost: {"id", "type": "gemini", "thoughts" | "toolCalls" | "tokens"}
    keys = head.keys
    if {"sessionId", "projectHash"} <= keys and "type" not in keys:
        return True
    if len(keys) == 1 and keys & {"$set", "$rewindTo"}:
        return True
    return head.scalars.get("type") == "gemini" and "id" in keys and bool(keys & {"thoughts", "toolCalls", "tokens"})


def _is_gemini_cli_log(head: Head) -> bool:
    # logs.json, Gemini CLI's prompt log: [{"sessionId", "messageId" (a counter), "type", "message", "timestamp"}];
    # it shares `type`, `sessionId` and `message` with a Claude Code line, never a uuid or a parent
    return {"sessionId", "messageId", "message", "timestamp"} <= head.keys and not head.keys & {"uuid", "parentUuid", "cwd"}


def _is_opencode(head: Head) -> bool:
    # `opencode export` / chatetl collect: {"info": {"id": "ses_...", "projectID", "directory", "time", ...},
    # "messages": [{"info": {"id": "msg_...", "role", ...}, "parts": [...]}]}
    if not {"info", "messages"} <= head.keys:
        return False
    info, items = head.under("info"), head.under("messages.item")
    return "id" in info and bool(info & {"projectID", "directory"}) and (not items or bool(items & {"info", "parts"}))


_SHAPE_RULES = (
    (_is_codex_line, Format.CODEX_CLI),
    (_is_codex_sidecar, Format.CODEX_CLI_SIDECAR),
    (_is_gemini_cli, Format.GEMINI_CLI),
    (_is_gemini_cli_log, Format.GEMINI_CLI_SIDECAR),
    (_is_opencode, Format.OPENCODE),
    (_is_deepseek, Format.DEEPSEEK),
    (_is_deepseek_api, Format.DEEPSEEK_API),
    (_is_grok, Format.GROK),
    (_is_grok_capture, Format.GROK_WEB),
    (_is_open_webui, Format.OPEN_WEBUI),
    (_is_ai_studio, Format.AI_STUDIO),
    (_is_le_chat, Format.LE_CHAT),
    (_is_gemini_activity, Format.GEMINI),
    (_is_claude_ai_manifest, Format.CLAUDE_AI_MANIFEST),
)


def _classify_keys(head: Head) -> Format | None:
    """Decide a JSON record's format from its keys, and one level below them where a key name alone
    says little: a `mapping` is ChatGPT's only when its values are nodes (`message` with `parent`,
    `children` or `id`), `chat_messages` Claude.ai's only in a record with a `uuid` whose messages
    (if the head shows any) have a sender or text, `conversations` ShareGPT's only when its items
    are turns (`from` + `value`, or `role` + `content`). A file that merely shares a key name is no
    format (see `resembles`, which names the near miss in the error that refuses it)."""
    keys, first = head.keys, head.scalars
    schema = first.get("schema")
    if schema == "chat-export/1":
        return Format.CHAT_EXPORT_JSON
    if schema == "sharegpt/1":
        return Format.CHAT_EXPORT_SHAREGPT
    if "mapping" in keys and _mapping_of_nodes(head):
        return Format.CHATGPT
    if "chat_messages" in keys and "uuid" in keys:
        turns = head.under("chat_messages.item")
        if not turns or turns & _CLAUDE_AI_MESSAGE_KEYS:  # no message in the head: an empty (or huge) first chat
            return Format.CLAUDE_AI
    name = first.get("name")
    if isinstance(name, str) and name.startswith(("rex-", "pdk-")) or "passive-data-metadata" in keys:
        return Format.REX
    if "conversations" in keys:
        turns = head.under("conversations.item")
        if {"from", "value"} <= turns or {"role", "content"} <= turns:
            return Format.SHAREGPT
    if _claude_code_line(keys):
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


_CLAUDE_AI_MESSAGE_KEYS = frozenset({"sender", "text", "content"})
_CHATGPT_NODE_KEYS = frozenset({"parent", "children", "id"})


def _mapping_of_nodes(head: Head) -> bool:
    # ChatGPT's mapping: {"<node id>": {"id", "message": {...} | null, "parent", "children"}}; the root node
    # (message null) comes first, so even a head cut inside the first real message shows a whole node
    nodes = head.under("mapping.*")
    return "message" in nodes and bool(nodes & _CHATGPT_NODE_KEYS)


def _claude_code_line(keys: set[str]) -> bool:
    # a session line: {type, uuid, parentUuid, sessionId, message, cwd, ...}; a summary {type, summary, leafUuid};
    # a snapshot {type, messageId, snapshot}; a queue operation {type, operation, sessionId}
    if "type" not in keys:
        return False
    if "parentUuid" in keys or "leafUuid" in keys or ("snapshot" in keys and "messageId" in keys):
        return True
    return "sessionId" in keys and bool(keys & {"uuid", "message", "operation", "cwd"})


def _loose_format(keys: set[str]) -> Format | None:
    """The format a record only looks like by a key name (the rules before detection looked deeper)."""
    if "mapping" in keys or ("current_node" in keys and "title" in keys):
        return Format.CHATGPT
    if "chat_messages" in keys:
        return Format.CLAUDE_AI
    if "conversations" in keys or {"from", "value"} <= keys:
        return Format.SHAREGPT
    if "sessionId" in keys or "parentUuid" in keys:
        return Format.CLAUDE_CODE
    return None


def resembles(entry: Entry, head: bytes | None = None) -> Format | None:
    """The chat format an unrecognized JSON file only resembles by its keys (a near miss: `mapping`
    without nodes, `conversations` without turns, a bare `from`/`value` turn), or None. Said in the
    error that refuses it, so such a file is never skipped in silence as "not a chat file"."""
    if head is None:
        head = entry.head()
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"[":
        return _loose_format(first_record_head(text, array=True).keys)
    if text[:1] != b"{":
        return None
    try:
        obj = json.loads(text.split(b"\n", 1)[0])
    except (ValueError, RecursionError):
        obj = None
    keys = set(obj) if isinstance(obj, dict) else first_record_head(text, array=False).keys
    return _loose_format(keys)


def _decode_head(data: bytes) -> str | None:
    """Decode the head of a text file; None when it is not UTF-8 text (binary garbage)."""
    for cut in range(4):  # the head may end in the middle of a character
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


MAX_FIRST_LINE_BYTES = 256 * 1024 * 1024


def _long_first_line_jsonl(entry: Entry) -> tuple[Format | None, Shape] | None:
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
    return classify(Head.of(obj)), Shape.JSONL


def _checked(fmt: Format | None, entry: Entry, shape: Shape) -> Format | None:
    """A Claude.ai manifest is one whole JSON object whose every item names a .zip (read to make
    sure: it is small); a record that only has a manifest's keys is none."""
    if fmt is Format.CLAUDE_AI_MANIFEST and (shape is not Shape.OBJECT or claude_ai_manifest.read_parts(entry) is None):
        return None
    return fmt


def detect(entry: Entry, head: bytes | None = None) -> tuple[Format | None, Shape | None]:
    """Return (format, shape) of an entry, or (None, None) when it is no chat format known."""
    if head is None:
        head = entry.head()
    if head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        return Format.ZIP, None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return None, None
    if text[:1] == b"[":
        return _checked(classify(first_record_head(text, array=True)), entry, Shape.ARRAY), Shape.ARRAY
    if text[:1] == b"{":
        return _detect_object(entry, text)
    return _detect_text(entry, text)


def _detect_object(entry: Entry, text: bytes) -> tuple[Format | None, Shape | None]:
    """A head that opens an object: JSON Lines (records one a line) or one object."""
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
                fmt = _checked(classify(Head.of(obj)), entry, Shape.JSONL)
                if fmt is not None:
                    return fmt, Shape.JSONL
        return None, Shape.JSONL
    if b"\n" not in text.strip():
        jsonl = _long_first_line_jsonl(entry)
        if jsonl is not None:
            return _checked(jsonl[0], entry, Shape.JSONL), Shape.JSONL
    return _checked(classify(first_record_head(text, array=False)), entry, Shape.OBJECT), Shape.OBJECT


def _detect_text(entry: Entry, text: bytes) -> tuple[Format | None, Shape | None]:
    """A head that is no JSON: Takeout's activity HTML, a chat-export Markdown or YAML file, or nothing known."""
    sample = _decode_head(text)
    if sample is None:
        return None, None
    if "\x00" in sample:
        return None, None
    sample = sample.replace("\r\n", "\n")  # files saved with Windows line ends
    if _is_gemini_activity_html(entry, sample):
        return Format.GEMINI_HTML, Shape.TEXT
    if _MD_LABELLED_FENCE.search(sample):
        return Format.CHAT_EXPORT_MD, Shape.TEXT
    lines = sample.splitlines()[:200]
    has_messages = any(line.startswith("messages:") for line in lines)
    has_meta = any(line.startswith(("platform:", "title:", "url:", "exported_at:", "chat_id:")) for line in lines)
    if has_messages and has_meta:
        return Format.CHAT_EXPORT_YAML, Shape.TEXT
    return None, None
