"""Claude Code session log reader: the real sample, skipped lines in the chain, compaction, sidechains, damage."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.claude_code import read

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "claude-code" / "-experiments-ideas" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
SID = "11111111-2222-4333-8444-555555555555"


def by_id(c):
    return {m.message_id: m for m in c.messages}


# --- the real sample ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample():
    if not SAMPLE.exists():
        pytest.skip("real sample not available")
    report = ReadReport()
    convs = list(read_path(SAMPLE, report))
    return convs, report


def test_sample_reads_as_one_session_without_errors(sample):
    convs, report = sample
    assert report.errors == []
    assert report.formats["claude-code"] == 1
    assert len(convs) == 1
    c = convs[0]
    assert c.source is Source.CLAUDE_CODE and c.platform == "claude-code"
    assert c.conversation_id == "03eb5929-52b3-4b13-ada3-b93ae35806b8"
    assert c.title == "Ok, so there's isn't much to see here, mostly one idea about how to organize the"
    assert c.meta["project"] == "-experiments-ideas"
    assert c.meta["cwd"] == "/home/user/project" and c.meta["gitBranch"] == "HEAD" and c.meta["version"] == "2.1.42"
    assert c.model == "claude-opus-4-6"
    # 61 lines: 11 progress + 9 file-history-snapshot skipped, 41 user/assistant/system lines kept
    assert report.skipped["claude-code.line:progress"] == 11
    assert report.skipped["claude-code.line:file-history-snapshot"] == 9
    assert len(c.messages) == 41 and report.messages == 41
    assert report.drift == {}


def test_sample_active_branch_is_the_latest_leaf_walked_back(sample):
    (c,), _ = sample
    # the user went back after the first answer: the later branch (lines 38..61) is active
    users = [m.text for m in c.visible_turns if m.role is Role.USER]
    assert len(users) == 4
    assert users[0].startswith("Ok, so there's isn't much to see here")
    assert users[1].startswith("I actually don't like much this idea")
    assert users[2].startswith("Ok, so, to be fair, maybe also list 5 strengths")
    assert users[3].startswith("Fair enough. Can you write a balanced opinion")
    assert len(c.visible_turns) == 9 and [m.seq for m in c.visible_turns] == list(range(9))
    assert c.current_node == "d107d4c0-ae71-4d3d-af3a-cf7a370bd21f"  # the /exit output, last line
    m = by_id(c)
    # the abandoned branch (lines 18..35) is kept, off the active branch
    abandoned_prompt = m["5270777a-1975-4e8a-9cad-b36280ae0ec5"]
    assert abandoned_prompt.kind is MessageKind.TURN and abandoned_prompt.on_active_branch is False
    assert abandoned_prompt.text.startswith("I very much like this idea")
    off = [x for x in c.messages if not x.on_active_branch]
    assert len(off) == 13  # lines 18-21, 23, 25-28, 30, 32-33, 35


def test_sample_parent_chain_runs_through_skipped_progress_lines(sample):
    (c,), _ = sample
    m = by_id(c)
    first_user = m["13f97369-4175-446a-bac8-0b7e2981d649"]
    assert first_user.parent_id is None  # its parent was a SessionStart hook progress line with no parent
    stop_hook = m["eb84e3ee-fc54-4fe4-ad76-badc5ebb4671"]  # parentUuid points at progress line 15
    assert stop_hook.parent_id == "3220c04b-b0dc-48b5-845b-3c1c10f6a684"  # the assistant line before that progress line
    assert stop_hook.role is Role.SYSTEM and stop_hook.kind is MessageKind.HIDDEN
    assert stop_hook.extra["subtype"] == "stop_hook_summary"
    assert all(x.extra.get("external_parent_uuid") is None for x in c.messages)


def test_sample_split_response_lines_stay_separate_and_in_order(sample):
    (c,), _ = sample
    branch = c.active_branch
    part = [x for x in branch if x.extra.get("api_message_id") == "msg_01UHi2Lt3JY6hKT2YohPo25U"]
    assert [x.message_id[:8] for x in part] == ["b5c90882", "788d2450", "f2ad6242", "bba9b15d"]
    idx = [x.branch_index for x in part]
    assert idx == list(range(idx[0], idx[0] + 4))  # consecutive on the branch
    assert [x.kind for x in part] == [MessageKind.HIDDEN, MessageKind.REASONING, MessageKind.TURN, MessageKind.TOOL_CALL]
    assert part[0].extra["empty"] is True  # the "\n\n" opening chunk is nothing anyone saw
    assert part[1].text.startswith("The user is talking about the current directory")
    assert part[1].reasoning == part[1].text
    assert part[2].text == "Let me take a look at what's here."
    assert part[3].tool_calls[0].name == "Bash" and part[3].tool_calls[0].id == "toolu_01R8fKGi2tkSE4siHWmS8j1f"
    assert all(x.model == "claude-opus-4-6" for x in part)


def test_sample_thinking_blocks_land_as_reasoning(sample):
    (c,), _ = sample
    reasoning = [x for x in c.messages if x.kind is MessageKind.REASONING]
    assert len(reasoning) == 6  # lines 5, 20, 27, 40, 47, 54
    assert sum(1 for x in reasoning if x.on_active_branch) == 4
    assert all(x.role is Role.ASSISTANT and x.text and x.seq is None for x in reasoning)


def test_sample_tool_results_pair_with_calls_by_id(sample):
    (c,), _ = sample
    results = [x for x in c.messages if x.kind is MessageKind.TOOL_RESULT]
    calls = {t.id: t for x in c.messages for t in x.tool_calls}
    assert len(results) == 2
    for r in results:
        assert r.role is Role.TOOL and r.on_active_branch
        (res,) = r.tool_results
        assert res.tool_call_id in calls and res.name == calls[res.tool_call_id].name
    assert {r.tool_results[0].name for r in results} == {"Bash", "Read"}
    assert "work-and-dev-docs.md" in results[0].text


def test_sample_command_lines_are_hidden(sample):
    (c,), _ = sample
    tail = c.active_branch[-3:]
    assert [x.kind for x in tail] == [MessageKind.HIDDEN] * 3
    assert tail[0].extra["is_meta"] is True and tail[1].text.startswith("<command-name>/exit")


# --- synthetic sessions ---------------------------------------------------------------------------

def line(ltype, uuid, parent, ts, body=None, *, role=None, sid=SID, **kw):
    rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w/proj", "sessionId": sid,
           "version": "2.0.0", "gitBranch": "main", "type": ltype, "uuid": uuid, "timestamp": f"2025-06-01T10:{ts}Z"}
    if body is not None:
        rec["message"] = {"role": role or ltype, "content": body}
    rec.update(kw)
    return rec


def asst(uuid, parent, ts, blocks, mid="msg_1", model="claude-sonnet-4-5", **kw):
    rec = line("assistant", uuid, parent, ts, **kw)
    rec["message"] = {"model": model, "id": mid, "type": "message", "role": "assistant", "content": blocks,
                      "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 2}}
    return rec


def progress(uuid, parent, ts):
    return line("progress", uuid, parent, ts, data={"type": "hook_progress"}, toolUseID="t", parentToolUseID="t")


def write(tmp_path, records, name=f"{SID}.jsonl", slug="-w-proj", tail=""):
    d = tmp_path / slug
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return p


def run(path):
    report = ReadReport()
    return list(read_path(path, report)), report


def test_parent_through_a_chain_of_skipped_lines(tmp_path):
    recs = [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}, "isSnapshotUpdate": False},
        line("user", "u1", None, "00:00.000", "Fix the bug"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Fixed."}]),
        progress("p1", "a1", "00:02.000"),
        progress("p2", "p1", "00:03.000"),
        line("user", "u2", "p2", "00:04.000", "Thanks"),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    assert by_id(c)["u2"].parent_id == "a1"
    assert [m.text for m in c.visible_turns] == ["Fix the bug", "Fixed.", "Thanks"]
    assert report.skipped["claude-code.line:progress"] == 2
    assert report.skipped["claude-code.line:file-history-snapshot"] == 1
    assert c.title == "Fix the bug" and c.meta["project"] == "-w-proj" and c.meta["cwd"] == "/w/proj"


def test_compaction_continues_the_branch(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "Start"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Started."}]),
        line("system", "cb", None, "05:00.000", subtype="compact_boundary", content="Conversation compacted",
             logicalParentUuid="a1", compactMetadata={"trigger": "auto", "preTokens": 155000}, level="info"),
        line("user", "cs", "cb", "05:01.000", "This session is being continued. Summary: started.", isCompactSummary=True,
             isVisibleInTranscriptOnly=True),
        line("user", "u2", "cs", "05:02.000", "Go on"),
        asst("a2", "u2", "05:03.000", [{"type": "text", "text": "Going on."}], mid="msg_2"),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == [] and report.drift == {}
    m = by_id(c)
    assert m["cb"].parent_id == "a1" and m["cb"].kind is MessageKind.HIDDEN and m["cb"].role is Role.SYSTEM
    assert m["cb"].text == "Conversation compacted" and m["cb"].extra["compactMetadata"]["trigger"] == "auto"
    assert m["cs"].kind is MessageKind.SUMMARY and m["cs"].text.startswith("This session is being continued")
    assert [x.message_id for x in c.active_branch] == ["u1", "a1", "cb", "cs", "u2", "a2"]
    assert [x.text for x in c.visible_turns] == ["Start", "Started.", "Go on", "Going on."]


def test_summary_line_gives_the_title_and_is_a_summary_message(tmp_path):
    recs = [
        {"type": "summary", "summary": "Other session", "leafUuid": "not-in-this-file"},
        {"type": "summary", "summary": "Fixing the login bug", "leafUuid": "a1"},
        line("user", "u1", None, "00:00.000", "The login is broken"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Looking."}]),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    assert c.title == "Fixing the login bug"
    summaries = [m for m in c.messages if m.kind is MessageKind.SUMMARY]
    assert [m.text for m in summaries] == ["Other session", "Fixing the login bug"]
    assert all(m.parent_id is None and not m.on_active_branch and m.message_id.startswith(f"{SID}:") for m in summaries)
    assert summaries[1].message_id == f"{SID}:2" and summaries[1].extra["leaf_uuid"] == "a1"
    assert [m.message_id for m in c.active_branch] == ["u1", "a1"]


def test_long_first_prompt_is_cut_for_the_title(tmp_path):
    prompt = "Please   refactor\nthe " + "module " * 30
    (c,), _ = run(write(tmp_path, [line("user", "u1", None, "00:00.000", prompt)]))
    assert c.title == " ".join(prompt.split())[:80] and len(c.title) == 80


def test_tool_results_pair_by_id_out_of_order(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "Read two files"),
        asst("a1", "u1", "00:01.000", [{"type": "thinking", "thinking": "Two reads.", "signature": "sig"}], mid="msg_9"),
        asst("a2", "a1", "00:02.000", [{"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "/a"}}], mid="msg_9"),
        asst("a3", "a2", "00:03.000", [{"type": "tool_use", "id": "toolu_B", "name": "Grep", "input": {"pattern": "x"}}], mid="msg_9"),
        line("user", "r1", "a3", "00:04.000", [{"type": "tool_result", "tool_use_id": "toolu_B", "content": [{"type": "text", "text": "grep out"}]}],
             toolUseResult={"big": "duplicate"}, sourceToolAssistantUUID="a3"),
        line("user", "r2", "r1", "00:05.000", [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "file a", "is_error": True}]),
        asst("a4", "r2", "00:06.000", [{"type": "text", "text": "Both read."}], mid="msg_10"),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    m = by_id(c)
    assert m["a1"].kind is MessageKind.REASONING and m["a1"].reasoning == "Two reads."
    assert m["a2"].kind is MessageKind.TOOL_CALL and m["a2"].text == '{"file_path": "/a"}'
    assert (m["r1"].kind, m["r1"].role) == (MessageKind.TOOL_RESULT, Role.TOOL)
    assert m["r1"].tool_results[0].tool_call_id == "toolu_B" and m["r1"].tool_results[0].name == "Grep"
    assert m["r1"].text == "grep out" and m["r1"].author_name == "Grep"
    assert m["r2"].tool_results[0].tool_call_id == "toolu_A" and m["r2"].tool_results[0].name == "Read"
    assert m["r2"].tool_results[0].is_error is True
    assert "toolUseResult" not in m["r1"].extra  # a duplicate of the content, not kept
    assert [x.message_id for x in c.visible_turns] == ["u1", "a4"]
    assert [x.message_id for x in c.active_branch] == ["u1", "a1", "a2", "a3", "r1", "r2", "a4"]


def test_assistant_text_with_tool_use_is_a_turn_with_tool_calls(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "List files"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Listing."},
                                       {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]),
    ]
    (c,), _ = run(write(tmp_path, recs))
    a = by_id(c)["a1"]
    assert a.kind is MessageKind.TURN and a.text == "Listing." and a.tool_calls[0].id == "toolu_1"
    assert a.content_type == "text,tool_use" and a.model == "claude-sonnet-4-5"


def test_meta_and_injected_user_lines_are_hidden(tmp_path):
    recs = [
        line("user", "m1", None, "00:00.000", "<local-command-caveat>Caveat: ...</local-command-caveat>", isMeta=True),
        line("user", "m2", "m1", "00:00.100", "<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
        line("user", "m3", "m2", "00:00.200", "<local-command-stdout></local-command-stdout>"),
        line("user", "u1", "m3", "00:01.000", [{"type": "text", "text": "<system-reminder>Be careful.</system-reminder>"},
                                               {"type": "text", "text": "Real prompt"},
                                               {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]),
        line("user", "m4", "u1", "00:02.000", "Skill instructions", isMeta=True),
        asst("a1", "m4", "00:03.000", [{"type": "text", "text": "Done."}]),
        line("user", "i1", "a1", "00:04.000", [{"type": "text", "text": "[Request interrupted by user]"}]),
    ]
    (c,), _ = run(write(tmp_path, recs))
    m = by_id(c)
    assert [m[k].kind for k in ("m1", "m2", "m3", "m4", "i1")] == [MessageKind.HIDDEN] * 5
    assert m["u1"].kind is MessageKind.TURN and m["u1"].text == "Real prompt"
    assert m["u1"].extra["injected"] == ["<system-reminder>Be careful.</system-reminder>"]
    assert m["u1"].attachments[0].kind == "image" and m["u1"].attachments[0].mime_type == "image/png"
    assert [x.text for x in c.visible_turns] == ["Real prompt", "Done."]
    assert c.title == "Real prompt"


def test_sidechain_lines_are_kept_but_never_on_the_active_branch(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "Research this"),
        asst("a1", "u1", "00:01.000", [{"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"prompt": "go"}}]),
        line("user", "s1", None, "00:02.000", "go", isSidechain=True, agentId="ab12"),
        asst("s2", "s1", "00:03.000", [{"type": "text", "text": "Sub result"}], isSidechain=True, agentId="ab12"),
        line("user", "r1", "a1", "00:04.000", [{"type": "tool_result", "tool_use_id": "toolu_T", "content": "Sub result"}]),
        asst("a2", "r1", "00:05.000", [{"type": "text", "text": "Here it is."}]),
        asst("s3", "s2", "00:09.000", [{"type": "text", "text": "A late subagent line"}], isSidechain=True, agentId="ab12"),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    m = by_id(c)
    for k in ("s1", "s2", "s3"):
        assert m[k].extra["is_sidechain"] is True and m[k].extra["agentId"] == "ab12" and not m[k].on_active_branch
    assert c.current_node == "a2"
    assert [x.message_id for x in c.active_branch] == ["u1", "a1", "r1", "a2"]
    assert c.title == "Research this"


def test_subagent_file_gets_its_own_id(tmp_path):
    recs = [
        line("user", "s1", None, "00:02.000", "Find callers", isSidechain=True, agentId="ab12"),
        asst("s2", "s1", "00:03.000", [{"type": "text", "text": "Three callers."}], isSidechain=True, agentId="ab12"),
    ]
    path = write(tmp_path, recs, name="agent-ab12.jsonl", slug=f"-w-proj/{SID}/subagents")
    (c,), report = run(path)
    assert report.errors == []
    assert c.conversation_id == f"{SID}/agent-ab12"
    assert c.meta["parent_session_id"] == SID and c.meta["project"] == "-w-proj"
    assert [x.text for x in c.visible_turns] == ["Find callers", "Three callers."]


def test_truncated_last_line_is_reported_and_the_session_still_comes_out(tmp_path):
    recs = [line("user", "u1", None, "00:00.000", "Hi"), asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Hello"}])]
    partial = json.dumps(asst("a2", "a1", "00:02.000", [{"type": "text", "text": "cut off"}]))[:70]
    (c,), report = run(write(tmp_path, recs, tail=partial))
    assert [x.text for x in c.visible_turns] == ["Hi", "Hello"]
    assert report.errors == [] and len(report.warnings) == 1  # still being written: a warning, not damage
    warning = report.warnings[0]
    assert warning.file.endswith(f"{SID}.jsonl") and warning.where == "line 3" and "invalid JSON" in warning.reason


def test_malformed_middle_line_orphans_nothing_silently(tmp_path):
    text = (json.dumps(line("user", "u1", None, "00:00.000", "Hi")) + "\n" + "{not json\n"
            + json.dumps(asst("a1", "lost", "00:01.000", [{"type": "text", "text": "Hello"}])) + "\n")
    p = tmp_path / "-w-proj"
    p.mkdir()
    f = p / f"{SID}.jsonl"
    f.write_text(text)
    (c,), report = run(f)
    assert [e.where for e in report.errors] == ["line 2"]
    assert by_id(c)["a1"].extra["external_parent_uuid"] == "lost" and by_id(c)["a1"].parent_id is None


def test_unknown_block_line_type_and_field_are_drift(tmp_path):
    recs = [
        {"type": "brand-new-line", "uuid": "x1", "parentUuid": None, "sessionId": SID},
        line("user", "u1", "x1", "00:00.000", "Hi", newField=7),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Hello"}, {"type": "hologram", "data": 1}]),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    assert report.skipped["claude-code.line:brand-new-line"] == 1
    assert report.drift["claude-code.line:brand-new-line"] == 1
    assert report.drift["claude-code.block:hologram"] == 1
    assert report.drift["claude-code.field:newField"] == 1
    m = by_id(c)
    assert m["u1"].parent_id is None and m["u1"].extra["newField"] == 7
    assert m["a1"].text == "Hello" and m["a1"].extra["unknown_blocks"] == [{"type": "hologram", "data": 1}]


def test_file_stem_when_lines_carry_no_session_id(tmp_path):
    recs = [{"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2025-06-01T10:00:00Z",
             "message": {"role": "user", "content": "Hi"}},
            {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2025-06-01T10:00:01Z",
             "message": {"role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}]}}]
    (c,), _ = run(write(tmp_path, recs, name="my-session.jsonl", slug="not-a-slug"))
    assert c.conversation_id == "my-session" and "project" not in c.meta
    a = by_id(c)["a1"]
    assert a.model is None and a.extra["synthetic"] is True and c.model is None


def test_first_line_longer_than_the_detection_head(tmp_path):
    recs = [line("user", "u1", None, "00:00.000", "y" * 100_000), asst("a1", "u1", "00:01.000", [{"type": "text", "text": "ok"}])]
    path = write(tmp_path, recs)
    assert detect(Entry.from_path(path))[0] is Format.CLAUDE_CODE
    (c,), report = run(path)
    assert report.errors == [] and [len(x.text) for x in c.visible_turns] == [100_000, 2]


def test_session_inside_a_zip_and_direct_call(tmp_path):
    recs = [line("user", "u1", None, "00:00.000", "Zipped"), asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Yes"}])]
    data = "".join(json.dumps(r) + "\n" for r in recs)
    zpath = tmp_path / "claude.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(f"projects/-home-me-app/{SID}.jsonl", data)
    (c,), report = run(zpath)
    assert report.errors == [] and c.meta["project"] == "-home-me-app" and c.conversation_id == SID
    assert c.source_file == f"{zpath}!projects/-home-me-app/{SID}.jsonl"
    direct = list(read(Entry.from_bytes(f"{SID}.jsonl", data.encode()), Shape.JSONL, ReadReport()))
    assert [x.text for x in direct[0].visible_turns] == ["Zipped", "Yes"]


def test_file_with_no_message_lines_yields_nothing(tmp_path):
    recs = [{"type": "queue-operation", "operation": "dequeue", "timestamp": "2025-06-01T10:00:00Z", "sessionId": SID},
            {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False}]
    convs, report = run(write(tmp_path, recs))
    assert convs == [] and report.errors == []
    assert report.skipped["claude-code session without messages"] == 1
    assert report.skipped["claude-code.line:queue-operation"] == 1


def test_a_line_written_twice_is_one_message_the_later_copy_wins(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "Hi"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "draft"}]),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "final"}]),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    assert report.skipped["claude-code.duplicate line"] == 1
    assert [m.message_id for m in c.messages] == ["u1", "a1"] and by_id(c)["a1"].text == "final"


# --- fidelity on real logs: titles, parallel tool calls, the start time, a log still being written ---

def test_a_summary_of_another_session_does_not_title_this_one(tmp_path):
    recs = [
        {"type": "summary", "summary": "Some other session", "leafUuid": "elsewhere-1"},
        {"type": "summary", "summary": "And another", "leafUuid": "elsewhere-2"},
        line("user", "u1", None, "00:00.000", "Why does the build fail?"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "A missing import."}]),
    ]
    (c,), report = run(write(tmp_path, recs))
    assert report.errors == []
    assert c.title == "Why does the build fail?"  # the first prompt, not a summary of another session
    assert [m.kind for m in c.messages].count(MessageKind.SUMMARY) == 2  # the summaries are still kept


def test_a_summary_whose_leaf_is_a_skipped_line_of_this_session_titles_it(tmp_path):
    recs = [
        {"type": "summary", "summary": "Fixing the build", "leafUuid": "p1"},
        line("user", "u1", None, "00:00.000", "Why does the build fail?"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "A missing import."}]),
        progress("p1", "a1", "00:02.000"),
    ]
    (c,), _ = run(write(tmp_path, recs))
    assert c.title == "Fixing the build"


def _parallel_session():
    """One API response calling two tools (two lines sharing message.id), each result hanging from
    the line of its own call, as Claude Code writes them (sourceToolAssistantUUID)."""
    return [
        line("user", "u1", None, "00:00.000", "Read a and b"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Reading both."}], mid="msg_P"),
        asst("a2", "a1", "00:01.100", [{"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "/a"}}], mid="msg_P"),
        asst("a3", "a2", "00:01.200", [{"type": "tool_use", "id": "toolu_B", "name": "Read", "input": {"file_path": "/b"}}], mid="msg_P"),
        progress("p1", "a2", "00:01.300"),
        line("user", "r1", "p1", "00:01.400", [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "file a"}],
             sourceToolAssistantUUID="a2"),
        line("user", "r2", "a3", "00:01.500", [{"type": "tool_result", "tool_use_id": "toolu_B", "content": "file b"}],
             sourceToolAssistantUUID="a3"),
        asst("a4", "r2", "00:02.000", [{"type": "text", "text": "Both files read."}], mid="msg_Q"),
        line("user", "u2", "a4", "00:03.000", "Thanks"),
    ]


def test_parallel_tool_calls_and_all_their_results_are_on_the_active_branch(tmp_path):
    (c,), report = run(write(tmp_path, _parallel_session()))
    assert report.errors == []
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "a2", "a3", "r1", "r2", "a4", "u2"]
    assert all(m.on_active_branch for m in c.messages)
    m = by_id(c)
    assert m["r1"].parent_id == "a3" and m["r1"].extra["line_parent_uuid"] == "a2"  # the fork it was written with
    assert m["r2"].parent_id == "r1" and m["r2"].extra["line_parent_uuid"] == "a3"
    assert "line_parent_uuid" not in m["a4"].extra  # it already followed the last result
    assert [(x.tool_results[0].tool_call_id, x.tool_results[0].name) for x in (m["r1"], m["r2"])] == [("toolu_A", "Read"), ("toolu_B", "Read")]
    assert [x.text for x in c.visible_turns] == ["Read a and b", "Reading both.", "Both files read.", "Thanks"]


def test_parallel_results_written_before_the_next_line_continues_from_the_first(tmp_path):
    recs = _parallel_session()
    recs[7] = asst("a4", "r1", "00:02.000", [{"type": "text", "text": "Both files read."}], mid="msg_Q")  # the next turn after r1
    (c,), _ = run(write(tmp_path, recs))
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "a2", "a3", "r1", "r2", "a4", "u2"]
    assert by_id(c)["a4"].extra["line_parent_uuid"] == "r1"


def test_one_line_with_two_calls_and_two_results_from_it(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "Two commands"),
        asst("a1", "u1", "00:01.000", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                                       {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}], mid="msg_R"),
        line("user", "r1", "a1", "00:02.000", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
        line("user", "r2", "a1", "00:02.100", [{"type": "tool_result", "tool_use_id": "t2", "content": "/w"}]),
        asst("a2", "r2", "00:03.000", [{"type": "text", "text": "Done."}], mid="msg_S"),
    ]
    (c,), _ = run(write(tmp_path, recs))
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "r1", "r2", "a2"]


def test_a_reused_api_id_on_unrelated_lines_is_left_alone(tmp_path):
    recs = [
        line("user", "u1", None, "00:00.000", "One"),
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "First."}], mid="msg_same"),
        line("user", "u2", "a1", "00:02.000", "Two"),
        asst("a2", "u1", "00:03.000", [{"type": "text", "text": "A retry."}], mid="msg_same"),  # another branch
        line("user", "u3", "a2", "00:04.000", "Three"),
    ]
    (c,), _ = run(write(tmp_path, recs))
    assert all("line_parent_uuid" not in m.extra for m in c.messages)
    assert [m.message_id for m in c.active_branch] == ["u1", "a2", "u3"]


def test_created_at_is_the_first_visible_turn(tmp_path):
    recs = [
        {"type": "summary", "summary": "Old", "leafUuid": "elsewhere"},
        line("system", "s0", None, "00:00.000", subtype="local_command", content="<command-name>/model</command-name>", level="info"),
        line("user", "m0", "s0", "00:10.000", "<local-command-caveat>Caveat</local-command-caveat>", isMeta=True),
        line("user", "u1", "m0", "05:00.000", "The real question"),
        asst("a1", "u1", "05:01.000", [{"type": "text", "text": "The answer"}]),
        line("system", "s1", "a1", "09:00.000", subtype="stop_hook_summary", content="", level="info"),
    ]
    (c,), _ = run(write(tmp_path, recs))
    assert c.created_at.isoformat() == "2025-06-01T10:05:00+00:00"
    assert c.updated_at.isoformat() == "2025-06-01T10:09:00+00:00"


def test_a_cut_last_line_is_a_warning_kept_for_quarantine(tmp_path):
    recs = [line("user", "u1", None, "00:00.000", "Hi"), asst("a1", "u1", "00:01.000", [{"type": "text", "text": "Hello"}])]
    partial = json.dumps(asst("a2", "a1", "00:02.000", [{"type": "text", "text": "still writi"}]))[:90]
    path = write(tmp_path, recs, tail=partial)
    (c,), report = run(path)
    assert [x.text for x in c.visible_turns] == ["Hi", "Hello"]
    assert report.skipped["claude-code.cut last line"] == 1
    assert report.errors == []  # a warning, not damage
    [warning] = report.warnings
    assert warning.where == "line 3" and warning.reason.startswith("the last line is cut mid-JSON")
    assert warning.raw == partial.encode()  # its bytes kept for quarantine


def test_a_damaged_last_line_with_its_line_break_is_damage(tmp_path):
    recs = [line("user", "u1", None, "00:00.000", "Hi")]
    (_,), report = run(write(tmp_path, recs, tail='{"type": "assistant", "uuid": \n'))
    assert "claude-code.cut last line" not in report.skipped
    [err] = report.errors
    assert err.where == "line 2" and err.reason.startswith("invalid JSON")


def test_empty_and_image_only_user_lines(tmp_path):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    recs = [
        line("user", "u1", None, "00:00.000", [image]),  # a pasted screenshot, no words
        asst("a1", "u1", "00:01.000", [{"type": "text", "text": "A stack trace."}]),
        line("user", "u2", "a1", "00:02.000", ""),
        asst("a2", "u2", "00:03.000", [{"type": "text", "text": "\n\n"}], mid="msg_2"),
    ]
    (c,), _ = run(write(tmp_path, recs))
    m = by_id(c)
    assert m["u1"].kind is MessageKind.TURN and m["u1"].text == "" and m["u1"].attachments[0].mime_type == "image/png"
    assert (m["u2"].kind, m["u2"].extra.get("empty")) == (MessageKind.HIDDEN, True)
    assert (m["a2"].kind, m["a2"].extra.get("empty")) == (MessageKind.HIDDEN, True)
    assert [x.message_id for x in c.visible_turns] == ["u1", "a1"]


# --- issue 37: what an IDE extension injects around a prompt --------------------------------------

SESSION = "0b0b0b0b-0000-4000-8000-000000000005"
OPENED = ("<ide_opened_file>The user opened the file /home/u/proj/app.py in the IDE. "
          "This may or may not be related to the current task.</ide_opened_file>")
SELECTED = ("<ide_selection>The user selected the lines 3 to 4 from /home/u/proj/app.py:\ndef f():\n    pass\n\n"
            "This may or may not be related to the current task.</ide_selection>")


def ide_line(uuid, parent, content, t):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/u/proj", "sessionId": SESSION,
            "version": "2.0.14", "gitBranch": "main", "type": "user", "message": {"role": "user", "content": content},
            "uuid": uuid, "timestamp": f"2026-01-10T10:00:{t:02d}.000Z"}


def answer_line(uuid, parent, text, t):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/u/proj", "sessionId": SESSION,
            "version": "2.0.14", "type": "assistant", "uuid": uuid, "timestamp": f"2026-01-10T10:00:{t:02d}.000Z",
            "message": {"id": f"msg_{uuid}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}}


def test_ide_context_blocks_are_hidden_context_never_the_prompt_or_the_title(tmp_path):
    lines = [
        ide_line("u-0", None, [{"type": "text", "text": OPENED}], 0),  # a line of context alone
        ide_line("u-1", "u-0", [{"type": "text", "text": OPENED}, {"type": "text", "text": SELECTED},
                                {"type": "text", "text": "Add a docstring to f"}], 1),
        answer_line("a-1", "u-1", "Done.", 2),
        ide_line("u-2", "a-1", OPENED + "Refactor f", 3),  # glued to the prompt in one string
        answer_line("a-2", "u-2", "Refactored.", 4),
        ide_line("u-3", "a-2", "Explain <ide_selection>x</ide_selection> tags\n" + SELECTED, 5),
        answer_line("a-3", "u-3", "They are context.", 6),
        ide_line("u-4", "a-3", "<ide_diagnostics>1 error in app.py\nline 3: undefined name", 7),  # never closed
    ]
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report = ReadReport()
    [c] = list(read_path(path, report))
    m = by_id(c)
    assert m["u-0"].kind is MessageKind.HIDDEN and m["u-0"].text == OPENED
    assert m["u-1"].kind is MessageKind.TURN and m["u-1"].text == "Add a docstring to f"
    assert m["u-1"].extra["injected"] == [OPENED, SELECTED]
    assert m["u-2"].text == "Refactor f" and m["u-2"].extra["injected"] == [OPENED]
    # a tag the person wrote inside their prompt stays; an unclosed block at the end runs to the end
    assert m["u-3"].text == "Explain <ide_selection>x</ide_selection> tags"
    assert m["u-3"].extra["injected"] == [SELECTED]
    assert m["u-4"].kind is MessageKind.HIDDEN and m["u-4"].text.startswith("<ide_diagnostics>1 error")
    assert c.title == "Add a docstring to f"
    assert [t.text for t in c.visible_turns][:2] == ["Add a docstring to f", "Done."]
