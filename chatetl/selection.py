"""What text goes out of chatetl: the visible branch a person saw, and opt-ins for the rest.

RAG documents, chunks, exported files and training files all draw their turns from here,
so one place decides what leaves the pipeline. By default that is the visible turns of
the active branch. `ContentOptions` can let in reasoning, tool internals, hidden or
injected context (system prompts, custom instructions, memory, summaries) and the
abandoned branches (regenerations, edited prompts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict

from chatetl.model import Citation, Conversation, Message, MessageKind, Role, Source
from chatetl.settings import INCLUDE_FIELDS, Settings


class ContentOptions(BaseModel):
    """Which messages beyond the visible turns of the active branch go out (all off by default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include_reasoning: bool = False  # thinking blocks, thoughts, reasoning recaps
    include_tools: bool = False  # tool calls and tool results
    include_hidden: bool = False  # system prompts, custom instructions, memory, injected context, summaries
    include_branches: bool = False  # abandoned branches: regenerations and edited prompts

    FIELDS: ClassVar[tuple[str, ...]] = INCLUDE_FIELDS

    @classmethod
    def from_settings(cls, settings: Settings, scope: str | None = None) -> ContentOptions:
        """`CHATETL_{SCOPE}_INCLUDE_REASONING` (scope RAG or EXPORT) wins over `CHATETL_INCLUDE_REASONING`, and so on."""
        return cls(**settings.content_flags(scope))

    @classmethod
    def from_env(cls, scope: str | None = None, environ: Mapping[str, str] | None = None) -> ContentOptions:
        return cls.from_settings(Settings.from_env(environ), scope)

    @property
    def visible_only(self) -> bool:
        return not (self.include_reasoning or self.include_tools or self.include_hidden)

    def selects(self, m: Message) -> bool:
        if m.kind is MessageKind.TURN:
            return True
        if m.kind is MessageKind.REASONING:
            return self.include_reasoning
        if m.kind in (MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT):
            return self.include_tools
        return self.include_hidden  # HIDDEN, SUMMARY


VISIBLE = ContentOptions()


class OutputTurn(NamedTuple):
    """One turn as it goes out to a document or a file.

    `kind` says what it is (a visible turn, or an opted-in reasoning / tool / hidden part);
    `tag` is the display tag (the role for turns, or the chat-export role tag the file had);
    `name` the tool's name for tool parts. (A named tuple: every chat's every turn is one, and a
    tuple is made several times faster than a dataclass.)
    """

    message_id: str
    role: Role
    kind: MessageKind
    text: str
    tag: str
    name: str | None = None
    citations: tuple[Citation, ...] = ()

    @property
    def visible(self) -> bool:
        return self.kind is _TURN


@dataclass
class Branch:
    """A root-to-leaf path's turns; `index` 0 is the active branch, `diverges_at` where an other branch leaves it."""

    index: int
    turns: list[OutputTurn] = field(default_factory=list)
    diverges_at: int = 0  # turns[diverges_at:] are not on the active branch

    @property
    def own_turns(self) -> list[OutputTurn]:
        return self.turns[self.diverges_at:]


# the members, bound once: an enum class's attribute lookup costs more than the rest of a visible turn
_TURN, _REASONING, _TOOL_CALL, _TOOL_RESULT, _SUMMARY = (MessageKind.TURN, MessageKind.REASONING, MessageKind.TOOL_CALL,
                                                        MessageKind.TOOL_RESULT, MessageKind.SUMMARY)
_ASSISTANT, _SYSTEM, _TOOL = Role.ASSISTANT, Role.SYSTEM, Role.TOOL
_CHAT_ROLES = (Role.USER, Role.ASSISTANT)
_ROLE_TAG = {r: r.value for r in Role}  # a role's display tag (a plain str, as `role.value` gives it)
_new_turn = tuple.__new__  # OutputTurn's fields in order, without its keyword handling


def _turn_tag(conv: Conversation, m: Message) -> str:
    # a chat-export file's own role tag (chatgpt, grok, claude ...) is kept for display
    if m.author_name and conv.source is Source.CHAT_EXPORT and m.role in _CHAT_ROLES:
        return m.author_name
    return _ROLE_TAG[m.role]


def output_turns(conv: Conversation, messages: list[Message], options: ContentOptions = VISIBLE) -> list[OutputTurn]:
    """The messages' turns as they go out, with opted-in parts in the order they happened."""
    out: list[OutputTurn] = []
    add = out.append
    chat_export = conv.source is Source.CHAT_EXPORT
    reasoning, tools, hidden = options.include_reasoning, options.include_tools, options.include_hidden
    for m in messages:
        kind = m.kind
        if kind is _TURN:  # (most messages: its tag inline, as _turn_tag gives it)
            role = m.role
            tag = m.author_name if chat_export and m.author_name and role in _CHAT_ROLES else _ROLE_TAG[role]
            if reasoning and m.reasoning and m.reasoning.strip():
                add(_new_turn(OutputTurn, (m.message_id, _ASSISTANT, _REASONING, m.reasoning, "reasoning", None, ())))
            cites = m.citations
            add(_new_turn(OutputTurn, (m.message_id, role, _TURN, m.text, tag, None, tuple(cites) if cites else ())))
            if tools:
                for call in m.tool_calls:
                    add(OutputTurn(m.message_id, _ASSISTANT, _TOOL_CALL, call.input, "tool_call", call.name))
                for res in m.tool_results:
                    add(OutputTurn(m.message_id, _TOOL, _TOOL_RESULT, res.output, "tool_result", res.name))
        else:
            _add_internal(add, m, kind, reasoning, tools, hidden)
    return out


def _add_internal(add: Callable[[OutputTurn], None], m: Message, kind: MessageKind, reasoning: bool, tools: bool, hidden: bool) -> None:
    """A message other than a turn, as it goes out when its part is opted in (`output_turns`)."""
    if kind is _REASONING:
        if not reasoning:
            return
        text = m.text or m.reasoning or ""
        if text.strip():
            add(OutputTurn(m.message_id, _ASSISTANT, _REASONING, text, "reasoning"))
    elif kind is _TOOL_CALL:
        if not tools:
            return
        if m.tool_calls:
            for call in m.tool_calls:
                add(OutputTurn(m.message_id, _ASSISTANT, _TOOL_CALL, call.input, "tool_call", call.name or m.author_name))
        elif m.text.strip():
            add(OutputTurn(m.message_id, _ASSISTANT, _TOOL_CALL, m.text, "tool_call", m.recipient or m.author_name))
    elif kind is _TOOL_RESULT:
        if not tools:
            return
        name = m.author_name or (m.tool_results[0].name if m.tool_results else None)
        if m.text.strip() or not m.tool_results:
            text = m.text
        else:
            text = "\n\n".join(r.output for r in m.tool_results if r.output)
        if text.strip():
            add(OutputTurn(m.message_id, _TOOL, _TOOL_RESULT, text, "tool_result", name, tuple(m.citations)))
    elif hidden and m.text.strip():  # HIDDEN, SUMMARY
        add(OutputTurn(m.message_id, _SYSTEM, kind, m.text, kind.value if kind is _SUMMARY else "system", m.author_name))


def active_turns(conv: Conversation, options: ContentOptions = VISIBLE) -> list[OutputTurn]:
    """The active branch's turns: what a person saw (plus opt-ins)."""
    return output_turns(conv, _active_messages(conv, options.visible_only), options)


_BRANCH_INDEX = attrgetter("branch_index")


def _active_messages(conv: Conversation, visible_only: bool) -> list[Message]:
    """`conv.visible_turns` (or `conv.active_branch`): the same messages in the same order, sorted by
    `branch_index` itself (no key function called per message) where every message has one."""
    branch = [m for m in conv.messages if m.on_active_branch and (not visible_only or m.seq is not None)]
    try:
        branch.sort(key=_BRANCH_INDEX)
    except TypeError:  # a message without a branch_index (the model's order puts it first): the model's way
        return conv.visible_turns if visible_only else conv.active_branch
    return branch


def _other_paths(conv: Conversation) -> list[list[Message]]:
    """Root-to-leaf paths of every leaf off the active branch, in the file order of their leaves."""
    by_id = {m.message_id: m for m in conv.messages}
    parents = {m.parent_id for m in conv.messages if m.parent_id is not None}
    paths = []
    for leaf in conv.messages:
        if leaf.message_id in parents or leaf.on_active_branch:
            continue
        path: list[Message] = []
        seen: set[str] = set()
        node: Message | None = leaf
        while node is not None and node.message_id not in seen:
            seen.add(node.message_id)
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id is not None else None
        path.reverse()
        paths.append(path)
    return paths


def branches(conv: Conversation, options: ContentOptions = VISIBLE) -> list[Branch]:
    """The active branch, then (with include_branches) every other branch that adds turns of its own."""
    active = Branch(0, active_turns(conv, options))
    out = [active]
    if not options.include_branches:
        return out
    seen = {tuple(t.message_id for t in active.turns)}
    on_active = {m.message_id for m in conv.messages if m.on_active_branch}
    for path in _other_paths(conv):
        turns = output_turns(conv, [m for m in path if options.selects(m)], options)
        diverge = next((i for i, t in enumerate(turns) if t.message_id not in on_active), len(turns))
        ids = tuple(t.message_id for t in turns)
        if diverge == len(turns) or ids in seen:
            continue  # nothing of its own once filtered (e.g. a hidden leaf), or a duplicate
        seen.add(ids)
        out.append(Branch(len(out), turns, diverge))
    return out

