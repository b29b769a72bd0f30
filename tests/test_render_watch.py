"""`gpuplan render --watch`: one process renders again after each change of an input file.

Each test runs the real command in a process of its own and talks to it as a user does: it
edits input files, waits for the line that ends a run, and reads output/. Each run's output and
findings must be a cold render's of the same inputs; a broken edit leaves output/ as it was and
the next good one renders; the last run's record answers a later `render --check`.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.runtime.watch import WATCHING
from tests.conftest import copy_example, run, snapshot
from tests.test_cache import Fleet

EDITS = st.lists(
    st.tuples(st.sampled_from(["quota", "cohort", "add", "remove", "pools"]), st.integers(0, 20)),
    min_size=1,
    max_size=3,
)
WAIT = 60.0  # seconds a run may take on a loaded machine before the test gives up


class Watcher:
    """A running `gpuplan render --watch` of a repository, read line by line."""

    def __init__(self, root: Path, cache: Path) -> None:
        env = {**os.environ, "GPUPLAN_CACHE_DIR": str(cache)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gpuplan", "render", "--root", str(root), "--watch"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        self.buffer = b""

    def run_ended(self) -> str:
        """Return what the process printed up to the end of its next run."""
        assert self.process.stderr is not None
        end = time.monotonic() + WAIT
        marker = f"{WATCHING}\n".encode()
        while marker not in self.buffer:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.process.stderr], [], [], max(left, 0))
            if not ready:
                self.stop()
                raise AssertionError(f"no run ended within {WAIT} s: {self.buffer.decode()}")
            chunk = os.read(self.process.stderr.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the watch ended: {self.buffer.decode()}")
            self.buffer += chunk
        text, _, self.buffer = self.buffer.partition(marker)
        return text.decode()

    def stop(self) -> int:
        """Stop the watch as ^C does from a terminal's process group (SIGTERM here); return its code."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=WAIT)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code


def findings(stderr: str) -> list[str]:
    """Return a run's findings: every line but the one that says what was written."""
    return [line for line in stderr.splitlines() if not line.startswith("rendered ")]


def cold(fleet: Fleet, root: Path) -> tuple[int, list[str], dict[str, bytes]]:
    """Render the same inputs one-shot in a folder of their own, without the cache."""
    fleet.write(root)
    done = run("render", "--root", str(root), "--no-cache")
    return done.code, findings(done.stderr), snapshot(root / "output")


def edit_live(fleet: Fleet, live: Path, edit: tuple[str, int]) -> None:
    """Apply an edit to the watched repository's files, as an editor's save does."""
    fleet.apply(edit)
    fleet.write(live)


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_each_run_equals_a_cold_render_of_the_same_inputs(
    edits: list[tuple[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.mktemp("watch")
    fleet, live = Fleet(), base / "live"
    fleet.write(live)
    watcher = Watcher(live, base / "cache")
    try:
        good: dict[str, bytes] = {}
        for step, edit in enumerate([None, *edits]):
            if edit is not None:
                edit_live(fleet, live, edit)
            shown = watcher.run_ended()
            code, expected, files = cold(fleet, base / f"cold{step}")
            good = files if code == 0 else good  # a failed render writes nothing
            assert findings(shown) == expected, (edits, step)
            assert snapshot(live / "output") == good, (edits, step)
    finally:
        code = watcher.stop()
    assert code == 143  # SIGTERM: the exit code the docs give
    assert not [p for p in live.parent.glob("live/.*") if ".gpuplan-" in p.name]


def test_a_broken_edit_leaves_the_output_and_the_next_good_one_renders(tmp_path: Path) -> None:
    live = copy_example(tmp_path / "live")
    tenant = next(iter(sorted((live / "tenants").glob("*.yaml"))))
    text = tenant.read_text()
    watcher = Watcher(live, tmp_path / "cache")
    try:
        assert "error" not in watcher.run_ended()
        before = snapshot(live / "output")
        tenant.write_text(text + "\nallocations: [\n")  # not YAML
        shown = watcher.run_ended()
        assert f"tenants/{tenant.name}:" in shown and "error" in shown
        assert snapshot(live / "output") == before
        tenant.write_text(text + "\n# saved again\n")
        shown = watcher.run_ended()
        assert "error" not in shown
        assert snapshot(live / "output") == before  # a comment changes no object
    finally:
        watcher.stop()


def test_the_last_run_is_recorded_for_a_later_check(tmp_path: Path) -> None:
    fleet, live = Fleet(), tmp_path / "live"
    fleet.write(live)
    watcher = Watcher(live, tmp_path / "cache")
    try:
        watcher.run_ended()
        edit_live(fleet, live, ("quota", 3))
        watcher.run_ended()
    finally:
        watcher.stop()
    check = subprocess.run(
        [sys.executable, "-m", "gpuplan", "render", "--root", str(live), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "GPUPLAN_CACHE_DIR": str(tmp_path / "cache")},
        check=False,
    )
    assert check.returncode == 0 and "up to date" in check.stderr, check.stderr
    assert snapshot(live / "output") == cold(fleet, tmp_path / "cold")[2]


def test_a_removed_tenant_takes_its_folders_with_it(tmp_path: Path) -> None:
    live = copy_example(tmp_path / "live")
    watcher = Watcher(live, tmp_path / "cache")
    try:
        watcher.run_ended()
        tenants = sorted((live / "tenants").glob("*.yaml"))
        gone = tenants[-1]
        namespaces = [
            p.name for p in (live / "output").glob("*/namespaces/*") if gone.stem in p.name
        ]
        shutil.move(gone, tmp_path / gone.name)
        watcher.run_ended()
    finally:
        watcher.stop()
    written = "\n".join(snapshot(live / "output"))
    assert namespaces and not [n for n in namespaces if f"/{n}/" in written]


def test_watch_and_check_do_not_go_together(tmp_path: Path) -> None:
    result = run("render", "--root", str(tmp_path), "--watch", "--check")
    assert result.code == 2
    assert "--watch writes the output" in result.stderr
