"""The Parquet contract: the two tables' schemas, and which model fields their columns hold as they are."""

from __future__ import annotations

import pyarrow as pa

from chatetl.model import Attachment, Citation, ToolCall, ToolResult

TS = pa.timestamp("us", tz="UTC")

CONVERSATIONS_SCHEMA = pa.schema(
    [
        ("conversation_key", pa.string()),  # "{platform}:{conversation_id}": one chat, whatever the source
        ("source", pa.string()),  # format family: chatgpt, claude-ai, chat-export, sharegpt, rex, claude-code
        ("platform", pa.string()),  # where the chat happened: chatgpt, claude-ai, grok, gemini ...
        ("conversation_id", pa.string()),
        ("title", pa.string()),
        ("created_at", TS),
        ("updated_at", TS),
        ("message_count", pa.int32()),  # visible turns on the active branch
        ("total_messages", pa.int32()),  # every message of every branch and kind
        ("model", pa.string()),
        ("models_used", pa.list_(pa.string())),
        ("url", pa.string()),
        ("timezone", pa.string()),
        ("current_node", pa.string()),
        ("source_file", pa.string()),
        ("upload_key", pa.string()),
        ("meta", pa.string()),  # JSON: source-specific extras
        # chatetl.model.state_hash of the state as these tables hold it, computed once when it is written (files
        # written before it was a column lack it: readers compute it then; null where it could not be computed)
        ("state_hash", pa.string()),
    ]
)

_TOOL_CALL = pa.struct([("id", pa.string()), ("name", pa.string()), ("input", pa.string())])
_TOOL_RESULT = pa.struct([("tool_call_id", pa.string()), ("name", pa.string()), ("output", pa.string()), ("is_error", pa.bool_())])
_CITATION = pa.struct(
    [("title", pa.string()), ("url", pa.string()), ("snippet", pa.string()), ("source", pa.string()), ("offset", pa.int32())]
)
_ATTACHMENT = pa.struct(
    [
        ("kind", pa.string()), ("id", pa.string()), ("name", pa.string()), ("mime_type", pa.string()),
        ("size", pa.int64()), ("pointer", pa.string()), ("text", pa.string()),
        ("content_hash", pa.string()),  # sha256 of the bytes stored under attachments/; null: not in the export
    ]
)

MESSAGES_SCHEMA = pa.schema(
    [
        ("conversation_key", pa.string()),
        ("source", pa.string()),
        ("platform", pa.string()),
        ("conversation_id", pa.string()),
        ("message_id", pa.string()),
        ("parent_id", pa.string()),
        ("seq", pa.int32()),  # 0-based among visible turns of the active branch; null elsewhere
        ("branch_index", pa.int32()),  # position along the active branch among all its messages
        ("on_active_branch", pa.bool_()),
        ("role", pa.string()),  # user, assistant, system, tool
        ("kind", pa.string()),  # turn, reasoning, tool_call, tool_result, hidden, summary
        ("text", pa.string()),
        ("created_at", TS),
        ("model", pa.string()),
        ("author_name", pa.string()),
        ("recipient", pa.string()),
        ("content_type", pa.string()),
        ("reasoning", pa.string()),
        ("tool_calls", pa.list_(_TOOL_CALL)),
        ("tool_results", pa.list_(_TOOL_RESULT)),
        ("citations", pa.list_(_CITATION)),
        ("attachments", pa.list_(_ATTACHMENT)),
        ("extra", pa.string()),  # JSON: unknown source fields, kept raw
    ]
)


# The conversation columns that hold a model field as it is, under the field's own name: written from
# the field and read back into it unchanged. The other columns are converted both ways.
CONVERSATION_FIELDS = (
    "platform", "conversation_id", "title", "created_at", "updated_at", "model", "url", "timezone", "current_node", "source_file",
)
# list columns of structs: (column, the model class of one item)
MESSAGE_LISTS = (("tool_calls", ToolCall), ("tool_results", ToolResult), ("citations", Citation), ("attachments", Attachment))
