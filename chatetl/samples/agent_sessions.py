"""Generated coding-agent homes (never real data): Codex CLI rollouts, Gemini CLI chats, opencode's
storage and a Claude Code project, laid out as each agent writes them below a home folder, with
reasoning, tool calls and results, sub-agents, a rewind and a cut last line. `write_home` writes them;
the readers', `chatetl collect`'s and `chatetl doctor`'s tests read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chatetl.samples.common import sample_id, zip_files

CODEX_SESSION = sample_id("codex", "session")
CODEX_CHILD = sample_id("codex", "child")
GEMINI_SESSION = sample_id("gemini-cli", "session")
GEMINI_LEGACY = sample_id("gemini-cli", "legacy")
GEMINI_CHILD = sample_id("gemini-cli", "child")
OPENCODE_PROJECT = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
OPENCODE_SESSION = "ses_7f3a1b2c3d4eFq9XyZabcdEFGH"
OPENCODE_CHILD = "ses_7f39aaaabbbbccccddddeeeeff"
CLAUDE_SESSION = sample_id("claude-code", "home-session")
PROJECT_DIR = "/home/ana/proj"


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


def _t(seconds: int) -> str:
    return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.000Z"


def _line(seconds: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": _t(seconds), "type": kind, "payload": payload}


def _item(seconds: int, payload: dict[str, Any]) -> dict[str, Any]:
    return _line(seconds, "response_item", payload)


def codex_rollout() -> list[dict[str, Any]]:
    """A current-format Codex CLI rollout: meta with git, injected context, reasoning, a shell call and a
    patch with their outputs, a web search, a model switch and the terminal's repeated events."""
    return [
        _line(0, "session_meta", {"id": CODEX_SESSION, "timestamp": _t(0), "cwd": PROJECT_DIR, "originator": "codex_cli_rs",
                                  "cli_version": "0.57.0", "source": "cli", "model_provider": "openai",
                                  "base_instructions": {"text": "You are Codex."},
                                  "git": {"commit_hash": "3f2a9c1", "branch": "main", "repository_url": "git@example.org:ana/proj.git"}}),
        _item(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/ana/proj</cwd>\n</environment_context>"}]}),
        _item(2, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Why does the build fail?"}]}),
        _line(2, "event_msg", {"type": "user_message", "message": "Why does the build fail?", "kind": "plain"}),
        _line(3, "turn_context", {"cwd": PROJECT_DIR, "approval_policy": "on-request", "model": "gpt-5-codex", "effort": "medium"}),
        _line(4, "event_msg", {"type": "agent_reasoning", "text": "**Checking the build script**"}),
        _item(4, {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Checking the build script**"}],
                  "content": None, "encrypted_content": "gAAAA"}),
        _item(5, {"type": "function_call", "name": "shell", "call_id": "call_A1",
                  "arguments": json.dumps({"command": ["bash", "-lc", "make"], "workdir": PROJECT_DIR})}),
        _item(6, {"type": "function_call_output", "call_id": "call_A1",
                  "output": json.dumps({"output": "make: *** No rule\n", "metadata": {"exit_code": 2, "duration_seconds": 0.1}})}),
        _item(7, {"type": "custom_tool_call", "status": "completed", "call_id": "call_B2", "name": "apply_patch",
                  "input": "*** Begin Patch\n*** Add File: Makefile\n+all:\n*** End Patch"}),
        _item(8, {"type": "custom_tool_call_output", "call_id": "call_B2",
                  "output": json.dumps({"output": "Success. Updated the following files:\nA Makefile\n", "metadata": {"exit_code": 0}})}),
        _item(9, {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAB"}),
        _item(10, {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "make no rule"}}),
        _line(11, "event_msg", {"type": "agent_message", "message": "Added a Makefile."}),
        _item(11, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Added a Makefile."}]}),
        _line(12, "event_msg", {"type": "token_count", "info": None, "rate_limits": None}),
        _line(13, "event_msg", {"type": "thread_name_updated", "thread_id": CODEX_SESSION, "thread_name": "Fix the build"}),
        _item(14, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now run it."}]}),
        _line(15, "turn_context", {"cwd": PROJECT_DIR, "model": "gpt-5.1-codex"}),
        _item(16, {"type": "local_shell_call", "call_id": "call_C3", "status": "completed",
                   "action": {"type": "exec", "command": ["make"], "timeout_ms": None, "working_directory": None}}),
        _item(17, {"type": "function_call_output", "call_id": "call_C3", "output": json.dumps({"output": "", "metadata": {"exit_code": 0}})}),
        _item(18, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It builds now."}]}),
    ]


def codex_child_rollout() -> list[dict[str, Any]]:
    """A sub-agent's rollout: its source names the parent thread."""
    spawn = {"thread_spawn": {"parent_thread_id": CODEX_SESSION, "depth": 1, "agent_nickname": "scout", "agent_role": "explorer"}}
    return [
        _line(20, "session_meta", {"id": CODEX_CHILD, "timestamp": _t(20), "cwd": PROJECT_DIR, "originator": "codex_cli_rs",
                                   "cli_version": "0.57.0", "source": {"subagent": spawn}}),
        _item(21, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the targets."}]}),
        _line(21, "turn_context", {"cwd": PROJECT_DIR, "model": "gpt-5-codex"}),
        _item(22, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One target: all."}]}),
    ]


def codex_files() -> dict[str, bytes]:
    day = ".codex/sessions/2026/01/01"
    return {
        f"{day}/rollout-2026-01-01T00-00-00-{CODEX_SESSION}.jsonl": _jsonl(codex_rollout()),
        f"{day}/rollout-2026-01-01T00-00-20-{CODEX_CHILD}.jsonl": _jsonl(codex_child_rollout()),
        ".codex/session_index.jsonl": _jsonl([{"id": CODEX_SESSION, "thread_name": "Fix the build", "updated_at": _t(13)}]),
        ".codex/history.jsonl": _jsonl([{"session_id": CODEX_SESSION, "ts": 1767225602, "text": "Why does the build fail?"}]),
    }


def gemini_session() -> list[dict[str, Any]]:
    """A Gemini CLI JSON Lines session: a message updated by a later line, a `$set`, a rewind, and thoughts."""
    call = {"id": "c1", "name": "grep_search", "args": {"pattern": "argparse"}, "timestamp": _t(3)}
    thoughts = [{"subject": "Finding the CLI", "description": "Look for argparse.", "timestamp": _t(2)}]
    return [
        {"sessionId": GEMINI_SESSION, "projectHash": "3e2894", "startTime": _t(0), "lastUpdated": _t(0), "kind": "main"},
        {"id": "m1", "timestamp": _t(1), "type": "user", "content": [{"text": "Add a --dry-run flag"}],
         "displayContent": [{"text": "Add a --dry-run flag"}]},
        {"$set": {"lastUpdated": _t(1)}},
        {"id": "m2", "timestamp": _t(3), "type": "gemini", "content": "", "model": "gemini-3-pro-preview", "thoughts": thoughts,
         "toolCalls": [{**call, "status": "executing"}]},
        {"id": "m2", "timestamp": _t(3), "type": "gemini", "content": "", "model": "gemini-3-pro-preview", "thoughts": thoughts,
         "toolCalls": [{**call, "status": "success", "result": [{"functionResponse": {"id": "c1", "name": "grep_search",
                                                                                    "response": {"output": "cli.py:3: import argparse"}}}]}],
         "tokens": {"input": 900, "output": 12, "cached": 0, "thoughts": 30, "tool": 0, "total": 942}},
        {"id": "m3", "timestamp": _t(5), "type": "gemini", "content": "Added `--dry-run` to cli.py.", "model": "gemini-3-pro-preview"},
        {"id": "m4", "timestamp": _t(6), "type": "user", "content": "Also add -n"},
        {"id": "m5", "timestamp": _t(7), "type": "gemini", "content": "Added -n as well.", "model": "gemini-3-pro-preview"},
        {"$rewindTo": "m4"},
        {"id": "m6", "timestamp": _t(9), "type": "user", "content": "Thanks, that is all."},
        {"id": "m7", "timestamp": _t(10), "type": "info", "content": "Request cancelled."},
        {"$set": {"summary": "Add dry-run flag to CLI", "lastUpdated": _t(10)}},
    ]


def gemini_legacy() -> dict[str, Any]:
    """An older Gemini CLI session: one object rewritten whole."""
    return {
        "sessionId": GEMINI_LEGACY, "projectHash": "3e2894", "startTime": _t(30), "lastUpdated": _t(33),
        "messages": [
            {"id": "l1", "timestamp": _t(30), "type": "user", "content": "Why is test_x flaky?"},
            {"id": "l2", "timestamp": _t(32), "type": "gemini", "content": "It depends on wall-clock time.", "model": "gemini-2.5-pro",
             "thoughts": [{"subject": "Inspecting the test", "description": "Read the file first.", "timestamp": _t(31)}],
             "toolCalls": [{"id": "read_file-1", "name": "read_file", "args": {"absolute_path": "/home/ana/proj/test_x.py"},
                            "result": [{"functionResponse": {"id": "read_file-1", "name": "read_file", "response": {"error": "no such file"}}}],
                            "status": "error", "timestamp": _t(31)}],
             "tokens": None},
            {"id": "l3", "timestamp": _t(33), "type": "error", "content": "Quota exceeded."},
        ],
    }


def gemini_child() -> list[dict[str, Any]]:
    return [
        {"sessionId": GEMINI_CHILD, "projectHash": "3e2894", "startTime": _t(3), "lastUpdated": _t(4), "kind": "subagent"},
        {"id": "s1", "timestamp": _t(3), "type": "user", "content": "Investigate the CLI entry point."},
        {"id": "s2", "timestamp": _t(4), "type": "gemini", "content": "The entry point is cli.py.", "model": "gemini-2.5-flash"},
    ]


def gemini_files() -> dict[str, bytes]:
    chats = ".gemini/tmp/proj/chats"
    return {
        f"{chats}/session-2026-01-01T00-00-{GEMINI_SESSION[:8]}.jsonl": _jsonl(gemini_session()),
        f"{chats}/session-2026-01-01T00-00-{GEMINI_LEGACY[:8]}.json": json.dumps(gemini_legacy(), indent=2).encode(),
        f"{chats}/{GEMINI_SESSION}/{GEMINI_CHILD}.jsonl": _jsonl(gemini_child()),
        ".gemini/tmp/proj/logs.json": json.dumps([
            {"sessionId": GEMINI_SESSION, "messageId": 0, "type": "user", "message": "Add a --dry-run flag", "timestamp": _t(1)},
        ], indent=2).encode(),
        ".gemini/tmp/proj/.project_root": PROJECT_DIR.encode(),
    }


def _ms(seconds: int) -> int:
    return 1767225600000 + seconds * 1000


def opencode_records() -> dict[str, Any]:
    """opencode's JSON storage records: the project, two sessions (one a sub-agent's), messages and parts."""
    sid, child = OPENCODE_SESSION, OPENCODE_CHILD
    user = {"id": "msg_a1", "sessionID": sid, "role": "user", "time": {"created": _ms(1)}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    answer = {"id": "msg_a2", "sessionID": sid, "role": "assistant", "parentID": "msg_a1", "time": {"created": _ms(2), "completed": _ms(9)},
              "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
              "path": {"cwd": PROJECT_DIR, "root": PROJECT_DIR}, "cost": 0.0123, "finish": "stop",
              "tokens": {"input": 1200, "output": 150, "reasoning": 0, "cache": {"read": 800, "write": 0}}}
    parts = [
        {"id": "prt_a1_1", "sessionID": sid, "messageID": "msg_a1", "type": "text", "text": "Add a dry-run flag"},
        {"id": "prt_a1_2", "sessionID": sid, "messageID": "msg_a1", "type": "text", "text": "<context>open files</context>", "synthetic": True},
        {"id": "prt_a2_1", "sessionID": sid, "messageID": "msg_a2", "type": "step-start", "snapshot": "9c1e"},
        {"id": "prt_a2_2", "sessionID": sid, "messageID": "msg_a2", "type": "reasoning", "text": "Look for argparse.",
         "time": {"start": _ms(2), "end": _ms(3)}},
        {"id": "prt_a2_3", "sessionID": sid, "messageID": "msg_a2", "type": "tool", "callID": "toolu_01", "tool": "grep",
         "state": {"status": "completed", "input": {"pattern": "argparse"}, "output": "cli.py:3", "title": "argparse",
                   "metadata": {"matches": 1}, "time": {"start": _ms(3), "end": _ms(4)}}},
        {"id": "prt_a2_4", "sessionID": sid, "messageID": "msg_a2", "type": "tool", "callID": "toolu_02", "tool": "task",
         "state": {"status": "completed", "input": {"description": "Find CLI entry", "prompt": "Find it", "subagent_type": "general"},
                   "output": "<task_result>cli.py</task_result>", "title": "Find CLI entry", "metadata": {"sessionId": child},
                   "time": {"start": _ms(4), "end": _ms(8)}}},
        {"id": "prt_a2_5", "sessionID": sid, "messageID": "msg_a2", "type": "tool", "callID": "toolu_03", "tool": "bash",
         "state": {"status": "error", "input": {"command": "make"}, "error": "make: not found", "time": {"start": _ms(8), "end": _ms(8)}}},
        {"id": "prt_a2_6", "sessionID": sid, "messageID": "msg_a2", "type": "text", "text": "Added `--dry-run`.",
         "time": {"start": _ms(8), "end": _ms(9)}},
        {"id": "prt_a2_7", "sessionID": sid, "messageID": "msg_a2", "type": "step-finish", "reason": "stop", "cost": 0.0123},
    ]
    child_msgs = [
        {"id": "msg_b1", "sessionID": child, "role": "user", "time": {"created": _ms(5)}, "agent": "general"},
        {"id": "msg_b2", "sessionID": child, "role": "assistant", "parentID": "msg_b1", "time": {"created": _ms(6)},
         "modelID": "claude-haiku-4-5", "providerID": "anthropic", "path": {"cwd": PROJECT_DIR, "root": PROJECT_DIR}},
    ]
    child_parts = [
        {"id": "prt_b1_1", "sessionID": child, "messageID": "msg_b1", "type": "text", "text": "Find it"},
        {"id": "prt_b2_1", "sessionID": child, "messageID": "msg_b2", "type": "text", "text": "cli.py"},
    ]
    return {
        "project": {"id": OPENCODE_PROJECT, "worktree": PROJECT_DIR, "vcs": "git", "time": {"created": _ms(0)}},
        "sessions": [
            {"id": sid, "slug": "brave-otter", "version": "1.1.8", "projectID": OPENCODE_PROJECT, "directory": PROJECT_DIR,
             "title": "Add dry-run flag", "time": {"created": _ms(0), "updated": _ms(9)}},
            {"id": child, "parentID": sid, "projectID": OPENCODE_PROJECT, "directory": PROJECT_DIR,
             "title": "Find CLI entry (@general subagent)", "version": "1.1.8", "time": {"created": _ms(5), "updated": _ms(7)}},
        ],
        "messages": [user, answer, *child_msgs],
        "parts": parts + child_parts,
    }


def opencode_files() -> dict[str, bytes]:
    """opencode's JSON storage (`storage/project|session|message|part/...`), one file a record."""
    data = opencode_records()
    root = ".local/share/opencode/storage"
    files = {f"{root}/project/{OPENCODE_PROJECT}.json": json.dumps(data["project"]).encode()}
    for s in data["sessions"]:
        files[f"{root}/session/{s['projectID']}/{s['id']}.json"] = json.dumps(s).encode()
    for m in data["messages"]:
        files[f"{root}/message/{m['sessionID']}/{m['id']}.json"] = json.dumps(m).encode()
    for p in data["parts"]:
        files[f"{root}/part/{p['messageID']}/{p['id']}.json"] = json.dumps(p).encode()
    return files


def opencode_export(session: str = OPENCODE_SESSION) -> bytes:
    """One session as `opencode export` prints it (and `chatetl collect` builds it)."""
    data = opencode_records()
    info = next(x for x in data["sessions"] if x["id"] == session)
    messages = [
        {"info": m, "parts": [p for p in data["parts"] if p["messageID"] == m["id"]]}
        for m in data["messages"] if m["sessionID"] == session
    ]
    return json.dumps({"info": info, "messages": messages, "project": data["project"]}, sort_keys=True).encode()


def sample() -> tuple[str, bytes]:
    """The demo's upload: one session of each newer agent, as `chatetl collect` names them below raw/agents/."""
    codex = codex_files()
    gemini = gemini_files()
    return "raw/samples/coding-agent-sessions.zip", zip_files({
        f"codex-cli/proj/{Path(name).name}": data for name, data in codex.items() if CODEX_SESSION in name
    } | {
        f"gemini-cli/proj/chats/{Path(name).name}": data for name, data in gemini.items() if name.endswith(".jsonl") and GEMINI_CHILD not in name
    } | {
        f"opencode/proj/{OPENCODE_SESSION}.json": opencode_export(),
    })


def claude_code_files(cleanup_days: int | None = 30) -> dict[str, bytes]:
    sid = CLAUDE_SESSION
    lines = [
        {"type": "user", "uuid": sample_id("cc", 1), "parentUuid": None, "sessionId": sid, "timestamp": _t(0), "cwd": PROJECT_DIR,
         "gitBranch": "main", "version": "2.1.42", "message": {"role": "user", "content": "Summarize the README"}},
        {"type": "assistant", "uuid": sample_id("cc", 2), "parentUuid": sample_id("cc", 1), "sessionId": sid, "timestamp": _t(2),
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6",
                     "content": [{"type": "text", "text": "It describes a CLI."}]}},
    ]
    files = {f".claude/projects/-home-ana-proj/{sid}.jsonl": _jsonl(lines)}
    if cleanup_days is not None:
        files[".claude/settings.json"] = json.dumps({"cleanupPeriodDays": cleanup_days}).encode()
    return files


def home_files() -> dict[str, bytes]:
    """Every agent's files, by their path below the home folder."""
    return {**codex_files(), **gemini_files(), **opencode_files(), **claude_code_files()}


def write_home(home: Path, files: dict[str, bytes] | None = None) -> Path:
    """Write a generated home (every agent's files, or `files`) below `home`."""
    for rel, data in (home_files() if files is None else files).items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return home
