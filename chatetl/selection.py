"""What text goes out of chatetl: the visible branch a person saw, and opt-ins for the rest.

RAG documents, chunks, exported files and training files all draw their turns from here,
so one place decides what leaves the pipeline. By default that is the visible turns of
the active branch. `ContentOptions` can let in reasoning, tool internals, hidden or
injected context (system prompts, custom instructions, memory, summaries) and the
abandoned branches (regenerations, edited prompts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from chatetl.model import Citation, Conversation, Message, MessageKind, Role
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
    def from_settings(cls, settings: Settings, scope: str | None = None) -> "ContentOptions":
        """`CHATETL_{SCOPE}_INCLUDE_REASONING` (scope RAG or EXPORT) wins over `CHATETL_INCLUDE_REASONING`, and so on."""
        return cls(**settings.content_flags(scope))

    @classmethod
    def from_env(cls, scope: str | None = None, environ: Mapping[str, str] | None = None) -> "ContentOptions":
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


@dataclass(frozen=True)
class OutputTurn:
    """One turn as it goes out to a document or a file.

    `kind` says what it is (a visible turn, or an opted-in reasoning / tool / hidden part);
    `tag` is the display tag (the role for turns, or the chat-export role tag the file had);
    `name` the tool's name for tool parts.
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
        return self.kind is MessageKind.TURN


@dataclass
class Branch:
    """A root-to-leaf path's turns; `index` 0 is the active branch, `diverges_at` where an other branch leaves it."""

    index: int
    turns: list[OutputTurn] = field(default_factory=list)
    diverges_at: int = 0  # turns[diverges_at:] are not on the active branch

    @property
    def own_turns(self) -> list[OutputTurn]:
        return self.turns[self.diverges_at:]


def _turn_tag(conv: Conversation, m: Message) -> str:
    # a chat-export file's own role tag (chatgpt, grok, claude ...) is kept for display
    if m.author_name and conv.source.value == "chat-export" and m.role in (Role.USER, Role.ASSISTANT):
        return m.author_name
    return m.role.value


def output_turns(conv: Conversation, messages: list[Message], options: ContentOptions = VISIBLE) -> list[OutputTurn]:
    """The messages' turns as they go out, with opted-in parts in the order they happened."""
    out: list[OutputTurn] = []
    for m in messages:
        if not options.selects(m):
            continue
        cites = tuple(m.citations)
        if m.kind is MessageKind.TURN:
            if options.include_reasoning and m.reasoning and m.reasoning.strip():
                out.append(OutputTurn(m.message_id, Role.ASSISTANT, MessageKind.REASONING, m.reasoning, "reasoning"))
            out.append(OutputTurn(m.message_id, m.role, MessageKind.TURN, m.text, _turn_tag(conv, m), None, cites))
            if options.include_tools:
                for call in m.tool_calls:
                    out.append(OutputTurn(m.message_id, Role.ASSISTANT, MessageKind.TOOL_CALL, call.input, "tool_call", call.name))
                for res in m.tool_results:
                    out.append(OutputTurn(m.message_id, Role.TOOL, MessageKind.TOOL_RESULT, res.output, "tool_result", res.name))
        elif m.kind is MessageKind.REASONING:
            text = m.text or m.reasoning or ""
            if text.strip():
                out.append(OutputTurn(m.message_id, Role.ASSISTANT, MessageKind.REASONING, text, "reasoning"))
        elif m.kind is MessageKind.TOOL_CALL:
            if m.tool_calls:
                for call in m.tool_calls:
                    out.append(OutputTurn(m.message_id, Role.ASSISTANT, MessageKind.TOOL_CALL, call.input, "tool_call", call.name or m.author_name))
            elif m.text.strip():
                out.append(OutputTurn(m.message_id, Role.ASSISTANT, MessageKind.TOOL_CALL, m.text, "tool_call", m.recipient or m.author_name))
        elif m.kind is MessageKind.TOOL_RESULT:
            name = m.author_name or (m.tool_results[0].name if m.tool_results else None)
            if m.text.strip() or not m.tool_results:
                text = m.text
            else:
                text = "\n\n".join(r.output for r in m.tool_results if r.output)
            if text.strip():
                out.append(OutputTurn(m.message_id, Role.TOOL, MessageKind.TOOL_RESULT, text, "tool_result", name, cites))
        elif m.text.strip():  # HIDDEN, SUMMARY
            out.append(OutputTurn(m.message_id, Role.SYSTEM, m.kind, m.text, m.kind.value if m.kind is MessageKind.SUMMARY else "system", m.author_name))
    return out


def active_turns(conv: Conversation, options: ContentOptions = VISIBLE) -> list[OutputTurn]:
    """The active branch's turns: what a person saw (plus opt-ins)."""
    messages = conv.visible_turns if options.visible_only else conv.active_branch
    return output_turns(conv, messages, options)


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

