"""Quota rules Kueue's webhooks enforce, and quotas that can never be used."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from gpuplan.check.registry import allocation_check, check
from gpuplan.diagnostics import Diagnostic, Severity, format_path
from gpuplan.model.quantity import format_bytes, format_cpu
from gpuplan.plan.entitlements import cohort_lends
from gpuplan.plan.fleet import AllocationPlan, Fleet, Grant
from gpuplan.plan.pools import GPU


@allocation_check
def check_lending_within_nominal(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when a lending limit exceeds the quota it lends from (Kueue rejects it)."""
    for grant in alloc.grants:
        if grant.lending is not None and grant.lending > grant.nominal:
            loc = grant.loc[:4] + ("lendingLimit",)
            if grant.loc[-1] not in ("gpus",):
                loc += (grant.loc[-1],)
            yield alloc.tenant.source.diagnostic(
                loc,
                f"lendingLimit {grant.lending} is above the quota {grant.nominal}: a tenant can lend at most what it has",
            )


@allocation_check
def check_limits_need_cohort(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when borrowing or lending limits are set without a cohort to borrow from."""
    if alloc.spec.cohort is not None:
        return
    for q_index, quota in enumerate(alloc.spec.quotas):
        for field, value in (
            ("borrowingLimit", quota.borrowing_limit),
            ("lendingLimit", quota.lending_limit),
        ):
            if value is not None:
                loc = alloc.loc("quotas", q_index, field)
                yield alloc.tenant.source.diagnostic(
                    loc, f"{field} needs a cohort: set allocations[{alloc.index}].cohort"
                )


@allocation_check
def check_max_gpus_per_pod(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when maxGpusPerPod is above every granted pool's gpusPerNode (it never schedules)."""
    ceiling = alloc.spec.max_gpus_per_pod
    pools = [g.pool for g in alloc.grants if g.resource == GPU]
    if ceiling is None or not pools:
        return
    largest = max(p.gpus_per_node for p in pools)
    if ceiling > largest:
        message = f"maxGpusPerPod {ceiling} is above the largest gpusPerNode {largest} of the tenant's pools: such a pod can never schedule"
        yield alloc.tenant.source.diagnostic(alloc.loc("maxGpusPerPod"), message)


@allocation_check
def check_scheduler_present(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Warn when a tenant has quota on a cluster with neither Kueue, Volcano nor KAI to enforce it."""
    components = alloc.cluster.spec.components
    if (
        components.kueue is None
        and components.volcano is None
        and components.kai is None
        and alloc.grants
    ):
        loc = alloc.loc("cluster")
        line, col = alloc.tenant.source.position(loc)
        message = f"cluster {alloc.cluster.name} has no Kueue or Volcano: only the namespace ResourceQuota enforces this quota"
        yield Diagnostic(
            alloc.tenant.source.path,
            line,
            col,
            Severity.WARNING,
            f"allocations[{alloc.index}].cluster",
            message,
        )


@allocation_check
def check_cpu_memory_within_pools(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when a tenant's cpu or memory total exceeds what its pools' nodes have."""
    for field in ("cpu", "memory"):
        explicit = getattr(alloc.spec, field)
        if explicit is None:
            continue
        pools = alloc.pools()
        available = sum((getattr(p.spec, field) * p.nodes_most for p in pools), start=explicit * 0)
        if explicit > available:
            names = ", ".join(p.name for p in pools)
            message = f"{field} {getattr(alloc.spec, field)} is more than the {field} of every node of its pools ({names}) at their largest size"
            yield alloc.tenant.source.diagnostic(alloc.loc(field), message)


def _lend(grant: Grant) -> int:
    return grant.nominal if grant.lending is None else grant.lending


def _lendable(alloc: AllocationPlan, grant: Grant) -> int:
    own = sum(
        _lend(g) for g in alloc.grants if g.pool is grant.pool and g.resource == grant.resource
    )
    return cohort_lends(alloc).get(grant.pool.name, {}).get(grant.resource, 0) - own


@allocation_check
def check_borrowing_within_cohort(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Warn when a borrowing limit is larger than what the rest of the cohort can lend."""
    if alloc.spec.cohort is None:
        return
    for grant in alloc.grants:
        if grant.borrowing is None:
            continue
        lendable = _lendable(alloc, grant)
        if grant.borrowing > lendable:
            loc = (
                grant.loc[:4]
                + ("borrowingLimit",)
                + (() if grant.loc[-1] == "gpus" else (grant.loc[-1],))
            )
            line, col = alloc.tenant.source.position(loc)
            message = (
                f"borrowingLimit {grant.borrowing} is more than the rest of cohort {alloc.spec.cohort} "
                f"can lend of {grant.resource} on pool {grant.pool.name} ({lendable})"
            )
            yield Diagnostic(
                alloc.tenant.source.path, line, col, Severity.WARNING, format_path(loc), message
            )


def _per_pool(alloc: AllocationPlan, what: str) -> dict[str, Fraction]:
    return alloc.cpu() if what == "cpu" else alloc.memory()


@check
def check_pool_cpu_memory(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when the tenants' cpu or memory quotas on one pool add up to more than its nodes have."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for what in ("cpu", "memory"):
            # Only pools some tenant states its own total on: where every quota is derived from
            # the GPUs, an excess is the GPU capacity error already.
            explicit = {
                pool_name
                for alloc in cluster.allocations
                if getattr(alloc.spec, what) is not None
                for pool_name in _per_pool(alloc, what)
            }
            if not explicit:
                continue
            totals: dict[str, Fraction] = {}
            last: dict[str, AllocationPlan] = {}
            for alloc in cluster.allocations:
                for pool_name, amount in _per_pool(alloc, what).items():
                    if pool_name in explicit:
                        totals[pool_name] = totals.get(pool_name, Fraction(0)) + amount
                        last[pool_name] = alloc
            for pool_name, total in sorted(totals.items()):
                pool = cluster.pools[pool_name]
                per_node = getattr(pool.spec, what)
                available = per_node * pool.nodes_most
                if total > available:
                    alloc = last[pool_name]
                    shown = format_cpu if what == "cpu" else format_bytes
                    loc = (
                        alloc.loc(what)
                        if getattr(alloc.spec, what) is not None
                        else alloc.loc("quotas")
                    )
                    message = f"tenants' {what} quotas on pool {pool_name} add up to {shown(total)}, more than its nodes have ({shown(available)} = {pool.nodes_most} x {shown(per_node)})"
                    yield alloc.tenant.source.diagnostic(loc, message)
