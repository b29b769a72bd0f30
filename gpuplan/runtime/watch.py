"""`--watch`: run a command again whenever the files it reads change, in one long-lived process.

Changes are found by comparing each file's lstat with the last look's (no dependency, any file
system, any editor's way of saving). Between looks the loop waits for the interval, or on Linux
until inotify reports a change in a watched folder (`Wake`), whichever comes first: a save is
seen at once, not up to an interval later. The events only wake the loop; the lstat comparison
alone decides whether anything changed, so a missed event costs one interval, never a run. The
run's findings and the line "watching for changes" are printed and flushed after each run, so an
editor or a script can read the result as soon as it is complete.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import sys
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WATCHING = "watching for changes (^C stops)"


@dataclass(frozen=True)
class Watch:
    """How often to look for changes, and (for tests and scripts) when to stop."""

    interval: float = 1.0
    max_cycles: int | None = None


def loop(
    snapshot: Callable[[], Hashable],
    once: Callable[[], int],
    watch: Watch,
    text: bool,
    idle: Callable[[], None] = lambda: None,
    paths: Iterable[Path] = (),
) -> int:
    """Run `once` now and after every change of `snapshot()`; return the last run's exit code.

    `idle` runs after each run's result is printed (work put off until then). With `text`, the
    line WATCHING follows it on stderr. `paths` are the files and folders whose changes wake the
    wait between looks early (`Wake`).
    """
    wake = Wake.start()
    try:
        return _loop(snapshot, once, watch, text, idle, list(paths), wake)
    finally:
        if wake is not None:
            wake.close()


def _loop(
    snapshot: Callable[[], Hashable],
    once: Callable[[], int],
    watch: Watch,
    text: bool,
    idle: Callable[[], None],
    paths: list[Path],
    wake: Wake | None,
) -> int:
    seen: Hashable | None = None
    code = 0
    cycle = 0
    while watch.max_cycles is None or cycle < watch.max_cycles:
        if wake is not None:
            wake.arm(paths)  # before the look: a change after it is an event
        now = snapshot()  # before the run: a file saved during it is seen at the next look
        if now != seen:
            code = once()
            seen = now
            sys.stdout.flush()
            sys.stderr.flush()
            idle()
            if text:
                sys.stderr.write(f"{WATCHING}\n")
            sys.stdout.flush()
            sys.stderr.flush()
        cycle += 1
        if watch.max_cycles is None or cycle < watch.max_cycles:
            pause(wake, watch.interval)
    return code


def pause(wake: Wake | None, seconds: float) -> None:
    """Wait until the next look: `seconds`, or less when a watched folder reports a change."""
    if wake is None:
        time.sleep(seconds)
    else:
        wake.wait(seconds)


QUIET = 0.02  # seconds without another event before the look: one save is often several events
MOST_WATCHES = 4096  # folders: a tree bigger than this is left to the interval alone


class Wake:
    """Linux inotify over the watched folders (and files), read only to end a wait early.

    It never decides anything: a change it reports is looked for by lstat, and one it misses is
    found by the look after the interval. Watches are added through the path, links followed as
    the look follows them; adding a folder watched already only finds its watch. A tree of more
    than MOST_WATCHES folders, a refused watch or no inotify at all leaves the loop to the
    interval alone.
    """

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def start(cls) -> Wake | None:
        libc = _inotify()
        if libc is None:
            return None
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        return cls(fd) if fd >= 0 else None

    def arm(self, paths: Iterable[Path]) -> None:
        """Watch each path and every folder below it (those watched already are kept)."""
        libc = _inotify()
        if self._fd is None or libc is None:
            return
        wanted: list[str] = []
        for path in paths:
            _folders(str(path), wanted, 0)
        if len(wanted) > MOST_WATCHES:
            self.close()
            return
        for name in wanted:
            added = libc.inotify_add_watch(self._fd, os.fsencode(name), CHANGES)
            if added < 0 and os.path.exists(name):
                self.close()  # ENOSPC: the user's watches are used up (a path gone is no fault)
                return

    def wait(self, seconds: float) -> None:
        """Return after `seconds`, or once events stop coming for QUIET after the first one."""
        if self._fd is None:
            time.sleep(seconds)
            return
        end = time.monotonic() + seconds
        timeout = seconds
        while timeout > 0:
            ready, _, _ = select.select([self._fd], [], [], timeout)
            if not ready:
                return  # the interval is up, or QUIET passed after an event
            self._drain()
            timeout = min(QUIET, end - time.monotonic())

    def _drain(self) -> None:
        assert self._fd is not None
        with contextlib.suppress(BlockingIOError):
            while os.read(self._fd, 65536):
                pass

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# inotify(7): a file modified, its metadata changed, closed after writing, an entry moved out or
# in, created or deleted, the watched folder or file itself deleted or moved
# (linux include/uapi/linux/inotify.h: IN_MODIFY ... IN_MOVE_SELF).
CHANGES = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800


@functools.cache
def _inotify() -> Any:
    """Return libc with its inotify calls typed, or None where there is no inotify."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_init1  # noqa: B018 (present, or AttributeError)
    except (OSError, AttributeError):
        return None
    return libc


def _folders(path: str, found: list[str], depth: int) -> None:
    """Add a path (a file given by name) and every folder below it (links followed, as `stamps`)."""
    if depth == 0 and not os.path.isdir(path):
        if os.path.exists(path):
            found.append(path)
        return
    if depth > 32 or len(found) > MOST_WATCHES:  # a link cycle, or too big to watch
        return
    found.append(path)
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir():
                _folders(entry.path, found, depth + 1)


Stamp = tuple[str, int, int, int, int]


def stamps(paths: Iterable[Path]) -> frozenset[Stamp]:
    """Return (path, inode, size, mtime, ctime) of every file under the paths (links followed).

    A file saved in place or replaced by a rename, added or removed, changes the set. A path that
    does not exist adds nothing (its appearance is a change).
    """
    found: set[Stamp] = set()
    for path in paths:
        _walk(str(path), found, 0)
    return frozenset(found)


def _walk(path: str, found: set[Stamp], depth: int) -> None:
    try:
        st = os.stat(path)
    except OSError:  # gone between listing and stat: the next look sees it
        return
    if not os.path.isdir(path):
        found.add((path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return
    if depth > 32:  # a link cycle: stop (the render itself refuses links in its inputs)
        return
    try:
        names = os.listdir(path)
    except OSError:
        return
    found.add((path, st.st_ino, 0, st.st_mtime_ns, 0))
    for name in names:
        _walk(os.path.join(path, name), found, depth + 1)
