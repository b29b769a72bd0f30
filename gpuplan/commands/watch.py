"""`--watch`: run a command again whenever the files it reads change, in one long-lived process.

Changes are found by polling each file's lstat (no dependency, any file system, any editor's way
of saving). The run's findings and the line "watching for changes" are printed and flushed after
each run, so an editor or a script can read the result as soon as it is complete.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path

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
) -> int:
    """Run `once` now and after every change of `snapshot()`; return the last run's exit code.

    `idle` runs after each run's result is printed (work put off until then). With `text`, the
    line WATCHING follows it on stderr.
    """
    seen: Hashable | None = None
    code = 0
    cycle = 0
    while watch.max_cycles is None or cycle < watch.max_cycles:
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
            time.sleep(watch.interval)
    return code


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
