"""What `render --watch` keeps by identity stands for what it was computed from (gpuplan.warm).

Each warm compile of a randomly edited fleet is compared with a cold compile of the same inputs
(objects and findings), and after each one the shortcuts are checked against a recomputation:
- an allocation's token (gpuplan.fleet.AllocationPlan.token) holds the grants a cold resolve gives;
- a Manifest's kind, name and namespace, read once (gpuplan.emit.meta), are still its object's;
- Kueue's feature gates, found from one allocation's ClusterQueue (gpuplan.emit.kueue), are
  those of all the cluster's Kueue objects.
The edits reach every new key: a tenant's owners (its own token), quota and lending (the cohort's
lending: shared tokens), a borrowing limit (check_borrowing_within_cohort), a quota above a pool
(check_pool_capacity's errors, never kept), a LocalQueue weight, and a cluster's pools.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import warm
from gpuplan.diagnostics import ordered
from gpuplan.emit import kueue
from gpuplan.pipeline import Compiled, compile_fleet
from tests import test_watch_incremental as incremental

pytestmark = pytest.mark.usefixtures("quick_settle")  # (tests/conftest.py)

KINDS = (*incremental.KINDS, "borrow", "overquota", "weight")


@dataclass
class Fleet(incremental.Fleet):
    """The fleet of test_watch_incremental, with edits that reach the findings kept per tenant."""

    borrowing: dict[str, int] = field(default_factory=dict)  # tenant -> borrowingLimit
    big: set[str] = field(default_factory=set)  # tenants asking more than a pool has
    weights: set[str] = field(default_factory=set)  # tenants with a LocalQueue weight

    def apply(self, edit: tuple[str, int]) -> None:
        what, n = edit
        names = sorted(self.tenants)
        name = names[n % len(names)]
        if what == "borrow":
            self.borrowing[name] = 0 if name not in self.borrowing else 50 + n
        elif what == "overquota":
            self.big ^= {name}
        elif what == "weight":
            self.weights ^= {name}
        else:
            super().apply(edit)

    def _tenant(self, name: str, tenant: incremental.Tenant) -> str:
        text = super()._tenant(name, tenant)
        if name in self.big:  # 40 GPUs of a pool of at most 4 nodes x 8
            text = text.replace(f"gpus: {tenant.gpus}", "gpus: 40", 1)
        if name in self.borrowing:
            text = text.replace(
                f"gpus: {tenant.gpus}",
                f"gpus: {tenant.gpus}, borrowingLimit: {self.borrowing[name]}",
            )
        if name in self.weights:
            text = text.replace(
                "    quotas:",
                "    kueue: {localQueues: [{name: main, weight: 2}]}\n    quotas:",
                1,
            )
        return text


def _objects(result: Compiled) -> list[tuple[str, object]]:
    return [(m.path, m.obj) for m in result.manifests]


def _shortcuts_hold(result: Compiled) -> None:
    """Recompute what the warm compile took by identity, and compare."""
    assert result.fleet is not None
    for item in result.manifests:
        assert item.kind == str(item.obj.get("kind", "")), item.path
        assert item.name == str(item.obj.get("metadata", {}).get("name", "")), item.path
        assert item.namespace == item.obj.get("metadata", {}).get("namespace"), item.path
    for cluster in result.fleet.clusters.values():
        gates = cluster.cache.get(kueue.GATES)
        if gates is not None:
            assert gates == kueue.feature_gates(kueue.emit(cluster)), cluster.name


def _grants(result: Compiled) -> dict[tuple[str, str], list[tuple[object, ...]]]:
    assert result.fleet is not None
    return {
        (cluster.name, alloc.name): [
            (g.pool.name, g.resource, g.nominal, g.borrowing, g.lending, g.loc)
            for g in alloc.grants
        ]
        for cluster in result.fleet.clusters.values()
        for alloc in cluster.allocations
    }


@contextlib.contextmanager
def _cold() -> Iterator[None]:
    """Compile as a one-shot command does, between two warm runs (nothing kept is used or made)."""
    warm._state["on"] = False
    try:
        yield
    finally:
        warm._state["on"] = True


def _same_as_cold(fleet: Fleet, edits: list[tuple[str, int]], root: Path) -> None:
    fleet.write(root)
    with warm.kept():
        for step in [None, *edits]:
            if step is not None:
                fleet.apply(step)
                fleet.write(root)
            hot = compile_fleet(root, verify_output=False)
            _shortcuts_hold(hot)
            hot_grants = _grants(hot)
            warm.settle()
            with _cold():
                cold = compile_fleet(root, verify_output=False)
            assert ordered(hot.diagnostics) == ordered(cold.diagnostics), step
            assert _objects(hot) == _objects(cold), step
            assert hot_grants == _grants(cold), step


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    edits=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 20)), min_size=1, max_size=6)
)
def test_a_warm_compile_is_a_cold_one_and_its_shortcuts_hold(
    edits: list[tuple[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    _same_as_cold(Fleet(), edits, tmp_path_factory.mktemp("keys"))


@pytest.mark.parametrize("kind", ["borrow", "overquota", "weight", "owners", "quota"])
def test_each_new_key_is_reached_and_holds(kind: str, tmp_path: Path) -> None:
    """Each edit twice over (on and off again), so a kept result is taken back as well."""
    _same_as_cold(Fleet(), [(kind, 1), (kind, 1), ("owners", 2), (kind, 1)], tmp_path)


def test_an_over_quota_error_moves_with_its_line(tmp_path: Path) -> None:
    """The pool's quotas stay the same while the tenant's file gains a line above them: the
    capacity error is at the new line (a kept result would show the old one)."""
    _same_as_cold(Fleet(), [("overquota", 1), ("weight", 1), ("weight", 1)], tmp_path)


def test_the_edits_give_the_findings_they_are_for(tmp_path: Path) -> None:
    """The extra edits do reach the checks they stand for (a test that cannot miss them)."""
    fleet = Fleet()
    for edit in (("borrow", 1), ("borrow", 1), ("overquota", 0), ("weight", 2)):
        fleet.apply(edit)
    fleet.write(tmp_path)
    codes = {d.code for d in compile_fleet(tmp_path, verify_output=False).diagnostics}
    assert {"borrowing-within-cohort", "pool-capacity", "local-queue-weights"} <= codes


@pytest.mark.parametrize(
    "edits",
    [
        # t0 alone in cohort "other" (its namespace quota below c01's default request), then t1
        # joins it: t0's file is as it was, its finding goes with the cohort's lending
        [("cohort", 0), ("cohort", 1)],
        # t0 borrows more than the cohort lends, then t1's quota moves what the cohort lends
        [("borrow", 0), ("borrow", 0), ("quota", 1)],
    ],
)
def test_a_finding_moves_with_what_the_rest_of_the_cohort_lends(
    edits: list[tuple[str, int]], tmp_path: Path
) -> None:
    _same_as_cold(Fleet(), edits, tmp_path)


CASES = sorted(p.parent for p in Path(__file__).parent.glob("cases/*/input/clusters"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_the_shortcuts_hold_for_every_case(case: Path) -> None:
    """Every golden case, cold: read-once fields and the Kueue gates (admission fair sharing
    among them) agree with a recomputation."""
    result = compile_fleet(case, verify_output=False)
    if result.fleet is not None:
        _shortcuts_hold(result)


def test_a_case_has_admission_fair_sharing() -> None:
    """The gates found from one allocation are checked on a cluster where they matter."""
    assert any(
        "admissionFairSharing" in f.read_text()
        for case in CASES
        for f in (case / "clusters").glob("*.yaml")
    )
