"""Children that die with their parent: the parent-death signal, set in every child a process forks.

A process killed with SIGKILL cannot stop its children: a run's step processes, forked by its
forkserver, would go on writing beside the run that retries them. With `children_die_with_parent()`
every child the process forks from then on (`os.fork`, multiprocessing's fork and forkserver
children) is sent SIGKILL by the kernel when its parent ends, and passes the rule on to its own
children. Linux only (`prctl(PR_SET_PDEATHSIG)`); elsewhere nothing changes.

The kernel sends the signal when the *thread* that forked the child ends, not the process: so only
children forked by the main thread (whose end is the process's) get it; a child another thread
forks is left as it was, rather than killed when that thread is done.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

_PR_SET_PDEATHSIG = 1
_forker = 0  # the pid of the process whose main thread is forking, read by the child (0: another thread forks)
_installed = False


def children_die_with_parent() -> None:
    """Every child the main thread forks from now on gets SIGKILL when this process ends (idempotent);
    children other threads fork are left as before (see the module docstring)."""
    global _installed
    if _installed or not sys.platform.startswith("linux"):
        return
    os.register_at_fork(before=_remember_forker, after_in_child=_die_with_parent)
    _installed = True


def _remember_forker() -> None:
    global _forker
    _forker = os.getpid() if threading.current_thread() is threading.main_thread() else 0


def _die_with_parent() -> None:
    if _forker == 0:  # forked by a thread other than the main one: the signal would come when that thread ends
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return  # (a kernel that refuses it: the child lives as before)
    if os.getppid() != _forker:  # the parent ended before the signal was set
        os.kill(os.getpid(), signal.SIGKILL)
