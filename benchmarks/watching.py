"""One-tenant saves in a long-running `gpuplan render --watch` (benchmarks/fleet.py uses it).

The latency of one save is the wall time from the moment the edited tenant file is written to
the moment the watch prints the line that ends its run. The watch runs with its default
interval (1 s), as a user starts it: a save ends its wait at once (inotify), and the figures
include that reaction. Each run is the plain one-shot render (gpuplan.runtime.watch), so a save
costs what a cached render of the change costs, less the process's start-up and imports.
"""

from __future__ import annotations

import queue
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Watched:
    """What the saves in one running watch measured."""

    latencies: list[float] = field(default_factory=list)  # each save's, wall seconds
    runs: list[dict[str, float]] = field(default_factory=list)  # each save's run: stage -> CPU s
    results: list[str] = field(default_factory=list)  # each save's "rendered ..." line


def watch_edits(
    command: list[str], env: dict[str, str], edits: list[Callable[[], None]]
) -> Watched:
    """Start the watch, wait for its first run, then apply each edit and time its run.

    Measures each edit's latency (wall seconds), the CPU seconds of each stage of its run
    (GPUPLAN_TIMINGS=1 prints them after the run; "this run's stages" is their sum) and its
    "rendered ..." line (how many files it added, changed and removed).
    """
    child = subprocess.Popen(
        [*command, "--watch"],
        env={**env, "GPUPLAN_TIMINGS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert child.stderr is not None
    stream = child.stderr

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def until(word: str, stages: dict[str, float] | None = None) -> tuple[float, str]:
        while True:
            try:
                line = lines.get(timeout=300)
            except queue.Empty:
                child.kill()
                raise SystemExit("render --watch stopped answering") from None
            if stages is not None and line.startswith("timing: ") and "s CPU" in line:
                name, _, figures = line.removeprefix("timing: ").rpartition(": ")
                stages[name] = float(figures.split()[-3])
            if word in line:
                return time.perf_counter(), line.strip()

    watched = Watched()
    try:
        until("watching for changes")
        for edit in edits:
            stages: dict[str, float] = {}
            start = time.perf_counter()
            edit()
            _, result = until("rendered ")
            end, _ = until("watching for changes", stages)
            watched.latencies.append(end - start)
            watched.results.append(result)
            watched.runs.append(stages)
    finally:
        child.terminate()
        child.wait()
    return watched


def median_run(
    latencies: list[float], runs: list[dict[str, float]]
) -> tuple[float, dict[str, float]]:
    """Return the median latency and the stages of the run that had it."""
    middle = statistics.median_low(latencies)
    return middle, runs[latencies.index(middle)]
