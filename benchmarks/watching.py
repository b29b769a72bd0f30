"""The one-tenant change in a long-running `gpuplan render --watch` (benchmarks/fleet.py uses it).

The latency of one edit is the wall time from the moment the edited tenant file is written to
the moment the watch prints its "rendered ..." line: the output is swapped in by then, and the
old tree's removal and the cache record, which wait until that line is printed, are not in it.
The watch polls every 0.05 s, so up to 0.05 s of each figure is the wait for the next look.
"""

from __future__ import annotations

import queue
import statistics
import subprocess
import threading
import time
from collections.abc import Callable


def watch_edits(
    command: list[str],
    env: dict[str, str],
    edits: list[Callable[[], None]],
) -> tuple[list[float], list[dict[str, float]], list[str]]:
    """Start the watch, wait for its first run, then apply each edit and time its run.

    Returns each edit's latency (wall seconds), the CPU seconds of each stage of its run
    (GPUPLAN_TIMINGS=1 prints them after the run; "this run's stages" is their sum) and its
    "rendered ..." line (how many files it added, changed and removed).
    """
    child = subprocess.Popen(
        [*command, "--watch", "--interval", "0.05"],
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

    latencies, runs, results = [], [], []
    try:
        until("watching for changes")
        for edit in edits:
            stages: dict[str, float] = {}
            start = time.perf_counter()
            edit()
            end, result = until("rendered ")
            latencies.append(end - start)
            results.append(result)
            until("this run's stages", stages)  # the run's stages follow its result
            until("watching for changes")  # what waited until the result was printed
            runs.append(stages)
    finally:
        child.terminate()
        child.wait()
    return latencies, runs, results


def median_run(
    latencies: list[float], runs: list[dict[str, float]]
) -> tuple[float, dict[str, float]]:
    """Return the median latency and the stages of the run that had it."""
    middle = statistics.median_low(latencies)
    return middle, runs[latencies.index(middle)]
