"""The render cache (gpuplan.cache): a cached render is byte-identical to a cold one, always.

A random sequence of edits (quota changes, tenants added and removed, pools added and removed,
a cohort change, a gpuplan version bump) is applied to a small fleet; after each edit the cached
render's output/ must equal a cold render's (--no-cache, another repository), and the cached
`render --check` must agree. Also: a hand edit to output/ is found by a cached --check, a record
of another gpuplan version or a damaged record is never trusted, the cache is never read or
written through a symbolic link, and deleting it is safe.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuplan
from gpuplan.cache import key, store
from tests.builders import KUEUE, OPERATOR, allocation, aws_karpenter, cluster, pool, tenant
from tests.conftest import run, snapshot

SHAPES = ("exclusive", "time-slicing")


def cluster_text(pools: int) -> str:
    """Return one small cluster with two cohorts; pools alternate exclusive and time-sliced."""
    karpenter = aws_karpenter(role="KarpenterNodeRole-c00")
    components = {"gpuOperator": OPERATOR, "kueue": KUEUE, "quotaAuthority": "kueue",
                  "karpenter": karpenter}  # fmt: skip
    shared = {"timeSlicing": {"replicas": 4}}
    return cluster(
        *(pool(f"pool-{p:02d}", nodes={"min": 0, "max": 4}, karpenter={"instanceTypes": ["p5.48xlarge"]},
               sharing=shared if SHAPES[p % 2] == "time-slicing" else None) for p in range(pools)),
        name="c00", provider="aws", components=components,
        priority_classes=[{"name": "low", "value": 10}], cohorts=[{"name": "all"}, {"name": "other"}],
    )  # fmt: skip


def tenant_text(name: str, pools: int, gpus: int, cohort: str) -> str:
    """Return one tenant with a quota on every pool of the cluster."""
    quotas = [{"pool": f"pool-{p:02d}", "gpus": gpus} for p in range(pools)]
    return tenant(name, allocation("c00", cohort=cohort, quotas=quotas),
                  owners=[f"group:{name}-admins"], priorityClass="low")  # fmt: skip


class Fleet:
    """The inputs of the small fleet, edited step by step."""

    def __init__(self) -> None:
        self.pools = 2
        self.tenants: dict[str, tuple[int, str]] = {"t0": (1, "all"), "t1": (2, "all")}

    def write(self, root: Path) -> None:
        for folder in ("clusters", "tenants"):
            shutil.rmtree(root / folder, ignore_errors=True)
            (root / folder).mkdir(parents=True)
        (root / "clusters/c00.yaml").write_text(cluster_text(self.pools))
        for name, (gpus, cohort) in self.tenants.items():
            (root / f"tenants/{name}.yaml").write_text(tenant_text(name, self.pools, gpus, cohort))

    def apply(self, edit: tuple[str, int]) -> None:
        what, n = edit
        names = sorted(self.tenants)
        name = names[n % len(names)]
        if what == "quota":
            self.tenants[name] = (1 + n % 3, self.tenants[name][1])
        elif what == "cohort":
            gpus, cohort = self.tenants[name]
            self.tenants[name] = (gpus, "other" if cohort == "all" else "all")
        elif what == "add":
            self.tenants[f"t{len(names) + n % 7 + 2}"] = (1, "all")
        elif what == "remove" and len(names) > 1:
            del self.tenants[name]
        elif what == "pools":
            self.pools = 1 + n % 3


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["quota", "cohort", "add", "remove", "pools", "version"]),
        st.integers(0, 20),
    ),
    min_size=1,
    max_size=4,
)


def _render(root: Path, *flags: str) -> str:
    result = run("render", "--root", str(root), *flags)
    assert result.code == 0, result.stderr
    return result.stderr


def _bump_version(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """Simulate another gpuplan release: its version is in every file header and in the cache key."""
    monkeypatch.setattr(gpuplan, "__version__", version, raising=False)
    key.code_key.cache_clear()


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_cached_render_equals_a_cold_render_after_every_edit(
    edits: list[tuple[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = tmp_path_factory.mktemp("edits")
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(base / "cache"))
    warm, cold, fleet = base / "warm", base / "cold", Fleet()
    fleet.write(warm)
    _render(warm)
    for step, edit in enumerate(edits):
        if edit[0] == "version":
            _bump_version(monkeypatch, f"0.{step}.{edit[1]}+test")
        fleet.apply(edit)
        fleet.write(warm)
        fleet.write(cold)
        shutil.rmtree(cold / "output", ignore_errors=True)
        _render(warm)
        _render(cold, "--no-cache")
        assert snapshot(warm / "output") == snapshot(cold / "output"), edit
        assert "up to date" in _render(warm, "--check")
    key.code_key.cache_clear()


def test_unchanged_check_is_answered_from_the_record(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Fleet().write(tmp_path / "repo")
    _render(tmp_path / "repo")
    import gpuplan.pipeline

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled although the inputs did not change")

    monkeypatch.setattr(gpuplan.pipeline, "compile_fleet", fail)
    assert "up to date" in _render(tmp_path / "repo", "--check")


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every input file whose content the key reads (gpuplan.cache.key.content_digest)."""
    read: list[str] = []
    real = key.content_digest

    def counted(path: str) -> str:
        read.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(key, "content_digest", counted)
    return read


def test_settled_inputs_are_not_read_again_and_an_edit_is(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    read = _reads(monkeypatch)
    _render(root)
    assert sorted(read) == ["c00.yaml", "t0.yaml", "t1.yaml"]
    read.clear()
    assert "up to date" in _render(root, "--check")
    assert sorted(read) == ["c00.yaml", "t0.yaml", "t1.yaml"]  # just written: not settled yet
    monkeypatch.setattr(key, "SETTLED_NS", 0)  # as if seconds had passed since
    _render(root)  # the record now holds settled signatures
    read.clear()
    assert "up to date" in _render(root, "--check")
    assert read == []
    tenant = root / "tenants/t0.yaml"
    before = tenant.stat()
    text = tenant.read_text()
    tenant.write_text(text.replace("gpus: 1", "gpus: 2"))  # the same size, the mtime put back
    os.utime(tenant, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert tenant.stat().st_size == before.st_size
    stale = run("render", "--root", str(root), "--check")
    assert read == ["t0.yaml"]  # its ctime moved: read, and found changed
    assert stale.code == 1 and "would change: output/c00/kueue/clusterqueue-t0.yaml" in stale.stderr


def test_a_signature_is_trusted_only_when_taken_well_after_the_last_change() -> None:
    second = 1_000_000_000
    taken = 100 * second
    assert key.trusted((1, 10, taken - key.SETTLED_NS - 1, taken - key.SETTLED_NS - 1), taken)
    assert not key.trusted((1, 10, taken - key.SETTLED_NS, 0), taken)  # the mtime too recent
    assert not key.trusted((1, 10, 0, taken - key.SETTLED_NS), taken)  # the ctime too recent
    assert not key.trusted((1, 10, taken + second, taken + second), taken)  # changed after


def test_cached_check_finds_a_hand_edit(tmp_path: Path, cache_home: Path) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    assert "up to date" in _render(root, "--check")
    target = root / "output/c00/kueue/clusterqueue-t0.yaml"
    before = os.stat(target)
    text = target.read_text()
    edited = text.replace('nominalQuota: "1"', 'nominalQuota: "9"', 1)
    assert edited != text
    target.write_text(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # even with the mtime put back
    assert target.stat().st_size == before.st_size
    stale = run("render", "--root", str(root), "--check")
    assert stale.code == 1
    assert "would change: output/c00/kueue/clusterqueue-t0.yaml" in stale.stderr
    _render(root)  # the render puts it back
    assert target.read_text() == text


def test_a_record_of_another_version_is_not_trusted(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    _bump_version(monkeypatch, "99.0.0")
    try:
        stale = run("render", "--root", str(root), "--check")
        assert stale.code == 1  # every header names the new version
        assert "would change: output/c00/kueue/clusterqueue-t0.yaml" in stale.stderr
        _render(root)
        assert "99.0.0" in (root / "output/c00/kueue/clusterqueue-t0.yaml").read_text()
    finally:
        key.code_key.cache_clear()


def _record(home: Path) -> Path:
    (slot,) = (home / "render").iterdir()
    return slot / store.RECORD


def _files(data: bytes, change: Callable[[dict[str, Any]], object]) -> bytes:
    """Return a record with its file list changed in place by `change`."""
    record = json.loads(data)
    change(record["files"])
    return json.dumps(record).encode()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: b"",
        lambda data: b"\xff\xfe not json",
        lambda data: json.dumps({**json.loads(data), "files": {"a.yaml": [1]}}).encode(),
        lambda data: json.dumps({**json.loads(data), "diagnostics": [["x"]]}).encode(),
        lambda data: json.dumps({**json.loads(data), "format": 0}).encode(),
        lambda data: json.dumps({**json.loads(data), "files": []}).encode(),
        lambda data: json.dumps({**json.loads(data), "notes": "text"}).encode(),
        lambda data: _files(data, lambda f: f["paths"].__setitem__(0, "../escape.yaml")),
        lambda data: _files(data, lambda f: f["paths"].__setitem__(0, "a/\x00/b.yaml")),
        lambda data: _files(data, lambda f: f.__setitem__("keys", f["keys"][:-32])),  # one short
        lambda data: _files(data, lambda f: f.__setitem__("keys", f["keys"][:-1])),
        lambda data: _files(data, lambda f: f.__setitem__("signatures", "!" + f["signatures"])),
        lambda data: _files(data, lambda f: f.__setitem__("signatures", f["signatures"][:-8])),
        lambda data: _files(data, lambda f: f.__setitem__("signatures", [1, 2, 3, 4])),
        lambda data: _files(data, lambda f: f.__setitem__("contents", None)),
        lambda data: _files(data, lambda f: f["paths"].__setitem__(0, 7)),
        lambda data: json.dumps({**json.loads(data), "inputs": {"paths": 1}}).encode(),
        lambda data: json.dumps({**json.loads(data), "inputs": None}).encode(),
        lambda data: json.dumps({**json.loads(data), "shown": {"text": 5}}).encode(),
        lambda data: json.dumps({**json.loads(data), "shown": None, "notes": [3]}).encode(),
    ],
)
def test_a_damaged_record_is_ignored(tmp_path: Path, cache_home: Path, damage) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    record = _record(cache_home)
    record.write_bytes(damage(record.read_bytes()))
    (root / "output/c00/kueue/clusterqueue-t0.yaml").write_text("# Generated by gpuplan, edited\n")
    stale = run("render", "--root", str(root), "--check")
    assert stale.code == 1 and "would change: output/c00/kueue/clusterqueue-t0.yaml" in stale.stderr
    _render(root)
    assert "up to date" in _render(root, "--check")


def test_the_cache_is_never_used_through_a_link(tmp_path: Path, cache_home: Path) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    record = _record(cache_home)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(record.read_bytes())
    record.unlink()
    record.symlink_to(elsewhere)
    (root / "output/c00/kueue/clusterqueue-t0.yaml").write_text("# Generated by gpuplan, edited\n")
    stale = run("render", "--root", str(root), "--check")  # the linked record is not read
    assert stale.code == 1 and "clusterqueue-t0.yaml" in stale.stderr
    before = elsewhere.read_bytes()
    _render(root)
    assert elsewhere.read_bytes() == before  # nor written through
    # a linked slot folder is neither read nor written through either
    slot = record.parent
    shutil.rmtree(slot)
    target = tmp_path / "slot-target"
    target.mkdir()
    slot.symlink_to(target)
    _render(root)
    assert list(target.iterdir()) == []


def test_deleting_the_cache_is_safe_and_no_cache_writes_none(
    tmp_path: Path, cache_home: Path
) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root, "--no-cache")
    assert not cache_home.exists()
    _render(root)
    cached = snapshot(root / "output")
    shutil.rmtree(cache_home)
    assert "up to date" in _render(root, "--check")
    _render(root)
    assert snapshot(root / "output") == cached


def test_the_key_covers_every_input_folder() -> None:
    from gpuplan.overlay import FOLDERS

    assert ("clusters", "tenants", *FOLDERS) == key.INPUT_FOLDERS


def _inodes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_ino for p in folder.rglob("*.yaml")}


def test_after_a_change_only_the_changed_files_are_written(
    tmp_path: Path, cache_home: Path
) -> None:
    root = tmp_path / "repo"
    fleet = Fleet()
    fleet.write(root)
    _render(root)
    before, inodes = snapshot(root / "output"), _inodes(root / "output")
    fleet.tenants["t0"] = (1, "other")  # t0 moves to another cohort: the rest of t1 stays
    fleet.write(root)
    assert "(0 added, 3 changed, 0 removed)" in _render(root)
    after, now = snapshot(root / "output"), _inodes(root / "output")
    changed = {p for p in after if before.get(p) != after[p]}
    assert len(changed) == 3
    assert all(now[p] == inodes[p] for p in now if p not in changed)  # carried over, not rewritten
    assert all(now[p] != inodes[p] for p in changed)


def test_an_interrupted_carry_over_leaves_the_old_output(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplan.commands.options import Options
    from gpuplan.commands.render import render_fleet
    from gpuplan.writer import safefs

    root = tmp_path / "repo"
    fleet = Fleet()
    fleet.write(root)
    _render(root)
    before = snapshot(root / "output")
    fleet.tenants["t0"] = (2, "all")
    fleet.write(root)
    calls, real = {"n": 0}, safefs.carry_over

    def interrupted(src: int, dst: int, name: str) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        real(src, dst, name)

    monkeypatch.setattr(safefs, "carry_over", interrupted)
    with pytest.raises(KeyboardInterrupt):
        render_fleet(Options(root))
    monkeypatch.undo()
    assert calls["n"] == 5
    assert snapshot(root / "output") == before
    assert sorted(p.name for p in root.iterdir()) == ["clusters", "output", "tenants"]
    _render(root)
    assert "up to date" in _render(root, "--check")


def test_a_link_inside_output_is_refused_on_a_cache_hit(tmp_path: Path, cache_home: Path) -> None:
    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    outside = tmp_path / "elsewhere"
    (root / "output/c00/kueue").rename(outside)
    (root / "output/c00/kueue").symlink_to(outside)
    target = snapshot(outside)
    for flags in ((), ("--check",)):
        result = run("render", "--root", str(root), *flags)
        assert result.code == 1 and "symbolic link" in result.stderr, result.stderr
    assert snapshot(outside) == target


def test_a_cache_folder_others_may_write_is_not_used(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplan.pipeline

    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    compiled, real = [], gpuplan.pipeline.compile_fleet

    def counted(*args: Any, **kwargs: Any) -> Any:
        compiled.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(gpuplan.pipeline, "compile_fleet", counted)
    assert "up to date" in _render(root, "--check")
    assert compiled == []  # a private cache answers
    for folder in ("render",):
        (cache_home / folder).chmod(0o777)
    try:
        before = {p: p.read_bytes() for p in cache_home.rglob("*") if p.is_file()}
        assert "up to date" in _render(root, "--check")
        assert compiled == [1]  # a cache others may write is not read...
        _render(root)
        after = {p: p.read_bytes() for p in cache_home.rglob("*") if p.is_file()}
        assert after == before  # ...nor written
    finally:
        for folder in ("render",):
            (cache_home / folder).chmod(0o700)


def test_the_quick_comparison_is_true_only_for_exactly_the_recorded_files(
    tmp_path: Path, cache_home: Path
) -> None:
    """cache.output.as_recorded, the one-pass answer of an unchanged `render --check`: anything
    but the recorded files with their recorded lstat sends the check to the full comparison."""
    from gpuplan.cache.output import as_recorded
    from gpuplan.cache.record import RenderCache

    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    out = root / "output"
    cache = RenderCache.open(root, None, None)
    assert cache is not None and cache.hit
    recorded = cache.signatures()
    assert recorded and as_recorded(out, recorded)
    (out / "c00" / "empty").mkdir()  # a folder is not compared (the full path ignores it too)
    assert as_recorded(out, recorded)
    target = out / "c00/kueue/clusterqueue-t0.yaml"
    data = target.read_bytes()
    for change in (
        lambda: (out / "c00" / "notes.txt").write_text("mine\n"),  # a file nobody recorded
        lambda: (out / "notes.txt").write_text("mine\n"),  # in the top folder (not the worker's)
        lambda: (out / "argocd" / "notes.txt").write_text("mine\n"),  # another core's folder
        lambda: target.unlink(),  # a recorded file gone
        lambda: target.write_bytes(data + b"\n"),  # an edit
        lambda: (target.unlink(), target.symlink_to(out / "c00/kustomization.yaml")),  # a link
    ):
        change()
        assert not as_recorded(out, recorded)
        shutil.rmtree(out)
        _render(root)  # back as recorded, with new signatures
        cache = RenderCache.open(root, None, None)
        assert cache is not None
        recorded = cache.signatures()
        assert as_recorded(out, recorded)
    assert not as_recorded(tmp_path / "missing", recorded)
    stale = run("render", "--root", str(root), "--check")
    assert stale.code == 0 and "up to date" in stale.stderr
    (out / "c00" / "notes.txt").write_text("mine\n")  # the full comparison words it
    found = run("render", "--root", str(root), "--check")
    assert found.code == 0 and "notes.txt: warning: not written by gpuplan" in found.stderr


def test_the_quick_comparison_with_folders_sees_a_folder_added_or_gone(
    tmp_path: Path, cache_home: Path
) -> None:
    from gpuplan.cache.output import as_recorded
    from gpuplan.cache.record import RenderCache

    root = tmp_path / "repo"
    Fleet().write(root)
    _render(root)
    out = root / "output"
    cache = RenderCache.open(root, None, None)
    assert cache is not None
    recorded = cache.signatures()
    folders = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_dir())
    assert as_recorded(out, recorded, folders)
    assert not as_recorded(out, recorded, folders[1:])  # one folder more on disk
    assert not as_recorded(out, recorded, [*folders, "c00/elsewhere"])  # one folder gone
    for where in ("c00/empty", "empty", "argocd/empty"):  # each core's part, and the top
        (out / where).mkdir()
        assert not as_recorded(out, recorded, folders)
        assert as_recorded(out, recorded)  # without folders: not compared
        (out / where).rmdir()
    assert as_recorded(out, recorded, folders)
