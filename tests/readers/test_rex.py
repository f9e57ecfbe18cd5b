"""REX `rex-conversation` records (seed 004): detail levels, resyncs, branches, redaction-suffixed fields."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms import rex as rex_module

CONV = "abc123de-4567-89ab-cdef-0123456789ab"


def ts(minute: int, second: int = 0) -> str:
    return f"2026-04-15T14:{minute:02d}:{second:02d}Z"


def epoch(minute: int, second: int = 0) -> float:
    return datetime(2026, 4, 15, 14, minute, second, tzinfo=UTC).timestamp()


def dt(minute: int, second: int = 0) -> datetime:
    return datetime(2026, 4, 15, 14, minute, second, tzinfo=UTC)


def turn(tid, speaker, minute, parent="client-created-root", text=None, *, star=True, model=None, level="full",
         children=(), search=None, citations=None, hidden=False, recipient="all", content_type="text"):
    """One turn as the spider writes it at the given detail level."""
    t = {"speaker": speaker, "when": ts(minute), "identifier": tid}
    if level != "full":
        return t
    s = "*" if star else ""
    text = f"text of {tid}" if text is None else text
    t[f"content{s}"] = text
    t["parent"] = parent
    meta = {"parent_id": parent} if parent != "client-created-root" else {}
    if model:
        meta["model_slug"] = model
    if hidden:
        meta["is_visually_hidden_from_conversation"] = True
    content = {"content_type": content_type, "parts": [text]} if content_type == "text" else {"content_type": content_type, "language": "unknown", "text": text}
    t[f"metadata{s}"] = {
        "id": tid,
        "message": {
            "id": tid,
            "author": {"role": speaker, "name": None, "metadata": {}},
            "create_time": epoch(minute),
            "content": content,
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": meta,
            "recipient": recipient,
            "channel": None,
        },
        "parent": parent,
        "children": list(children),
    }
    if search is not None:
        t["search"] = search
    if citations is not None:
        t["citations"] = citations
    return t


def record(turns=None, *, ident=CONV, title="Red Line service check", star=True, started=1, ended=3, date=None,
           pdm_ts=None, level="full", **extra):
    r = {"name": "rex-conversation", "date": date or ts(started), "platform": "chatgpt", "identifier": ident}
    if level in ("titles", "titles_and_message_times", "full") and title is not None:
        r["title*" if star else "title"] = title
    r["started"] = ts(started)
    r["ended"] = ts(ended)
    if level in ("message_times", "titles_and_message_times", "full") and turns is not None:
        r["turns"] = turns
    r["passive-data-metadata"] = {
        "source": "participant-001",
        "group": "group-a",
        "generator": "rex-conversation: Example Study/1.1.0 TestAgent/1.0",
        "generator-id": "rex-conversation",
        "timestamp": pdm_ts if pdm_ts is not None else epoch(started),
        "timezone": "America/Chicago",
        "configuration-hash": "3f9a1c0e",
        "encrypted_transmission": False,
    }
    r.update(extra)
    return r


def two_turns(star=True):
    return [
        turn("u1", "user", 1, text="Is the CTA Red Line running normally today?", star=star, children=["a1"]),
        turn(
            "a1", "assistant", 2, parent="u1", text="Yes, normal service.", star=star, model="gpt-4o",
            search={"platform": "chatgpt", f"query{'*' if star else ''}": "cta red line status", "type": "web",
                    "results": [{"title": "CTA Service Alerts", "url": "https://www.transitchicago.com/alerts/", "preview": "Red Line: normal service.", "index": 0},
                                {"title": "Red Line", "url": "https://www.transitchicago.com/redline/", "preview": "Route page", "index": 1}]},
            citations=[{"title": "CTA Service Alerts", "url": "https://www.transitchicago.com/alerts/", "source": "transitchicago.com"}],
        ),
    ]


def write(tmp_path, name, records, jsonl=False):
    p = tmp_path / name
    if jsonl:
        p.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        p.write_text(json.dumps(records, indent=1))
    return p


def read_all(path):
    report = ReadReport()
    return list(read_path(path, report)), report


# ----------------------------------------------------------------------------- full level


def test_full_record(tmp_path):
    recs = [record(two_turns())]
    recs[0]["turns"][1]["metadata*"]["message"]["metadata"]["search_result_groups"] = [
        {"type": "web", "entries": [{"title": "CTA Service Alerts", "url": "https://www.transitchicago.com/alerts/", "snippet": "Red Line: normal service."}]}
    ]
    [c], report = read_all(write(tmp_path, "rex.json", recs))
    assert report.errors == [] and report.formats == {"rex": 1} and report.drift == {}
    assert (c.source, c.platform, c.conversation_id) == (Source.REX, "chatgpt", CONV)
    assert c.title == "Red Line service check" and c.url == f"https://chatgpt.com/c/{CONV}"
    assert c.created_at == dt(1) and c.updated_at == dt(3) and c.timezone == "America/Chicago"
    assert c.meta["participant"] == "participant-001" and c.meta["group"] == "group-a"
    assert c.meta["generator"].startswith("rex-conversation: Example Study/1.1.0")
    assert c.meta["configuration_hash"] == "3f9a1c0e" and c.meta["detail_level"] == "full"
    assert c.model == "gpt-4o"
    user, bot = c.messages
    assert (user.message_id, user.parent_id, user.role, user.kind) == ("u1", None, Role.USER, MessageKind.TURN)
    assert (bot.message_id, bot.parent_id, bot.model) == ("a1", "u1", "gpt-4o")
    assert user.text == "Is the CTA Red Line running normally today?" and bot.text == "Yes, normal service."
    assert bot.created_at == dt(2) and bot.created_at.tzinfo is not None
    # search_result_groups, search results and citations: one Citation per url, fields merged
    assert [(x.url, x.title) for x in bot.citations] == [
        ("https://www.transitchicago.com/alerts/", "CTA Service Alerts"),
        ("https://www.transitchicago.com/redline/", "Red Line"),
    ]
    assert bot.citations[0].snippet == "Red Line: normal service." and bot.citations[0].source == "transitchicago.com"
    assert bot.extra["search"] == {"platform": "chatgpt", "query": "cta red line status", "type": "web"}
    assert [m.seq for m in c.messages] == [0, 1] and c.current_node == "a1"


def test_fields_without_the_redaction_suffix_read_the_same(tmp_path):
    [starred], _ = read_all(write(tmp_path, "a.json", [record(two_turns(star=True), star=True)]))
    [plain], report = read_all(write(tmp_path, "b.json", [record(two_turns(star=False), star=False)]))
    assert report.errors == [] and report.drift == {}
    assert plain.title == starred.title == "Red Line service check"
    assert [m.text for m in plain.messages] == [m.text for m in starred.messages]
    assert [m.model for m in plain.messages] == [None, "gpt-4o"]
    assert plain.messages[1].citations == starred.messages[1].citations
    assert plain.messages[1].extra["search"]["query"] == "cta red line status"


def test_upstream_message_fidelity_hidden_and_tool_turns(tmp_path):
    turns = [
        turn("s0", "system", 1, text="", hidden=True, children=["u1"]),
        turn("u1", "user", 1, parent="s0", text="Look it up", children=["c1"]),
        turn("c1", "assistant", 2, parent="u1", text="search('cta')", recipient="browser", content_type="code", children=["t1"]),
        turn("t1", "tool", 2, parent="c1", text="results...", children=["a1"]),
        turn("a1", "assistant", 3, parent="t1", text="Normal service.", model="gpt-4o"),
    ]
    [c], report = read_all(write(tmp_path, "r.json", [record(turns)]))
    assert report.errors == []
    kinds = {m.message_id: m.kind for m in c.messages}
    assert kinds == {"s0": MessageKind.HIDDEN, "u1": MessageKind.TURN, "c1": MessageKind.TOOL_CALL, "t1": MessageKind.TOOL_RESULT, "a1": MessageKind.TURN}
    call = next(m for m in c.messages if m.message_id == "c1")
    assert call.recipient == "browser" and call.content_type == "code" and call.tool_calls[0].name == "browser"
    result = next(m for m in c.messages if m.message_id == "t1")
    assert result.tool_results[0].tool_call_id == call.tool_calls[0].id  # paired through the tree, not by position
    assert [m.message_id for m in c.visible_turns] == ["u1", "a1"]


def test_damaged_upstream_message_falls_back_to_the_turn_fields(tmp_path, monkeypatch):
    def broken(raw, report, message_id=None):
        raise ValueError("boom")

    monkeypatch.setattr(rex_module, "message_from_chatgpt", broken)
    p = write(tmp_path, "r.json", [record(two_turns())])
    [c], report = read_all(p)
    assert [m.text for m in c.messages] == ["Is the CTA Red Line running normally today?", "Yes, normal service."]
    assert len(report.errors) == 2 and "unreadable metadata*.message: ValueError: boom" in report.errors[0].reason
    assert report.errors[0].where == "record 0 turn 0 (u1)" and report.errors[0].file == str(p)
    assert len(c.messages[1].citations) == 2  # the turn's own search results and citations still count


# ----------------------------------------------------------------------------- detail levels


def test_conversation_times_level(tmp_path):
    r = record(level="conversation_times")
    assert set(r) == {"name", "date", "platform", "identifier", "started", "ended", "passive-data-metadata"}
    [c], report = read_all(write(tmp_path, "r.json", [r]))
    assert c.messages == [] and c.title is None and report.errors == []
    assert (c.created_at, c.updated_at) == (dt(1), dt(3))
    assert c.meta["detail_level"] == "conversation_times" and c.message_count == 0 and c.current_node is None


def test_titles_level(tmp_path):
    [c], _ = read_all(write(tmp_path, "r.json", [record(level="titles")]))
    assert c.title == "Red Line service check" and c.messages == [] and c.meta["detail_level"] == "titles"


@pytest.mark.parametrize("level", ["message_times", "titles_and_message_times"])
def test_message_times_levels(tmp_path, level):
    turns = [turn("u1", "user", 1, level=level), turn("a1", "assistant", 2, level=level), turn("u2", "user", 3, level=level), turn("a2", "assistant", 4, level=level)]
    assert set(turns[0]) == {"speaker", "when", "identifier"}
    [c], report = read_all(write(tmp_path, "r.json", [record(turns, level=level)]))
    assert report.errors == [] and report.drift == {}
    assert c.meta["detail_level"] == level
    assert (c.title is None) == (level == "message_times")
    assert [(m.message_id, m.role, m.text, m.created_at) for m in c.messages] == [
        ("u1", Role.USER, "", dt(1)), ("a1", Role.ASSISTANT, "", dt(2)), ("u2", Role.USER, "", dt(3)), ("a2", Role.ASSISTANT, "", dt(4))
    ]
    # no parent pointers at these levels: the turn list itself is the branch
    assert [m.parent_id for m in c.messages] == [None, "u1", "a1", "u2"] and c.message_count == 4
    assert "file order" in c.meta["tree"]


def test_message_times_system_and_tool_speakers(tmp_path):
    turns = [turn("s", "system", 1, level="message_times"), turn("u", "user", 1, level="message_times"),
             turn("t", "tool", 2, level="message_times"), turn("x", "critic", 3, level="message_times")]
    [c], report = read_all(write(tmp_path, "r.json", [record(turns, level="message_times")]))
    assert [(m.role, m.kind) for m in c.messages] == [
        (Role.SYSTEM, MessageKind.HIDDEN), (Role.USER, MessageKind.TURN), (Role.TOOL, MessageKind.TOOL_RESULT), (Role.ASSISTANT, MessageKind.TURN)
    ]
    assert report.drift == {"rex.speaker:critic": 1} and c.messages[3].extra["speaker"] == "critic"


# ----------------------------------------------------------------------------- branches


def branchy(abandoned_leaf_minute: int):
    """u1 -> a1 -> {u2 -> a2, u2b -> a2b}; pre-order: the first branch (u2, a2) comes first in the file."""
    return [
        turn("u1", "user", 1, children=["a1"]),
        turn("a1", "assistant", 2, parent="u1", children=["u2", "u2b"]),
        turn("u2", "user", 3, parent="a1", children=["a2"]),
        turn("a2", "assistant", abandoned_leaf_minute, parent="u2"),
        turn("u2b", "user", 5, parent="a1", children=["a2b"]),
        turn("a2b", "assistant", 6, parent="u2b"),
    ]


def test_active_branch_is_the_newest_leaf_when_the_other_leaf_is_older(tmp_path):
    [c], report = read_all(write(tmp_path, "r.json", [record(branchy(4), ended=6)]))
    assert report.errors == []
    assert len(c.messages) == 6  # abandoned branches are kept
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "u2b", "a2b"]
    assert {m.message_id for m in c.messages if not m.on_active_branch} == {"u2", "a2"}
    assert c.current_node == "a2b" and c.message_count == 4


def test_active_branch_is_the_newest_leaf_even_when_it_comes_first_in_the_file(tmp_path):
    [c], _ = read_all(write(tmp_path, "r.json", [record(branchy(7), ended=7)]))
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "u2", "a2"]
    assert {m.message_id for m in c.messages if not m.on_active_branch} == {"u2b", "a2b"}
    assert c.current_node == "a2"


def test_old_style_root_uuid_is_not_damage_but_a_missing_parent_is(tmp_path):
    root = "00000000-root-uuid"
    ok = [turn("u1", "user", 1, parent=root, children=["a1"]), turn("a1", "assistant", 2, parent="u1")]
    [c], report = read_all(write(tmp_path, "a.json", [record(ok)]))
    assert report.errors == [] and c.messages[0].parent_id is None and c.messages[0].extra["root_parent"] == root
    damaged = [turn("u1", "user", 1, children=["a1"]), turn("a1", "assistant", 2, parent="u1"), turn("a9", "assistant", 3, parent="gone")]
    [c], report = read_all(write(tmp_path, "b.json", [record(damaged)]))
    [err] = report.warnings  # read whole (a root): a warning
    assert "damaged message tree" in err.reason and "dangling" in err.reason
    assert len(c.messages) == 3


def test_debug_metadata_current_node_and_model(tmp_path):
    r = record(branchy(4), metadata={"current_node": "a2", "default_model_slug": "gpt-4o", "mapping": {"huge": {}}})
    [c], report = read_all(write(tmp_path, "r.json", [r]))
    assert c.current_node == "a2" and c.model == "gpt-4o"  # the source's own current_node wins over the latest leaf
    assert [m.message_id for m in c.active_branch] == ["u1", "a1", "u2", "a2"]
    assert "mapping" not in c.meta["chatgpt_metadata"] and report.drift == {}


# ----------------------------------------------------------------------------- resyncs and mixed records


def titled(title, ended, **kw):
    return record([turn("u1", "user", 1)], title=title, ended=ended, **kw)


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)])
def test_resync_newest_state_wins_regardless_of_order(tmp_path, order):
    states = [titled("first sync", 3), titled("second sync", 5), titled("third sync", 9)]
    [c], report = read_all(write(tmp_path, "r.json", [states[i] for i in order]))
    assert c.title == "third sync" and c.updated_at == dt(9)
    assert report.skipped == {"rex:superseded-resync": 2} and report.conversations == 1


def test_resync_tie_breaks(tmp_path):
    # same `ended`: the later `date` wins
    recs = [titled("late date", 5, date=ts(4)), titled("early date", 5, date=ts(2))]
    [c], _ = read_all(write(tmp_path, "a.json", recs))
    assert c.title == "late date"
    # same `ended` and `date`: the later capture timestamp wins
    recs = [titled("late capture", 5, pdm_ts=epoch(8)), titled("early capture", 5, pdm_ts=epoch(7))]
    [c], _ = read_all(write(tmp_path, "b.json", recs))
    assert c.title == "late capture"
    # all equal: the later position in the file wins
    recs = [titled("earlier in file", 5), titled("later in file", 5)]
    [c], _ = read_all(write(tmp_path, "c.json", recs))
    assert c.title == "later in file"


def test_resync_with_epoch_millis_times(tmp_path):
    older = titled("older", 3)
    newer = titled("newer", 3)
    older["ended"] = int(epoch(10) * 1000)  # epoch milliseconds beat the ISO string of 14:03
    older["started"] = int(epoch(1) * 1000)
    [c], _ = read_all(write(tmp_path, "r.json", [newer, older]))
    assert c.title == "older" and c.updated_at == dt(10) and c.created_at == dt(1)


def test_mixed_record_types_interleaved_resyncs_jsonl(tmp_path):
    visit = {"name": "rex-history-visit", "url": "https://example.org/", "passive-data-metadata": {"source": "participant-001"}}
    event = {"name": "pdk-app-event", "event": "open"}
    recs = [event, visit, titled("A1", 3, ident="A"), titled("B1", 3, ident="B"), visit, titled("A2", 6, ident="A"), {"date": ts(1)}, titled("B0", 2, ident="B")]
    p = write(tmp_path, "r.jsonl", recs, jsonl=True)
    assert detect(Entry.from_path(p)) == (Format.REX, Shape.JSONL)
    convs, report = read_all(p)
    assert [(c.conversation_id, c.title) for c in convs] == [("B", "B1"), ("A", "A2")]  # winners in file order
    assert report.skipped == {"rex:pdk-app-event": 1, "rex:rex-history-visit": 2, "rex:(no name)": 1, "rex:superseded-resync": 2}
    assert report.errors == []


def test_detection_when_the_first_record_is_not_a_conversation(tmp_path):
    for first in ({"name": "pdk-app-event", "event": "open"}, {"name": "rex-history-visit", "url": "https://example.org/"}):
        p = write(tmp_path, "r.json", [first, record(two_turns())])
        assert detect(Entry.from_path(p)) == (Format.REX, Shape.ARRAY)
        convs, report = read_all(p)
        assert len(convs) == 1 and sum(report.skipped.values()) == 1


def test_two_passes_over_the_entry():
    data = json.dumps([titled("one", 3), titled("two", 4)]).encode()
    opened = []

    def opener():
        opened.append(1)
        return io.BytesIO(data)

    report = ReadReport()
    convs = list(rex_module.read(Entry(name="r.json", opener=opener), Shape.ARRAY, report))
    assert [c.title for c in convs] == ["two"] and len(opened) == 2


def test_unknown_fields_are_kept_and_counted(tmp_path):
    r = record(two_turns(), study_arm="B")
    r["turns"][0]["feedback"] = "thumbs_up"
    r["passive-data-metadata"]["locale"] = "en-US"
    [c], report = read_all(write(tmp_path, "r.json", [r]))
    assert c.meta["study_arm"] == "B" and c.meta["passive_data_metadata"] == {"locale": "en-US"}
    assert c.messages[0].extra["feedback"] == "thumbs_up"
    assert report.drift == {"rex.field:study_arm": 1, "rex.turn_field:feedback": 1, "rex.passive_data_metadata:locale": 1}


def test_record_without_identifier_gets_a_derived_id(tmp_path):
    r = record(two_turns())
    del r["identifier"]
    [a], _ = read_all(write(tmp_path, "a.json", [r]))
    [b], _ = read_all(write(tmp_path, "b.json", [r]))
    assert a.conversation_id == b.conversation_id != CONV and a.url is None


# ----------------------------------------------------------------------------- damaged input


def test_turns_not_a_list(tmp_path):
    bad = record(two_turns())
    bad["turns"] = "u1: hello"
    p = write(tmp_path, "r.json", [bad, titled("fine", 3, ident="other")])
    convs, report = read_all(p)
    assert [c.conversation_id for c in convs] == ["other"]
    [err] = report.errors
    assert err.file == str(p) and err.where == f"record 0 (conversation {CONV})" and "`turns` is str" in err.reason


def test_turn_and_record_that_are_not_objects(tmp_path):
    r = record(two_turns())
    r["turns"].insert(1, "garbage")
    convs, report = read_all(write(tmp_path, "r.json", [r, 17]))
    assert [m.message_id for m in convs[0].messages] == ["u1", "a1"]
    assert [(e.where, "not an object" in e.reason or "expected a REX record" in e.reason) for e in report.errors] == [
        ("record 0 turn 1", True), ("record 1", True)
    ]


def test_truncated_array_reports_once_and_keeps_earlier_winners(tmp_path):
    recs = [titled("A1", 3, ident="A"), titled("B1", 3, ident="B"), titled("A2", 6, ident="A")]
    text = json.dumps(recs)
    p = tmp_path / "r.json"
    p.write_text(text[: text.rindex('"A2"') + 20])  # the newest A is cut off
    convs, report = read_all(p)
    assert [(c.conversation_id, c.title) for c in convs] == [("A", "A1"), ("B", "B1")]
    [err] = report.errors  # pass 1 meets the damage too, but only pass 2 reports it
    assert "truncated" in err.reason and err.where == "after record 1"


def test_jsonl_with_a_malformed_line(tmp_path):
    p = tmp_path / "r.jsonl"
    lines = [json.dumps(titled("A1", 3, ident="A")), '{"name": "rex-conversation", "identifier": "A", "ended": ', json.dumps(titled("B1", 3, ident="B"))]
    p.write_text("\n".join(lines) + "\n")
    convs, report = read_all(p)
    assert [c.conversation_id for c in convs] == ["A", "B"]
    [err] = report.errors
    assert err.where == "line 2" and "invalid JSON" in err.reason


def test_turn_text_fills_an_upstream_message_whose_parts_are_empty(tmp_path):
    turns = two_turns()
    turns[1]["metadata*"]["message"]["content"]["parts"] = [""]  # the payload's copy of the text is gone
    [c], _ = read_all(write(tmp_path, "r.json", [record(turns)]))
    bot = c.messages[1]
    assert bot.text == "Yes, normal service." and bot.kind is MessageKind.TURN and "empty" not in bot.extra
    assert bot.model == "gpt-4o"
