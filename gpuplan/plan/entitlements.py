"""What each tenant allocation is entitled to per pool and resource, cpu and memory included.

Kueue's ClusterQueue and the namespaces' ResourceQuotas are both written from these numbers, so
the two can never disagree: the quota is the ClusterQueue's nominal plus what it may borrow.

Every amount is a whole number of the smallest unit a manifest states: cpu in millicores, memory
in bytes (whole MiB), GPUs, MIG instances and time-slicing shares in units. The cpu and memory
that go with a GPU share are exact fractions (a 1g.10gb instance of a 192-core, 8-GPU node brings
24/7 cores); gpuplan.plan.fleet keeps those exact per pool and they are rounded down here, once, to
millicores and MiB. From there on sums, cohort lending, ceilings and the split over namespaces
are integer arithmetic.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from gpuplan.components.kai import authority
from gpuplan.model.quantity import format_bytes, format_count, format_millicores
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Grant

CPU = "cpu"
MEMORY = "memory"
MIB = 2**20
MILLI = 1000  # millicores per core


class Amount(NamedTuple):
    """A quota of one resource in one flavor, in millicores, bytes or units (see the module).

    nominal, and the limits (None: unlimited / unset). A named tuple: there are tens of thousands
    at fleet scale, and a tuple is made and hashed at a fraction of a frozen dataclass's cost.
    """

    nominal: int
    borrowing: int | None = None
    lending: int | None = None


ZERO = Amount(0)  # no quota of a resource in a flavor (Amount is immutable: one is shared)


def _floor(resource: str, value: Fraction) -> int:
    """Round an exact amount (cores, bytes, units) to what the manifests can state: millicores, whole MiB, whole units."""
    return _floor_ratio(resource, value.numerator, value.denominator)


def _floor_ratio(resource: str, numerator: int, denominator: int) -> int:
    """Round numerator / denominator (cores, bytes, units) as _floor does.

    Towards zero, as int() does, in integer arithmetic: it runs for every pool of every allocation.
    """
    if resource == CPU:
        numerator *= MILLI
    elif resource == MEMORY:
        denominator *= MIB
    whole = abs(numerator) // denominator
    if numerator < 0:
        whole = -whole
    return whole * MIB if resource == MEMORY else whole


def per_unit(resource: str) -> int:
    """Return this module's units in one core, byte or unit of a resource: 1000 millicores a core, else 1."""
    return MILLI if resource == CPU else 1


def quantity(resource: str, value: int) -> str:
    """Return an amount of a resource (millicores, bytes, units) as a canonical Kubernetes quantity string."""
    if resource == CPU:
        return format_millicores(value)
    if resource == MEMORY:
        return format_bytes(value)
    return format_count(value)


@lru_cache(maxsize=4096)
def exact_quantity(resource: str, value: Fraction) -> str:
    """Return an exact amount (cores, bytes, units), rounded down, as a canonical quantity string."""
    return quantity(resource, int(value * per_unit(resource)))


def covered_resources(alloc: AllocationPlan) -> list[str]:
    """Return the resources of the allocation's one resource group: cpu, memory, then GPUs."""
    return [CPU, MEMORY, *alloc.resources()]


def _limit(values: list[int | None]) -> int | None:
    """Sum limits, or None when any of them is unlimited."""
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def _granted(grants: list[Grant]) -> dict[str, dict[str, Amount]]:
    """Return pool -> GPU resource -> what its grants add up to (a limit is None when any grant has none)."""
    out: dict[str, dict[str, Amount]] = {}
    for grant in grants:
        amounts = out.setdefault(grant.pool.name, {})
        found = amounts.get(grant.resource)
        amounts[grant.resource] = (
            Amount(grant.nominal, grant.borrowing, grant.lending)
            if found is None
            else Amount(
                found.nominal + grant.nominal,
                _limit([found.borrowing, grant.borrowing]),
                _limit([found.lending, grant.lending]),
            )
        )
    return out


def _derived_limits(
    alloc: AllocationPlan, kind: str, granted: dict[str, dict[str, Amount]]
) -> dict[str, dict[str, int]]:
    """Return cpu and memory -> pool -> borrowing or lending limit, for the pools where every grant sets one.

    A pool left out has no such limit (None): one of its grants is unlimited.
    """
    limited = [
        name
        for name, amounts in granted.items()
        if all(getattr(a, kind) is not None for a in amounts.values())
    ]
    if not limited:
        return {CPU: {}, MEMORY: {}}
    out: dict[str, dict[str, int]] = {}
    for what in (CPU, MEMORY):
        table = alloc.exact(kind, what)
        out[what] = {name: _floor_ratio(what, *table.get(name, (0, 1))) for name in limited}
    return out


def flavor_amounts(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    """Return pool -> resource -> Amount for every covered resource (zero where a pool has none)."""
    found = alloc.cache.get("amounts")
    if found is None:
        found = alloc.cache["amounts"] = _flavor_amounts(alloc)
    return found  # type: ignore[return-value]


def cpu_flavors(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    """Return CPU pool -> resource -> Amount: the pool's cpu and memory quota, zero of every GPU resource.

    These flavors come first in the ClusterQueue, so a CPU-only workload is admitted on a CPU pool
    and a GPU workload, which asks for a resource these flavors hold none of, skips them.
    """
    if not alloc.spec.cpu_quotas:
        return {}
    pools = {p.name for p in alloc.cluster.spec.cpu_pools}
    out: dict[str, dict[str, Amount]] = {}
    for quota in alloc.spec.cpu_quotas:
        if quota.pool in pools and quota.pool not in out:
            amounts = {
                CPU: Amount(_floor(CPU, quota.cpu)),
                MEMORY: Amount(_floor(MEMORY, quota.memory)),
            }
            out[quota.pool] = amounts | dict.fromkeys(alloc.resources(), ZERO)
    return out


def _flavor_amounts(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    granted = _granted(alloc.grants)
    cpu, memory = alloc.exact("nominal", CPU), alloc.exact("nominal", MEMORY)
    zeros = dict.fromkeys(alloc.resources(), ZERO)  # the GPU resources, sorted
    out: dict[str, dict[str, Amount]] = cpu_flavors(alloc)
    limits = _limits(alloc, granted) if _limited(alloc) else None
    for pool in alloc.pools():
        name = pool.name
        if limits is None:  # the common case: no grant has a limit, so cpu and memory have none
            amounts = {
                CPU: Amount(_floor_ratio(CPU, *cpu[name])),
                MEMORY: Amount(_floor_ratio(MEMORY, *memory[name])),
            }
        else:
            amounts = {
                CPU: Amount(_floor_ratio(CPU, *cpu[name]), *limits[CPU].get(name, _NONE)),
                MEMORY: Amount(
                    _floor_ratio(MEMORY, *memory[name]), *limits[MEMORY].get(name, _NONE)
                ),
            }
        amounts.update(zeros)
        amounts.update(granted[name])  # in the sorted places of zeros: a key keeps its place
        out[name] = amounts
    return out


_NONE = (None, None)  # no borrowing and no lending limit


def _limits(
    alloc: AllocationPlan, granted: dict[str, dict[str, Amount]]
) -> dict[str, dict[str, tuple[int | None, int | None]]]:
    """Return cpu and memory -> pool -> (borrowing limit, lending limit), where a pool has either."""
    borrowing = _derived_limits(alloc, "borrowing", granted)
    lending = _derived_limits(alloc, "lending", granted)
    return {
        what: {
            name: (borrowing[what].get(name), lending[what].get(name))
            for name in borrowing[what].keys() | lending[what].keys()
        }
        for what in (CPU, MEMORY)
    }


def cohort_lends(alloc: AllocationPlan) -> dict[str, dict[str, int]]:
    """Return pool -> resource -> what every member of the allocation's cohort tree lends, summed once.

    A member lends its nominal quota of a flavor's resource, or its lending limit there. A resource
    no member holds anything of in a flavor is left out: the cohort lends none of it there.
    """
    cluster = alloc.cluster
    root = cluster.cohort_root(alloc.spec.cohort)
    key = f"lends/{root}"
    found = cluster.cache.get(key)
    if found is None:
        members = tuple(
            flavor_amounts(m)
            for m in cluster.allocations
            if m.spec.cohort is not None and cluster.cohort_root(m.spec.cohort) == root
        )
        found = cluster.cache[key] = _lends(members)
    return found  # type: ignore[return-value]


def _lends(members: tuple[dict[str, dict[str, Amount]], ...]) -> dict[str, dict[str, int]]:
    """Sum what the members of a cohort tree lend, per pool and resource."""
    total: dict[str, dict[str, int]] = {}
    for amounts_of in members:
        for pool, amounts in amounts_of.items():
            into = total.setdefault(pool, {})
            for resource, amount in amounts.items():
                if amount is not ZERO:  # most are (a pool has one of the GPU resources)
                    nominal, _, lending = amount
                    into[resource] = into.get(resource, 0) + (
                        nominal if lending is None else lending
                    )
    return total


def namespace_ceiling(alloc: AllocationPlan) -> dict[str, int]:
    """Return per resource the most the ClusterQueue can ever admit: nominal plus borrowing."""
    return dict(_totals(alloc)[1])


def nominal_totals(alloc: AllocationPlan) -> dict[str, int]:
    """Return per resource the allocation's nominal quota (millicores, bytes, units), summed over its pools."""
    return dict(_totals(alloc)[0])


def _totals(alloc: AllocationPlan) -> tuple[dict[str, int], dict[str, int]]:
    """Return per resource the nominal quota and the ceiling, summed over the pools, computed once."""
    found = alloc.cache.get("totals")
    if found is None:
        found = alloc.cache["totals"] = _sum_pools(alloc)
    return found  # type: ignore[return-value]


def _sum_pools(alloc: AllocationPlan) -> tuple[dict[str, int], dict[str, int]]:
    """Sum nominal, and nominal plus borrowing, over the pools: what the cohort's other members lend bounds the borrowing.

    What the rest of the cohort can lend in a flavor is the cohort's total less this allocation's
    own lending there (its nominal, or its lending limit).
    """
    amounts = flavor_amounts(alloc)
    if alloc.spec.cohort is None or _limited(alloc):
        return _sum_each(alloc, amounts)
    # No limit anywhere: the borrowing is the cohort's total less its own nominal, so nominal plus
    # borrowing is the cohort's total in each flavor (the allocation lends to it, so it has one).
    nominals: dict[str, int] = {}
    for pool_amounts in amounts.values():
        for resource, amount in pool_amounts.items():
            nominals[resource] = nominals.get(resource, 0) + amount.nominal
    return nominals, _cohort_totals(alloc, amounts)


def _limited(alloc: AllocationPlan) -> bool:
    """Tell whether any grant sets a borrowing or lending limit (cpu and memory have one only then)."""
    return any(g.borrowing is not None or g.lending is not None for g in alloc.grants)


def _sum_each(
    alloc: AllocationPlan, amounts: dict[str, dict[str, Amount]]
) -> tuple[dict[str, int], dict[str, int]]:
    """Sum nominal, and nominal plus borrowing, flavor by flavor."""
    lent = cohort_lends(alloc) if alloc.spec.cohort is not None else {}
    nominals: dict[str, int] = {}
    ceiling: dict[str, int] = {}
    for pool, pool_amounts in amounts.items():
        pool_lent = lent.get(pool, {})
        for resource, (nominal, borrowing, lending) in pool_amounts.items():
            total = pool_lent.get(resource)
            borrow = 0 if total is None else total - (nominal if lending is None else lending)
            if borrowing is not None:
                borrow = min(borrowing, borrow)
            nominals[resource] = nominals.get(resource, 0) + nominal
            ceiling[resource] = ceiling.get(resource, 0) + nominal + borrow
    return nominals, ceiling


def _cohort_totals(alloc: AllocationPlan, amounts: dict[str, dict[str, Amount]]) -> dict[str, int]:
    """Return per resource what the allocation's cohort tree lends in its flavors, summed.

    Kept per cohort tree and flavors: tenants with quota on the same pools share it.
    """
    root = alloc.cluster.cohort_root(alloc.spec.cohort)
    shape = (root, tuple((pool, tuple(resources)) for pool, resources in amounts.items()))
    known: dict[object, dict[str, int]]
    known = alloc.cluster.cache.setdefault("cohort-totals", {})  # type: ignore[assignment]
    found = known.get(shape)
    if found is None:
        lent = cohort_lends(alloc)
        found = known[shape] = {}
        for pool, resources in shape[1]:
            pool_lent = lent.get(pool, {})
            for resource in resources:
                found[resource] = found.get(resource, 0) + pool_lent.get(resource, 0)
    return dict(found)


def _cluster_resources(cluster: ClusterPlan) -> list[str]:
    """Return every GPU resource of the cluster's pools, in pool order, found once."""
    found = cluster.cache.get("gpu-resources")
    if found is None:
        found = cluster.cache["gpu-resources"] = list(
            dict.fromkeys(r for pool in cluster.pools.values() for r in pool.resources)
        )
    return found  # type: ignore[return-value]


def namespace_limits(alloc: AllocationPlan) -> dict[str, int]:
    """Return the ceiling per resource plus a zero for every GPU resource of the cluster the
    tenant has no quota on, so nothing outside its grants can be taken by bypassing Kueue."""
    limits = dict.fromkeys(_cluster_resources(alloc.cluster), 0)
    limits.update(namespace_ceiling(alloc))
    return dict(sorted(limits.items()))


def namespace_weights(alloc: AllocationPlan) -> dict[str, int]:
    """Return each namespace's weight in the split of the quota: as given, or 1 each (an even split)."""
    given = alloc.spec.namespace_shares
    return {n: (given or {}).get(n, 0 if given else 1) for n in alloc.namespaces}


def apportion(total: int, weights: list[int]) -> list[int]:
    """Split whole units by weight: floors, then the units left to the largest remainders (first on ties).

    The parts add up to exactly `total`, never more.
    """
    whole = sum(weights)
    if whole == 0:
        return [0 for _ in weights]
    parts = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _step(resource: str) -> int:
    """Return the smallest amount of a resource the namespaces' quotas are split in: a millicore, a MiB, one unit."""
    return MIB if resource == MEMORY else 1


def namespace_quotas(alloc: AllocationPlan) -> dict[str, dict[str, int]]:
    """Return namespace -> resource -> its ResourceQuota: the tenant's limits split by weight.

    Where Kueue, Volcano or KAI admits the tenant's workloads, each namespace's quota is the tenant's
    total (see _split). Elsewhere the namespaces' quotas add up to the tenant's total per resource,
    never more, so pods cannot use more than the tenant was granted, however many namespaces it has.
    """
    found = alloc.cache.get("namespace-quotas")
    if found is None:
        found = alloc.cache["namespace-quotas"] = _split(alloc)
    return found  # type: ignore[return-value]


def _split(alloc: AllocationPlan) -> dict[str, dict[str, int]]:
    weights = namespace_weights(alloc)
    names = list(weights)
    limits = namespace_limits(alloc)
    # Kueue, Volcano and KAI admit a tenant's workload up to its whole total in any one of its
    # namespaces (one ClusterQueue or Queue for all of them); a namespace quota below that refuses
    # the pods of an admitted workload, which then holds its admission. Where one admits, each
    # namespace's quota is the tenant's total: a backstop that pods skipping the scheduler cannot
    # pass in any namespace. Only where none admits does the split bound the namespaces together.
    whole = authority(alloc.cluster.spec.components) is not None
    if whole or (len(names) == 1 and weights[names[0]] > 0):  # in whole steps
        return {n: {r: total // _step(r) * _step(r) for r, total in limits.items()} for n in names}
    out: dict[str, dict[str, int]] = {n: {} for n in names}
    for resource, total in limits.items():
        step = _step(resource)
        parts = apportion(total // step, [weights[n] for n in names])
        for name, part in zip(names, parts):
            out[name][resource] = part * step
    return out
