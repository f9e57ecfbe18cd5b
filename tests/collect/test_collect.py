"""`chatetl collect` and `chatetl doctor` on generated home folders (chatetl.samples.agent_sessions):
a second run copies nothing, a grown session replaces its copy (its newer state wins when read), a
purged local log stays collected, opencode's database is bundled like its files, doctor counts and warns."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatetl.cli import main
from chatetl.collect.agents import Roots, sessions
from chatetl.collect.doctor import checkup
from chatetl.collect.run import State, collect, key_of
from chatetl.layout import AGENTS_RAW_PREFIX, agent_session_key
from chatetl.model import newest, state_order
from chatetl.readers import ReadReport, read_entries
from chatetl.readers.entry import Entry
from chatetl.samples import agent_sessions as s
from chatetl.storage import LocalObjectStore

EVERY = {"claude-code": 1, "codex-cli": 2, "gemini-cli": 3, "opencode": 2}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return s.write_home(tmp_path / "home")


def run(store, home: Path, state: State | None = None):
    return collect(store, sessions(Roots.of(home, environ={})), state or State(None))


def conversations(store) -> dict[str, object]:
    report = ReadReport()
    entries = [Entry.from_path(store.local_path(o.key), o.key) for o in store.list(AGENTS_RAW_PREFIX)]
    convs = {c.conversation_id: c for c in read_entries(entries, report)}
    assert report.errors == []
    return convs


def test_collect_twice_copies_nothing_the_second_time(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    state = State(tmp_path / "state.json")
    first = run(store, home, state)
    assert first.found == EVERY and first.copied == EVERY and first.unchanged == {}
    again = run(store, home, State(tmp_path / "state.json"))
    assert again.copied == {} and again.unchanged == EVERY
    # without the local state the bucket's content hashes tell the same
    assert run(store, home).copied == {}
    keys = sorted(o.key for o in store.list(AGENTS_RAW_PREFIX))
    assert f"raw/agents/claude-code/-home-ana-proj/{s.CLAUDE_SESSION}.jsonl" in keys
    assert f"raw/agents/gemini-cli/proj/chats/{s.GEMINI_SESSION}/{s.GEMINI_CHILD}.jsonl" in keys
    assert f"raw/agents/opencode/proj/{s.OPENCODE_SESSION}.json" in keys
    assert len(keys) == sum(EVERY.values())
    convs = conversations(store)
    assert convs[f"{s.GEMINI_SESSION}/{s.GEMINI_CHILD}"].meta["parent_session_id"] == s.GEMINI_SESSION
    assert convs[s.OPENCODE_CHILD].meta["parent_session_id"] == s.OPENCODE_SESSION
    assert convs[s.CLAUDE_SESSION].meta["project"] == "-home-ana-proj"


def test_a_grown_session_replaces_its_copy_and_its_newer_state_wins(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    run(store, home)
    before = conversations(store)[s.CODEX_SESSION]
    rollout = next(home.glob(f".codex/sessions/**/*{s.CODEX_SESSION}.jsonl"))
    line = {"timestamp": "2026-01-02T00:00:00.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Tests pass too."}]}}
    with rollout.open("a") as f:
        f.write(json.dumps(line) + "\n")
    grown = run(store, home)
    assert grown.copied == {"codex-cli": 1}
    after = conversations(store)[s.CODEX_SESSION]
    assert after.updated_at > before.updated_at and after.messages[-1].text == "Tests pass too."
    assert len(after.messages) == len(before.messages) + 1
    assert state_order(after) > state_order(before)  # the grown copy's state wins downstream
    assert newest([before, after]) is after


def test_a_purged_local_log_stays_collected(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    run(store, home)
    claude = next(home.glob(".claude/projects/*/*.jsonl"))
    kept = claude.read_bytes()
    claude.unlink()
    shutil_rmtree(home / ".gemini")
    again = run(store, home)
    assert again.copied == {} and "gemini-cli" not in again.found
    assert store.get_bytes(f"raw/agents/claude-code/-home-ana-proj/{claude.name}") == kept
    assert len(list(store.list(AGENTS_RAW_PREFIX))) == sum(EVERY.values())


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def test_a_shorter_append_only_log_never_overwrites_its_longer_copy(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    run(store, home)
    claude = next(home.glob(".claude/projects/*/*.jsonl"))
    full = claude.read_bytes()
    claude.write_bytes(full.split(b"\n")[0] + b"\n")
    again = run(store, home)
    assert again.kept == {"claude-code": 1} and again.copied == {}
    assert store.get_bytes(key_of(next(x for x in sessions(Roots.of(home, environ={})) if x.agent == "claude-code"))) == full


def test_a_half_written_json_session_waits_for_the_next_run(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    legacy = next(home.glob(".gemini/tmp/proj/chats/session-*.json"))
    whole = legacy.read_bytes()
    legacy.write_bytes(whole[: len(whole) // 2])
    first = run(store, home)
    assert first.retry == {"gemini-cli": 1}
    legacy.write_bytes(whole)
    assert run(store, home).copied == {"gemini-cli": 1}


def test_opencode_database_sessions_are_bundled_as_its_files_are(home: Path, tmp_path: Path):
    data = s.opencode_records()
    db_home = tmp_path / "db-home"
    root = db_home / ".local/share/opencode"
    root.mkdir(parents=True)
    con = sqlite3.connect(root / "opencode.db")
    con.executescript("""
        CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT, vcs TEXT, time_created INTEGER);
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT, title TEXT,
                              version TEXT, share_url TEXT, time_created INTEGER, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
    """)
    p = data["project"]
    con.execute("INSERT INTO project VALUES (?, ?, ?, ?)", (p["id"], p["worktree"], p["vcs"], p["time"]["created"]))
    for x in data["sessions"]:
        con.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (x["id"], x["projectID"], x.get("parentID"), x.get("slug"), x["directory"], x["title"], x["version"], None,
                     x["time"]["created"], x["time"]["updated"]))
    for m in data["messages"]:
        body = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        con.execute("INSERT INTO message VALUES (?, ?, 0, 0, ?)", (m["id"], m["sessionID"], json.dumps(body)))
    for part in data["parts"]:
        body = {k: v for k, v in part.items() if k not in ("id", "messageID", "sessionID")}
        con.execute("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (part["id"], part["messageID"], part["sessionID"], json.dumps(body)))
    con.commit()
    con.close()
    from_db = LocalObjectStore(tmp_path / "from-db")
    from_files = LocalObjectStore(tmp_path / "from-files")
    assert run(from_db, db_home).copied == {"opencode": 2}
    run(from_files, home)
    key = agent_session_key("opencode", ("proj", f"{s.OPENCODE_SESSION}.json"))
    db_conv = conversations(from_db)[s.OPENCODE_SESSION]
    file_conv = {k: v for k, v in conversations(from_files).items() if k == s.OPENCODE_SESSION}[s.OPENCODE_SESSION]
    assert from_db.head(key) is not None
    assert [(m.message_id, m.kind, m.text) for m in db_conv.messages] == [(m.message_id, m.kind, m.text) for m in file_conv.messages]


def test_doctor_counts_and_warns_before_claude_code_purges(home: Path, tmp_path: Path):
    store = LocalObjectStore(tmp_path / "bucket")
    claude = next(home.glob(".claude/projects/*/*.jsonl"))
    now = time.time()
    os.utime(claude, (now - 29 * 86400, now - 29 * 86400))  # one day before the default 30 days' cleanup
    result = checkup(store, Roots.of(home, environ={}), State(None), now=now, managed=())
    counts = {a.agent: (a.sessions, a.collected, a.not_collected) for a in result.agents}
    assert counts == {agent: (n, 0, n) for agent, n in EVERY.items()}
    assert result.cleanup_days == 30 and len(result.warnings) == 1 and "within 3 days" in result.warnings[0]

    run(store, home)
    codex = next(home.glob(f".codex/sessions/**/*{s.CODEX_CHILD}.jsonl"))
    codex.write_bytes(codex.read_bytes() + b'{"timestamp":"2026-01-02T00:00:00.000Z","type":"event_msg","payload":{"type":"x"}}\n')
    (home / ".claude/settings.json").write_text(json.dumps({"cleanupPeriodDays": 7}))
    result = checkup(store, Roots.of(home, environ={}), State(None), now=now, managed=())
    counts = {a.agent: (a.sessions, a.collected, a.not_collected) for a in result.agents}
    assert counts["codex-cli"] == (2, 1, 1) and counts["claude-code"] == (1, 1, 0)
    assert result.cleanup_days == 7 and result.warnings == []  # the old session is collected: nothing at risk


def test_doctor_warns_of_gemini_cli_retention(home: Path, tmp_path: Path):
    (home / ".gemini/settings.json").write_text(json.dumps({"general": {"sessionRetention": {"enabled": True, "maxAge": "2w"}}}))
    legacy = next(home.glob(".gemini/tmp/proj/chats/session-*.json"))
    now = time.time()
    os.utime(legacy, (now - 15 * 86400, now - 15 * 86400))
    result = checkup(LocalObjectStore(tmp_path / "bucket"), Roots.of(home, environ={}).only({"gemini-cli"}), State(None), now=now)
    assert result.gemini_retention_days == 14 and result.cleanup_days is None
    assert result.warnings == [result.warnings[0]] and "1 Gemini CLI session(s) not collected are older than" in result.warnings[0]


def test_doctor_and_collect_commands(home: Path, tmp_path: Path):
    claude = next(home.glob(".claude/projects/*/*.jsonl"))
    old = time.time() - 40 * 86400
    os.utime(claude, (old, old))
    runner = CliRunner()
    bucket, state = str(tmp_path / "bucket"), str(tmp_path / "state.json")
    args = ["--home", str(home), "--to", bucket, "--state", state]
    checked = runner.invoke(main, ["doctor", *args])
    assert checked.exit_code == 1, checked.output
    assert "claude-code: 1 sessions, 0 collected, 1 not collected" in checked.stdout
    assert "older than cleanupPeriodDays (30 days)" in checked.stderr
    collected = runner.invoke(main, ["collect", *args])
    assert collected.exit_code == 0, collected.output
    assert json.loads(collected.stdout)["copied"] == EVERY
    again = runner.invoke(main, ["collect", *args, "--agent", "codex-cli"])
    assert json.loads(again.stdout)["copied"] == {} and json.loads(again.stdout)["found"] == {"codex-cli": 2}
    checked = runner.invoke(main, ["doctor", *args, "--json"])
    assert checked.exit_code == 0
    assert {a["agent"]: a["not_collected"] for a in json.loads(checked.stdout)["agents"]} == dict.fromkeys(EVERY, 0)


def test_no_name_on_disk_chooses_a_path():
    assert agent_session_key("codex-cli", ("..", "../../etc/passwd")) == "raw/agents/codex-cli/_../_.._.._etc_passwd"
    assert agent_session_key("gemini-cli", ("", ".hidden", "a b/c")) == "raw/agents/gemini-cli/_/_.hidden/a_b_c"


@pytest.mark.integration
def test_collect_into_s3_then_load_and_a_grown_session_wins_in_the_graph(home: Path, s3_store, s3_bucket, clean_graph):
    first = collect(s3_store, sessions(Roots.of(home, environ={})), State(None))
    assert first.copied == EVERY
    assert collect(s3_store, sessions(Roots.of(home, environ={})), State(None)).copied == {}

    def load() -> dict:
        result = CliRunner().invoke(main, ["load", f"s3://{s3_bucket}/{AGENTS_RAW_PREFIX}", "--no-documents"])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    def stored() -> dict:
        records, _, _ = clean_graph.execute_query(
            "MATCH (c:Conversation {conversation_id: $id}) RETURN c.message_count AS n, c.updated_at AS updated", {"id": s.CODEX_SESSION},
            database_=os.environ.get("NEO4J_DATABASE") or None)
        [row] = records
        return dict(row)

    assert load()["conversations_created"] == sum(EVERY.values())
    before = stored()
    rollout = next(home.glob(f".codex/sessions/**/*{s.CODEX_SESSION}.jsonl"))
    line = {"timestamp": "2026-01-02T00:00:00.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "One more thing."}]}}
    with rollout.open("a") as f:
        f.write(json.dumps(line) + "\n")
    shutil_rmtree(home / ".gemini")  # purged locally: stays in the bucket, and in the graph
    assert collect(s3_store, sessions(Roots.of(home, environ={})), State(None)).copied == {"codex-cli": 1}
    assert len(list(s3_store.list(AGENTS_RAW_PREFIX))) == sum(EVERY.values())
    summary = load()
    assert summary["conversations_updated"] == 1 and summary["conversations_unchanged"] == sum(EVERY.values()) - 1
    after = stored()
    assert after["n"] == before["n"] + 1 and after["updated"] > before["updated"]
