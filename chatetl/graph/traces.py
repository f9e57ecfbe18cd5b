"""Deep mode: a conversation's tool use as a DecisionTrace of TraceSteps.

One DecisionTrace per conversation that used tools on the branch the user saw (the active
branch, in order): id `{platform}-trace-{conversation_id}`, task `Tool usage in: {title}`,
outcome a summary of the tool calls. Every tool call and every tool result is a TraceStep:
`action` `tool_use:<name>` / `tool_result:<name>`, `observation` the call's input or the
result's output cut at 500 characters (`observation_truncated`, `observation_length`),
`thought` what triggered the call: the reasoning the assistant wrote with it, else the text it
wrote with it, else the last user/assistant text or reasoning before it (cut at 500); a
result's thought is its call's. Each result is paired with its own call: by id (ChatGPT
results carry the call's id, Claude `tool_use_id`), else (sources without ids, e.g. ShareGPT)
with the oldest open call of the same tool, else the oldest open call. A paired result has
`tool_call_id` and `paired_step` (the call step's key); the load links it `RESULT_OF` its
call, links consecutive steps by NEXT, and every step `FROM_MESSAGE` its Message.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chatetl.graph.properties import cut, message_key
from chatetl.labels import chat_title
from chatetl.model import Conversation, Message, MessageKind, Role, ToolResult

OBSERVATION_LIMIT = 500  # TraceStep.observation is cut at 500 characters
THOUGHT_LIMIT = 500
UNKNOWN_TOOL = "unknown"


def trace_id(conv: Conversation) -> str:
    return f"{conv.platform}-trace-{conv.conversation_id}"


def _trace_messages(conv: Conversation) -> list[Message]:
    branch = conv.active_branch
    return branch if branch else list(conv.messages)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def trace_for(conv: Conversation) -> dict[str, Any] | None:
    """The trace row of a conversation (None when its active branch used no tool)."""
    walk = _StepWalk(conv)
    for m in _trace_messages(conv):
        walk.message(m)
    if not walk.steps:
        return None
    return _trace_row(conv, walk.steps, unanswered=len(walk.open_calls))


class _StepWalk:
    """The TraceSteps of a conversation, made as its messages are walked in order: a step per tool call, a step per
    tool result, paired with its call (by id, else the oldest open call of its tool, else the oldest open call)."""

    def __init__(self, conv: Conversation) -> None:
        self.conv = conv
        self.tid = trace_id(conv)
        self.steps: list[dict[str, Any]] = []
        self.open_calls: list[dict[str, Any]] = []  # call steps without a result yet, oldest first
        self.calls_by_id: dict[str, dict[str, Any]] = {}
        self.last_text = ""  # the last user/assistant text or reasoning: what triggered a call that says nothing

    def message(self, m: Message) -> None:
        """One message's calls and results (a result in the message of its call follows the call), then its text."""
        pending = list(m.tool_results)
        if m.tool_calls:
            own_text = m.text.strip() if m.kind is MessageKind.TURN else ""
            trigger = (m.reasoning or "").strip() or own_text or self.last_text
            for call in m.tool_calls:
                s = self._step("tool_use", call.name or UNKNOWN_TOOL, call.input, trigger, m)
                s["tool_call_id"] = call.id
                self.open_calls.append(s)
                if call.id:
                    self.calls_by_id.setdefault(call.id, s)
                    # a message holding both (Claude.ai: tool_use then its tool_result blocks): the result follows its call
                    for result in [r for r in pending if r.tool_call_id == call.id]:
                        pending.remove(result)
                        self._result(result, m)
        for result in pending:
            self._result(result, m)
        if m.role in (Role.USER, Role.ASSISTANT) and m.kind in (MessageKind.TURN, MessageKind.REASONING) and m.content_type != "reasoning_recap":
            text = (m.text or m.reasoning or "").strip()
            if text:
                self.last_text = text

    def _step(self, kind: str, name: str, observation: str, thought: str, m: Message) -> dict[str, Any]:
        obs, obs_cut, obs_len = cut(observation, OBSERVATION_LIMIT)
        s = {
            "key": f"{self.tid}:{len(self.steps)}",
            "trace_id": self.tid,
            "index": len(self.steps),
            "thought": cut(thought, THOUGHT_LIMIT)[0],
            "action": f"{kind}:{name}",
            "kind": kind,
            "tool_name": name,
            "observation": obs,
            "observation_truncated": obs_cut,
            "observation_length": obs_len,
            "message_key": message_key(self.conv, m.message_id),
            "tool_call_id": None,
            "paired_step": None,
            "is_error": False,
        }
        self.steps.append(s)
        return s

    def _result(self, result: ToolResult, m: Message) -> None:
        open_calls = self.open_calls
        call_step = self.calls_by_id.get(result.tool_call_id) if result.tool_call_id else None
        if call_step is None and open_calls:
            same_tool = [c for c in open_calls if result.name and c["tool_name"] == result.name]
            call_step = (same_tool or open_calls)[0]
        if call_step is not None and any(c is call_step for c in open_calls):
            open_calls[:] = [c for c in open_calls if c is not call_step]
        name = result.name or (call_step["tool_name"] if call_step else None) or UNKNOWN_TOOL
        s = self._step("tool_result", name, result.output, call_step["thought"] if call_step else self.last_text, m)
        s["is_error"] = result.is_error
        if call_step is not None:
            s["tool_call_id"] = call_step["tool_call_id"] or result.tool_call_id
            s["paired_step"] = call_step["key"]


def _outcome(calls: list[dict[str, Any]], results: list[dict[str, Any]], errors: int, unanswered: int) -> str:
    """The trace's outcome: its tool calls (per tool, the most used first), results, errors, calls without a result."""
    tools = Counter(s["tool_name"] for s in calls)
    outcome = _plural(len(calls), "tool call")
    if tools:
        outcome += " (" + ", ".join(f"{name} ×{n}" for name, n in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))) + ")"
    outcome += f", {_plural(len(results), 'result')}"
    if errors:
        outcome += f", {_plural(errors, 'error')}"
    if unanswered:
        outcome += f", {unanswered} without a result"
    return outcome


def _trace_row(conv: Conversation, steps: list[dict[str, Any]], unanswered: int) -> dict[str, Any]:
    """The DecisionTrace row of a conversation's steps (`unanswered`: its calls left without a result)."""
    tid = trace_id(conv)
    calls = [s for s in steps if s["kind"] == "tool_use"]
    results = [s for s in steps if s["kind"] == "tool_result"]
    errors = sum(1 for s in results if s["is_error"])
    title = chat_title(conv.title)
    return {
        "id": tid,
        "conversation_key": conv.key,
        "props": {
            "id": tid,
            "conversation_key": conv.key,
            "conversation_id": conv.conversation_id,
            "source": conv.platform,
            "task": f"Tool usage in: {title}",
            "outcome": _outcome(calls, results, errors, unanswered),
            "tool_calls": len(calls),
            "tool_results": len(results),
            "errors": errors,
            "unanswered_calls": unanswered,
            "step_count": len(steps),
        },
        "steps": steps,
    }
