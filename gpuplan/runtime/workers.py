"""Run a job's two halves on two cores: one in gpuplan's process, one in a forked worker.

The worker dies with gpuplan (PR_SET_PDEATHSIG), leaves ^C and SIGTERM to the default action
(gpuplan handles them), never prints a traceback, and is killed and reaped whenever gpuplan stops
early (^C, SIGTERM, a bug), so no orphan is left holding a pipe or the terminal. A worker that
fails for any reason is not trusted: gpuplan computes that half itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

from gpuplan.writer.safefs import signals_held

A = TypeVar("A")
B = TypeVar("B")
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def available() -> bool:
    """Tell whether a worker can be forked here."""
    return hasattr(os, "fork")


def both(first: Callable[[], A], second: Callable[[], B], short: bool = False) -> tuple[A, B]:
    """Return (first(), second()), with second() computed in a forked worker when possible.

    `short`: a job of tens of milliseconds (a cached `render --check`'s half of the output),
    whose worker does not ask to die with gpuplan (that takes ctypes, a few milliseconds before
    the job starts): a worker gpuplan leaves behind finishes its half and exits on its own.
    """
    if not available():
        return first(), second()
    for stream in (sys.stdout, sys.stderr):  # or the worker would print the parent's buffer again
        stream.flush()
    read_fd, write_fd = os.pipe()
    parent, pid, reaped = os.getpid(), 0, False
    with os.fdopen(read_fd, "rb") as pipe:
        try:
            # A signal during fork() would reach Python inside an at-fork hook (logging registers
            # one), where CPython prints and ignores the exception: hold signals back until after.
            with signals_held():
                pid = os.fork()
                if pid == 0:
                    pipe.close()
                    _worker(second, write_fd, None if short else parent)
                os.close(write_fd)
            mine = first()
            theirs, ok = _collect(pid, pipe)
            reaped = True
        finally:
            if pid and not reaped:
                _stop(pid)
    return mine, (theirs if ok else second())


def _die_with(parent: int | None) -> None:
    """In the worker: be killed with the parent (unless None), and take ^C and SIGTERM's default
    action."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    if parent is None:
        return
    # Not Linux: the parent still kills and reaps the worker on its way out.
    import ctypes  # (in the worker only)

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _worker(job: Callable[[], Any], write_fd: int, parent: int | None) -> None:
    """Compute in the forked worker and send the result back; never return to the parent's code."""
    try:
        _die_with(parent)
        data = pickle.dumps(job(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(0)
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        os._exit(1)


def _collect(pid: int, pipe: BinaryIO) -> tuple[Any, bool]:
    """Read the worker's result and reap it; (None, False) when it failed."""
    data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None, False
    try:
        return pickle.loads(data), True  # our own child's bytes, over a private pipe
    except (pickle.UnpicklingError, EOFError):
        return None, False


def _stop(pid: int) -> None:
    """Kill and reap a worker the parent no longer waits for."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
