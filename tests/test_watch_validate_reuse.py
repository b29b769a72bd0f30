"""The validate stage of `render --watch` reuses the last run's work for the very same objects
(gpuplan.validate.reuse, gpuplan.warm.map_kept, gpuplan.cache.record): every answer must be the
one a cold run computes, and an object changed after its value was kept must be caught by the
check the tests run with (GPUPLAN_WARM_CHECK=1).
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import warm
from gpuplan.cache.record import RenderCache
from gpuplan.emit.meta import Manifest
from gpuplan.validate import check_references, reuse
from gpuplan.validate.graph import check_cluster
from tests.test_render_watch import hold_to_cold
from tests.test_validate_references import OPTIONS, _objects
from tests.test_watch_incremental import Fleet

pytestmark = pytest.mark.usefixtures("quick_settle")  # (tests/conftest.py)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recompute everything kept by identity and fail when it differs (gpuplan.warm.checking)."""
    monkeypatch.setenv(warm.CHECK_ENV, "1")


# --- the guard itself can fail --------------------------------------------------------------


def _cache() -> RenderCache:
    return RenderCache(Path("."), "slot", "environment", "key", None)


def test_a_key_kept_by_identity_is_caught_when_its_object_changed(checked: None) -> None:
    item = Manifest("c00/a/configmap-a.yaml", {"kind": "ConfigMap", "data": {"a": "1"}}, ("x",))
    with warm.kept():
        _cache().object_keys([item])
        item.obj["data"]["a"] = "2"  # what no emitter may do once an object is made
        with pytest.raises(warm.ChangedAfterKept):
            _cache().object_keys([item])


def test_without_the_guard_the_kept_key_stands_for_the_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Why the guard runs in the tests: a changed object would keep its old key (and proof)."""
    monkeypatch.delenv(warm.CHECK_ENV, raising=False)
    item = Manifest("c00/a/configmap-a.yaml", {"kind": "ConfigMap", "data": {"a": "1"}}, ("x",))
    with warm.kept():
        [first] = _cache().object_keys([item])
        item.obj["data"]["a"] = "2"
        assert _cache().object_keys([item]) == [first]
    assert _cache().object_keys([item]) != [first]  # a cold render computes it


def test_a_bucket_kept_is_caught_when_an_object_in_it_changed(checked: None) -> None:
    objects = [{"kind": "ConfigMap", "metadata": {"name": "a"}}]
    with warm.kept():
        reuse.canonical("c", reuse.objects_by_kind(objects))
        reuse.canonical("c", reuse.objects_by_kind([copy.deepcopy(objects[0])]))
        objects[0]["metadata"]["name"] = "b"
        with pytest.raises(warm.ChangedAfterKept):
            reuse.canonical("c", reuse.objects_by_kind(objects))


# --- keys, proofs and groups: the cold answer -----------------------------------------------


def _item(n: int, value: object = 1) -> Manifest:
    return Manifest(f"c00/x/configmap-{n}.yaml", {"kind": "ConfigMap", "v": [n, value]}, ("s",))


def test_kept_keys_follow_the_objects_through_edits(checked: None) -> None:
    items = [_item(n) for n in range(6)]
    with warm.kept():
        for step in range(4):
            if step == 1:
                items[2] = _item(2, 2)  # changed in place
            if step == 2:
                items.insert(0, _item(9))  # everything moves
            if step == 3:
                del items[3]
            assert _cache().object_keys(items) == [_cache()._compute_key(i) for i in items]
            warm.settle()


def test_proofs_of_objects_alike_are_alike_and_unproven_ones_are_found() -> None:
    cache = _cache()
    items = [_item(0), _item(1), _item(0)]  # two alike (the path is no part of the key): one proof
    cache.add(items[0], "v1.33")
    assert cache.unproven(items, "v1.33") == [items[1]]
    assert cache.unproven(items, "v1.34") == items


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3)), max_size=8),
        min_size=1,
        max_size=5,
    )
)
def test_regrouped_lists_are_the_cold_groups(runs: list[list[tuple[str, int]]]) -> None:
    made: dict[tuple[str, int], dict[str, object]] = {}
    with warm.kept():
        for run in runs:
            # the same (group, n) is the very same object from run to run, as emit keeps them
            items = [made.setdefault(pair, {"g": pair[0], "n": pair[1]}) for pair in run]
            got = reuse.regroup("test", None, items, lambda o: o["g"], lambda o: o["n"])
            cold: dict[str, list[object]] = {}
            for obj in items:
                cold.setdefault(str(obj["g"]), []).append(obj["n"])
            assert got == cold
            assert list(got) == list(cold)  # groups in order of appearance
            warm.settle()


def test_objects_alike_take_the_last_runs_place_and_true_is_not_one() -> None:
    first = [{"kind": "A", "v": 1}, {"kind": "A", "v": 2}]
    with warm.kept():
        kept = reuse.canonical("c", reuse.objects_by_kind(first))["A"]
        assert kept == first
        alike = reuse.canonical("c", reuse.objects_by_kind(copy.deepcopy(first)))["A"]
        assert alike is kept  # the last run's very list: every check reads it as unchanged
        other = [{"kind": "A", "v": True}, {"kind": "A", "v": 2}]  # True == 1, not alike
        moved = reuse.canonical("c", reuse.objects_by_kind(other))["A"]
        assert moved[0] is other[0] and moved[1] is first[1]


def test_an_object_found_alike_once_is_not_compared_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its maker keeps the new object while the checks see the old one: the next runs, given the
    same new object, take the old one without comparing (or they would slow with every edit)."""
    first = [{"kind": "A", "v": 1}, {"kind": "A", "v": 2}]
    remade = [first[0], copy.deepcopy(first[1])]
    compared: list[object] = []
    code = reuse._code
    monkeypatch.setattr(reuse, "_code", lambda obj: compared.append(obj) or code(obj))
    with warm.kept():
        reuse.canonical("c", reuse.objects_by_kind(first))
        warm.settle()
        alike = reuse.canonical("c", reuse.objects_by_kind(remade))["A"]
        assert alike[1] is first[1] and len(compared) == 2  # compared once: it and the old one
        warm.settle()
        again = reuse.canonical("c", reuse.objects_by_kind(remade))["A"]
        assert again is alike and len(compared) == 2
        changed = {"kind": "A", "v": 3}
        moved = reuse.canonical("c", reuse.objects_by_kind([first[0], changed]))["A"]
        assert moved[1] is changed


# --- the cross-object checks: the cold answer through edits ---------------------------------


def _edit(objects: list[dict], what: str, n: int) -> list[dict]:
    """Return the cluster after one edit, each object not edited the very same."""
    out = list(objects)
    i = n % len(out)
    if what == "copy":  # every object made again alike (a tenant edit re-makes its objects)
        return copy.deepcopy(out)
    if what == "drop":
        del out[i]
        return out
    if what == "double":
        return out + [copy.deepcopy(out[i])]
    obj = out[i] = copy.deepcopy(out[i])
    metadata = obj.setdefault("metadata", {})
    if what == "namespace":
        metadata["namespace"] = ["team-a", "nowhere", "gpu-operator"][n % 3]
    elif what == "rename":
        metadata["name"] = f"{metadata.get('name', '')}-{n % 2}"
    elif what == "queue" and obj["kind"] == "LocalQueue":
        obj["spec"]["clusterQueue"] = ["team-a", "missing"][n % 2]
    elif what == "label":
        metadata["labels"] = {"nvidia.com/mig.config": ["all-disabled", "unknown"][n % 2]}
    return out


EDIT = st.tuples(
    st.sampled_from(["copy", "drop", "double", "namespace", "rename", "queue", "label", "same"]),
    st.integers(0, 40),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(EDIT, min_size=1, max_size=6))
def test_each_runs_references_and_graph_are_a_cold_checks(
    checked: None, edits: list[tuple[str, int]]
) -> None:
    objects = _objects()
    installs = {"c-kueue": {("kueue.x-k8s.io", "ClusterQueue"), ("kueue.x-k8s.io", "LocalQueue")}}
    apps = [
        {
            "kind": "Application",
            "metadata": {"name": name, "labels": {"gpuplan.io/cluster": "c"}},
            "spec": {"source": {"path": path}},
        }
        for name, path in (("c-kueue", "charts/kueue"), ("c", "output/c"))
    ]
    for app, wave in zip(apps, (-1, 0), strict=True):
        app["metadata"]["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    with warm.kept():
        for what, n in itertools.chain([("same", 0)], edits):
            objects = _edit(objects, what, n)
            buckets = reuse.canonical("c", reuse.objects_by_kind(objects))
            warm_refs = check_references((), by_kind=buckets, kept="c", **OPTIONS)
            warm_graph = check_cluster("c", [], apps, installs, by_kind=buckets, kept=True)
            assert warm_refs == check_references(copy.deepcopy(objects), **OPTIONS)
            assert sorted(map(repr, warm_graph)) == sorted(
                map(repr, check_cluster("c", copy.deepcopy(objects), apps, installs))
            )
            warm.settle()


# --- a watched fleet: the bytes and findings of a cold render, with the guard on ------------


@pytest.mark.usefixtures("cache_home")
def test_a_watched_fleet_passes_the_guard_through_tenant_edits(
    checked: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edits = [("owners", 1), ("quota", 1), ("add", 2), ("extra", 1), ("remove", 0), ("patch", 0)]
    hold_to_cold(Fleet(), edits, tmp_path, monkeypatch)


def test_only_the_checks_that_read_a_changed_kind_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuplan.validate import references

    ran: list[str] = []
    real = references._run

    def counted(check, cluster, reading):  # type: ignore[no-untyped-def]
        ran.append(check.__name__)
        return real(check, cluster, reading)

    monkeypatch.setattr(references, "_run", counted)
    monkeypatch.delenv(warm.CHECK_ENV, raising=False)  # the guard runs every check again
    objects = _objects()

    def run(objects: list[dict]) -> list[str]:
        cold = check_references(copy.deepcopy(objects), **OPTIONS)
        ran.clear()
        buckets = reuse.canonical("c", reuse.objects_by_kind(objects))
        assert check_references((), by_kind=buckets, kept="c", **OPTIONS) == cold
        warm.settle()
        return sorted(ran)

    with warm.kept():
        assert len(run(objects)) == len(references.CHECKS)  # the first run runs them all
        assert run(objects) == []  # the same objects
        assert run(copy.deepcopy(objects)) == []  # made again alike
        [queue] = [o for o in objects if o["kind"] == "LocalQueue"][:1]
        changed = [copy.deepcopy(o) for o in objects]
        [edited] = [o for o in changed if o == queue][:1]
        edited["spec"]["clusterQueue"] = "missing"
        assert run(changed) == ["check_local_queues", "check_namespaces"]


def test_a_check_that_reads_a_kind_it_does_not_note_is_caught(checked: None) -> None:
    """kept_check keeps an answer while the kinds a check noted are the same lists; one that
    read another kind without noting it would be kept stale, and the guard raises."""
    first = {"A": [{"kind": "A"}], "B": [{"kind": "B", "v": 1}]}
    then = {"A": first["A"], "B": [{"kind": "B", "v": 2}]}

    def unnoted(reading: reuse.Reading) -> int:
        reading.kinds.add("A")
        return int(buckets["B"][0]["v"])  # B read, never noted

    with warm.kept():
        buckets = first
        assert reuse.kept_check("check", "c", (), buckets, unnoted) == 1
        warm.settle()
        buckets = then
        with pytest.raises(warm.ChangedAfterKept):
            reuse.kept_check("check", "c", (), buckets, unnoted)
