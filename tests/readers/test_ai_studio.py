"""Google AI Studio prompt files: titles and stable ids from the file, chunks into turns, thinking,
code execution, grounding, uploads, the system instruction, pending inputs, drift, damage,
detection, Takeout zips and the normalized tables."""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq

from chatetl import tables
from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.samples.ai_studio import sample

FOLDER = "Takeout/Drive/Google AI Studio"


def chunk(role, text=None, t=None, **fields):
    c = {"role": role, "tokenCount": 10}
    if text is not None:
        c["text"] = text
    if t is not None:
        c["createTime"] = f"2026-01-07T10:00:{t:02d}.000Z"
    c.update(fields)
    return c


def prompt(chunks, system="Be brief.", model="models/gemini-2.5-flash", pending=None, **fields):
    p = {
        "runSettings": {"temperature": 1.0, "model": model, "topP": 0.95, "topK": 64, "maxOutputTokens": 8192},
        "systemInstruction": {"text": system} if system else {},
        "chunkedPrompt": {"chunks": chunks, "pendingInputs": pending if pending is not None else [{"text": "", "role": "user"}]},
    }
    p.update(fields)
    return p


def qa(question="What is 2+2?", answer="4."):
    return [chunk("user", question, t=0), chunk("model", answer, t=3, finishReason="STOP")]


def read_bytes(name, data):
    report = ReadReport()
    raw = data if isinstance(data, bytes) else json.dumps(data, indent=2).encode()
    return list(read_entry(Entry.from_bytes(name, raw), report)), report


def only(name, data):
    convs, report = read_bytes(name, data)
    assert report.errors == [], [str(e) for e in report.errors]
    (conv,) = convs
    return conv, report


# --- the file -----------------------------------------------------------------------------------

def test_a_prompt_file_without_extension_is_one_conversation_titled_by_its_name():
    conv, report = only(f"drive.zip!{FOLDER}/Arithmetic help", prompt(qa()))
    assert report.formats["ai-studio"] == 1 and report.drift == {}
    assert conv.source is Source.AI_STUDIO and conv.platform == "ai-studio"
    assert conv.title == "Arithmetic help" and conv.model == "gemini-2.5-flash" and conv.url is None
    assert conv.meta == {"run_settings": prompt([])["runSettings"]}
    assert conv.created_at.isoformat() == "2026-01-07T10:00:00+00:00" and conv.updated_at.isoformat() == "2026-01-07T10:00:03+00:00"
    system, question, answer = conv.messages
    assert (system.role, system.kind, system.text, system.seq) == (Role.SYSTEM, MessageKind.HIDDEN, "Be brief.", None)
    assert [(m.role, m.text, m.seq) for m in conv.visible_turns] == [(Role.USER, "What is 2+2?", 0), (Role.ASSISTANT, "4.", 1)]
    assert question.parent_id == system.message_id and answer.parent_id == question.message_id
    assert answer.extra == {"finish_reason": "STOP", "token_count": 10}
    assert conv.current_node == answer.message_id


def test_a_json_extension_is_no_part_of_the_title():
    conv, _ = only("Arithmetic help.json", prompt(qa()))
    assert conv.title == "Arithmetic help"


def test_the_id_stays_as_the_prompt_grows_and_differs_by_name_and_opening():
    first, _ = only(f"{FOLDER}/Trip", prompt(qa()))
    grown, _ = only(f"other.zip!{FOLDER}/Trip", prompt(qa() + qa("And 3+3?", "6.")))
    renamed, _ = only(f"{FOLDER}/Trip (1)", prompt(qa()))
    other, _ = only(f"{FOLDER}/Trip", prompt(qa("What is 5+5?")))
    assert first.conversation_id == grown.conversation_id
    assert len({first.conversation_id, renamed.conversation_id, other.conversation_id}) == 3
    assert grown.message_count == 4


# --- chunks into messages -----------------------------------------------------------------------

def test_thought_chunks_are_reasoning_messages():
    chunks = [
        chunk("user", "Why is the sky blue?", t=0),
        chunk("model", "**Recalling physics**\n\nRayleigh scattering.", t=1, isThought=True, thinkingBudget=-1,
              thoughtSignatures=["c2ln"], parts=[{"text": "**Recalling physics**\n\nRayleigh scattering.", "thought": True}]),
        chunk("model", "Short wavelengths scatter more.", t=2),
    ]
    conv, _ = only("Sky", prompt(chunks, system=None))
    question, thought, _answer = conv.messages
    assert (thought.kind, thought.role, thought.text, thought.seq) == (MessageKind.REASONING, Role.ASSISTANT, "**Recalling physics**\n\nRayleigh scattering.", None)
    assert thought.extra == {"thinking_budget": -1, "token_count": 10} and thought.parent_id == question.message_id
    assert [m.text for m in conv.visible_turns] == ["Why is the sky blue?", "Short wavelengths scatter more."]


def test_thought_parts_inside_a_reply_are_its_reasoning_and_parts_alone_its_text():
    chunks = [chunk("user", "Hi", t=0),
              chunk("model", None, t=1, parts=[{"text": "Greet back.", "thought": True}, {"text": "Hello "}, {"text": "there!", "thoughtSignature": "c2ln"}])]
    conv, _ = only("Hi", prompt(chunks, system=None))
    answer = conv.messages[1]
    assert (answer.kind, answer.text, answer.reasoning) == (MessageKind.TURN, "Hello there!", "Greet back.")


def test_an_upload_and_the_text_after_it_are_one_turn_as_are_two_reply_chunks():
    chunks = [
        chunk("user", None, t=0, driveDocument={"id": "doc123"}),
        chunk("user", None, t=1, inlineImage={"mimeType": "image/png", "data": "A" * 40}),
        chunk("user", "Compare the two.", t=2),
        chunk("model", "The first is longer.", t=3),
        chunk("model", "The second is an image.", t=4),
    ]
    conv, _ = only("Compare", prompt(chunks, system=None))
    question, answer = conv.messages
    assert question.text == "Compare the two." and question.created_at.second == 0
    assert [(a.kind, a.id, a.pointer, a.mime_type, a.size) for a in question.attachments] == [
        ("file", "doc123", "https://drive.google.com/file/d/doc123/view", None, None), ("image", None, None, "image/png", 30)]
    assert question.content_type == "file,image,text" and question.extra == {"chunks": 3, "token_count": 30}
    assert answer.text == "The first is longer.\n\nThe second is an image." and answer.extra["chunks"] == 2
    assert [m.seq for m in conv.visible_turns] == [0, 1]


def test_code_execution_chunks_are_a_tool_call_and_its_result():
    chunks = [
        chunk("user", "Sum 1..10", t=0),
        chunk("model", None, t=1, executableCode={"language": "PYTHON", "code": "print(sum(range(11)))"}),
        chunk("model", None, t=2, codeExecutionResult={"outcome": "OUTCOME_OK", "output": "55\n"}),
        chunk("model", "It is 55.", t=3),
    ]
    conv, _ = only("Sum", prompt(chunks, system=None))
    _q, call, result, answer = conv.messages
    assert (call.kind, call.role, call.text, call.extra["language"]) == (MessageKind.TOOL_CALL, Role.ASSISTANT, "print(sum(range(11)))", "PYTHON")
    assert [(c.name, c.input) for c in call.tool_calls] == [("code_execution", "print(sum(range(11)))")]
    assert (result.kind, result.role, result.text, result.author_name) == (MessageKind.TOOL_RESULT, Role.TOOL, "55\n", "code_execution")
    assert result.tool_results[0].tool_call_id == call.tool_calls[0].id and not result.tool_results[0].is_error
    assert answer.text == "It is 55." and answer.seq == 1


def test_function_calls_pair_with_their_responses_and_a_failed_run_is_an_error_result():
    chunks = [
        chunk("user", "Weather?", t=0),
        chunk("model", None, t=1, parts=[{"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}]),
        chunk("user", None, t=2, parts=[{"functionResponse": {"name": "get_weather", "response": {"temp": 21}}}]),
        chunk("model", None, t=3, executableCode={"code": "1/0"}),
        chunk("model", None, t=4, codeExecutionResult={"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}),
        chunk("model", "21 C in Rome.", t=5),
    ]
    conv, _ = only("Rome", prompt(chunks, system=None))
    kinds = [m.kind for m in conv.messages]
    assert kinds == [MessageKind.TURN, MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT, MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT, MessageKind.TURN]
    fcall, fresult, ccall, cresult = conv.messages[1:5]
    assert (fcall.tool_calls[0].name, json.loads(fcall.tool_calls[0].input)) == ("get_weather", {"city": "Rome"})
    assert fresult.tool_results[0].tool_call_id == fcall.tool_calls[0].id and json.loads(fresult.text) == {"temp": 21}
    assert cresult.tool_results[0].tool_call_id == ccall.tool_calls[0].id and cresult.tool_results[0].is_error


def test_grounding_sources_are_citations():
    grounding = {"groundingChunks": [{"web": {"uri": "https://a.example.org/x", "title": "A"}}, {"web": {"uri": "https://b.example.org/y", "title": "B"}},
                                     {"web": {"uri": "https://a.example.org/x", "title": "A"}}],
                 "webSearchQueries": ["q"]}
    conv, _ = only("Search", prompt([chunk("user", "News?", t=0), chunk("model", "Two stories.", t=1, grounding=grounding)], system=None))
    assert [(c.title, c.url, c.source) for c in conv.messages[1].citations] == [
        ("A", "https://a.example.org/x", "a.example.org"), ("B", "https://b.example.org/y", "b.example.org")]


def test_drive_media_and_youtube_uploads_are_attachments():
    chunks = [chunk("user", "Watch and look", t=0, driveImage={"id": "img1"}, driveVideo={"id": "vid1"}, youtubeVideo={"id": "dQw4w9WgXcQ"}),
              chunk("model", "Seen.", t=1)]
    conv, _ = only("Media", prompt(chunks, system=None))
    assert [(a.kind, a.pointer) for a in conv.messages[0].attachments] == [
        ("image", "https://drive.google.com/file/d/img1/view"), ("video", "https://drive.google.com/file/d/vid1/view"),
        ("video", "https://www.youtube.com/watch?v=dQw4w9WgXcQ")]


def test_pending_inputs_are_no_turns_but_kept():
    conv, _ = only("Draft", prompt(qa(), pending=[{"text": "a question never sent", "role": "user"}]))
    assert conv.meta["pending_inputs"] == [{"text": "a question never sent", "role": "user"}]
    assert all("never sent" not in m.text for m in conv.messages)
    # the older place, beside chunkedPrompt
    older = prompt(qa(), pending=[])
    older["pendingInputs"] = [{"text": "", "role": "user"}, {"text": "typed", "role": "user"}]
    conv, report = only("Draft", older)
    assert conv.meta["pending_inputs"] == [{"text": "typed", "role": "user"}] and report.drift == {}


def test_system_instruction_in_parts_and_an_error_run():
    chunks = [chunk("user", "Hi", t=0), chunk("model", None, t=1, errorMessage="Internal error"), chunk("model", "Hello!", t=2)]
    p = prompt(chunks, system=None, systemInstruction={"parts": [{"text": "Rule one."}, {"text": "Rule two."}]})
    conv, _ = only("Errors", p)
    system, _user, error, _answer = conv.messages
    assert system.text == "Rule one.\n\nRule two." and system.kind is MessageKind.HIDDEN
    assert (error.kind, error.text, error.extra["error"]) == (MessageKind.HIDDEN, "Internal error", "Internal error")
    assert [m.text for m in conv.visible_turns] == ["Hi", "Hello!"]


def test_a_branched_prompt_names_its_parent():
    parent = {"promptName": "prompts/abc", "displayName": "Trip"}
    conv, _ = only("Branch of Trip", prompt([chunk("user", "Q", t=0), chunk("model", "A", t=1, branchParent=parent), *qa("Next?", "Yes.")]))
    assert conv.meta["branch_parent"] == parent
    assert conv.messages[2].extra["branch_parent"] == parent


def test_unknown_fields_are_counted_as_drift_and_kept():
    chunks = [chunk("user", "Q", t=0, sparkle=1, parts=[{"text": "Q", "glow": True}]), chunk("critic", "A", t=1)]
    p = prompt(chunks, newTopLevel={"x": 1})
    p["chunkedPrompt"]["newInner"] = 2
    conv, report = only("Drift", p)
    assert report.drift == {"ai-studio.prompt_field:newTopLevel": 1, "ai-studio.chunked_prompt_field:newInner": 1,
                            "ai-studio.chunk_field:sparkle": 1, "ai-studio.part_field:glow": 1, "ai-studio.role:critic": 1}
    assert conv.meta["newTopLevel"] == {"x": 1} and conv.meta["newInner"] == 2
    question, answer = conv.messages[1:]
    assert question.extra["sparkle"] == 1 and question.extra["part_fields"] == {"glow": True}
    assert answer.role is Role.ASSISTANT and answer.extra["raw_role"] == "critic"


# --- damage, detection, zips, tables ------------------------------------------------------------

def test_damaged_files_and_chunks_are_reported_with_their_place_and_the_rest_read():
    buf = io.BytesIO()
    good = prompt([chunk("user", "Q", t=0), ["not a chunk"], chunk("model", "A", t=1)], system=None)
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{FOLDER}/Good", json.dumps(good))
        zf.writestr(f"{FOLDER}/Cut short", json.dumps(prompt(qa()))[:-30])
        zf.writestr(f"{FOLDER}/Wrong shape", json.dumps(prompt(qa()) | {"chunkedPrompt": []}))
    convs, report = read_bytes("takeout.zip", buf.getvalue())
    assert [c.title for c in convs] == ["Good"]
    assert [m.text for m in convs[0].visible_turns] == ["Q", "A"]
    errors = {e.file.rsplit("/", 1)[-1]: (e.where, e.reason) for e in report.errors}
    assert errors["Good"] == ("prompt Good chunk 1", "chunk is not an object (got list)")
    assert "truncated" in errors["Cut short"][1]
    assert errors["Wrong shape"][1] == "ValueError: `chunkedPrompt` is not an object (got list)"


def test_detection_takes_prompt_files_and_only_them():
    def fmt(obj):
        return detect(Entry.from_bytes("My prompt", json.dumps(obj, indent=2).encode()))

    assert fmt(prompt(qa())) == (Format.AI_STUDIO, Shape.OBJECT)
    assert fmt({"chunkedPrompt": {"chunks": []}}) == (Format.AI_STUDIO, Shape.OBJECT)
    # a key in common is not enough
    assert fmt({"chunkedPrompt": "a template literal helper", "name": "x"})[0] is None
    assert fmt({"runSettings": {"model": "m"}, "contents": []})[0] is None
    # nor is a prompt taken for another format, nor another format for a prompt
    claude = [{"uuid": "c", "name": "n", "chat_messages": [], "chunkedPrompt": None}]
    assert fmt(claude)[0] is Format.CLAUDE_AI


def test_normalized_tables_hold_the_turns_reasoning_and_tools(tmp_path):
    chunks = [chunk("user", "Sum", t=0), chunk("model", "Add them.", t=1, isThought=True),
              chunk("model", None, t=2, executableCode={"code": "print(3)"}), chunk("model", None, t=3, codeExecutionResult={"outcome": "OUTCOME_OK", "output": "3"}),
              chunk("model", "3.", t=4)]
    conv, _ = only("Tables", prompt(chunks))
    c_path, m_path = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with tables.TableWriter(c_path, m_path) as writer:
        writer.add(conv)
    (conv_row,) = pq.read_table(c_path).to_pylist()
    assert (conv_row["platform"], conv_row["source"], conv_row["title"], conv_row["model"]) == ("ai-studio", "ai-studio", "Tables", "gemini-2.5-flash")
    assert (conv_row["message_count"], conv_row["total_messages"]) == (2, 6)
    assert json.loads(conv_row["meta"])["run_settings"]["model"] == "models/gemini-2.5-flash"
    rows = pq.read_table(m_path).to_pylist()
    assert [(r["role"], r["kind"], r["seq"], r["branch_index"]) for r in rows] == [
        ("system", "hidden", None, 0), ("user", "turn", 0, 1), ("assistant", "reasoning", None, 2),
        ("assistant", "tool_call", None, 3), ("tool", "tool_result", None, 4), ("assistant", "turn", 1, 5)]
    assert rows[3]["tool_calls"][0]["input"] == "print(3)" and rows[4]["tool_results"][0]["output"] == "3"


def test_the_sample_reads_cleanly_with_a_branched_prompt():
    name, data = sample()
    convs, report = read_bytes(name, data)
    assert report.errors == [] and report.drift == {}
    assert len(convs) == 2 and all(c.message_count >= 2 for c in convs)
    assert sum("branch_parent" in c.meta for c in convs) == 1
    assert all(any(m.kind is MessageKind.REASONING for m in c.messages) for c in convs)


def test_an_empty_chunk_is_a_hidden_empty_message():
    conv, _ = only("Empty", prompt([chunk("user", "Q", t=0), chunk("model", "", t=1), chunk("user", "Again?", t=2), chunk("model", "A", t=3)], system=None))
    empty = conv.messages[1]
    assert (empty.kind, empty.extra.get("empty"), empty.seq) == (MessageKind.HIDDEN, True, None)
    assert [m.text for m in conv.visible_turns] == ["Q", "Again?", "A"]


def test_times_with_offsets_are_utc_and_times_past_a_datetime_are_null_and_counted():
    chunks = [chunk("user", "Q", createTime="2026-01-07T12:00:00+02:00"), chunk("model", "A", createTime="9999-12-31T23:00:00-05:00")]
    conv, report = only("Times", prompt(chunks, system=None))
    question, answer = conv.messages
    assert question.created_at.isoformat() == "2026-01-07T10:00:00+00:00" and answer.created_at is None
    assert report.drift.get("time.out_of_range") == 1


# --- issue 37: a chunk whose parts hold text beside code and its result -------------------------

CODE_PARTS = [
    {"text": "I'll compute it."},
    {"executableCode": {"language": "PYTHON", "code": "print(2**10)"}},
    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}},
    {"text": "The answer is 1024."},
]


def test_a_chunk_of_text_code_and_result_parts_keeps_each_in_its_order():
    chunks = [chunk("user", "Compute 2**10 with code.", t=0),
              chunk("model", None, t=1, finishReason="STOP", parts=CODE_PARTS)]
    conv, _ = only("Invented code run", prompt(chunks, system=None, runSettings={"model": "models/gemini-2.5-pro"}))
    shown = [(m.role, m.kind, m.text) for m in conv.messages]
    assert shown == [
        (Role.USER, MessageKind.TURN, "Compute 2**10 with code."),
        (Role.ASSISTANT, MessageKind.TURN, "I'll compute it."),
        (Role.ASSISTANT, MessageKind.TOOL_CALL, "print(2**10)"),
        (Role.TOOL, MessageKind.TOOL_RESULT, "1024\n"),
        (Role.ASSISTANT, MessageKind.TURN, "The answer is 1024."),
    ]
    call, result = conv.messages[2], conv.messages[3]
    assert result.tool_results[0].tool_call_id == call.tool_calls[0].id
    assert len({m.message_id for m in conv.messages}) == 5
    assert conv.messages[-1].extra["finish_reason"] == "STOP"


def test_a_chunk_text_restating_its_parts_is_the_text_once_beside_the_code():
    chunks = [chunk("user", "Compute 2**10 with code.", t=0),
              chunk("model", "I'll compute it.The answer is 1024.", t=1, parts=CODE_PARTS)]
    conv, _ = only("Invented code run", prompt(chunks, system=None))
    shown = [(m.kind, m.text) for m in conv.messages[1:]]
    assert shown == [(MessageKind.TURN, "I'll compute it.The answer is 1024."), (MessageKind.TOOL_CALL, "print(2**10)"),
                     (MessageKind.TOOL_RESULT, "1024\n")]
