"""`gpuplan render --watch`: one process renders again after each change of an input file.

Each run's output/ must equal a cold render's of the same inputs, after any sequence of edits
(the small fleet and edits of tests/test_cache.py); an input file that did not change is read and
validated once; a broken edit leaves output/ as it was and the next good one renders; and when the
watch ends, the render it recorded answers a later `render --check` without compiling.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import load
from gpuplan.commands import watch
from tests.conftest import run, snapshot
from tests.test_cache import Fleet

EDITS = st.lists(
    st.tuples(st.sampled_from(["quota", "cohort", "add", "remove", "pools"]), st.integers(0, 20)),
    min_size=1,
    max_size=4,
)


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(home))
    return home


_tick = [1_700_000_000_000_000_000]


def _touch_all(root: Path) -> None:
    """Give every input file a new mtime: a rewrite in one clock tick may keep size and mtime."""
    _tick[0] += 1_000_000_000
    for path in sorted((root / "tenants").glob("*.yaml")) + sorted((root / "clusters").glob("*")):
        os.utime(path, ns=(_tick[0], _tick[0]))


def _between_runs(monkeypatch: pytest.MonkeyPatch, steps: list[Callable[[], None]]) -> None:
    """Instead of sleeping between looks, do the next step (each look after the last: nothing)."""
    pending = list(steps)

    def sleep(seconds: float) -> None:
        if pending:
            pending.pop(0)()

    monkeypatch.setattr(watch.time, "sleep", sleep)


def _watch(root: Path, looks: int) -> tuple[int, str]:
    result = run(
        "render", "--root", str(root), "--watch", "--interval", "0.05", "--max-cycles", str(looks)
    )
    return result.code, result.stderr


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_each_run_equals_a_cold_render_of_the_same_inputs(
    edits: list[tuple[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = tmp_path_factory.mktemp("watch")
    live, fleet = base / "live", Fleet()
    fleet.write(live)
    compared: list[int] = []

    def compare_then(edit: tuple[str, int] | None) -> Callable[[], None]:
        def step() -> None:
            cold = base / f"cold{len(compared)}"
            fleet.write(cold)
            done = run("render", "--root", str(cold), "--no-cache")
            assert done.code == 0, done.stderr
            assert snapshot(live / "output") == snapshot(cold / "output"), edits
            compared.append(1)
            if edit is not None:
                fleet.apply(edit)
                fleet.write(live)
                _touch_all(live)

        return step

    _between_runs(monkeypatch, [compare_then(e) for e in edits] + [compare_then(None)])
    code, stderr = _watch(live, len(edits) + 2)
    assert code == 0, stderr
    assert len(compared) == len(edits) + 1
    assert stderr.count(watch.WATCHING) == len(edits) + 1  # a run after every edit
    assert not [p for p in base.iterdir() if ".gpuplan-" in p.name]  # the old trees are gone


def test_an_unchanged_input_file_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, fleet = tmp_path / "repo", Fleet()
    fleet.tenants["t2"] = (1, "other")
    fleet.write(root)
    read: list[str] = []
    real = load._screen_one

    def counting(shown: str, raw: bytes) -> object:
        read.append(shown)
        return real(shown, raw)

    def edit() -> None:
        text = (root / "tenants/t1.yaml").read_text().replace("gpus: 2", "gpus: 3")
        (root / "tenants/t1.yaml").write_text(text)
        _touch_all(root)

    monkeypatch.setattr(load, "_screen_one", counting)
    _between_runs(monkeypatch, [edit])
    code, stderr = _watch(root, 2)
    assert code == 0, stderr
    assert sorted(read) == sorted(
        ["clusters/c00.yaml", "tenants/t0.yaml", "tenants/t1.yaml", "tenants/t2.yaml"]
        + ["tenants/t1.yaml"]  # the second run reads only the edited file
    )
    assert 'nominalQuota: "3"' in (root / "output/c00/kueue/clusterqueue-t1.yaml").read_text()


def test_a_broken_edit_leaves_the_output_and_the_next_good_one_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    tenant = root / "tenants/t1.yaml"
    good = tenant.read_text()
    rendered: dict[str, bytes] = {}

    def break_it() -> None:
        rendered.update(snapshot(root / "output"))
        tenant.write_text(good.replace("{pool: pool-01", "{pool: pool-09"))
        _touch_all(root)

    def output_kept_then_fix() -> None:
        assert snapshot(root / "output") == rendered
        tenant.write_text(good.replace("gpus: 2", "gpus: 1"))
        _touch_all(root)

    _between_runs(monkeypatch, [break_it, output_kept_then_fix])
    code, stderr = _watch(root, 3)
    assert (
        "tenants/t1.yaml:9:16: error: allocations[0].quotas[1].pool: cluster c00 has no pool "
        "'pool-09' (did you mean 'pool-01'?) [resolve]" in stderr
    )
    assert code == 0  # the last run saw the fixed file
    assert snapshot(root / "output") != rendered
    assert stderr.count("rendered") == 2


def test_the_last_run_is_recorded_for_a_later_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, fleet = tmp_path / "repo", Fleet()
    fleet.write(root)

    def edit() -> None:
        fleet.apply(("quota", 1))
        fleet.write(root)
        _touch_all(root)

    _between_runs(monkeypatch, [edit])
    code, stderr = _watch(root, 2)
    assert code == 0, stderr
    import gpuplan.cache.output
    import gpuplan.pipeline

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("not answered by the one-pass comparison with the record")

    monkeypatch.setattr(gpuplan.pipeline, "compile_fleet", fail)
    monkeypatch.setattr(gpuplan.cache.output, "changes", fail)  # the slower, wording comparison
    check = run("render", "--root", str(root), "--check")
    assert check.code == 0, check.stderr
    assert "up to date" in check.stderr


def test_watch_and_check_do_not_go_together(tmp_path: Path) -> None:
    Fleet().write(tmp_path)
    result = run("render", "--root", str(tmp_path), "--watch", "--check", "--max-cycles", "1")
    assert result.code == 2
    assert "--watch writes the output: use it without --check" in result.stderr
