"""chatetl.parent_death: a child forked after `children_die_with_parent()` is killed when its parent is."""

from __future__ import annotations

import os
import signal
import sys
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
