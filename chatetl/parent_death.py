"""Children that die with their parent: the parent-death signal, set in every child a process forks.

A process killed with SIGKILL cannot stop its children: a run's step processes, forked by its
forkserver, would go on writing beside the run that retries them. With `children_die_with_parent()`
every child the process forks from then on (`os.fork`, multiprocessing's fork and forkserver
children) is sent SIGKILL by the kernel when its parent ends, and passes the rule on to its own
children. Linux only (`prctl(PR_SET_PDEATHSIG)`); elsewhere nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_forker = 0  # the pid of the process that is forking, read by the child
_installed = False


def children_die_with_parent() -> None:
    """Every child forked from now on gets SIGKILL when this process ends (idempotent)."""
    global _installed
    if _installed or not sys.platform.startswith("linux"):
        return
    os.register_at_fork(before=_remember_forker, after_in_child=_die_with_parent)
    _installed = True


def _remember_forker() -> None:
    global _forker
    _forker = os.getpid()


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return  # (a kernel that refuses it: the child lives as before)
    if os.getppid() != _forker:  # the parent ended before the signal was set
        os.kill(os.getpid(), signal.SIGKILL)
