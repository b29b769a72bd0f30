"""`gpuplan render --watch`: one process renders again after each change of an input file.

Each run's output/ must equal a cold render's of the same inputs, after any sequence of edits
(the small fleet and edits of tests/test_cache.py); an input file that did not change is read and
validated once; a broken edit leaves output/ as it was and the next good one renders; and when the
watch ends, the render it recorded answers a later `render --check` without compiling.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import load, spare, warm
from gpuplan.commands import watch
from gpuplan.staging import SPARE
from tests.conftest import Run, run, snapshot
from tests.test_cache import Fleet

pytestmark = pytest.mark.usefixtures("cache_home")  # a render cache of each test's own

EDITS = st.lists(
    st.tuples(st.sampled_from(["quota", "cohort", "add", "remove", "pools"]), st.integers(0, 20)),
    min_size=1,
    max_size=4,
)


_tick = [1_700_000_000_000_000_000]


def touch_all(root: Path) -> None:
    """Give every input file a new mtime: a rewrite in one clock tick may keep size and mtime."""
    _tick[0] += 1_000_000_000
    for folder in ("clusters", "tenants", "extra", "patches"):  # never output/ or its copy
        for path in sorted((root / folder).rglob("*")):
            os.utime(path, ns=(_tick[0], _tick[0]))


def between_runs(monkeypatch: pytest.MonkeyPatch, steps: list[Callable[[], None]]) -> None:
    """Instead of sleeping between looks, do the next step (each look after the last: nothing)."""
    pending = list(steps)

    def sleep(wake: object, seconds: float) -> None:
        if pending:
            pending.pop(0)()

    monkeypatch.setattr(watch, "pause", sleep)


def watch_for(root: Path, looks: int) -> tuple[int, str]:
    result = run(
        "render", "--root", str(root), "--watch", "--interval", "0.05", "--max-cycles", str(looks)
    )
    return result.code, result.stderr


def cold_render(root: Path) -> Run:
    """Render a repository one-shot, as a new process would, even from inside a watch's run.

    The watch's process keeps results (gpuplan.warm), and a render in it would use them: the
    comparison would prove nothing. Outside `kept()` nothing is kept or used.
    """
    on = warm._state["on"]
    warm._state["on"] = False
    try:
        return run("render", "--root", str(root), "--no-cache")
    finally:
        warm._state["on"] = on


class Editable(Protocol):
    """A fleet's inputs, edited step by step (tests.test_cache.Fleet, tests.test_watch_incremental.Fleet)."""

    def write(self, root: Path) -> None: ...

    def apply(self, edit: tuple[str, int]) -> None: ...


SHOWN = re.compile(r"^(rendered \d+ files|" + re.escape(watch.WATCHING) + ")")


def findings(stderr: str) -> list[str]:
    """Return the lines of a run's findings (not the line of what was written, which names the folder)."""
    return [line for line in stderr.splitlines() if not SHOWN.match(line)]


def hold_to_cold(
    fleet: Editable, edits: list[tuple[str, int]], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watch the fleet through the edits: after each run, its findings (text and order) must be a
    cold render's of the same inputs, and its output that render's, or after errors the output of
    the last run without any (a failed render writes nothing)."""
    live = base / "live"
    fleet.write(live)
    cold_findings: list[list[str]] = []
    codes: list[int] = []
    good: list[dict[str, bytes]] = [{}]

    def compare_then(edit: tuple[str, int] | None) -> Callable[[], None]:
        def step() -> None:
            cold = base / f"cold{len(cold_findings)}"
            fleet.write(cold)
            done = cold_render(cold)
            if done.code == 0:
                good[0] = snapshot(cold / "output")
            assert snapshot(live / "output") == good[0], edits
            cold_findings.append(findings(done.stderr))
            codes.append(done.code)
            if edit is not None:
                fleet.apply(edit)
                fleet.write(live)
                touch_all(live)

        return step

    between_runs(monkeypatch, [compare_then(e) for e in edits] + [compare_then(None)])
    code, stderr = watch_for(live, len(edits) + 2)
    assert codes[0] == 0, cold_findings[0]  # (a fleet that renders to begin with)
    assert code == codes[-1], stderr
    assert len(cold_findings) == len(edits) + 1
    runs = stderr.split(watch.WATCHING + "\n")  # a run after every edit, each line once
    assert runs[-1] == "" and [findings(r) for r in runs[:-1]] == cold_findings, edits
    assert not [p for p in base.glob("*/.*") if ".gpuplan-" in p.name]  # no tree left beside


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
    hold_to_cold(Fleet(), edits, tmp_path_factory.mktemp("watch"), monkeypatch)


def test_an_unchanged_input_file_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path, third_tenant=True)[0]
    read: list[str] = []
    real = load._screen_one

    def counting(shown: str, raw: bytes) -> object:
        read.append(shown)
        return real(shown, raw)

    def edit() -> None:
        text = (root / "tenants/t1.yaml").read_text().replace("gpus: 2", "gpus: 3")
        (root / "tenants/t1.yaml").write_text(text)
        touch_all(root)

    monkeypatch.setattr(load, "_screen_one", counting)
    between_runs(monkeypatch, [edit])
    code, stderr = watch_for(root, 2)
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
        touch_all(root)

    def output_kept_then_fix() -> None:
        assert snapshot(root / "output") == rendered
        tenant.write_text(good.replace("gpus: 2", "gpus: 1"))
        touch_all(root)

    between_runs(monkeypatch, [break_it, output_kept_then_fix])
    code, stderr = watch_for(root, 3)
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
    root, fleet = _repo(tmp_path)

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2))])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert "(0 added, 3 changed, 0 removed)" in stderr
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


def _repo(tmp_path: Path, third_tenant: bool = False) -> tuple[Path, Fleet]:
    """Write the small fleet of tests/test_cache.py (optionally with t2 in the other cohort)."""
    root, fleet = tmp_path / "repo", Fleet()
    if third_tenant:
        fleet.tenants["t2"] = (1, "other")
    fleet.write(root)
    return root, fleet


def _edit(
    root: Path, fleet: Fleet, change: tuple[str, int], before: Callable[[], None] = lambda: None
) -> Callable[[], None]:
    """Return a step between runs: `before`, then one edit of the fleet's inputs."""

    def step() -> None:
        before()
        fleet.apply(change)
        fleet.write(root)
        touch_all(root)

    return step


def _cold(tmp_path: Path, fleet: Fleet) -> dict[str, bytes]:
    """Return the output of a cold one-shot render of the fleet's inputs as they are now."""
    fleet.write(tmp_path / "cold")
    done = cold_render(tmp_path / "cold")
    assert done.code == 0, done.stderr
    return snapshot(tmp_path / "cold/output")


def _spy_spare(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """Record for each write whether the watch had a copy of the output, and whether it was used."""
    taken: list[tuple[bool, bool]] = []
    real = spare.take

    def take(*args: Any) -> spare.Spare | None:
        had = bool(spare._spares)
        got = real(*args)
        taken.append((had, got is not None))
        return got

    monkeypatch.setattr(spare, "take", take)
    return taken


def _spares(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if ".gpuplan-" in p.name)


def test_a_change_patches_the_copy_of_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, fleet = _repo(tmp_path)
    taken = _spy_spare(monkeypatch)
    seen: list[list[str]] = []

    def look() -> None:
        seen.append(_spares(root))

    edits = [("quota", 2), ("pools", 0), ("add", 3)]
    between_runs(monkeypatch, [_edit(root, fleet, change, look) for change in edits])
    code, stderr = watch_for(root, 4)
    assert code == 0, stderr
    assert taken == [(False, False)] + [(True, True)] * 3  # each write after the first patched it
    assert seen == [[f".output{SPARE}{os.getpid()}"]] * 3  # kept between runs
    assert _spares(root) == []  # and removed when the watch ends
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


@pytest.mark.parametrize("where", ["output", "copy"])
def test_a_copy_that_may_differ_from_the_output_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A file added to output/ (a user's own) or into the copy between runs: a fresh staging tree."""
    root, fleet = _repo(tmp_path)
    taken = _spy_spare(monkeypatch)

    def tamper() -> None:
        folder = root / "output" if where == "output" else root / f".output{SPARE}{os.getpid()}"
        (folder / "c00/notes.txt").write_text("mine\n")

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), tamper)])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert taken == [(False, False), (True, False)]
    assert (root / "output/c00/notes.txt").exists() == (where == "output")  # never from the copy
    assert _spares(root) == []
    ours = snapshot(root / "output")
    ours.pop("c00/notes.txt", None)
    assert ours == _cold(tmp_path, fleet)


@pytest.mark.parametrize("tampered", [False, True])
def test_the_record_holds_each_files_lstat_whichever_way_it_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tampered: bool
) -> None:
    """The watch saves its record before the spare's upkeep, and after the removal of an old tree
    that shares the output's inodes (a write that could not use the spare: `tampered`): each
    recorded signature is the file's lstat once the watch is done."""
    from gpuplan.cache import output
    from gpuplan.cache.record import RenderCache
    from gpuplan.safefs import signature

    root, fleet = _repo(tmp_path)
    taken = _spy_spare(monkeypatch)
    looked: list[int] = []
    real = output.stat_files
    monkeypatch.setattr(output, "stat_files", lambda *a: looked.append(1) or real(*a))

    def tamper() -> None:
        if tampered:
            (root / f".output{SPARE}{os.getpid()}" / "c00/notes.txt").write_text("mine\n")

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), tamper)])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert taken[-1] == (True, not tampered)
    assert len(looked) == (2 if tampered else 1)  # a patched spare's write: signatures as written
    cache = RenderCache.open(root, None, None)
    assert cache is not None and cache.hit
    on_disk = {p: signature(os.lstat(root / "output" / p)) for p in cache.files}
    assert {p: e.signature for p, e in cache.files.items()} == on_disk


@pytest.mark.parametrize("what", ["add", "edit", "chmod"])
def test_an_output_changed_during_a_run_is_scanned_again_before_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """The run's scan is reused at write time only when the output is still as the copy recorded:
    a user's file added (or a file edited, or a folder made read-only) after that scan is seen."""
    from gpuplan.commands import render as render_command

    root, fleet = _repo(tmp_path)
    taken = _spy_spare(monkeypatch)
    real = render_command.compare
    done: list[bool] = []

    def compare_then_change(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if len(done) == 1:  # the second run, after its scan
            if what == "add":
                (root / "output/c00/notes.txt").write_text("mine\n")
            elif what == "chmod":
                os.chmod(root / "output/c00/kueue", 0o555)  # a folder made read-only
            else:
                target = root / "output/c00/kustomization.yaml"
                target.write_text(target.read_text() + "# edited\n")
        done.append(True)
        return found

    monkeypatch.setattr(render_command, "compare", compare_then_change)
    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2))])
    code, stderr = watch_for(root, 2)
    if what == "chmod":  # refused as a one-shot render refuses it
        os.chmod(root / "output/c00/kueue", 0o755)
        assert code == 1 and "c00/kueue is read-only" in stderr, stderr
        assert taken == [(False, False)]  # refused before the copy was looked at
        return
    assert code == 0, stderr
    assert taken == [(False, False), (True, False)]  # the copy no longer matched: not used
    ours = snapshot(root / "output")
    if what == "add":
        assert ours.pop("c00/notes.txt") == b"mine\n"
        assert ours == _cold(tmp_path, fleet)
    else:  # not rendered again (its object is unchanged), but carried over as it is now
        assert ours["c00/kustomization.yaml"].endswith(b"# edited\n")


def test_a_file_edited_in_place_in_the_output_is_rendered_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit in place changes the file's lstat (its ctime): the copy is not used."""
    root, fleet = _repo(tmp_path)
    taken = _spy_spare(monkeypatch)
    target = root / "output/c00/kueue/clusterqueue-t0.yaml"

    def edit_output() -> None:
        text = target.read_text()
        with open(target, "r+") as handle:  # in place: the same inode as the copy's file
            handle.write(text.replace("kind", "KIND", 1))

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), edit_output)])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert taken == [(False, False), (True, False)]
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def _inodes_of(folder: Path) -> dict[str, os.stat_result]:
    return {
        p.relative_to(folder).as_posix(): p.lstat()
        for p in folder.rglob("*")
        if p.is_file() and p.name != ".gitignore"
    }


def test_the_copy_owns_gpuplans_files_and_links_a_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of gpuplan's files has an inode of its own in the copy (rewritten in place by the next
    patch, never reachable from the output); a user's file is the same inode on both sides."""
    root, fleet = _repo(tmp_path)
    mine = root / "output/c00/notes.txt"
    copy = root / f".output{SPARE}{os.getpid()}"
    seen: list[tuple[dict[str, os.stat_result], dict[str, os.stat_result]]] = []

    def look() -> None:
        seen.append((_inodes_of(root / "output"), _inodes_of(copy)))

    def add_mine() -> None:
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_text("a user's own file\n")
        touch_all(root)

    # the user's file makes the next write stage a fresh tree, after which a new copy is made
    steps = [add_mine, _edit(root, fleet, ("quota", 2))]
    steps += [_edit(root, fleet, change, look) for change in [("quota", 0), ("quota", 2)]]
    between_runs(monkeypatch, steps)
    code, stderr = watch_for(root, 5)
    assert code == 0, stderr
    (live, spare_files), (live_after, _) = seen
    assert set(live) == set(spare_files)
    for path, stat in live.items():
        ours = path != "c00/notes.txt"
        assert (spare_files[path].st_ino != stat.st_ino) == ours, path
        assert spare_files[path].st_nlink == (1 if ours else 2), path
    changed = [p for p in live if live_after[p].st_mtime_ns != live[p].st_mtime_ns]
    assert changed  # the quota edit rewrote files: in place, in the copy's own inodes
    assert all(live_after[p].st_ino == spare_files[p].st_ino for p in changed)
    assert live_after["c00/notes.txt"].st_ino == live["c00/notes.txt"].st_ino
    assert snapshot(root / "output") == {
        **_cold(tmp_path, fleet),
        "c00/notes.txt": b"a user's own file\n",
    }


def test_a_write_that_fails_while_patching_the_copy_leaves_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's files are its own: a patch stopped halfway changes nothing in the output."""
    from gpuplan import write

    root, fleet = _repo(tmp_path)
    before: dict[str, bytes] = {}
    real_new, real_over = write._write_new, spare._overwrite
    written: list[str] = []

    def full() -> None:
        if len(written) == 1:
            raise OSError(28, "No space left on device")
        written.append("one")

    def failing_new(dir_fd: int, name: str, data: bytes) -> None:
        full()
        real_new(dir_fd, name, data)

    def failing_over(fd: int, data: bytes) -> None:
        full()
        real_over(fd, data)

    def fail_from_now() -> None:
        before.update(snapshot(root / "output"))
        monkeypatch.setattr(write, "_write_new", failing_new)
        monkeypatch.setattr(spare, "_overwrite", failing_over)

    taken = _spy_spare(monkeypatch)  # t0's quota: both ClusterQueues and its ResourceQuota change
    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), fail_from_now)])
    code, stderr = watch_for(root, 2)
    assert taken == [(False, False), (True, True)]
    assert code == 1
    assert "No space left on device; the old output is unchanged" in stderr
    assert snapshot(root / "output") == before
    assert _spares(root) == []


def test_git_does_not_see_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`git add -A` beside a running watch must not commit its copy of the output."""
    root = _repo(tmp_path)[0]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    untracked: list[list[str]] = []

    def look() -> None:
        assert _spares(root)  # the copy is there
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        untracked.append([line for line in status if SPARE in line])
        assert any(line.endswith("output/c00/kustomization.yaml") for line in status)

    between_runs(monkeypatch, [look])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert untracked == [[]]
    assert not (root / "output/.gitignore").exists()


def test_the_example_fleet_with_own_manifests_and_patches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits of a tenant, an own manifest and a patch: each run equals a cold render."""
    from tests.conftest import EXAMPLE, copy_example

    live = copy_example(tmp_path / "live")
    shutil.copytree(EXAMPLE / "patches", live / "patches")
    edits = [
        ("tenants/team-a.yaml", "gpus: 16\n", "gpus: 8\n"),
        ("extra/h100-prod/gpu-operator/configmap-dcgm-metrics.yaml", "gauge, GPU utilization", "gauge, GPU use"),
        ("patches/h100-prod/clusterpolicy-dcgm-metrics.yaml", "name: dcgm-metrics", "name: dcgm-metrics-v2"),
    ]  # fmt: skip
    compared: list[str] = []

    def compare_then(edit: tuple[str, str, str] | None) -> Callable[[], None]:
        def step() -> None:
            cold = tmp_path / f"cold{len(compared)}"
            shutil.copytree(live, cold, ignore=shutil.ignore_patterns("output", ".output*"))
            done = cold_render(cold)
            assert done.code == 0, done.stderr
            assert snapshot(live / "output") == snapshot(cold / "output"), compared
            compared.append(edit[0] if edit else "last")
            if edit is not None:
                path = live / edit[0]
                text = path.read_text()
                assert edit[1] in text
                path.write_text(text.replace(edit[1], edit[2], 1))
                touch_all(live)
                os.utime(path, ns=(_tick[0], _tick[0]))

        return step

    between_runs(monkeypatch, [compare_then(e) for e in edits] + [compare_then(None)])
    code, stderr = watch_for(live, len(edits) + 2)
    assert code == 0, stderr
    assert compared == [e[0] for e in edits] + ["last"]
    counts = re.findall(r"\((\d+) added, (\d+) changed, (\d+) removed\)", stderr)
    assert len(counts) == len(edits) + 1
    assert all(sum(map(int, c)) > 0 for c in counts[1:]), counts  # each edit changed the output


def test_what_the_watch_keeps_does_not_grow_with_the_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits back and forth: after each run's clean-up the process holds as many objects as it
    held after the last run of the same inputs (no run's garbage or kept results pile up)."""
    import gc

    root, fleet = _repo(tmp_path)
    held: list[int] = []
    real = warm._collect

    def counted() -> None:
        real()
        held.append(gc.get_freeze_count())

    monkeypatch.setattr(warm, "_collect", counted)
    edits = [("quota", 2), ("quota", 0)] * 3  # t0: 3 GPUs, then 1 again, three times
    between_runs(monkeypatch, [_edit(root, fleet, change) for change in edits])
    code, stderr = watch_for(root, len(edits) + 1)
    assert code == 0, stderr
    runs = held[: len(edits) + 1]  # (the last count is the watch's own exit)
    assert len(runs) == len(edits) + 1
    # Runs 3, 5 (3 GPUs) and 4, 6 (1 GPU) hold what runs 1 and 2 did, within a few objects.
    for later, first in ((3, 1), (5, 1), (4, 2), (6, 2)):
        assert abs(runs[later] - runs[first]) <= 50, runs


def test_a_removed_tenant_takes_its_folders_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch that empties folders removes them, as a fresh staging tree would not make them."""
    root, fleet = _repo(tmp_path, third_tenant=True)
    taken = _spy_spare(monkeypatch)
    seen: list[bool] = []

    def look() -> None:
        seen.append((root / "output/c00/namespaces/t2").is_dir())

    between_runs(monkeypatch, [_edit(root, fleet, ("remove", 2), look)])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert taken == [(False, False), (True, True)]
    assert seen == [True]
    assert not (root / "output/c00/namespaces/t2").exists()
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def test_a_file_another_name_reaches_is_never_written_in_place(tmp_path: Path) -> None:
    from gpuplan import write

    (tmp_path / "own.yaml").write_text("old\n")
    (tmp_path / "shared.yaml").write_text("old\n")
    os.link(tmp_path / "shared.yaml", tmp_path / "elsewhere.yaml")
    own, shared = (tmp_path / "own.yaml").stat(), (tmp_path / "shared.yaml").stat()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in ("own.yaml", "shared.yaml"):
            spare._put(fd, name, b"new, and longer\n", write._write_new)
        spare._put(fd, "fresh.yaml", b"x\n", write._write_new)
        spare._put(fd, "fresh.yaml", b"", write._write_new)  # shorter: the rest is cut
    finally:
        os.close(fd)
    assert (tmp_path / "own.yaml").stat().st_ino == own.st_ino  # rewritten in place
    assert (tmp_path / "shared.yaml").stat().st_ino != shared.st_ino  # a new file instead
    assert (tmp_path / "elsewhere.yaml").read_text() == "old\n"  # the other name untouched
    for name in ("own.yaml", "shared.yaml"):
        assert (tmp_path / name).read_text() == "new, and longer\n"
    assert (tmp_path / "fresh.yaml").read_text() == ""
