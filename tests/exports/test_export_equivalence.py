"""Every export of a varied corpus is byte for byte what the exporters wrote when the golden files
were made (tests/export_golden.py): a faster writer must write the same files, names and all.

The corpus (tests/exports/golden/corpus.json) is stored as canonical-model JSON, so no reader is
involved; each conversation is rendered in every per-conversation format and as training lines,
under six option sets (visible only, everything, and each opt-in alone)."""

from __future__ import annotations

import difflib

import pytest
from export_golden import render, stored_corpus, stored_exports

CORPUS = stored_corpus()
EXPECTED = stored_exports()


def _first_difference(want: str, got: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    diff = difflib.unified_diff(want[max(0, at - 300):at + 300].splitlines(), got[max(0, at - 300):at + 300].splitlines(), "golden", "now", lineterm="")
    return f"first difference at character {at}:\n" + "\n".join(diff)


def test_the_corpus_is_varied():
    assert len(CORPUS) >= 70 and len(EXPECTED) >= 60
    formats = {key.split("/")[1] for files in EXPECTED.values() for key in files}
    assert formats == {"chat-export-json", "sharegpt", "chat-export-md", "md", "yaml", "html", "sharegpt-jsonl"}


@pytest.mark.parametrize("index", range(len(CORPUS)), ids=lambda i: f"{i}-{CORPUS[i].conversation_id[:24]}")
def test_exports_are_byte_equal_to_the_golden_files(index):
    got = render(CORPUS[index])
    want = EXPECTED.get(index, {})
    assert sorted(got) == sorted(want), "the set of files differs"
    for key, text in want.items():
        assert got[key] == text, f"{key}: {_first_difference(text, got[key])}"


# ---- the shortcuts the writers take agree with the rules they stand for, on random input ----

CHARS = ["a", " ", "\t", "\n", "\r", "\x00", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f", "\xa0", "\xc2", "é", "\u2028",
         "\ufeff", "\u202e", "\ud800", "🚀", "世", "`", "``", "```", "~~~", "    ", "md", "#", ":", "'", '"', "-", "_", "/", "."]


def _random_texts(seed: int, count: int, most: int = 10):
    import random

    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(CHARS) for _ in range(rng.randrange(0, most)))


def test_control_checks_agree_with_the_pattern():
    from chatetl.exports.meta import _CONTROL, has_controls, has_controls_utf8

    for text in _random_texts(1, 30000):
        want = _CONTROL.search(text) is not None
        assert has_controls(text) is want, repr(text)
        assert has_controls_utf8(text.encode("utf-8", "surrogatepass")) is want, repr(text)


def test_fence_lines_are_what_the_multiline_pattern_finds():
    import re

    from chatetl.exports.markdown import fence_lines

    pattern = re.compile(r"^ {0,3}(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE)
    for text in _random_texts(2, 30000, 16):
        assert fence_lines(text) == [m.group(0) for m in pattern.finditer(text)], repr(text)


def test_ascii_slugs_follow_the_per_character_rule():
    """An ASCII title is slugged by one translate table: each character becomes what the per-character
    rule makes of it (and NFKC leaves ASCII as it is), so every ASCII title gets the same slug."""
    import unicodedata

    from chatetl.filenames import _ASCII_SLUG, _keep

    for c in range(128):
        ch = chr(c)
        assert unicodedata.normalize("NFKC", ch) == ch
        assert ch.translate(_ASCII_SLUG) == (ch if _keep(ch) else "-").replace("_", "-"), repr(ch)


def test_active_messages_are_the_models_own():
    import random

    from chatetl.model import Conversation, Message, Role, Source
    from chatetl.selection import _active_messages

    rng = random.Random(4)
    for n in range(2000):
        messages = [Message(message_id=f"m{i}", role=Role.USER, text="x", on_active_branch=rng.random() < 0.7,
                            seq=rng.choice([None, i]), branch_index=rng.choice([None, 3, i, i, i, 40 - i] if n % 3 else [i, 5, 40 - i]))
                    for i in range(rng.randrange(0, 8))]
        conv = Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="c", messages=messages)
        assert _active_messages(conv, True) == conv.visible_turns
        assert _active_messages(conv, False) == conv.active_branch


def test_note_front_matter_fast_emitter_writes_what_the_python_emitter_writes():
    """md (the note-app Markdown) dumps its front matter with LibYAML's emitter unless a value holds a character beyond U+FFFF."""
    import yaml

    from chatetl.exports.yaml_export import _Dumper, _FastDumper, _needs_python_emitter

    kw = {"sort_keys": False, "allow_unicode": True, "default_flow_style": None, "width": 1_000_000}
    checked = 0
    for text in _random_texts(5, 20000, 8):
        front = {"title": text, "platform": text[:2] or "chatgpt", "model": "gpt-4o", "created": "2026-01-01T00:00:00Z",
                 "url": text, "messages": 3, "tags": ["chat", text]}
        if _needs_python_emitter(front):
            continue
        checked += 1
        assert yaml.dump(front, Dumper=_FastDumper, **kw) == yaml.dump(front, Dumper=_Dumper, **kw), repr(text)
    assert checked > 10000


def test_a_lone_surrogate_goes_through_the_python_emitter():
    """LibYAML cannot write a lone surrogate (a damaged source's): a record holding one is written by the
    Python emitter, escaped, instead of failing the export (YAML and the note's front matter)."""
    from export_inputs import chat

    from chatetl.exports.files import conversation_files

    conv = chat([("user", "lone \ud800 surrogate"), ("assistant", "no character beyond U+FFFF")], title="t \udc00")
    files = {f.format: f.data.decode() for f in conversation_files(conv, ["yaml", "md"])}
    assert 'text: "lone \\uD800 surrogate\\n"' in files["yaml"] and 'title: "t \\uDC00"' in files["yaml"]
    assert files["md"].startswith('---\ntitle: "t \\uDC00"\n')
