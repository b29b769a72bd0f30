"""What each tenant allocation is entitled to per pool and resource, cpu and memory included.

Kueue's ClusterQueue and the namespaces' ResourceQuotas are both written from these numbers, so
the two can never disagree: the quota is the ClusterQueue's nominal plus what it may borrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gpuplan.fleet import AllocationPlan
from gpuplan.quantity import format_bytes, format_count, format_cpu

CPU = "cpu"
MEMORY = "memory"
MIB = 2**20


@dataclass(frozen=True)
class Amount:
    """A quota of one resource in one flavor: nominal, and limits (None: unlimited / unset)."""

    nominal: Fraction
    borrowing: Fraction | None = None
    lending: Fraction | None = None


def _floor(resource: str, value: Fraction) -> Fraction:
    """Round down to what the manifests can state: millicores, whole MiB, whole units."""
    if resource == CPU:
        return Fraction(int(value * 1000), 1000)
    if resource == MEMORY:
        return Fraction(int(value / MIB) * MIB)
    return Fraction(int(value))


def quantity(resource: str, value: Fraction) -> str:
    """Return an amount of a resource as a canonical Kubernetes quantity string."""
    if resource == CPU:
        return format_cpu(value)
    if resource == MEMORY:
        return format_bytes(value)
    return format_count(value)


def covered_resources(alloc: AllocationPlan) -> list[str]:
    """Return the resources of the allocation's one resource group: cpu, memory, then GPUs."""
    return [CPU, MEMORY, *alloc.resources()]


def _limit(values: list[int | None]) -> Fraction | None:
    """Sum limits, or None when any of them is unlimited."""
    if any(v is None for v in values):
        return None
    return Fraction(sum(v for v in values if v is not None))


def _derived(alloc: AllocationPlan, what: str, pool: str, kind: str) -> Fraction | None:
    grants = [g for g in alloc.grants if g.pool.name == pool]
    if _limit([getattr(g, kind) for g in grants]) is None:
        return None
    table = alloc.cpu(kind) if what == CPU else alloc.memory(kind)
    return _floor(what, table.get(pool, Fraction(0)))


def flavor_amounts(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    """Return pool -> resource -> Amount for every covered resource (zero where a pool has none)."""
    if "amounts" not in alloc.cache:
        alloc.cache["amounts"] = _flavor_amounts(alloc)
    return alloc.cache["amounts"]  # type: ignore[return-value]


def cpu_flavors(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    """Return CPU pool -> resource -> Amount: the pool's cpu and memory quota, zero of every GPU resource.

    These flavors come first in the ClusterQueue, so a CPU-only workload is admitted on a CPU pool
    and a GPU workload, which asks for a resource these flavors hold none of, skips them.
    """
    pools = {p.name for p in alloc.cluster.spec.cpu_pools}
    out: dict[str, dict[str, Amount]] = {}
    for quota in alloc.spec.cpu_quotas:
        if quota.pool in pools and quota.pool not in out:
            amounts = {
                CPU: Amount(_floor(CPU, quota.cpu)),
                MEMORY: Amount(_floor(MEMORY, quota.memory)),
            }
            out[quota.pool] = amounts | {r: Amount(Fraction(0)) for r in alloc.resources()}
    return out


def _flavor_amounts(alloc: AllocationPlan) -> dict[str, dict[str, Amount]]:
    cpu, memory = alloc.cpu(), alloc.memory()
    out: dict[str, dict[str, Amount]] = cpu_flavors(alloc)
    for pool in alloc.pools():
        name = pool.name
        amounts = {
            CPU: Amount(
                _floor(CPU, cpu[name]),
                _derived(alloc, CPU, name, "borrowing"),
                _derived(alloc, CPU, name, "lending"),
            ),
            MEMORY: Amount(
                _floor(MEMORY, memory[name]),
                _derived(alloc, MEMORY, name, "borrowing"),
                _derived(alloc, MEMORY, name, "lending"),
            ),
        }
        for resource in alloc.resources():
            grants = [g for g in alloc.grants if g.pool.name == name and g.resource == resource]
            if not grants:
                amounts[resource] = Amount(Fraction(0))
                continue
            amounts[resource] = Amount(
                Fraction(sum(g.nominal for g in grants)),
                _limit([g.borrowing for g in grants]),
                _limit([g.lending for g in grants]),
            )
        out[name] = amounts
    return out


def _lends(alloc: AllocationPlan) -> dict[tuple[str, str], Fraction]:
    """Return (pool, resource) -> what one allocation lends to its cohort."""
    out: dict[tuple[str, str], Fraction] = {}
    for pool, amounts in flavor_amounts(alloc).items():
        for resource, amount in amounts.items():
            out[(pool, resource)] = amount.nominal if amount.lending is None else amount.lending
    return out


def _cohort_lends(alloc: AllocationPlan) -> dict[tuple[str, str], Fraction]:
    """Return (pool, resource) -> what every member of the allocation's cohort tree lends, summed once."""
    root = alloc.cluster.cohort_root(alloc.spec.cohort)
    key = f"lends/{root}"
    cache = alloc.cluster.cache
    if key not in cache:
        total: dict[tuple[str, str], Fraction] = {}
        for member in alloc.cluster.allocations:
            if (
                member.spec.cohort is not None
                and alloc.cluster.cohort_root(member.spec.cohort) == root
            ):
                for where, lend in _lends(member).items():
                    total[where] = total.get(where, Fraction(0)) + lend
        cache[key] = total
    return cache[key]  # type: ignore[return-value]


def _lendable(alloc: AllocationPlan) -> dict[tuple[str, str], Fraction]:
    """Return (pool, resource) -> what the rest of the allocation's cohort can lend it."""
    if alloc.spec.cohort is None:
        return {}
    own = _lends(alloc)
    return {
        where: total - own.get(where, Fraction(0)) for where, total in _cohort_lends(alloc).items()
    }


def namespace_ceiling(alloc: AllocationPlan) -> dict[str, Fraction]:
    """Return per resource the most the ClusterQueue can ever admit: nominal plus borrowing."""
    if "ceiling" not in alloc.cache:
        alloc.cache["ceiling"] = _ceiling(alloc)
    return dict(alloc.cache["ceiling"])  # type: ignore[call-overload]


def _ceiling(alloc: AllocationPlan) -> dict[str, Fraction]:
    lendable = _lendable(alloc)
    ceiling: dict[str, Fraction] = {}
    for pool, amounts in flavor_amounts(alloc).items():
        for resource, amount in amounts.items():
            borrow = amount.borrowing
            if borrow is None:
                borrow = lendable.get((pool, resource), Fraction(0))
            else:
                borrow = min(borrow, lendable.get((pool, resource), Fraction(0)))
            ceiling[resource] = ceiling.get(resource, Fraction(0)) + amount.nominal + borrow
    return ceiling


def namespace_limits(alloc: AllocationPlan) -> dict[str, Fraction]:
    """Return the ceiling per resource plus a zero for every GPU resource of the cluster the
    tenant has no quota on, so nothing outside its grants can be taken by bypassing Kueue."""
    limits = {r: Fraction(0) for pool in alloc.cluster.pools.values() for r in pool.resources}
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


def _units(resource: str) -> Fraction:
    """Return the smallest amount of a resource the manifests state: a millicore, a MiB, one unit."""
    return (
        Fraction(1, 1000)
        if resource == CPU
        else Fraction(MIB)
        if resource == MEMORY
        else Fraction(1)
    )


def namespace_quotas(alloc: AllocationPlan) -> dict[str, dict[str, Fraction]]:
    """Return namespace -> resource -> its ResourceQuota: the tenant's limits split by weight.

    The namespaces' quotas add up to the tenant's total per resource, never more, so pods that skip
    Kueue cannot use more than the tenant was granted, however many namespaces it has.
    """
    if "namespace-quotas" not in alloc.cache:
        weights = namespace_weights(alloc)
        names = list(weights)
        out: dict[str, dict[str, Fraction]] = {n: {} for n in names}
        for resource, total in namespace_limits(alloc).items():
            unit = _units(resource)
            parts = apportion(int(total / unit), [weights[n] for n in names])
            for name, part in zip(names, parts):
                out[name][resource] = part * unit
        alloc.cache["namespace-quotas"] = out
    return alloc.cache["namespace-quotas"]  # type: ignore[return-value]
