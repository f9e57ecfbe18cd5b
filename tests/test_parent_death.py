"""chatetl.parent_death: a child forked after `children_die_with_parent()` is killed when its parent is."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from chatetl.parent_death import children_die_with_parent


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_grandchild_dies_when_its_parent_is_killed():
    read, write = os.pipe()
    parent = os.fork()
    if parent == 0:  # the parent-to-be: installs the rule, forks, then waits to be killed
        try:
            children_die_with_parent()
            child = os.fork()
            if child == 0:
                time.sleep(60)
                os._exit(0)
            os.write(write, str(child).encode())
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write)
    child = int(os.read(read, 32))
    assert alive(child)
    os.kill(parent, signal.SIGKILL)
    os.waitpid(parent, 0)
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the child outlived its parent"


_PR_GET_PDEATHSIG = 2


def _own_death_signal() -> int:
    sig = ctypes.c_int(-1)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0)
    return sig.value


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_only_children_of_the_main_thread_die_with_their_parent():
    """The kernel signals when the forking thread ends: a child another thread forks gets no signal."""
    read, write = os.pipe()
    parent = os.fork()
    if parent == 0:  # installs the rule (never in the test process itself), forks from each thread
        try:
            children_die_with_parent()

            def fork_and_report(label: bytes) -> None:
                child = os.fork()
                if child == 0:
                    os.write(write, label + b"=" + str(_own_death_signal()).encode() + b"\n")
                    os._exit(0)
                os.waitpid(child, 0)

            fork_and_report(b"main")
            thread = threading.Thread(target=fork_and_report, args=(b"thread",))
            thread.start()
            thread.join()
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(parent, 0)
    with os.fdopen(read, "rb") as pipe:
        reported = dict(line.split(b"=") for line in pipe.read().split())
    assert reported == {b"main": str(int(signal.SIGKILL)).encode(), b"thread": b"0"}
