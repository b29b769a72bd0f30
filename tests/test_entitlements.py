"""Entitlements in whole millicores, bytes and units: the same numbers the exact fractions gave."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.components.kai import authority
from gpuplan.inputs.sources import read_inputs
from gpuplan.model.quantity import format_bytes, format_count, format_cpu
from gpuplan.plan.entitlements import (
    CPU,
    MEMORY,
    MIB,
    Amount,
    _limited,
    _sum_each,
    _sum_pools,
    apportion,
    exact_quantity,
    flavor_amounts,
    namespace_limits,
    namespace_quotas,
    namespace_weights,
    quantity,
)
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.kai_quota import leaf_limit, leaf_quota
from gpuplan.plan.resolve import build_fleet
from tests.builders import allocation, fleet, static_cluster, tenant
from tests.conftest import EXAMPLE

CASES = Path(__file__).parent / "cases"
# Fleets with MIG instances (24/7 cores each), time-slicing shares and cohorts that lend.
ROOTS = [EXAMPLE, *(CASES / n / "input" for n in ("mig-time-slicing", "cohort-borrowing"))]

fractions = st.fractions(min_value=0, max_value=10**6, max_denominator=10**4)


@given(fractions)
def test_exact_quantity_is_the_fraction_formatting(value: Fraction) -> None:
    assert exact_quantity(CPU, value) == format_cpu(value)
    assert exact_quantity(MEMORY, value * MIB) == format_bytes(value * MIB)
    assert exact_quantity("nvidia.com/gpu", value) == format_count(value)


def _fleet(root: Path) -> Fleet:
    inputs, found = read_inputs(root)
    fleet, more = build_fleet(inputs, None)
    assert not [d for d in found + more if d.severity.name == "ERROR"]
    return fleet


@pytest.mark.parametrize(
    "root", ROOTS, ids=lambda r: r.parent.name if r.name == "input" else "example"
)
def test_amounts_are_the_exact_shares_rounded_down(root: Path) -> None:
    fleet = _fleet(root)
    allocations = [a for c in fleet.clusters.values() for a in c.allocations]
    assert allocations
    for alloc in allocations:
        cpu, memory = alloc.cpu(), alloc.memory()  # the exact fractions of cores and bytes
        for pool, amounts in flavor_amounts(alloc).items():
            for amount in amounts.values():
                for value in (amount.nominal, amount.borrowing, amount.lending):
                    assert value is None or type(value) is int
            if pool in cpu:
                assert quantity(CPU, amounts[CPU].nominal) == format_cpu(cpu[pool])
                whole_mib = Fraction(int(memory[pool] / MIB) * MIB)
                assert quantity(MEMORY, amounts[MEMORY].nominal) == format_bytes(whole_mib)
        limits = namespace_limits(alloc)
        quotas = namespace_quotas(alloc)
        for resource, limit in limits.items():
            parts = [q[resource] for q in quotas.values()]
            step = MIB if resource == MEMORY else 1
            assert all(type(p) is int and p % step == 0 for p in parts)
            if authority(alloc.cluster.spec.components) is not None:  # each namespace: the total
                assert all(limit - step < p <= limit for p in parts)
            else:  # split: the parts add up to the total
                assert limit - step < sum(parts) <= limit or not any(parts)
        for kai in (leaf_quota(alloc), leaf_limit(alloc)):
            assert all(type(v) is int for v in kai.values())


# Whole GPUs with both limits; two MIG profiles of one pool, one of them lending without a limit.
MIXED_LIMITS = allocation(cohort="shared", quotas=[
    {"pool": "train", "gpus": 5, "borrowingLimit": 3, "lendingLimit": 0},
    {"pool": "infer", "mig": {"3g.40gb": 8, "2g.20gb": 16},
     "borrowingLimit": {"3g.40gb": 2, "2g.20gb": 4}, "lendingLimit": {"3g.40gb": 1}},
])  # fmt: skip


def test_cpu_and_memory_limits_only_where_every_grant_of_the_pool_has_one(tmp_path: Path) -> None:
    cluster = static_cluster(sharing={"mig": {"layout": {"3g.40gb": 1, "2g.20gb": 2}}})
    root = fleet(tmp_path, {"c1": cluster}, {"a": tenant("a", MIXED_LIMITS)})
    alloc = _fleet(root).clusters["c1"].allocations[0]
    amounts = flavor_amounts(alloc)
    # A whole GPU of a 192-core, 1900Gi, 8-GPU node: 24 cores and 243200Mi.
    assert amounts["train"]["nvidia.com/gpu"] == Amount(5, 3, 0)
    assert amounts["train"][CPU] == Amount(120_000, 72_000, 0)
    assert amounts["train"][MEMORY] == Amount(5 * 243200 * MIB, 3 * 243200 * MIB, 0)
    infer = amounts["infer"]
    assert infer["nvidia.com/mig-3g.40gb"] == Amount(8, 2, 1)
    assert infer["nvidia.com/mig-2g.20gb"] == Amount(16, 4, None)
    assert infer["nvidia.com/gpu"] == Amount(0)  # covered, none granted here
    # Both profiles limit borrowing, so the pool's cpu and memory do; one lends without a limit.
    borrow_cpu, borrow_memory = (
        alloc.cpu("borrowing")["infer"],
        alloc.memory("borrowing")["infer"],
    )
    assert infer[CPU] == Amount(int(alloc.cpu()["infer"] * 1000), int(borrow_cpu * 1000), None)
    assert infer[MEMORY].borrowing == int(borrow_memory / MIB) * MIB
    assert infer[MEMORY].lending is None


def test_shortcuts_give_what_the_flavor_by_flavor_sums_give() -> None:
    """An allocation without limits in a cohort takes the cohort's totals; one namespace takes it all."""
    shortcut = split = 0
    for root in ROOTS:
        fleet = _fleet(root)
        for alloc in (a for c in fleet.clusters.values() for a in c.allocations):
            nominal, ceiling = _sum_pools(alloc)
            general = _sum_each(alloc, flavor_amounts(alloc))
            assert (list(nominal.items()), list(ceiling.items())) == tuple(
                list(table.items()) for table in general
            )
            shortcut += alloc.spec.cohort is not None and not _limited(alloc)
            weights = namespace_weights(alloc)
            split += len(weights) > 1
            quotas = namespace_quotas(alloc)
            whole = authority(alloc.cluster.spec.components) is not None
            for resource, total in namespace_limits(alloc).items():
                step = MIB if resource == MEMORY else 1
                parts = apportion(total // step, list(weights.values()))
                if whole:  # a scheduler admits: each namespace gets the total (issue 35 point 9)
                    parts = [total // step] * len(weights)
                assert [quotas[n][resource] for n in weights] == [p * step for p in parts]
    assert shortcut and split, "the fleets no longer have both cases: the shortcuts go untested"
