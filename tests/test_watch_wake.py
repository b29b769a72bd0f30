"""`--watch` between looks: a save wakes the wait at once (Linux inotify), and the look decides.

The loop waits for its interval or until a watched folder reports a change (gpuplan.runtime.watch
`Wake`). The events only end the wait: a run follows only a change the lstat comparison finds, a
folder made after the watch began is watched from the next look, and without inotify (or with too
many folders to watch) the loop waits the interval as before. The intervals here are long (30 s)
and the bounds generous (10 s), so only a wait the events ended passes, on a loaded machine too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuplan.runtime import watch
from gpuplan.runtime.watch import Wake, Watch, loop, stamps

LONG = 30.0  # seconds: an interval no test waits out
WOKEN = 10.0  # seconds: a wait the events ended returns well within this

inotify = pytest.mark.skipif(Wake.start() is None, reason="no inotify on this system")


def later(seconds: float, step: Callable[[], None]) -> threading.Thread:
    """Do `step` in another thread after `seconds` (while the test's thread waits)."""

    def go() -> None:
        time.sleep(seconds)
        step()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def armed(paths: list[Path]) -> Wake:
    wake = Wake.start()
    assert wake is not None
    wake.arm(paths)
    return wake


def woken(wake: Wake, step: Callable[[], object]) -> bool:
    """Tell whether `step`, done in another thread while the wake waits LONG, ended the wait."""
    later(0.1, step)
    start = time.monotonic()
    wake.wait(LONG)
    return time.monotonic() - start < WOKEN


@inotify
def test_a_save_ends_the_wait_early(tmp_path: Path) -> None:
    (tmp_path / "tenant.yaml").write_text("name: a\n")
    wake = armed([tmp_path])
    try:
        assert woken(wake, lambda: (tmp_path / "tenant.yaml").write_text("name: b\n"))
    finally:
        wake.close()


@inotify
def test_with_no_event_the_wait_lasts_the_interval(tmp_path: Path) -> None:
    wake = armed([tmp_path])
    try:
        start = time.monotonic()
        wake.wait(0.2)
        assert time.monotonic() - start >= 0.2
    finally:
        wake.close()


@inotify
def test_a_folder_made_after_the_watch_began_is_watched_from_the_next_arm(tmp_path: Path) -> None:
    wake = armed([tmp_path])
    try:
        (tmp_path / "team").mkdir()  # an event itself: let it pass
        wake.wait(0.05)
        wake.arm([tmp_path])
        assert woken(wake, lambda: (tmp_path / "team" / "t.yaml").write_text("name: t\n"))
    finally:
        wake.close()


@inotify
def test_an_editors_save_by_rename_wakes_it(tmp_path: Path) -> None:
    target = tmp_path / "tenant.yaml"
    target.write_text("name: a\n")
    wake = armed([tmp_path])

    def save() -> None:
        (tmp_path / ".tenant.yaml.swp").write_text("name: b\n")
        (tmp_path / ".tenant.yaml.swp").replace(target)

    try:
        assert woken(wake, save)
    finally:
        wake.close()


@inotify
def test_a_tree_too_big_to_watch_leaves_the_wait_to_the_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in "abcd":
        (tmp_path / name).mkdir()
    monkeypatch.setattr(watch, "MOST_WATCHES", 3)
    wake = armed([tmp_path])
    try:
        (tmp_path / "a" / "x.yaml").write_text("x: 1\n")  # no watch left to see it
        start = time.monotonic()
        wake.wait(0.2)
        assert time.monotonic() - start >= 0.2
    finally:
        wake.close()


@inotify
def test_a_save_during_the_wait_runs_the_loop_again_at_once(tmp_path: Path) -> None:
    """The loop itself: a 30 s interval, and the second run follows the save, not the interval."""
    tenant = tmp_path / "tenants" / "a.yaml"
    tenant.parent.mkdir()
    tenant.write_text("name: a\n")
    runs: list[float] = []

    def once() -> int:
        runs.append(time.monotonic())
        if len(runs) == 1:
            later(0.1, lambda: tenant.write_text("name: b\n"))
        return 0

    paths = [tmp_path / "tenants"]
    start = time.monotonic()
    code = loop(lambda: stamps(paths), once, Watch(LONG, 2), False, paths=paths)
    assert code == 0
    assert len(runs) == 2
    assert time.monotonic() - start < WOKEN


@inotify
def test_an_event_without_a_change_wakes_the_look_but_runs_nothing(tmp_path: Path) -> None:
    """A file made and removed again is an event, and the look finds nothing changed."""
    runs: list[float] = []

    def once() -> int:
        runs.append(time.monotonic())
        scratch = tmp_path / "scratch.tmp"
        later(0.1, lambda: (scratch.write_text("x"), scratch.unlink()))
        return 0

    (tmp_path / "a.yaml").write_text("name: a\n")
    paths = [tmp_path / "a.yaml"]  # the look lists this file alone; the folder is watched too
    start = time.monotonic()
    loop(lambda: stamps(paths), once, Watch(LONG, 2), False, paths=[tmp_path])
    assert len(runs) == 1
    assert time.monotonic() - start < WOKEN
