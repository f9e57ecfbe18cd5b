"""The models' fast constructors write their fields' defaults out: they must stay the fields' own (the
same values in the same order, a new list or dict each, the same fields marked as set), for every model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from chatetl.model import Attachment, Citation, Conversation, Message, Role, Source, ToolCall, ToolResult

REQUIRED = {
    ToolCall: {}, ToolResult: {}, Citation: {}, Attachment: {},
    Message: {"message_id": "m", "role": Role.USER},
    Conversation: {"source": Source.CHATGPT, "platform": "chatgpt", "conversation_id": "c"},
}


@pytest.mark.parametrize("cls", list(REQUIRED), ids=lambda cls: cls.__name__)
def test_fast_makes_what_the_model_makes(cls):
    given = REQUIRED[cls]
    fast, validated = cls.fast(**given), cls(**given)
    assert fast == validated and list(fast.__dict__) == list(validated.__dict__) == list(cls.model_fields)
    assert fast.model_fields_set == validated.model_fields_set
    again = cls.fast(**given)
    for name, value in fast.__dict__.items():
        if isinstance(value, list | dict):
            assert value is not again.__dict__[name]  # a new one each
    of = cls.of_fields(dict(validated.__dict__), given)
    assert of == validated and of.model_fields_set == validated.model_fields_set
    with pytest.raises(TypeError, match="unknown"):
        cls.fast(**given, bogus=1)
    with pytest.raises(TypeError):
        cls.of_fields({}, ())


def test_times_are_made_aware_utc_as_the_validators_make_them():
    plus2 = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    for when in (plus2, datetime(2024, 1, 1), None):
        fields = {"created_at": when}
        assert Message.fast(message_id="m", role=Role.USER, **fields) == Message(message_id="m", role=Role.USER, **fields)
        conv = {**REQUIRED[Conversation], "created_at": when, "updated_at": when}
        assert Conversation.fast(**conv) == Conversation(**conv)
        names = tuple(Message.model_fields)
        values = dict(Message(message_id="m", role=Role.USER).__dict__, created_at=when)
        assert Message.of_fields(values, names).created_at == Message(message_id="m", role=Role.USER, created_at=when).created_at
