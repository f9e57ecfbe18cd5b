"""A full disk, for real: a 64 KiB tmpfs as `--out` or as the temporary folder. Every command ends with one
line naming the cause (exit 1), never a traceback; `export` still prints its JSON summary, saying what it
wrote and why it stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from chatetl.samples import sample_uploads


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a 64 KiB tmpfs (mounting needs root: skipped without it)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def inputs(tmp_path):
    """The built-in samples: more than 64 KiB once exported in every format."""
    folder = tmp_path / "in"
    folder.mkdir()
    for key, data in sample_uploads().items():
        (folder / key.rsplit("/", 1)[-1]).write_bytes(data)
    return folder


def _chatetl(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "chatetl.cli", *args], capture_output=True, text=True, env={**os.environ, **env})


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "No space left on device" in line, line
    return line


def test_export_into_a_full_folder_says_why_and_what_it_wrote(full_disk, inputs):
    out = full_disk / "out"
    result = _chatetl("export", str(inputs), "--out", str(out), "--format", "all", "--zip", "all")
    assert result.returncode == 1
    line = _one_error_line(result)
    summary = json.loads(result.stdout)
    assert summary["stopped"] == line.removeprefix("error: ") and str(out) in summary["stopped"]
    assert "zip" not in summary and summary["written"]["sharegpt-jsonl"] == summary["written"]["archive"] == 0
    # what it says it wrote is there, whole (the file the disk could not take is not left cut)
    on_disk = {fmt: len(list((out / fmt).glob("*"))) if (out / fmt).is_dir() else 0 for fmt in summary["written"]}
    assert on_disk == summary["written"] and sum(on_disk.values()) > 0


def test_export_with_a_full_temporary_folder_says_why(full_disk, inputs, tmp_path):
    result = _chatetl("export", str(inputs), "--out", str(tmp_path / "out"), "--format", "md", "--zip", "all", TMPDIR=str(full_disk))
    assert result.returncode == 1
    line = _one_error_line(result)
    assert str(full_disk) in line and json.loads(result.stdout)["stopped"] == line.removeprefix("error: ")


def test_normalize_into_a_full_folder_is_one_line(full_disk, inputs):
    filler = full_disk / "filler"
    with open(filler, "wb", buffering=0) as f, pytest.raises(OSError):  # the disk full to the last byte
        while True:
            f.write(b"\0" * 4096)
    result = _chatetl("normalize", str(inputs), "--out", str(full_disk / "out"))
    assert result.returncode == 1
    _one_error_line(result)
