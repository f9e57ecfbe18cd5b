"""The command line people expect: a progress bar on stderr only for a terminal (the JSON summary on
stdout never changes), `--quiet`, `--progress`, `--version`, and exit codes that `--help` tells."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatetl.cli import main
from chatetl.cli.inputs import iter_chat_files, iter_inputs, read_inputs
from chatetl.cli.progress import InputMeter, chat_file_bytes, show_progress
from chatetl.readers import ReadReport, read_chat_files
from chatetl.samples import chatgpt_conversations, sample_uploads

COMMANDS = ("normalize", "export")  # `load` needs Neo4j: tests/cli/test_load.py


def _inputs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for key, data in sample_uploads().items():
        (folder / key.rsplit("/", 1)[-1]).write_bytes(data)
    return folder


def _args(command: str, src: Path, out: Path) -> list[str]:
    extra = ["--format", "md,archive"] if command == "export" else []
    return [command, str(src), "--out", str(out), *extra]


def _summary(stdout: str) -> dict:
    (line,) = stdout.strip().splitlines()
    return json.loads(line)


@pytest.mark.parametrize("command", COMMANDS)
def test_without_a_terminal_stderr_stays_empty_and_with_progress_the_summary_is_the_same(command, tmp_path):
    src = _inputs(tmp_path / "in")
    runner = CliRunner()
    plain = runner.invoke(main, _args(command, src, tmp_path / "a"))
    assert plain.exit_code == 0, plain.output
    assert plain.stderr == ""  # CliRunner's stderr is no terminal: no bar
    forced = runner.invoke(main, [*_args(command, src, tmp_path / "b"), "--progress"])
    assert forced.exit_code == 0, forced.output
    assert forced.stdout == plain.stdout and _summary(forced.stdout)["conversations"] > 0
    total = chat_file_bytes(iter_chat_files((str(src),), ReadReport()))
    conversations = _summary(plain.stdout)["conversations"]
    # the bar's last state: the whole total read, every conversation counted, the time
    kb = f"{total / 1000:,.1f}"
    assert re.search(rf"{command} .*{re.escape(kb)}/{re.escape(kb)} kB {conversations} conversations [\d,]+/s \d+:\d\d:\d\d", forced.stderr), forced.stderr


def test_a_real_terminal_gets_the_live_bar_and_stdout_the_same_summary(tmp_path):
    src = _inputs(tmp_path / "in")
    piped = subprocess.run([sys.executable, "-m", "chatetl.cli", *_args("normalize", src, tmp_path / "a")], capture_output=True, text=True, check=False)
    assert piped.returncode == 0 and piped.stderr == ""

    def on_a_terminal(*extra: str) -> tuple[subprocess.CompletedProcess, bytes]:
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "chatetl.cli", *_args("normalize", src, tmp_path / "b"), *extra],
                                stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other side closed: the command is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        stdout = proc.stdout.read().decode()
        proc.stdout.close()
        return subprocess.CompletedProcess(proc.args, proc.wait(), stdout, ""), b"".join(chunks)

    done, terminal = on_a_terminal()
    assert done.returncode == 0 and done.stdout == piped.stdout
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", terminal).decode()  # without the colours and cursor moves
    assert "normalize" in text and re.search(r"\d+ conversations [\d,]+/s", text) and "kB" in text, text

    quiet, terminal = on_a_terminal("--quiet")
    assert quiet.returncode == 0 and quiet.stdout == piped.stdout and terminal == b""


def test_quiet_keeps_error_lines_off_stderr_the_summary_and_exit_code_still_tell(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(chatgpt_conversations())[:500])
    loud = CliRunner().invoke(main, ["normalize", str(bad), "--out", str(tmp_path / "a")])
    quiet = CliRunner().invoke(main, ["normalize", str(bad), "--out", str(tmp_path / "b"), "-q"])
    assert loud.exit_code == quiet.exit_code == 1
    assert "broken.json" in loud.stderr and quiet.stderr == ""
    assert _summary(quiet.stdout) == _summary(loud.stdout) and _summary(quiet.stdout)["errors"] == 1


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"chatetl {version('chatetl')}\n"


def test_help_tells_every_exit_code_and_the_commands_exit_with_them(tmp_path):
    documented = {}
    for args in ([], ["normalize"], ["export"], ["load"]):
        text = CliRunner().invoke(main, [*args, "--help"]).stdout
        assert "Exit codes:" in text, args
        documented = dict(re.findall(r"^\s+(\d)\s+(.+)$", text.split("Exit codes:")[1], re.MULTILINE))
        assert sorted(documented) == ["0", "1", "2"], args
    src = _inputs(tmp_path / "in")
    (tmp_path / "broken.json").write_text("{")
    runs = {
        0: ["normalize", str(src), "--out", str(tmp_path / "a")],
        1: ["normalize", str(tmp_path / "broken.json"), "--out", str(tmp_path / "b")],
        2: ["normalize", str(src), "--out", str(tmp_path / "c"), "--no-such-option"],
    }
    for code, args in runs.items():
        assert CliRunner().invoke(main, args).exit_code == code, (code, args)
    assert CliRunner().invoke(main, ["export", str(src), "--out", str(tmp_path / "d"), "--format", "pdf"]).exit_code == 2


def test_the_meter_counts_what_readers_take_and_ends_at_the_total(tmp_path):
    """A zip with a sidecar (never opened) and chat files: the total leaves the sidecar out, a leaf
    read only in part counts up to where the reader got, and once passed it counts whole."""
    data = json.dumps(chatgpt_conversations()).encode()
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("conversations.json", data)
        zf.writestr("export_manifest.json", json.dumps({"export_files": []}))  # a ChatGPT sidecar
        zf.writestr("more/conversations.json", data)
    leaves = list(iter_chat_files((str(path),), ReadReport()))
    assert len(leaves) == 3 and chat_file_bytes(leaves) == 2 * len(data)

    meter = InputMeter(True, chat_file_bytes(leaves), stream=io.StringIO())
    counted = iter(meter.chat_files(iter_chat_files((str(path),), ReadReport())))
    entry, _fmt, _layout = next(counted)
    with entry.open() as f:
        assert f.read(100) == data[:100] and meter.read_bytes() == 100
        f.readline()
    with entry.open() as f:  # opened again from the start: still the furthest point, not twice
        f.read(50)
    assert meter.read_bytes() == 100 + len(data[100:].split(b"\n", 1)[0]) + (1 if b"\n" in data[100:] else 0)
    rest = list(counted)
    assert meter.read_bytes() == meter.total == 2 * len(data) and len(rest) == 2

    # what the readers give through the meter is what they give without it
    report_a, report_b = ReadReport(), ReadReport()
    plain = [c.key for c in read_chat_files(iter_chat_files((str(path),), report_a), report_a)]
    meter = InputMeter(True, stream=io.StringIO())
    through = [c.key for c in meter.conversations(read_chat_files(meter.chat_files(iter_chat_files((str(path),), report_b)), report_b))]
    assert through == plain and meter.conversations_read() == len(plain) and meter.read_bytes() == 2 * len(data)


def test_switched_off_nothing_is_wrapped():
    meter = InputMeter(False)
    leaves, convs = [("leaf",)], ["conv"]
    assert meter.chat_files(leaves) is leaves and meter.conversations(convs) is convs
    with meter:
        pass
    assert show_progress(None, quiet=False, stream=io.StringIO()) is False
    assert show_progress(True, quiet=True) is True and show_progress(False, quiet=False) is False


@pytest.mark.parametrize("show", [False, True])
def test_the_commands_read_what_iter_inputs_reads(show, tmp_path):
    src = _inputs(tmp_path / "in")
    (tmp_path / "broken.json").write_text('[{"mapping": ')
    inputs = (str(src), str(tmp_path / "broken.json"), str(tmp_path / "missing"))
    before, after = ReadReport(), ReadReport()
    expected = [(c.key, c.message_count) for c in iter_inputs(inputs, before)]
    meter = InputMeter(show, stream=io.StringIO())
    with meter:
        got = [(c.key, c.message_count) for c in read_inputs(inputs, after, meter)]
    assert got == expected and len(got) > 5
    assert [str(e) for e in after.errors] == [str(e) for e in before.errors] and len(before.errors) == 2
    assert (after.files, after.skipped, after.drift) == (before.files, before.skipped, before.drift)
