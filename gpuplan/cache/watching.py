"""A running `render --watch` of a repository, as a one-shot render of the same repository sees it.

A one-shot `render` (or `render --check`) whose inputs the render record does not answer, started
while a watch of the same repository and output runs (a pre-commit hook run right after a save),
would compile the whole fleet a second time beside the watch and race it to write output/. It
waits instead for the watch's run of these inputs and answers from the record that run leaves,
as a cached render answers (gpuplan.commands.render `_from_watch`).

The watch holds an exclusive flock(2) on LOCK in its slot of the render cache for as long as it
runs: the kernel lets it go when the process ends, however it ends, so a lock that can be taken
means no watch. Beside it, STATE tells what the watch does (replaced whole on each change): its
process, the number of its last run, whether it is running or waiting, the input key of the run
it finished last and its interval. The slot is in the private cache folder (store.open_home),
and nothing read here is more than a hint: the one-shot render answers only from a record whose
key is its own inputs', exactly as without a watch, and renders itself when the watch does not
deliver one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuplan import safefs
from gpuplan.cache import store

LOCK = "watch.lock"
STATE = "watch.json"
RUNNING, WAITING = "running", "waiting"


@dataclass(frozen=True)
class Told:
    """What a watch last told of itself."""

    pid: int
    run: int  # its runs so far
    phase: str  # RUNNING or WAITING
    key: str  # the input key of the last run it finished ("" before its first)
    interval: float  # seconds between its looks when no event wakes it


class Held:
    """A watch's side: the lock it holds and the state it tells."""

    def __init__(self, home: Path, slot: str, fd: int) -> None:
        self._home, self._slot, self._fd = home, slot, fd
        self._run, self._key = 0, ""  # its runs so far, the input key of the last one

    @classmethod
    def take(cls, home: Path, slot: str) -> Held | None:
        """Take the slot's lock for this watch; None when the cache cannot hold it or another
        watch of the same repository holds it (that one is then the one waited for)."""
        try:
            home_fd = store.open_home(home, create=True)
        except OSError:
            return None
        fd = -1
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(slot, 0o700, dir_fd=home_fd)
            slot_fd = os.open(slot, safefs.DIR_FLAGS, dir_fd=home_fd)
            try:
                flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(LOCK, flags, 0o600, dir_fd=slot_fd)
            finally:
                os.close(slot_fd)
            _lock(fd)
        except OSError:  # BlockingIOError: another watch holds it
            if fd >= 0:
                os.close(fd)
            return None
        finally:
            os.close(home_fd)
        held = cls(home, slot, fd)
        held._tell(RUNNING, "", 0.0)  # its first run is about to begin
        return held

    def running(self, interval: float) -> None:
        """Tell that a run begins."""
        self._run += 1
        self._tell(RUNNING, self._key, interval)

    def waiting(self, key: str, interval: float) -> None:
        """Tell that the run is over, its record (if any) saved, and the watch waits; `key` is
        the input key of the run."""
        self._key = key
        self._tell(WAITING, key, interval)

    def _tell(self, phase: str, key: str, interval: float) -> None:
        told = {"pid": os.getpid(), "run": self._run, "phase": phase, "key": key}
        data = json.dumps({**told, "interval": interval}).encode()
        with contextlib.suppress(OSError), _slot(self._home, self._slot) as slot_fd:
            store.replace(slot_fd, data, STATE)

    def release(self) -> None:
        """Let the lock go (a one-shot render then no longer waits) and remove the state."""
        with contextlib.suppress(OSError), _slot(self._home, self._slot) as slot_fd:
            os.unlink(STATE, dir_fd=slot_fd)
        os.close(self._fd)


def _lock(fd: int) -> None:
    """Take the lock, or raise BlockingIOError when another watch holds it. A one-shot render's
    look (`running`) holds it shared for an instant: that is tried past a few times."""
    for _ in range(TRIES - 1):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.01)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


TRIES = 5


def running(home: Path, slot: str) -> bool:
    """Tell whether a watch of another process holds the slot's lock."""
    try:
        with _slot(home, slot) as slot_fd:
            fd = os.open(LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=slot_fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        told = state(home, slot)
        return told is None or told.pid != os.getpid()  # (never wait for oneself)
    except OSError:
        return False
    finally:
        os.close(fd)  # (and a lock taken with it)
    return False


def state(home: Path, slot: str) -> Told | None:
    """Return what the slot's watch last told, or None when there is nothing whole to read."""
    try:
        with _slot(home, slot) as slot_fd:
            data = safefs.read_all(slot_fd, STATE)
        told = json.loads(data)
        found = Told(
            int(told["pid"]),
            int(told["run"]),
            str(told["phase"]),
            str(told["key"]),
            min(max(float(told["interval"]), 0.0), 3600.0),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if found.phase in (RUNNING, WAITING) else None


@contextlib.contextmanager
def _slot(home: Path, slot: str) -> Iterator[int]:
    """Open the slot's folder in the private cache folder (OSError when either is not there)."""
    home_fd = store.open_home(home, create=False)
    try:
        slot_fd = os.open(slot, safefs.DIR_FLAGS, dir_fd=home_fd)
    finally:
        os.close(home_fd)
    try:
        yield slot_fd
    finally:
        os.close(slot_fd)
