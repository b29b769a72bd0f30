"""A one-shot render beside a running `render --watch` of the same output waits for the watch's run
and answers from its record, instead of compiling the fleet again beside it.

The watch runs as a process of its own (a one-shot render never waits for its own process), on
the small fleet of tests/test_cache.py. Whatever the watch does, the one-shot render's answer is
the one it would give alone: from a record of exactly its inputs, or from a render of its own
when the watch leaves none (an error in the inputs, a watch that does not see the change, a
watch that ended).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuplan import pipeline
from gpuplan.cache import store, watching
from gpuplan.commands import render as render_command
from tests.conftest import run
from tests.test_cache import Fleet

WAITED = "note: waiting for the running `gpuplan render --watch` of this output"

pytestmark = pytest.mark.usefixtures("cache_home")


class Watching:
    """A `gpuplan render --watch` process, and the lines it prints."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gpuplan", "render", "--root", str(root), "--watch"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        stream = self.process.stderr
        assert stream is not None
        self.reader = threading.Thread(target=lambda: [self.lines.put(x) for x in stream])
        self.reader.start()

    def until(self, word: str) -> None:
        while word not in self.lines.get(timeout=120):
            pass

    def stop(self) -> None:
        self.process.send_signal(signal.SIGCONT)  # (a paused one would not end)
        self.process.terminate()
        self.process.wait(timeout=60)
        self.reader.join(timeout=60)  # the pipe's end: everything read
        assert self.process.stderr is not None
        self.process.stderr.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    Fleet().write(root)
    return root


@pytest.fixture
def watch(repo: Path) -> Iterator[Watching]:
    watching_process = Watching(repo)
    try:
        watching_process.until("watching for changes")
        yield watching_process
    finally:
        watching_process.stop()


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Count the fleets this process compiles (a one-shot render answered from a record: none)."""
    made: list[Path] = []
    real = pipeline.compile_fleet

    def counting(root: Path, *args: object, **kwargs: object) -> pipeline.Compiled:
        made.append(root)
        return real(root, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "compile_fleet", counting)
    return made


def _edit(root: Path) -> None:
    """Give tenant t0 3 GPUs instead of 1."""
    fleet = Fleet()
    fleet.apply(("quota", 2))
    fleet.write(root)


def _paused(watch: Watching) -> threading.Timer:
    """Stop the watch until a moment after the one-shot render has started: it then waits for
    the watch's run of the edit, which a small fleet renders before a render starts otherwise."""
    watch.process.send_signal(signal.SIGSTOP)
    timer = threading.Timer(0.5, watch.process.send_signal, (signal.SIGCONT,))
    timer.start()
    return timer


@pytest.mark.parametrize("check", [True, False])
def test_a_render_right_after_a_save_is_answered_from_the_watchs_run(
    repo: Path, watch: Watching, compiled: list[Path], check: bool
) -> None:
    timer = _paused(watch)
    _edit(repo)
    result = run("render", "--root", str(repo), *(["--check"] if check else []))
    timer.join()
    assert result.code == 0, result.stderr
    assert WAITED in result.stderr
    assert compiled == []  # the watch compiled it
    assert ("is up to date" if check else "(0 added, 0 changed, 0 removed)") in result.stderr
    alone = run("render", "--root", str(repo), "--check", "--no-cache")
    assert alone.code == 0, alone.stderr  # the output is this fleet's, rendered alone


def test_an_error_the_watch_found_is_shown_by_a_render_of_its_own(
    repo: Path, watch: Watching, compiled: list[Path]
) -> None:
    timer = _paused(watch)
    (repo / "tenants" / "t0.yaml").write_text("name: [t0\n")
    result = run("render", "--root", str(repo), "--check")
    timer.join()
    assert result.code == 1
    assert WAITED in result.stderr
    assert compiled == [repo]
    assert "t0.yaml:" in result.stderr and "error:" in result.stderr


def test_a_watch_that_ended_is_not_waited_for(repo: Path, compiled: list[Path]) -> None:
    assert run("render", "--root", str(repo)).code == 0
    ended = Watching(repo)
    ended.until("watching for changes")
    ended.stop()  # its lock file stays, unlocked
    _edit(repo)
    result = run("render", "--root", str(repo))
    assert result.code == 0, result.stderr
    assert WAITED not in result.stderr
    assert len(compiled) == 2


def _slot(repo: Path) -> tuple[Path, str]:
    home = store.cache_home()
    assert home is not None
    return home, store.slot(repo, repo / "output")


@contextlib.contextmanager
def _holder(repo: Path, setup: str) -> Iterator[None]:
    """Hold the output's watch lock in another process, doing `setup` with it (`held`), as a
    watch that never runs would."""
    home, slot = _slot(repo)
    code = (
        "import os, sys, time; from pathlib import Path; from gpuplan.cache import watching; "
        "held = watching.Held.take(Path(sys.argv[1]), sys.argv[2]); "
        f"{setup}; print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(home), slot], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert watching.running(home, slot)
        yield
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert not watching.running(home, slot)  # its lock went with it


def _renders_itself_soon(repo: Path, compiled: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A render after an edit waits, then renders itself well before WAIT_MOST."""
    monkeypatch.setattr(render_command, "SEEN_WITHIN", 0.2)
    _edit(repo)
    start = time.monotonic()
    result = run("render", "--root", str(repo))
    assert time.monotonic() - start < 60
    assert result.code == 0, result.stderr
    assert WAITED in result.stderr
    assert len(compiled) == 2


def test_a_watch_that_does_not_see_the_change_is_waited_for_its_interval_alone(
    repo: Path, compiled: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that holds the lock and waits, telling another input key, never runs: the
    render goes ahead once that watch's interval and SEEN_WITHIN have passed."""
    assert run("render", "--root", str(repo)).code == 0
    with _holder(repo, "held.running(0.05); held.waiting('another key', 0.05)"):
        _renders_itself_soon(repo, compiled, monkeypatch)


def test_a_watch_whose_state_cannot_be_read_is_not_waited_for_long(
    repo: Path, compiled: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is held, but the state file is gone (a watch that could not write it)."""
    assert run("render", "--root", str(repo)).code == 0
    with _holder(repo, "os.unlink(Path(sys.argv[1], sys.argv[2], watching.STATE))"):
        assert watching.state(*_slot(repo)) is None
        _renders_itself_soon(repo, compiled, monkeypatch)


def test_one_watch_of_an_output_holds_its_lock(repo: Path) -> None:
    home, slot = _slot(repo)
    first = watching.Held.take(home, slot)
    assert first is not None
    assert watching.Held.take(home, slot) is None  # a second watch: not the one waited for
    assert not watching.running(home, slot)  # never waiting for oneself
    first.running(1.0)
    told = watching.state(home, slot)
    assert told is not None and (told.pid, told.run, told.phase) == (os.getpid(), 1, "running")
    first.release()
    assert watching.state(home, slot) is None
    again = watching.Held.take(home, slot)
    assert again is not None
    again.release()


def test_a_watch_takes_its_lock_past_a_one_shot_renders_look(repo: Path) -> None:
    """A one-shot render's look holds the lock shared for an instant: a watch starting then
    still takes it."""
    import fcntl

    home, slot = _slot(repo)
    first = watching.Held.take(home, slot)
    assert first is not None
    first.release()
    look = os.open(home / slot / watching.LOCK, os.O_RDONLY)
    fcntl.flock(look, fcntl.LOCK_SH)
    threading.Timer(0.015, os.close, (look,)).start()  # the look ends
    again = watching.Held.take(home, slot)
    assert again is not None
    again.release()
