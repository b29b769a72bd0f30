"""GPUPLAN_TIMINGS=1: where a render's time goes, stage by stage (benchmarks/fleet.py reads it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.synth import write_fleet
from tests.conftest import PROJECT

LINE = re.compile(r"^timing: (.+): (?:([0-9.]+) s wall, )?([0-9.]+) s CPU$")


def _render(root: Path, *args: str, timings: bool) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT), GPUPLAN_CACHE_DIR=str(root / "cache"))
    env.pop("GPUPLAN_TIMINGS", None)
    if timings:
        env["GPUPLAN_TIMINGS"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "gpuplan", "render", "--root", str(root), *args],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [line for line in done.stderr.splitlines() if line.startswith("timing:")]


def test_each_stage_of_a_render_is_timed_and_the_stages_add_up_to_less_than_the_process(
    tmp_path: Path,
) -> None:
    root = write_fleet(tmp_path / "repo", 1, 3, 2)
    lines = _render(root, timings=True)
    found = {m.group(1): float(m.group(3)) for m in map(LINE.match, lines) if m}
    assert len(found) == len(lines), lines  # every line has the documented shape
    stages = [
        "render cache: input key and record", "read inputs", "build the model", "checks", "emit",
        "own manifests and patches", "validate", "scan the output", "serialize",
        "compare with the output", "write (staged tree, swapped in)",
        "render cache: save the record", "start-up, imports and the rest", "process",
    ]  # fmt: skip
    assert list(found) == stages
    staged = sum(
        v for k, v in found.items() if k not in ("process", "start-up, imports and the rest")
    )
    assert 0 < staged <= found["process"]
    assert abs(found["process"] - staged - found["start-up, imports and the rest"]) < 0.01
    # Answered from the cache: no compile stage runs at all.
    cached = [LINE.match(line).group(1) for line in _render(root, "--check", timings=True)]  # type: ignore[union-attr]
    assert cached[:2] == [
        "render cache: input key and record",
        "compare the output with the record",
    ]
    assert "emit" not in cached


def test_nothing_is_timed_unless_asked(tmp_path: Path) -> None:
    root = write_fleet(tmp_path / "repo", 1, 3, 2)
    assert _render(root, timings=False) == []
