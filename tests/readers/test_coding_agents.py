"""Codex CLI, Gemini CLI and opencode sessions: generated in each agent's layout (chatetl.samples.agent_sessions),
read by content; turns, hidden context, reasoning, tool calls with their results, the model, working
directory and branch, sub-agents, rewinds and growth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatetl.collect.opencode_bundles import bundles
from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.samples import agent_sessions as s


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return s.write_home(tmp_path / "home")


def read_one(path: Path) -> tuple[list, ReadReport]:
    report = ReadReport()
    return list(read_path(path, report)), report


def only(convs: list):
    assert len(convs) == 1
    return convs[0]


def kinds(conv) -> list[tuple[str, str]]:
    return [(m.role.value, m.kind.value) for m in conv.messages]


def codex_path(home: Path, session: str) -> Path:
    return next(home.glob(f".codex/sessions/**/rollout-*-{session}.jsonl"))


# --- detection ------------------------------------------------------------------------------------

def test_each_agent_file_is_detected_by_content(home: Path, tmp_path: Path):
    gemini = home / ".gemini/tmp/proj"
    cases = {
        codex_path(home, s.CODEX_SESSION): Format.CODEX_CLI,
        home / ".codex/session_index.jsonl": Format.CODEX_CLI_SIDECAR,
        home / ".codex/history.jsonl": Format.CODEX_CLI_SIDECAR,
        next(gemini.glob("chats/session-*.jsonl")): Format.GEMINI_CLI,
        next(gemini.glob("chats/session-*.json")): Format.GEMINI_CLI,
        next(gemini.glob("chats/*/*.jsonl")): Format.GEMINI_CLI,
        gemini / "logs.json": Format.GEMINI_CLI_SIDECAR,
        next(home.glob(".claude/projects/*/*.jsonl")): Format.CLAUDE_CODE,
    }
    for path, fmt in cases.items():
        renamed = tmp_path / "renamed" / path.name.replace("session", "x").replace("rollout", "y")
        renamed.parent.mkdir(exist_ok=True)
        renamed.write_bytes(path.read_bytes())
        assert detect(Entry.from_path(renamed))[0] is fmt, path


def test_gemini_prompt_log_is_no_claude_code_session(home: Path):
    convs, report = read_one(home / ".gemini/tmp/proj/logs.json")
    assert convs == [] and report.errors == []
    assert report.skipped["gemini-cli-sidecar file"] == 1 and "claude-code" not in report.formats


# --- Codex CLI ------------------------------------------------------------------------------------

def test_codex_rollout(home: Path):
    convs, report = read_one(codex_path(home, s.CODEX_SESSION))
    c = only(convs)
    assert report.errors == [] and report.formats["codex-cli"] == 1
    assert c.source is Source.CODEX_CLI and c.platform == "codex-cli" and c.conversation_id == s.CODEX_SESSION
    assert c.title == "Fix the build"  # the thread name, not the first prompt
    assert c.meta["cwd"] == s.PROJECT_DIR and c.meta["gitBranch"] == "main" and c.meta["gitCommit"] == "3f2a9c1"
    assert c.meta["cli_version"] == "0.57.0" and "parent_session_id" not in c.meta
    assert c.model == "gpt-5-codex"
    assert str(c.created_at) == "2026-01-01 00:00:00+00:00" and str(c.updated_at) == "2026-01-01 00:00:18+00:00"
    visible = [m.text for m in c.messages if m.kind is MessageKind.TURN]
    assert visible == ["Why does the build fail?", "Added a Makefile.", "Now run it.", "It builds now."]
    env = c.messages[0]
    assert env.kind is MessageKind.HIDDEN and env.text.startswith("<environment_context>")
    reasoning = [m for m in c.messages if m.kind is MessageKind.REASONING]
    assert [r.text for r in reasoning] == ["**Checking the build script**", ""] and reasoning[1].extra["redacted"] is True
    assert all(r.role is Role.ASSISTANT for r in reasoning)
    calls = [m.tool_calls[0] for m in c.messages if m.kind is MessageKind.TOOL_CALL]
    assert [(t.id, t.name) for t in calls] == [("call_A1", "shell"), ("call_B2", "apply_patch"), (None, "web_search"), ("call_C3", "local_shell")]
    results = [m for m in c.messages if m.kind is MessageKind.TOOL_RESULT]
    assert [(r.tool_results[0].tool_call_id, r.tool_results[0].name, r.tool_results[0].is_error) for r in results] == [
        ("call_A1", "shell", True), ("call_B2", "apply_patch", False), ("call_C3", "local_shell", False)]
    assert results[0].text == "make: *** No rule\n" and results[0].extra["exit_code"] == 2
    # the model switch applies to what follows it
    assert [m.model for m in c.messages if m.kind is MessageKind.TURN and m.role is Role.ASSISTANT] == ["gpt-5-codex", "gpt-5.1-codex"]
    # one chain in file order, all of it on the active branch; the terminal's repeated events skipped and counted
    assert all(b.parent_id == a.message_id for a, b in zip(c.messages, c.messages[1:], strict=False))
    assert all(m.on_active_branch for m in c.messages)
    assert report.skipped["codex-cli.event:agent_message"] == 1 and report.skipped["codex-cli.event:token_count"] == 1


def test_codex_sub_agent_names_its_parent(home: Path):
    c = only(read_one(codex_path(home, s.CODEX_CHILD))[0])
    assert c.meta["parent_session_id"] == s.CODEX_SESSION
    assert c.meta["agent_nickname"] == "scout" and c.meta["agent_role"] == "explorer"
    assert c.title == "List the targets."


def test_codex_grown_log_keeps_its_message_ids_and_a_cut_last_line_is_a_warning(home: Path, tmp_path: Path):
    path = codex_path(home, s.CODEX_SESSION)
    before = only(read_one(path)[0])
    grown = tmp_path / "grown.jsonl"
    extra = {"timestamp": "2026-01-01T00:01:00.000Z", "type": "response_item",
             "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And test it."}]}}
    grown.write_bytes(path.read_bytes() + json.dumps(extra).encode() + b'\n{"timestamp": "2026-01-01T00:01:01')
    convs, report = read_one(grown)
    after = only(convs)
    assert [m.message_id for m in after.messages[:-1]] == [m.message_id for m in before.messages]
    assert after.messages[-1].text == "And test it." and after.updated_at > before.updated_at
    assert report.errors == [] and report.skipped["codex-cli.cut last line"] == 1 and len(report.warnings) == 1


def test_codex_older_rust_log(tmp_path: Path):
    path = tmp_path / "rollout-2025-06-03T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    lines = [
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-06-03T10:00:00.000Z", "instructions": None,
         "git": {"commit_hash": "ab12", "branch": "dev"}},
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "local_shell_call", "call_id": "call_1", "status": "completed", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "function_call_output", "call_id": "call_1", "output": json.dumps({"output": "a.txt\n", "metadata": {"exit_code": 0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One file: a.txt"}]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    convs, report = read_one(path)
    c = only(convs)
    assert report.errors == [] and c.conversation_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e" and c.meta["gitBranch"] == "dev"
    assert kinds(c) == [("user", "turn"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "turn")]
    assert c.messages[2].tool_results[0].name == "local_shell" and c.messages[2].text == "a.txt\n"


def test_codex_typescript_cli_session(tmp_path: Path):
    path = tmp_path / "rollout-2025-04-20-0a1b.json"
    path.write_text(json.dumps({
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "0a1b", "instructions": ""},
        "items": [
            {"id": "msg_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "shell",
             "arguments": "{\"command\":[\"ls\"]}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"a\\n\",\"metadata\":{\"exit_code\":0}}"},
            {"id": "msg_2", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "One file."}]},
        ],
    }, indent=2))
    assert detect(Entry.from_path(path))[0] is Format.CODEX_CLI
    convs, report = read_one(path)
    c = only(convs)
    assert report.errors == [] and c.conversation_id == "0a1b" and c.title == "hi"
    assert kinds(c) == [("user", "turn"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "turn")]
    assert c.messages[2].text == "a\n" and c.messages[2].tool_results[0].name == "shell"


# --- Gemini CLI -----------------------------------------------------------------------------------

def test_gemini_jsonl_session_with_updates_and_a_rewind(home: Path):
    convs, report = read_one(next(home.glob(".gemini/tmp/proj/chats/session-*.jsonl")))
    c = only(convs)
    assert report.errors == [] and c.source is Source.GEMINI_CLI and c.conversation_id == s.GEMINI_SESSION
    assert c.title == "Add dry-run flag to CLI" and c.model == "gemini-3-pro-preview" and c.meta["project"] == "proj"
    by_id = {m.message_id: m for m in c.messages}
    # the later line of m2 won: its tool call finished, with its result
    assert by_id["m2:call:0"].extra["status"] == "success"
    assert by_id["m2:result:0"].text == "cli.py:3: import argparse" and by_id["m2:result:0"].tool_results[0].tool_call_id == "c1"
    assert by_id["m2:thoughts"].kind is MessageKind.REASONING and by_id["m2:thoughts"].text == "Finding the CLI: Look for argparse."
    assert report.skipped["gemini-cli.message updated"] == 1
    # the rewound turns stay, off the active branch; what followed the rewind continues from before it
    assert not by_id["m4"].on_active_branch and not by_id["m5"].on_active_branch and by_id["m4"].extra["rewound"]
    assert by_id["m6"].parent_id == "m3" and by_id["m6"].on_active_branch
    assert [m.text for m in c.messages if m.on_active_branch and m.kind is MessageKind.TURN] == [
        "Add a --dry-run flag", "Added `--dry-run` to cli.py.", "Thanks, that is all."]
    assert by_id["m7"].kind is MessageKind.HIDDEN and by_id["m7"].content_type == "system:info"


def test_gemini_older_json_session(home: Path):
    c = only(read_one(next(home.glob(".gemini/tmp/proj/chats/session-*.json")))[0])
    assert c.conversation_id == s.GEMINI_LEGACY and c.title == "Why is test_x flaky?" and c.model == "gemini-2.5-pro"
    assert kinds(c) == [("user", "turn"), ("assistant", "reasoning"), ("assistant", "turn"), ("assistant", "tool_call"),
                        ("tool", "tool_result"), ("system", "hidden")]
    result = c.messages[4].tool_results[0]
    assert result.is_error and result.output == "no such file" and result.name == "read_file"


def test_gemini_sub_agent(home: Path):
    c = only(read_one(next(home.glob(".gemini/tmp/proj/chats/*/*.jsonl")))[0])
    assert c.conversation_id == f"{s.GEMINI_SESSION}/{s.GEMINI_CHILD}" and c.meta["parent_session_id"] == s.GEMINI_SESSION


# --- opencode -------------------------------------------------------------------------------------

def opencode_bundle(home: Path, session: str, tmp_path: Path) -> Path:
    bundle = next(b for b in bundles(home / ".local/share/opencode") if b.session_id == session)
    path = tmp_path / f"{session}.json"
    path.write_bytes(bundle.build())
    return path


def test_opencode_session(home: Path, tmp_path: Path):
    path = opencode_bundle(home, s.OPENCODE_SESSION, tmp_path)
    assert detect(Entry.from_path(path))[0] is Format.OPENCODE
    convs, report = read_one(path)
    c = only(convs)
    assert report.errors == [] and c.source is Source.OPENCODE and c.conversation_id == s.OPENCODE_SESSION
    assert c.title == "Add dry-run flag" and c.model == "anthropic/claude-sonnet-4-5" and c.meta["cwd"] == s.PROJECT_DIR
    assert kinds(c) == [("user", "turn"), ("user", "hidden"), ("assistant", "reasoning"), ("assistant", "tool_call"), ("tool", "tool_result"),
                        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
                        ("assistant", "turn")]
    task = c.messages[5]
    assert task.tool_calls[0].name == "task" and task.extra["child_session_id"] == s.OPENCODE_CHILD
    failed = c.messages[8].tool_results[0]
    assert failed.is_error and failed.output == "make: not found" and failed.tool_call_id == "toolu_03"
    assert report.skipped["opencode.part:step-start"] == 1


def test_opencode_child_session(home: Path, tmp_path: Path):
    c = only(read_one(opencode_bundle(home, s.OPENCODE_CHILD, tmp_path))[0])
    assert c.meta["parent_session_id"] == s.OPENCODE_SESSION and c.model == "anthropic/claude-haiku-4-5"


def test_gemini_history_written_again_replaces_the_branch(tmp_path: Path):
    path = tmp_path / "session-2026-01-01T00-00-aaaa.jsonl"
    lines = [
        {"sessionId": "aaaa", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z", "kind": "main"},
        {"id": "a", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "first"},
        {"id": "b", "timestamp": "2026-01-01T00:00:02Z", "type": "gemini", "content": "answer one"},
        {"$set": {"messages": [{"id": "a", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "first, edited"},
                               {"id": "c", "timestamp": "2026-01-01T00:00:03Z", "type": "gemini", "content": "answer two"}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    c = only(read_one(path)[0])
    by_id = {m.message_id: m for m in c.messages}
    assert by_id["a"].text == "first, edited" and by_id["a"].on_active_branch
    assert by_id["c"].parent_id == "a" and by_id["c"].on_active_branch
    assert not by_id["b"].on_active_branch and by_id["b"].extra["rewound"]
