"""Where a command's time goes, stage by stage: with GPUPLAN_TIMINGS=1 each stage's wall and CPU
seconds are printed to stderr when the process exits, with the process's whole CPU time.

The rest of that CPU time (interpreter start-up, imports, exit) is printed as its own line.
benchmarks/fleet.py reads these lines to show what limits a render; nothing else depends on them.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "GPUPLAN_TIMINGS"
PREFIX = "timing: "

_stages: list[tuple[str, float, float]] = []


def enabled() -> bool:
    """Tell whether stage timings are asked for (GPUPLAN_TIMINGS=1)."""
    return os.environ.get(ENV) == "1"


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as one stage (nothing is measured unless timings are enabled)."""
    if not enabled():
        yield
        return
    if not _stages:
        atexit.register(_report)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        _stages.append((name, time.perf_counter() - wall, time.process_time() - cpu))


def report_run() -> None:
    """Print the stages timed so far and forget them (render --watch: one block per run)."""
    if not _stages:
        return
    wall = sum(w for _, w, _ in _stages)
    cpu = sum(c for _, _, c in _stages)
    _write([*_stages, ("this run's stages", wall, cpu)])
    _stages.clear()
    _reported.append(cpu)


_reported: list[float] = []  # CPU of the stages report_run printed already


def _report() -> None:
    times = os.times()
    total = times.user + times.system
    staged = sum(cpu for _, _, cpu in _stages) + sum(_reported)
    _write(_stages)
    sys.stderr.write(
        f"{PREFIX}start-up, imports and the rest: {total - staged:.3f} s CPU\n"
        f"{PREFIX}process: {total:.3f} s CPU\n"
    )


def _write(stages: list[tuple[str, float, float]]) -> None:
    """Print one line per stage: its name, wall and CPU seconds."""
    sys.stderr.write("".join(f"{PREFIX}{n}: {w:.3f} s wall, {c:.3f} s CPU\n" for n, w, c in stages))
