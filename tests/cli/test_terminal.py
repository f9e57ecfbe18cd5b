"""What the commands print to a terminal: text from the inputs without escape sequences or control
characters (chatetl.cli.terminal), in every command's error lines too."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from chatetl.cli.terminal import json_line, one_line, printable

# what a terminal acts on: every C0 control but tab and line feed, DEL, every C1 control
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

HOSTILE = {
    "window title (OSC 0, BEL)": ("a\x1b]0;pwned\x07b", "ab"),
    "clipboard (OSC 52, ST)": ("a\x1b]52;c;ZXZpbA==\x1b\\b", "ab"),
    "hidden link (OSC 8)": ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
    "8-bit OSC": ("a\x9d0;pwned\x9cb", "ab"),
    "colour and erase (CSI)": ("\x1b[31mred\x1b[0m \x1b[2K\x1b[1Aup", "red up"),
    "8-bit CSI": ("a\x9b2Jb", "ab"),
    "private CSI": ("a\x1b[?1049hb", "ab"),
    "reset (ESC c) and charset": ("a\x1bcb\x1b(Bc", "abc"),
    "device control string": ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),
    "carriage return overwrite": ("safe\rFAKE", "safeFAKE"),
    "bell, NUL, backspace, DEL": ("a\x07\x00\x08\x7fb", "ab"),
    "an unfinished OSC": ("a\x1b]0;never ended", "a0;never ended"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_escape_sequence_goes_whole_and_the_text_stays(case):
    text, shown = HOSTILE[case]
    assert printable(text) == shown
    assert not ACTED_ON.search(printable(text))


def test_line_feeds_and_tabs_stay_unless_on_one_line():
    assert printable("a\tb\nc") == "a\tb\nc"
    assert one_line("a\tb\n\nc\x1b[2J") == "a b c"
    plain = "nothing to do: ünïcode, emoji 🙂, CJK 漢字"
    assert printable(plain) is plain


def test_json_lines_keep_the_data_and_escape_what_json_leaves_raw():
    value = {"title": "a\x1b]0;x\x07 \x9b2J del\x7f 🙂", "n": 1}
    line = json_line(value)
    assert not ACTED_ON.search(line)
    assert json.loads(line) == value
    assert "🙂" in line  # UTF-8 stays as it is


def test_a_long_unfinished_sequence_is_read_in_linear_time():
    text = "\x1b]" + "x" * 2_000_000 + "\x1b[" * 200_000  # nothing closes: each pattern scans forward once
    assert not ACTED_ON.search(printable(text))


def test_input_errors_name_the_file_without_its_escape_sequences(tmp_path):
    hostile = tmp_path / "evil\x1b]0;pwned\x07\x1b[2J.json"
    hostile.write_text(json.dumps({"hello": 1}))
    result = subprocess.run([sys.executable, "-m", "chatetl.cli", "normalize", str(hostile), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "evil" in line and ".json" in line and "unrecognized" in line
    assert not ACTED_ON.search(result.stderr + result.stdout)
