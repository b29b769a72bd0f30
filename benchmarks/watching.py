"""The one-tenant change in a long-running `gpuplan render --watch` (benchmarks/fleet.py uses it).

The latency of one edit is the wall time from the moment the edited tenant file is written to
the moment the watch prints its "rendered ..." line: the output is swapped in by then, and the
old tree's removal and the cache record, which wait until that line is printed, are not in it.
The watch runs with its default interval (1 s), as a user starts it: a save ends its wait at once
(inotify), and the figures include that reaction.

A hurried edit is saved the moment the edit before it is rendered, while the watch still does
the work it put off (the old tree's removal, the spare copy's catching up, the record): its
latency includes the rest of that work, as it does for someone who saves twice in quick
succession.
"""

from __future__ import annotations

import queue
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Watched:
    """What the edits in one running watch measured."""

    latencies: list[float] = field(default_factory=list)  # each edit's, wall seconds
    runs: list[dict[str, float]] = field(default_factory=list)  # each edit's run: stage -> CPU s
    results: list[str] = field(default_factory=list)  # each edit's "rendered ..." line
    hurried: list[float] = field(default_factory=list)  # each second edit saved at once
    beside: list[float] = field(default_factory=list)  # each one-shot render beside the watch


def watch_edits(
    command: list[str],
    env: dict[str, str],
    edits: list[Callable[[], None]],
    hurried: Sequence[tuple[Callable[[], None], Callable[[], None]]] = (),
    beside: Sequence[Callable[[], None]] = (),
) -> Watched:
    """Start the watch, wait for its first run, then apply each edit and time its run.

    Measures each edit's latency (wall seconds), the CPU seconds of each stage of its run
    (GPUPLAN_TIMINGS=1 prints them after the run; "this run's stages" is their sum) and its
    "rendered ..." line (how many files it added, changed and removed); then, for each pair of
    `hurried` edits, the latency of the second, saved as soon as the first is rendered; then for
    each edit `beside`, the wall time from the save to the end of a one-shot `command` started at
    once (it waits for the watch's run and answers from its record).
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
            end, result = until("rendered ")
            watched.latencies.append(end - start)
            watched.results.append(result)
            until("this run's stages", stages)  # the run's stages follow its result
            until("watching for changes")  # what waited until the result was printed
            watched.runs.append(stages)
        for first, second in hurried:
            first()
            start, _ = until("rendered ")
            second()
            end, _ = until("rendered ")  # (the first's put-off work and its line come before)
            watched.hurried.append(end - start)
            until("watching for changes")
        for edit in beside:
            start = time.perf_counter()
            edit()
            subprocess.run(command, env=env, capture_output=True, check=True)
            watched.beside.append(time.perf_counter() - start)
            until("watching for changes")
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
