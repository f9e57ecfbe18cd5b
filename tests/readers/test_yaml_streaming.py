"""The chat-export YAML reader streams: a YAML export over 64 MB (chatetl writes YAML of any size)
reads back, its read taking no more memory than the conversation it builds plus about one message;
one value past the cap is refused once the parser has read that far, not after the whole file."""

from __future__ import annotations

import hashlib
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from export_inputs import TRICKY, chat, visible

from chatetl.exports.files import conversation_files
from chatetl.readers import Entry, ReadReport, read_entry, read_path
from chatetl.readers.platforms.chat_export import yaml as yaml_reader

MIB = 1024 * 1024

# Run in a fresh process: its own peak RSS (VmHWM) after the imports is the baseline, then the read.
_MEASURE = r"""
import hashlib, json, resource, sys
def peak_kb():  # this process's own peak RSS: ru_maxrss would start at pytest's, inherited across fork and exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from chatetl.readers import ReadReport, read_path
base = peak_kb()
report = ReadReport()
convs = list(read_path(sys.argv[1], report))
peak = peak_kb()
print(json.dumps({
    "base_kb": base, "peak_kb": peak, "errors": [str(e) for e in report.errors],
    "turns": [[m.role.value, hashlib.sha256(m.text.encode()).hexdigest()] for c in convs for m in c.visible_turns],
    "text_chars": sum(len(m.text) for c in convs for m in c.messages),
    "largest": max((len(m.text) for c in convs for m in c.messages), default=0),
}))
"""


def _bodies(n: int, size: int) -> list[str]:
    """n distinct bodies of about `size` characters, lines of words YAML would retype or misread."""
    rng = random.Random(14)
    words = ["alpha", "beta", "yes", "0123", "3:25", "null", "# not a comment", "- item", "key: value", "naïve", "«quoted»"]
    pool = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(500)]
    per_body = size // (len(pool[0]) + 1) + 1
    return [f"message {i}\n" + "\n".join(rng.choices(pool, k=per_body)) for i in range(n)]


def _write_yaml(tmp_path: Path, conv) -> Path:
    (f,) = conversation_files(conv, ["yaml"])
    path = tmp_path / "big.yaml"
    path.write_bytes(f.data)
    return path


def test_a_yaml_export_over_64_mb_reads_back_in_memory_that_follows_the_largest_message(tmp_path):
    """Peak RSS growth of the read stays within the conversation's own text plus 24 MiB (the old
    reader, which parsed the document whole, refused this file; given one, it grew by about three
    times the file). The conversation itself holds ~88% of the file as text, so no bound below the
    file's size is possible while `read_path` hands it back whole; what the read adds beyond it does
    not grow with the file (bench/yaml_readback.py: the same few MB at 20, 100 and 200 MB)."""
    bodies = _bodies(700, 100_000)
    conv = chat([("user" if i % 2 == 0 else "assistant", b) for i, b in enumerate(bodies)], title="Big: yes")
    path = _write_yaml(tmp_path, conv)
    size = path.stat().st_size
    assert size > 64 * MIB  # past the old whole-file cap
    expected = [[role, hashlib.sha256(text.encode()).hexdigest()] for role, text in visible(conv)]
    del conv, bodies

    run = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(run.stdout)
    assert got["errors"] == []
    assert got["turns"] == expected  # every visible turn, in order, role and text exactly as exported
    grown = (got["peak_kb"] - got["base_kb"]) * 1024
    text = got["text_chars"]  # Latin-1 text: one byte a character in a Python str
    assert text > 0.8 * size
    # the old reader held the text, the node tree and the values at once (about three times the file);
    # this bound is under 1.2 times the file, and what it allows beyond the text does not grow with it
    assert grown < text + 24 * MIB, f"read grew by {grown / MIB:.0f} MiB for {text / MIB:.0f} MiB of text in a {size / MIB:.0f} MiB file"


def test_one_value_past_the_cap_is_refused_with_its_place_and_the_file_no_further_read(monkeypatch):
    monkeypatch.setattr(yaml_reader, "MAX_YAML_VALUE_CHARS", 10_000)
    long_body = ("word " * 20 + "\n") * 40_000  # 4 MB: far past the cap and the parsers' read-ahead
    conv = chat([("user", "short"), ("assistant", long_body), ("user", "after")])
    (f,) = conversation_files(conv, ["yaml"])

    class Counted(io.BytesIO):
        taken = 0

        def read(self, n: int = -1) -> bytes:
            data = super().read(n)
            Counted.taken += len(data)
            return data

    report = ReadReport()
    assert list(read_entry(Entry(name="long.yaml", opener=lambda: Counted(f.data), size=len(f.data)), report)) == []
    [err] = report.errors
    assert err.file == "long.yaml" and err.reason.startswith("message 1 is longer than 10,000 characters")
    line = f.data.decode().splitlines().index("- role: assistant") + 1
    assert err.where == f"line {line}, column 3"  # where the item's mapping begins, after `- `
    # stopped once that far past the message's start (plus the detection's look at the head), not at the end
    assert Counted.taken < len(f.data) / 4


@pytest.mark.parametrize(
    "doc, what",
    [
        ("platform: chatgpt\ntitle: '" + "t" * 20_000 + "'\nmessages: []\n", "the value of `title`"),
        ("platform: chatgpt\nmessages:\n  - role: user\n    text: '" + "x" * 12_000 + "'\n", "message 0"),
        ("platform: chatgpt\nmessages:\n  - role: user\n    links: [" + ", ".join(["a"] * 6_000) + "]\n", "message 0"),
    ],
)
def test_the_cap_applies_to_each_meta_value_and_message_whatever_its_shape(monkeypatch, doc, what):
    monkeypatch.setattr(yaml_reader, "MAX_YAML_VALUE_CHARS", 10_000)
    report = ReadReport()
    assert list(read_entry(Entry.from_bytes("c.yaml", doc.encode()), report)) == []
    [err] = report.errors
    assert err.reason.startswith(f"{what} is longer than 10,000 characters") and err.where.startswith("line ")


def test_values_under_the_cap_read_and_the_cap_is_per_value_not_per_file(monkeypatch, tmp_path):
    monkeypatch.setattr(yaml_reader, "MAX_YAML_VALUE_CHARS", 10_000)
    bodies = _bodies(40, 5_000)  # 40 messages of ~5,000 characters: a file of ~200 KB, each message under the cap
    conv = chat([("user" if i % 2 == 0 else "assistant", b) for i, b in enumerate(bodies)])
    report = ReadReport()
    [back] = list(read_path(_write_yaml(tmp_path, conv), report))
    assert report.errors == [] and visible(back) == visible(conv)


@pytest.mark.parametrize("loader", ["_LibYAMLStreamLoader", "_PythonStreamLoader"])
def test_libyaml_and_the_python_parser_read_every_tricky_body_the_same(monkeypatch, tmp_path, loader):
    if not hasattr(yaml_reader, loader):
        pytest.skip("PyYAML built without LibYAML")
    monkeypatch.setattr(yaml_reader, "STREAM_LOADER", getattr(yaml_reader, loader))
    texts = [*TRICKY, "yes", "0123", "3:25", "=", "null", "~", "2026-01-02", "ends\n\n", "crlf\r\nx", "nel\x85x", "emoji \U0001f600"]
    conv = chat([("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)], title="yes: no")
    report = ReadReport()
    [back] = list(read_path(_write_yaml(tmp_path, conv), report))
    assert report.errors == [] and visible(back) == visible(conv) and back.title == "yes: no"
