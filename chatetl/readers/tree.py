"""The one branch resolver shared by every tree-shaped source.

Given the messages of a conversation with parent pointers, it marks the active
branch (the one the user last saw) and numbers it. The active leaf is the
source's own `current_node` where it has one; otherwise the latest leaf (by
time, then by file order). The branch is that leaf walked back through parent
pointers: never ordered by timestamps. Works iteratively, so memory does not
grow with nesting depth, and survives parent cycles and dangling parents.

Empty messages: one rule for every reader and every role (`turn_kind`). A message that would
be a visible turn, whoever sent it (the user, the assistant, or another speaker a format shows
as a turn), but has no text a person could see (none, or whitespace only) and no attachment,
is not a turn: it stays in the tree as HIDDEN with `extra["empty"] = True` (its children still
hang from it, it can be the active leaf), is never numbered by `seq` and never goes out
(`chatetl.selection` sends visible turns). An image or a file alone is something a person saw:
a turn. Tool calls, tool results and reasoning keep their kind when empty (the call was made
and answered nothing; a redacted thought is still a thought), whatever their role. Sources
whose turns carry no text by design (REX detail levels that keep only times, chat-export files
read back as they were written) keep their empty turns.
"""

from __future__ import annotations

from collections.abc import Sized
from datetime import UTC, datetime
from typing import Any

from chatetl.model import Conversation, Message, MessageKind, Role, ToolCall

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BRANCH_FIELDS = ("on_active_branch", "seq", "branch_index")


class TreeProblems:
    """What resolving a tree found (reported by readers, never fatal). Damage is what cost data or
    a guess: a parent cycle (broken where the walk met itself) and a duplicate message id (the last
    copy wins, as a JSON object's repeated member does: the earlier copies are lost from the
    conversation). Notes are read whole: a parent the file does not hold (the message is a root)
    and a current node the file does not hold (the latest leaf is the active one)."""

    def __init__(self) -> None:
        self.dangling: list[str] = []  # messages whose parent is not in the conversation
        self.cycles: list[str] = []  # messages where a walk back met itself
        self.duplicates: list[str] = []  # message ids that appeared more than once (last wins)
        self.missing_current_node: str | None = None

    def __bool__(self) -> bool:
        return bool(self.dangling or self.cycles or self.duplicates or self.missing_current_node)

    def describe(self) -> str:
        return "; ".join(part for part in (self.damage(), self.notes()) if part)

    def damage(self) -> str:
        """What cost the conversation data ("" when nothing did)."""
        parts = []
        if self.cycles:
            parts.append(f"parent cycle at {self.cycles[0]}")
        if self.duplicates:
            parts.append(f"{len(self.duplicates)} duplicate message id(s), the last copy kept (first: {self.duplicates[0]})")
        return "; ".join(parts)

    def notes(self) -> str:
        """What was read whole but is worth saying ("" when nothing)."""
        parts = []
        if self.dangling:
            parts.append(f"{len(self.dangling)} dangling parent(s), read as root(s) (first: {self.dangling[0]})")
        if self.missing_current_node:
            parts.append(f"current node {self.missing_current_node} not in the tree, the latest leaf used")
        return "; ".join(parts)


def turn_kind(text: str, attachments: Sized, extra: dict[str, Any]) -> MessageKind:
    """The kind of a message that would be a visible turn: TURN when it has text a person could
    see or an attachment, else HIDDEN with `extra["empty"] = True` (the empty-message rule above)."""
    if attachments or (text and not text.isspace()):
        return MessageKind.TURN
    extra["empty"] = True
    return MessageKind.HIDDEN


def reply_kind(role: Role, text: str, attachments: Sized, tool_calls: list[ToolCall], reasoning: str | None,
               extra: dict[str, Any]) -> tuple[MessageKind, str]:
    """(kind, text) of a chat-app message that may hold text, tool calls and reasoning at once (Open
    WebUI, Le Chat): a system message is HIDDEN; text or an attachment makes a TURN; else its tool
    calls (their inputs as its text), else its reasoning; else the empty-message rule (`turn_kind`)."""
    if role is Role.SYSTEM:
        return MessageKind.HIDDEN, text
    if text.strip() or attachments:
        return MessageKind.TURN, text
    if tool_calls:
        return MessageKind.TOOL_CALL, "\n".join(c.input for c in tool_calls)
    if reasoning:
        return MessageKind.REASONING, reasoning
    return turn_kind(text, attachments, extra), text


def resolve_branches(conv: Conversation, visible_kinds: frozenset[MessageKind] = frozenset({MessageKind.TURN})) -> TreeProblems:
    """Mark `on_active_branch`, `branch_index` and `seq` on conv.messages in place.

    Messages are deduplicated by id (the last occurrence wins, keeping file order of
    first appearance). Dangling parents become roots (parent_id set to None).
    """
    problems = TreeProblems()
    by_id = _deduplicated(conv.messages, problems)
    # a dict keeps a key where it first appeared, with the last value given: file order of first appearance
    messages = list(by_id.values())
    has_children = _reset_branch_fields(messages, by_id, problems)
    conv.messages = messages
    if not messages:
        return problems
    leaf = _active_leaf(conv, messages, by_id, has_children, problems)
    _number_branch(_active_path(leaf, by_id, problems), visible_kinds)
    if conv.current_node is None or problems.missing_current_node:
        conv.current_node = leaf.message_id
    return problems


def _deduplicated(messages: list[Message], problems: TreeProblems) -> dict[str, Message]:
    """The messages by id, the last copy of a repeated id kept (each id noted in `problems`)."""
    by_id: dict[str, Message] = {}
    duplicates = problems.duplicates
    for m in messages:
        mid = m.message_id
        if mid in by_id:
            duplicates.append(mid)
        by_id[mid] = m
    return by_id


def _reset_branch_fields(messages: list[Message], by_id: dict[str, Message], problems: TreeProblems) -> set[str]:
    """Clear every message's branch fields and make each dangling parent a root; the ids that are
    some message's parent."""
    # Fields are set in the instance __dict__ and marked as set, as the model's own (unvalidated)
    # assignment does, without its per-assignment cost.
    has_children: set[str] = set()
    for m in messages:
        d = m.__dict__
        d["on_active_branch"] = False
        d["seq"] = None
        d["branch_index"] = None
        m.__pydantic_fields_set__.update(_BRANCH_FIELDS)
        parent = d["parent_id"]
        if parent is not None:
            if parent not in by_id:
                problems.dangling.append(m.message_id)
                m.extra.setdefault("dangling_parent_id", parent)
                m.parent_id = None
            else:
                has_children.add(parent)
    return has_children


def _active_leaf(conv: Conversation, messages: list[Message], by_id: dict[str, Message], has_children: set[str],
                 problems: TreeProblems) -> Message:
    """The source's current node when the file holds it, else the latest leaf."""
    leaf: Message | None = None
    if conv.current_node:
        leaf = by_id.get(conv.current_node)
        if leaf is None:
            problems.missing_current_node = conv.current_node
    if leaf is None:
        order = {mid: i for i, mid in enumerate(by_id)}  # file order of first appearance
        leaves = [m for m in messages if m.message_id not in has_children] or messages
        # latest by time; ties and missing times broken by file order (later wins)
        leaf = max(leaves, key=lambda m: (m.created_at or _EPOCH, order[m.message_id]))
    return leaf


def _active_path(leaf: Message, by_id: dict[str, Message], problems: TreeProblems) -> list[Message]:
    """The root-to-leaf path through parent pointers; a cycle is broken where the walk met itself."""
    path: list[Message] = []
    seen: set[str] = set()
    node: Message | None = leaf
    while node is not None:
        if node.message_id in seen:
            problems.cycles.append(node.message_id)
            break
        seen.add(node.message_id)
        path.append(node)
        node = by_id.get(node.parent_id) if node.parent_id is not None else None
    if problems.cycles:
        # break the cycle where the walk met itself: the oldest node on the path becomes a root
        path[-1].extra.setdefault("cycle_parent_id", path[-1].parent_id)
        path[-1].parent_id = None
    path.reverse()
    return path


def _number_branch(path: list[Message], visible_kinds: frozenset[MessageKind]) -> None:
    """Mark the path as the active branch: its index on it, and `seq` over its visible messages."""
    seq = 0
    for i, m in enumerate(path):
        d = m.__dict__
        d["on_active_branch"] = True
        d["branch_index"] = i
        if d["kind"] in visible_kinds:
            d["seq"] = seq
            seq += 1
