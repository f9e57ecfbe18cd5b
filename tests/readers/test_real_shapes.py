"""Files in the real shapes people have (invented data in each public layout, tests/readers/shapes/):
each read whole, as the person saw it, or refused with an error, never read wrong in silence."""

from __future__ import annotations

from pathlib import Path

from chatetl.model import MessageKind, Role
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect

SHAPES = Path(__file__).parent / "shapes"


def read(name: str, data: bytes | None = None):
    report = ReadReport()
    raw = (SHAPES / name).read_bytes() if data is None else data
    return list(read_entry(Entry.from_bytes(name, raw), report)), report


# --- Grok -------------------------------------------------------------------------------------


def test_grok_mid_2025_ids_conversation_id_and_response_id():
    [c], report = read("grok_mid2025.json")
    assert report.errors == []
    assert c.conversation_id == "c0ffee00-0000-4000-8000-000000000001"
    assert [(m.message_id, m.parent_id, m.role, m.seq) for m in c.messages] == [
        ("r-1", None, Role.USER, 0), ("r-2", "r-1", Role.ASSISTANT, 1)]
    assert c.messages[1].text == "Hi! "  # the inline citation card out of the visible text


def test_a_parent_the_file_lacks_makes_a_root_and_a_warning_not_an_error():
    [c], report = read("grok_2026_dangling.json")
    assert report.errors == []
    [warning] = report.warnings
    assert "dangling" in warning.reason and "r-1" in warning.reason and warning.where == "conversations[0]"
    first = c.messages[0]
    assert first.parent_id is None and first.extra["dangling_parent_id"] == "r-0-not-in-file"
    assert [m.text for m in c.visible_turns] == ["Hello there", "Hi!"]


def test_the_conversation_model_is_taken_from_its_messages_when_the_export_names_none():
    [c], _ = read("grok_2026_dangling.json")
    assert c.model == "grok-4"
    [c], _ = read("grok_mid2025.json")
    assert c.model == "grok-3"


def test_grok_web_capture_camel_case_with_its_branches():
    raw = (SHAPES / "grok_web_capture.json").read_bytes()
    assert detect(Entry.from_bytes("capture.json", raw)) == (Format.GROK_WEB, detect(Entry.from_bytes("c.json", raw))[1])
    [c], report = read("grok_web_capture.json")
    assert report.errors == [] and report.warnings == []
    assert c.conversation_id == "9a000000-0000-4000-8000-000000000003" and c.title == "Invented web capture"
    assert c.url == "https://grok.com/chat/9a000000-0000-4000-8000-000000000003"
    by_id = {m.message_id: m for m in c.messages}
    assert by_id["r1"].parent_id is None and by_id["r2"].parent_id == by_id["r3"].parent_id == "r1"
    assert [m.message_id for m in c.active_branch] == ["r1", "r3"]  # the latest of the two answers
    assert not by_id["r2"].on_active_branch and by_id["r2"].reasoning == "Recall physics."
    assert c.created_at is not None and c.model == "grok-4" and report.drift == {}


def test_grok_web_capture_as_json_lines():
    one = (SHAPES / "grok_web_capture.json").read_bytes().replace(b"\n", b" ")
    data = one + b"\n" + one.replace(b"9a000000-0000-4000-8000-000000000003", b"9a000000-0000-4000-8000-000000000004") + b"\n"
    convs, report = read("captures.jsonl", data)
    assert report.errors == [] and [len(c.visible_turns) for c in convs] == [2, 2]


def test_grok_unclosed_card_openers_are_read_in_linear_time():
    # every opener lacks its closing tag: a scan that looks for it from each opener is quadratic
    text = "<grok:render type=\"x\">" * 36000 + "<xai:tool_usage_card>" * 1000  # ~800 KB
    trace = "<xai:tool_usage_card><xai:tool_name>" + "<xai:tool_args>" * 50000 + "</xai:tool_usage_card>"
    data = (
        b'{"conversations": [{"conversation": {"id": "c"}, "responses": [{"response": {"_id": "a", "sender": "assistant", '
        b'"message": "' + text.replace('"', '\\"').encode() + b'", "thinking_trace": "' + trace.encode() + b'"}}]}]}'
    )
    [c], report = read("prod-grok-backend.json", data)
    assert report.errors == []
    [m] = c.messages
    assert m.text == text  # nothing closed: nothing taken out
    [call] = m.tool_calls
    assert call.name is None and call.input == ""
    assert m.kind is MessageKind.TURN


# --- ChatGPT ----------------------------------------------------------------------------------


def test_chatgpt_generated_image_is_the_reply_when_the_tool_row_names_no_tool_or_is_hidden():
    unnamed, hidden = read("chatgpt_image_reply.json")[0]
    for c in (unnamed, hidden):
        *_, reply = c.visible_turns
        assert [m.role for m in c.visible_turns] == [Role.USER, Role.ASSISTANT]
        assert reply.message_id == "m3" and reply.extra["shown_as_reply"] is True
        [image] = reply.attachments
        assert image.pointer == "sediment://file_00000000dddd4444eeee5555ffff6666"
        assert image.text == "a watercolor of the photo"  # the call's prompt
        assert reply.tool_results[0].tool_call_id == "m2"
    assert hidden.messages[2].extra["hidden_in_source"] is True
    assert unnamed.model == "gpt-4o"  # no default_model_slug: the messages'


def test_chatgpt_a_hidden_copy_of_a_shown_image_stays_hidden():
    import json

    unnamed = json.loads((SHAPES / "chatgpt_image_reply.json").read_text())[0]
    copy = json.loads(json.dumps(unnamed["mapping"]["m3"]))
    copy["id"] = copy["message"]["id"] = "m3b"
    copy["parent"], copy["children"] = "m3", ["m4"]
    copy["message"]["metadata"] = {"is_visually_hidden_from_conversation": True}
    unnamed["mapping"]["m3"]["children"] = ["m3b"]
    unnamed["mapping"]["m4"]["parent"] = "m3b"
    unnamed["mapping"]["m3b"] = copy
    [c], _ = read("conversations.json", json.dumps([unnamed]).encode())
    by_id = {m.message_id: m for m in c.messages}
    assert by_id["m3b"].kind is MessageKind.HIDDEN and [m.message_id for m in c.visible_turns] == ["m1", "m3"]


def test_chatgpt_thinking_preamble_is_reasoning_not_a_turn():
    [c], report = read("chatgpt_preamble.json")
    assert report.errors == []
    assert [m.text for m in c.visible_turns] == ["Pick a laptop for me", "The light one."]
    preamble = c.messages[1]
    assert preamble.kind is MessageKind.REASONING and preamble.text == "I'll check a few options first."
    assert c.model == "gpt-5-thinking"


# --- DeepSeek ---------------------------------------------------------------------------------


def test_deepseek_fragments_in_a_chatgpt_shaped_object_are_read_as_deepseek():
    raw = (SHAPES / "deepseek_chatgpt_shape.json").read_bytes()
    assert detect(Entry.from_bytes("conversations.json", raw))[0] is Format.DEEPSEEK
    [c], report = read("deepseek_chatgpt_shape.json")
    assert report.errors == []
    assert [(m.role, m.text) for m in c.visible_turns] == [(Role.USER, "Say hi"), (Role.ASSISTANT, "Hi!"), (Role.USER, "Thanks")]
    assert c.messages[1].reasoning == "Be brief." and c.current_node == "3" and c.created_at is not None


def test_deepseek_web_api_json_with_fragments_and_its_branches():
    raw = (SHAPES / "deepseek_api_new.json").read_bytes()
    assert detect(Entry.from_bytes("chat.json", raw))[0] is Format.DEEPSEEK_API
    [c], report = read("deepseek_api_new.json")
    assert report.errors == [] and report.warnings == []
    assert c.conversation_id == "e7000000-0000-4000-8000-000000000001" and c.title == "Invented question"
    assert [m.message_id for m in c.active_branch] == ["1", "3", "4"]  # current_message_id, walked back
    by_id = {m.message_id: m for m in c.messages}
    assert by_id["2"].parent_id == "1" and not by_id["2"].on_active_branch and by_id["2"].reasoning == "Add them."
    assert [a.name for a in by_id["4"].attachments] == ["table.csv"]
    assert c.created_at is not None and by_id["1"].created_at is not None


def test_deepseek_web_api_json_older_messages_without_fragments():
    [c], report = read("deepseek_api_old.json")
    assert report.errors == []
    user, answer = c.visible_turns
    assert (user.role, user.text) == (Role.USER, "Weather in Paris?")
    assert answer.text == "It is sunny ." and answer.reasoning == "Look it up."
    assert [x.url for x in answer.citations] == ["https://weather.example/paris"]


def test_a_file_whose_conversations_hold_text_no_reader_read_is_refused_not_read_as_empty():
    # ChatGPT's wrapper and nodes whose messages hold DeepSeek-like text under keys ChatGPT has not
    data = (SHAPES / "deepseek_chatgpt_shape.json").read_bytes().replace(b'"fragments"', b'"pieces"')
    convs, report = read("conversations.json", data)
    assert convs == []
    [error] = report.errors
    assert "0 visible turns" in error.reason and "pieces" in error.reason and error.raw is not None


# --- a duplicate message id, one way in every reader ------------------------------------------


def _repeat_first_node(data: bytes, key: bytes) -> bytes:
    """The file with the object under `key` gaining a second member of the first node's name (an
    earlier copy, different text): the JSON reader keeps the last, the first is lost."""
    at = data.index(key) + len(key)
    at = data.index(b"{", at) + 1
    return data[:at] + b' "1": {"id": "1", "parent": "root", "children": [], "message": {"id": "1", "fragments": [{"type": "REQUEST", "content": "an earlier copy"}]}},' + data[at:]


def test_a_repeated_id_in_a_message_map_is_an_error_counted_with_the_bytes_kept():
    data = _repeat_first_node((SHAPES / "deepseek_chatgpt_shape.json").read_bytes(), b'"mapping":')
    [c], report = read("conversations.json", data)
    assert [m.text for m in c.visible_turns] == ["Say hi", "Hi!", "Thanks"]  # the last copy kept
    [error] = report.errors
    assert "repeated" in error.reason and error.raw is not None and b"an earlier copy" in error.raw
    assert report.drift["json.repeated_member"] == 1


def test_a_repeated_id_in_a_chatgpt_mapping_is_reported():
    raw = (SHAPES / "chatgpt_preamble.json").read_bytes()
    at = raw.index(b"{", raw.index(b'"mapping":')) + 1
    copy = (b' "m1": {"id": "m1", "parent": "root", "children": [], "message": {"id": "m1", "author": {"role": "user"},'
            b' "content": {"content_type": "text", "parts": ["an earlier copy"]}}},')
    data = raw[:at] + copy + raw[at:]
    assert detect(Entry.from_bytes("conversations.json", data))[0] is Format.CHATGPT
    [c], report = read("conversations.json", data)
    [clean], _ = read("conversations.json", raw)
    assert [m.text for m in c.messages] == [m.text for m in clean.messages]  # the last copy kept
    [error] = report.errors
    assert "repeated" in error.reason and error.raw is not None and b"an earlier copy" in error.raw
    assert report.drift["json.repeated_member"] == 1


def test_a_repeated_id_in_a_message_list_is_read_the_same_way():
    import json

    record = json.loads((SHAPES / "grok_2026_dangling.json").read_text())
    responses = record["conversations"][0]["responses"]
    copy = json.loads(json.dumps(responses[1]))
    copy["response"]["message"] = "an earlier copy"
    responses.insert(1, copy)
    [c], report = read("prod-grok-backend.json", json.dumps(record).encode())
    assert [m.text for m in c.visible_turns] == ["Hello there", "Hi!"]  # the last copy kept
    [error] = report.errors
    assert "duplicate message id" in error.reason and error.raw is not None and b"an earlier copy" in error.raw
    assert report.drift["tree.duplicate_message_id"] == 1


def test_a_repeated_id_in_a_single_object_file_is_reported_too():
    data = _repeat_first_node((SHAPES / "deepseek_chatgpt_shape.json").read_bytes(), b'"mapping":')
    one = data.strip()[1:-1]  # the one conversation as the file's object
    [_], report = read("conversation.json", one)
    assert report.drift["json.repeated_member"] == 1 and "repeated" in report.errors[0].reason


def test_deepseek_web_api_answer_without_messages_is_skipped_not_an_empty_chat():
    import json

    record = json.loads((SHAPES / "deepseek_api_new.json").read_text())
    record["data"]["biz_data"]["chat_messages"] = []
    record["data"]["biz_data"]["cache_control"] = "MERGE"
    convs, report = read("chat.json", json.dumps(record).encode())
    assert convs == [] and report.errors == [] and report.skipped["deepseek-api answer without messages"] == 1
