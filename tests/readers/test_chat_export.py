"""Chat Export extension files (seed 002): chat-export/1 JSON, sharegpt/1, fenced Markdown, YAML."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from datetime import UTC, datetime

import pytest
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_entry, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platform_names import derived_id, id_from_url, normalize_platform
from chatetl.readers.platforms.chat_export.json import read_json, read_sharegpt1
from chatetl.readers.platforms.chat_export.markdown import read_markdown
from chatetl.readers.platforms.chat_export.yaml import read_yaml

EXPORTED = datetime(2026, 11, 12, 5, 0, tzinfo=UTC)


def chat_json(**over):
    doc = {
        "schema": "chat-export/1",
        "platform": "chatgpt",
        "url": "https://chatgpt.com/c/6731aa00-0000-8000-9000-000000000001",
        "title": "Bake-off notes",
        "exported_at": "2026-11-12T05:00:00.000Z",
        "chat_id": "6731aa00-0000-8000-9000-000000000001",
        "model": "gpt-5",
        "user_name": "Test Person",
        "messages": [
            {"role": "user", "role_tag": "user", "text": "What is the capital of France?"},
            {
                "role": "assistant",
                "role_tag": "chatgpt",
                "text": "Paris.",
                "links": [{"text": "Paris", "href": "https://example.org/paris"}],
                "sources": [{"title": "Wikipedia", "url": "https://en.wikipedia.org/wiki/Paris"}],
            },
        ],
    }
    doc.update(over)
    return doc


def write(tmp_path, name, content):
    p = tmp_path / name
    if isinstance(content, (dict, list)):
        content = json.dumps(content, indent=2) + "\n"
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    return p


def read_all(path):
    report = ReadReport()
    convs = list(read_path(path, report))
    return convs, report


# ----------------------------------------------------------------------------- chat-export/1 JSON


def test_json_full_record(tmp_path):
    convs, report = read_all(write(tmp_path, "chatgpt-bake-off.json", chat_json()))
    assert report.errors == [] and report.formats == {"chat-export-json": 1}
    [c] = convs
    assert c.source is Source.CHAT_EXPORT
    assert c.platform == "chatgpt"
    assert c.conversation_id == "6731aa00-0000-8000-9000-000000000001"
    assert c.title == "Bake-off notes" and c.model == "gpt-5"
    assert c.url == "https://chatgpt.com/c/6731aa00-0000-8000-9000-000000000001"
    # no better time in the file: the export time stands in, and says so
    assert c.created_at == EXPORTED and c.updated_at == EXPORTED
    assert c.meta["exported_at"] == "2026-11-12T05:00:00Z"
    assert c.meta["times_from"] == "exported_at"
    assert c.meta["user_name"] == "Test Person" and c.meta["export_format"] == "json"
    user, bot = c.messages
    assert (user.role, user.kind, user.author_name, user.text) == (Role.USER, MessageKind.TURN, "user", "What is the capital of France?")
    assert (bot.role, bot.kind, bot.author_name) == (Role.ASSISTANT, MessageKind.TURN, "chatgpt")
    assert [(x.title, x.url, x.source) for x in bot.citations] == [("Wikipedia", "https://en.wikipedia.org/wiki/Paris", "en.wikipedia.org")]
    assert bot.extra["links"] == [{"text": "Paris", "href": "https://example.org/paris"}]
    # flat source: a linear chain with deterministic ids, resolved into one branch
    assert [m.message_id for m in c.messages] == [f"{c.conversation_id}:0", f"{c.conversation_id}:1"]
    assert bot.parent_id == user.message_id and user.parent_id is None
    assert [m.seq for m in c.messages] == [0, 1] and c.current_node == bot.message_id
    assert report.conversations == 1 and report.messages == 2


def test_json_roles_and_platform_normalization(tmp_path):
    doc = chat_json(
        platform="Claude",
        chat_id=None,
        url="https://claude.ai/chat/0b6c2a52-1111-4222-8333-444455556666",
        messages=[
            {"role": "system", "text": "Be brief."},
            {"role": "user", "text": "hi"},
            {"role": "claude", "role_tag": "claude", "text": "hello"},
            {"role": "grok", "text": "x"},
            {"role": "gemini", "text": "y"},
            {"role": "somebot", "role_tag": "SomeBot", "text": "z"},
        ],
    )
    del doc["chat_id"]
    [c], report = read_all(write(tmp_path, "c.json", doc))
    assert c.platform == "claude-ai"
    assert c.conversation_id == "0b6c2a52-1111-4222-8333-444455556666"  # parsed from the URL
    kinds = [(m.role, m.kind) for m in c.messages]
    assert kinds[0] == (Role.SYSTEM, MessageKind.HIDDEN)
    assert kinds[1:] == [(Role.USER, MessageKind.TURN)] + [(Role.ASSISTANT, MessageKind.TURN)] * 4
    assert c.messages[2].author_name == "claude" and c.messages[3].author_name == "grok"
    assert c.messages[5].author_name == "SomeBot"
    assert report.drift == {"chat_export.role:somebot": 1}  # an unknown provider slug: counted, kept
    assert [m.seq for m in c.messages] == [None, 0, 1, 2, 3, 4]  # hidden system prompt is not a visible turn


@pytest.mark.parametrize(
    "value,url,expected",
    [
        ("claude", None, "claude-ai"),
        ("claude.ai", None, "claude-ai"),
        ("ChatGPT", None, "chatgpt"),
        ("Grok", None, "grok"),
        ("bard", None, "gemini"),
        (None, "https://gemini.google.com/app/abc123def", "gemini"),
        ("", "https://www.perplexity.ai/search/foo-bar-1234", "perplexity"),
        (None, None, "unknown"),
    ],
)
def test_normalize_platform(value, url, expected):
    assert normalize_platform(value, url) == expected


@pytest.mark.parametrize(
    "url,expected",
    [
        ("https://chatgpt.com/c/68a1b2c3-aaaa-bbbb-cccc-0123456789ab", "68a1b2c3-aaaa-bbbb-cccc-0123456789ab"),
        ("https://chatgpt.com/g/g-abc123-helper/c/68a1b2c3-1111", "68a1b2c3-1111"),
        ("https://claude.ai/chat/0b6c2a52-1111-4222-8333-444455556666", "0b6c2a52-1111-4222-8333-444455556666"),
        ("https://gemini.google.com/app/5f0c1d2e3a4b", "5f0c1d2e3a4b"),
        ("https://grok.com/chat/7a8b9c0d-1234", "7a8b9c0d-1234"),
        ("https://chat.deepseek.com/a/chat/s/9f8e7d6c-5555", "9f8e7d6c-5555"),
        ("https://x.com/i/grok?conversation=1888000111222", "1888000111222"),
        ("https://chatgpt.com/c/…", None),
        ("https://chatgpt.com/", None),
        (None, None),
    ],
)
def test_id_from_url(url, expected):
    assert id_from_url(url) == expected


def test_json_without_any_id_gets_a_deterministic_uuid5(tmp_path):
    doc = chat_json(chat_id="…", url="https://chatgpt.com/c/…")  # the seed's placeholders are not ids
    [a], _ = read_all(write(tmp_path, "a.json", doc))
    [b], _ = read_all(write(tmp_path, "b.json", doc))
    expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "chatetl:chatgpt\nBake-off notes\nWhat is the capital of France?"))
    assert a.conversation_id == b.conversation_id == expected == derived_id("chatgpt", "Bake-off notes", "What is the capital of France?")
    other = chat_json(chat_id=None, url=None, title="Other notes")
    [c], _ = read_all(write(tmp_path, "c.json", other))
    assert c.conversation_id != a.conversation_id


def test_json_minimal_record_missing_optional_fields(tmp_path):
    [c], report = read_all(write(tmp_path, "m.json", {"schema": "chat-export/1", "messages": [{"role": "user", "text": "hi"}]}))
    assert report.errors == [] and report.drift == {}
    assert c.platform == "unknown" and c.title is None and c.url is None
    assert c.created_at is None and "times_from" not in c.meta
    assert c.messages[0].text == "hi" and c.messages[0].citations == []


def test_json_unknown_fields_kept_and_counted(tmp_path):
    doc = chat_json(folder="Work", messages=[{"role": "user", "text": "hi", "reaction": "thumbs_up"}])
    [c], report = read_all(write(tmp_path, "u.json", doc))
    assert c.meta["folder"] == "Work"
    assert c.messages[0].extra == {"reaction": "thumbs_up"}
    assert report.drift == {"chat_export.field:folder": 1, "chat_export.message_field:reaction": 1}


def test_json_messages_not_a_list_is_an_error_naming_the_file(tmp_path):
    p = write(tmp_path, "bad.json", chat_json(messages="What is the capital of France?"))
    convs, report = read_all(p)
    assert convs == []
    [err] = report.errors
    assert err.file == str(p) and "`messages` is str, not a list" in err.reason
    assert err.raw is not None  # kept for quarantine


def test_json_truncated(tmp_path):
    text = json.dumps(chat_json(), indent=2)
    p = write(tmp_path, "cut.json", text[: len(text) // 2])
    convs, report = read_all(p)
    assert convs == []
    [err] = report.errors
    assert err.file == str(p) and "invalid or truncated JSON" in err.reason


def test_json_message_that_is_not_an_object_is_left_out_and_reported(tmp_path):
    doc = chat_json(messages=[{"role": "user", "text": "one"}, 42, {"role": "assistant", "text": "two"}])
    [c], report = read_all(write(tmp_path, "m.json", doc))
    assert [m.text for m in c.messages] == ["one", "two"]
    assert [m.message_id.rsplit(":", 1)[1] for m in c.messages] == ["0", "2"]  # ids keep file positions
    assert c.messages[1].parent_id == c.messages[0].message_id
    [err] = report.errors
    assert err.where == "message 1" and "int" in err.reason


def test_json_array_of_chat_exports(tmp_path):
    docs = [chat_json(chat_id="a1b2c3d4"), chat_json(chat_id="e5f6a7b8", title="Two")]
    convs, report = read_all(write(tmp_path, "two.json", docs))
    assert [c.conversation_id for c in convs] == ["a1b2c3d4", "e5f6a7b8"] and report.errors == []


# ----------------------------------------------------------------------------- sharegpt/1


def test_sharegpt1(tmp_path):
    doc = {
        "schema": "sharegpt/1",
        "platform": "grok",
        "title": "Rockets",
        "url": "https://grok.com/chat/3c4d5e6f-7777",
        "exported_at": "2026-11-12T05:00:00Z",
        "model": "grok-4",
        "conversations": [
            {"from": "system", "value": "You are helpful."},
            {"from": "human", "value": "How do rockets work?"},
            {"from": "gpt", "value": "Newton's third law."},
        ],
    }
    [c], report = read_all(write(tmp_path, "grok-rockets.json", doc))
    assert report.formats == {"chat-export-sharegpt": 1} and report.errors == []
    assert (c.source, c.platform, c.title, c.model) == (Source.CHAT_EXPORT, "grok", "Rockets", "grok-4")
    assert c.conversation_id == "3c4d5e6f-7777" and c.created_at == EXPORTED
    assert c.meta["export_format"] == "sharegpt/1" and c.meta["schema"] == "sharegpt/1"
    assert [(m.role, m.kind, m.author_name) for m in c.messages] == [
        (Role.SYSTEM, MessageKind.HIDDEN, "system"),
        (Role.USER, MessageKind.TURN, "human"),
        (Role.ASSISTANT, MessageKind.TURN, "gpt"),
    ]
    assert c.messages[2].text == "Newton's third law."


def test_sharegpt1_same_id_as_json_of_the_same_chat(tmp_path):
    base = chat_json(chat_id=None, url=None)
    del base["chat_id"], base["url"]
    share = {
        "schema": "sharegpt/1",
        "platform": "chatgpt",
        "title": "Bake-off notes",
        "conversations": [{"from": "human", "value": "What is the capital of France?"}, {"from": "gpt", "value": "Paris."}],
    }
    [a], _ = read_all(write(tmp_path, "a.json", base))
    [b], _ = read_all(write(tmp_path, "b.json", share))
    assert a.conversation_id == b.conversation_id


def test_sharegpt1_conversations_not_a_list(tmp_path):
    p = write(tmp_path, "s.json", {"schema": "sharegpt/1", "platform": "chatgpt", "conversations": {"from": "human"}})
    convs, report = read_all(p)
    assert convs == [] and "`conversations` is dict" in report.errors[0].reason


# ----------------------------------------------------------------------------- Markdown

MD = """```md
sys
platform: chatgpt
url: https://chatgpt.com/c/68a1b2c3-aaaa-bbbb-cccc-0123456789ab
title: Bake-off notes
exported: 2026-11-12T05:00:00.000Z
chat_id: 68a1b2c3-aaaa-bbbb-cccc-0123456789ab
model: gpt-5
user_name: Test Person
```

```md
user:
```

What is the capital of France?

```md
chatgpt:
```

Paris.

```md
sources
1. [Wikipedia](https://en.wikipedia.org/wiki/Paris)
2. [Paris (city) [archived]](https://example.org/wiki/Paris_(city))
```

```md
user:
```

Show me code that prints a md fence.

```md
assistant:
```

Here:

```python
FENCE = '''
```md
user:
```'''
```

And a four-backtick block:

````markdown
```md
assistant:
```
````

```markdown
# not a marker either
```

```md
Note: this is an md block inside the answer
```


"""


def test_markdown_full(tmp_path):
    [c], report = read_all(write(tmp_path, "chatgpt-bake-off-notes-2026-11-12.md", MD))
    assert report.errors == [] and report.formats == {"chat-export-md": 1} and report.drift == {}
    assert c.conversation_id == "68a1b2c3-aaaa-bbbb-cccc-0123456789ab"
    assert (c.platform, c.title, c.model) == ("chatgpt", "Bake-off notes", "gpt-5")
    assert c.created_at == EXPORTED and c.meta["exported_at"] == "2026-11-12T05:00:00Z"
    assert c.meta["user_name"] == "Test Person" and c.meta["export_format"] == "md"
    assert [(m.role, m.author_name) for m in c.messages] == [
        (Role.USER, "user"),
        (Role.ASSISTANT, "chatgpt"),
        (Role.USER, "user"),
        (Role.ASSISTANT, "assistant"),
    ]
    assert c.messages[0].text == "What is the capital of France?"
    assert c.messages[1].text == "Paris."
    # sources attach to the message before them
    assert [(x.title, x.url) for x in c.messages[1].citations] == [
        ("Wikipedia", "https://en.wikipedia.org/wiki/Paris"),
        ("Paris (city) [archived]", "https://example.org/wiki/Paris_(city)"),
    ]
    assert c.messages[0].citations == [] and c.messages[3].citations == []
    body = c.messages[3].text
    assert body.startswith("Here:\n\n```python\nFENCE = '''\n```md\nuser:\n```'''\n```\n")
    assert "````markdown\n```md\nassistant:\n```\n````" in body
    assert "```markdown\n# not a marker either\n```" in body
    assert body.endswith("```md\nNote: this is an md block inside the answer\n```")  # trailing blank lines stripped


def test_markdown_same_chat_same_ids_as_json(tmp_path):
    [md], _ = read_all(write(tmp_path, "a.md", MD))
    doc = chat_json(chat_id="68a1b2c3-aaaa-bbbb-cccc-0123456789ab")
    [js], _ = read_all(write(tmp_path, "a.json", doc))
    assert md.key == js.key
    assert [m.message_id for m in md.messages[:2]] == [m.message_id for m in js.messages]


def test_markdown_blank_lines_crlf_and_unclosed_last_marker(tmp_path):
    text = "```md\r\nuser:\r\n```\r\n\r\n\r\n  indented first line\r\n\r\nsecond\r\n\r\n\r\n```md\r\nassistant:\r\n"
    [c], report = read_all(write(tmp_path, "crlf.md", text))
    # exactly one leading blank line is the separator; the second is part of the body
    assert c.messages[0].text == "\n  indented first line\n\nsecond"
    assert c.messages[1].text == "" and c.messages[1].role is Role.ASSISTANT
    assert report.errors == []


def test_markdown_text_outside_messages_is_kept_and_counted(tmp_path):
    text = "# Exported chat\n\n```md\nuser:\n```\n\nhi\n"
    [c], report = read_all(write(tmp_path, "pre.md", text))
    assert c.meta["text_outside_messages"] == "# Exported chat"
    assert report.drift == {"chat_export.md:text-outside-messages": 1}
    assert c.messages[0].text == "hi"


def test_markdown_unclosed_body_fence_swallows_later_markers_and_is_counted(tmp_path):
    # a four-backtick fence is not closed by ``` lines, so it is still open at the end
    text = "```md\nuser:\n```\n\n````python\nx = 1\n\n```md\nassistant:\n```\n\nanswer\n"
    [c], report = read_all(write(tmp_path, "open.md", text))
    assert len(c.messages) == 1  # a ```md line inside an open body code fence is not a marker
    assert c.messages[0].text.endswith("```md\nassistant:\n```\n\nanswer")
    assert report.drift == {"chat_export.md:unclosed-code-fence": 1}


def test_markdown_tilde_fence_and_longer_closing_fence(tmp_path):
    text = "```md\nuser:\n```\n\n~~~\n```md\nassistant:\n```\n~~~\n\n```js\nlet a;\n`````\n\n```md\nassistant:\n```\n\nok\n"
    [c], _ = read_all(write(tmp_path, "t.md", text))
    assert [m.role for m in c.messages] == [Role.USER, Role.ASSISTANT]
    assert c.messages[0].text == "~~~\n```md\nassistant:\n```\n~~~\n\n```js\nlet a;\n`````"
    assert c.messages[1].text == "ok"


def test_markdown_without_role_markers_is_a_clear_error(tmp_path):
    p = write(tmp_path, "notes.md", "```md\nsys\nplatform: chatgpt\ntitle: Empty\n```\n\nJust some notes.\n")
    convs, report = read_all(p)
    assert convs == []
    [err] = report.errors
    assert err.file == str(p) and "no chat-export role markers" in err.reason


def test_markdown_is_read_line_by_line():
    class NoWholeRead(io.BytesIO):
        def read(self, size=-1):
            if size is None or size < 0:
                raise AssertionError("read the whole file at once")
            return super().read(size)

        def readall(self):
            raise AssertionError("read the whole file at once")

    data = MD.encode()
    report = ReadReport()
    [c] = list(read_markdown(Entry(name="x.md", opener=lambda: NoWholeRead(data)), Shape.TEXT, report))
    assert len(c.messages) == 4


def test_markdown_orphan_sources_and_sys_lines(tmp_path):
    text = "```md\nsys\nplatform: grok\nstray words\n```\n\n```md\nsources\n1. [A](https://a.example/x)\n- https://b.example/y\n```\n\n```md\ngrok:\n```\n\nhi\n"
    [c], report = read_all(write(tmp_path, "o.md", text))
    assert c.platform == "grok"
    assert report.drift == {"chat_export.md:sys-line-without-key": 1, "chat_export.md:sources-before-any-message": 1}
    assert c.meta["sys_lines"] == ["stray words"]
    assert c.meta["orphan_sources"] == [{"title": "A", "url": "https://a.example/x"}, {"url": "https://b.example/y"}]
    assert c.messages[0].role is Role.ASSISTANT and c.messages[0].author_name == "grok"


# ----------------------------------------------------------------------------- YAML

YAML = """platform: claude
url: https://claude.ai/chat/0b6c2a52-1111-4222-8333-444455556666
title: Bake-off notes
exported_at: 2026-11-12T05:00:00.000Z
user_email: test@example.org
messages:
  - role: user
    role_tag: user
    text: |
      What is the capital of France?
      Two lines.
  - role: claude
    role_tag: claude
    text: |+
      Paris.

    sources:
      - title: Wikipedia
        url: https://en.wikipedia.org/wiki/Paris
    links:
      - text: Paris
        href: https://example.org/paris
  - role: user
    text: yes
  - role: assistant
    text: 3:25
  - role: user
    text: 0123
  - role: assistant
    text: null
"""


def test_yaml_full(tmp_path):
    [c], report = read_all(write(tmp_path, "claude-bake-off.yaml", YAML))
    assert report.errors == [] and report.formats == {"chat-export-yaml": 1}
    assert c.platform == "claude-ai" and c.conversation_id == "0b6c2a52-1111-4222-8333-444455556666"
    assert c.created_at == EXPORTED and c.meta["exported_at"] == "2026-11-12T05:00:00Z"
    assert c.meta["user_email"] == "test@example.org" and c.meta["export_format"] == "yaml"
    texts = [m.text for m in c.messages]
    # block scalars lose exactly one trailing newline (`|+` keeps the rest); YAML 1.1 typing (yes -> True, 3:25 -> 205, 0123 -> 83) is undone
    assert texts == ["What is the capital of France?\nTwo lines.", "Paris.\n", "yes", "3:25", "0123", ""]
    assert c.messages[1].author_name == "claude" and c.messages[1].role is Role.ASSISTANT
    assert [x.url for x in c.messages[1].citations] == ["https://en.wikipedia.org/wiki/Paris"]
    assert c.messages[1].extra["links"] == [{"text": "Paris", "href": "https://example.org/paris"}]


def test_yaml_numeric_chat_id_kept_as_written(tmp_path):
    [c], _ = read_all(write(tmp_path, "n.yaml", "platform: gemini\ntitle: No\nchat_id: 0042\nmessages:\n  - role: user\n    text: on\n"))
    assert c.conversation_id == "0042" and c.title == "No" and c.messages[0].text == "on"


def test_yaml_malformed_reports_line_and_column(tmp_path):
    bad = "platform: chatgpt\ntitle: x\nmessages:\n  - role: user\n    text: \"unterminated\n  - role: assistant\n    text: [a, b\n"
    p = write(tmp_path, "bad.yaml", bad)
    convs, report = read_all(p)
    assert convs == []
    [err] = report.errors
    assert err.file == str(p) and err.reason.startswith("malformed YAML")
    assert err.where.startswith("line ") and ", column " in err.where


def test_yaml_wrong_shapes(tmp_path):
    p = write(tmp_path, "s.yaml", "platform: chatgpt\ntitle: x\nmessages: just a string\n")
    convs, report = read_all(p)
    assert convs == [] and "`messages` is str" in report.errors[0].reason
    report = ReadReport()
    entry = Entry.from_bytes("list.yaml", b"- platform: chatgpt\n- messages: []\n")
    assert list(read_yaml(entry, Shape.TEXT, report)) == []
    assert "not a mapping" in report.errors[0].reason and report.errors[0].file == "list.yaml"


def test_yaml_never_constructs_objects(tmp_path):
    p = write(tmp_path, "evil.yaml", "platform: chatgpt\ntitle: !!python/object/apply:os.system ['true']\nmessages: []\n")
    convs, report = read_all(p)
    assert convs == [] and report.errors[0].reason.startswith("malformed YAML")


def test_yaml_aliases_are_refused_not_expanded():
    lines = ["platform: chatgpt", "title: t", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("messages:\n  - role: user\n    text: hi\n    extra: *a8")
    report = ReadReport()
    start = time.monotonic()
    convs = list(read_entry(Entry.from_bytes("laughs.yaml", ("\n".join(lines) + "\n").encode()), report))
    assert time.monotonic() - start < 5
    assert convs == []
    assert len(report.errors) == 1
    assert report.errors[0].file == "laughs.yaml" and report.errors[0].where == "line 4, column 10"
    assert "aliases are not allowed" in report.errors[0].reason


def test_yaml_without_aliases_still_reads():
    doc = "platform: chatgpt\ntitle: yes\nmessages:\n  - role: user\n    text: |\n      *not an alias* &nor an anchor\n"
    report = ReadReport()
    [conv] = list(read_entry(Entry.from_bytes("ok.yaml", doc.encode()), report))
    assert not report.errors
    assert conv.title == "yes"
    assert conv.messages[0].text == "*not an alias* &nor an anchor"


# ----------------------------------------------------------------------------- several files in a zip


def test_zip_with_json_md_yaml_and_sharegpt1(tmp_path):
    share = {"schema": "sharegpt/1", "platform": "gemini", "title": "Tides", "conversations": [{"from": "human", "value": "Why tides?"}, {"from": "gpt", "value": "The Moon."}]}
    z = tmp_path / "chats.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("chatgpt-bake-off-2026-11-12.json", json.dumps(chat_json(chat_id="a1b2c3d4")))
        zf.writestr("chatgpt-bake-off-2026-11-12.md", MD)
        zf.writestr("claude-bake-off-2026-11-12.yaml", YAML)
        zf.writestr("gemini-tides-2026-11-12.json", json.dumps(share))
    convs, report = read_all(z)
    assert len(convs) == 4 and report.errors == []
    assert report.formats == {"chat-export-json": 1, "chat-export-md": 1, "chat-export-yaml": 1, "chat-export-sharegpt": 1}
    assert sorted(c.meta["export_format"] for c in convs) == ["json", "md", "sharegpt/1", "yaml"]
    assert {c.platform for c in convs} == {"chatgpt", "claude-ai", "gemini"}
    assert all(c.source_file.startswith(str(z) + "!") for c in convs)


def test_detection_of_the_four_renderings():
    assert detect(Entry.from_bytes("a", json.dumps(chat_json()).encode())) == (Format.CHAT_EXPORT_JSON, Shape.OBJECT)
    assert detect(Entry.from_bytes("b", json.dumps({"schema": "sharegpt/1", "conversations": []}).encode()))[0] is Format.CHAT_EXPORT_SHAREGPT
    assert detect(Entry.from_bytes("c", MD.encode())) == (Format.CHAT_EXPORT_MD, Shape.TEXT)
    assert detect(Entry.from_bytes("d", YAML.encode())) == (Format.CHAT_EXPORT_YAML, Shape.TEXT)


def test_markdown_note_showing_a_md_code_block_is_not_a_chat_export():
    note = "# How to write a README\n\nExample:\n\n```md\n# Title\nSome text\n```\n\nMore prose.\n"
    assert detect(Entry.from_bytes("readme.md", note.encode())) == (None, None)
    report = ReadReport()
    zipped = zip_bytes({"textdocs/readme.md": note.encode(), "conversations.json": json.dumps([chatgpt_record("c1")]).encode()})
    assert [c.conversation_id for c in read_entry(Entry.from_bytes("up.zip", zipped), report)] == ["c1"]
    assert not report.errors and report.skipped["not a chat file"] == 1
    # the real thing, also after a front matter and with Windows line ends
    chat = "---\nnote: x\n---\n\n```md\nsys\nplatform: grok\n```\n\n```md\ngrok:\n```\n\nHi.\n"
    assert detect(Entry.from_bytes("c.md", chat.encode()))[0] is Format.CHAT_EXPORT_MD
    assert detect(Entry.from_bytes("c.md", chat.replace("\n", "\r\n").encode()))[0] is Format.CHAT_EXPORT_MD
    assert detect(Entry.from_bytes("c.md", b"```md\nuser:\n```\n\nhello\n"))[0] is Format.CHAT_EXPORT_MD


def test_direct_reader_functions():
    report = ReadReport()
    [a] = read_json(Entry.from_bytes("a.json", json.dumps(chat_json()).encode()), Shape.OBJECT, report)
    [b] = read_sharegpt1(
        Entry.from_bytes("b.json", json.dumps({"schema": "sharegpt/1", "conversations": [{"from": "human", "value": "x"}]}).encode()),
        Shape.OBJECT,
        report,
    )
    assert a.source_file == "a.json" and b.source_file == "b.json" and report.conversations == 2


def test_markdown_md_blocks_in_a_body_that_only_look_like_markers(tmp_path):
    text = (
        "```md\nuser:\n```\n\nExample:\n\n```md\nsummary:\n- point one\n```\n\n```md\n```\n\ndone\n"
        "```md\nassistant:\n```\nok\n\n```md\n"
    )
    [c], report = read_all(write(tmp_path, "look.md", text))
    assert [m.role for m in c.messages] == [Role.USER, Role.ASSISTANT]
    # a role-like label followed by content, and an empty md block, are the body's own code blocks
    assert c.messages[0].text == "Example:\n\n```md\nsummary:\n- point one\n```\n\n```md\n```\n\ndone"
    # no blank line after the marker: nothing to strip; a ```md opened on the last line is body text
    assert c.messages[1].text == "ok\n\n```md"
    assert report.drift == {"chat_export.md:unclosed-code-fence": 1}


def test_json_tool_role_and_string_messages(tmp_path):
    doc = chat_json(messages=["plain string message", {"role": "tool", "text": "42"}])
    [c], report = read_all(write(tmp_path, "t.json", doc))
    assert [(m.role, m.kind, m.text) for m in c.messages] == [
        (Role.ASSISTANT, MessageKind.TURN, "plain string message"),
        (Role.TOOL, MessageKind.TOOL_RESULT, "42"),
    ]
    assert report.drift == {"chat_export.role:(none)": 1}


def test_yaml_typed_scalars_inside_lists_and_dates_in_meta(tmp_path):
    text = "platform: chatgpt\ntitle: t\nfolder_date: 2026-01-02\nmessages:\n  - role: user\n    text: hi\n    links: [yes, 2026-01-02]\n"
    [c], report = read_all(write(tmp_path, "l.yaml", text))
    assert c.messages[0].extra["links"] == ["yes", "2026-01-02"]
    assert c.meta["folder_date"] == "2026-01-02" and report.drift == {"chat_export.field:folder_date": 1}


def test_markdown_sys_and_sources_lookalikes_inside_a_body(tmp_path):
    text = (
        "```md\nsys\nplatform: chatgpt\n```\n\n```md\nuser:\n```\n\nHow is the sys block written?\n\n"
        "```md\nassistant:\n```\n\nLike this:\n\n```md\nsys\nplatform: grok\n```\n\nand sources:\n\n"
        "```md\nsources\nsee the docs\n```\n\nThat's all.\n\n```md\nsources\n1. [Docs](https://docs.example/x)\n```\n"
    )
    [c], report = read_all(write(tmp_path, "s.md", text))
    assert c.platform == "chatgpt" and report.drift == {}
    answer = c.messages[1]
    assert answer.text == (
        "Like this:\n\n```md\nsys\nplatform: grok\n```\n\nand sources:\n\n```md\nsources\nsee the docs\n```\n\nThat's all."
    )
    assert [x.url for x in answer.citations] == ["https://docs.example/x"]


def test_yaml_every_plain_value_and_key_is_text_and_explicit_tags_go_back_to_their_text(tmp_path):
    """A reply `=` (once "no constructor for tag:yaml.org,2002:value"), keys `yes:`/`1:` (once True and 1,
    which lost the whole conversation), `!!int 0123` and `!!bool yes` (their text, as written)."""
    text = (
        "platform: chatgpt\ntitle: t\nmessages:\n  - role: user\n    text: =\n"
        "  - role: assistant\n    text: !!int 0123\n    yes: y\n    1: x\n  - role: user\n    text: !!bool yes\n"
    )
    [c], report = read_all(write(tmp_path, "k.yaml", text))
    assert report.errors == [] and [m.text for m in c.messages] == ["=", "0123", "yes"]
    assert c.messages[1].extra == {"1": "x", "yes": "y"}
    assert report.drift == {"chat_export.message_field:1": 1, "chat_export.message_field:yes": 1}


def test_yaml_a_tag_that_cannot_be_built_is_malformed_with_its_place(tmp_path):
    """`!!timestamp 2026-13-45` once raised ValueError out of the reader."""
    p = write(tmp_path, "t.yaml", "platform: chatgpt\nmessages:\n  - role: user\n    text: !!timestamp 2026-13-45\n")
    convs, report = read_all(p)
    assert convs == []
    [err] = report.errors
    assert err.where == "line 4, column 11" and err.reason.startswith("malformed YAML: cannot construct tag:yaml.org,2002:timestamp")


def test_yaml_merge_keys_second_documents_and_repeated_anchors(tmp_path):
    merged = "platform: chatgpt\n<<: {title: merged, model: m}\ntitle: own\nmessages:\n  - role: user\n    text: hi\n"
    [c], report = read_all(write(tmp_path, "m.yaml", merged))
    assert report.errors == [] and (c.title, c.model) == ("own", "m")  # a key written out wins over a merged one
    convs, report = read_all(write(tmp_path, "two.yaml", "platform: chatgpt\nmessages: []\n---\nplatform: grok\n"))
    assert convs == [] and report.errors[0].where == "line 3, column 1"
    assert report.errors[0].reason == "malformed YAML: but found another document"
    convs, report = read_all(write(tmp_path, "a.yaml", "platform: chatgpt\na: &x 1\nmessages:\n  - &x {role: user, text: hi}\n"))
    assert convs == [] and report.errors[0].where == "line 4, column 5" and "second occurrence" in report.errors[0].reason


def test_yaml_malformed_file_is_kept_as_it_is_for_quarantine(tmp_path):
    data = "\ufeffplatform: chatgpt\nmessages:\n  - role: user\n    text: [a, b\n".encode()
    convs, report = read_all(write(tmp_path, "q.yaml", data))
    assert convs == [] and report.errors[0].raw == data and report.errors[0].where.startswith("line ")
