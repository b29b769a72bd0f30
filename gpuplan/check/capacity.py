"""Capacity: the tenants' nominal quotas on a pool fit what the pool's nodes offer."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check
from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.load import format_path
from gpuplan.fleet import ClusterPlan, Fleet, Grant
from gpuplan.pools import PoolPlan


def unit_name(pool: PoolPlan, resource: str, count: int) -> str:
    """Return what a resource's units are called, such as `GPUs`, `shares` or `1g.10gb instances`."""
    info = pool.resources[resource]
    if info.profile is not None:
        word = f"{info.profile} instance" + ("" if count == 1 else "s")
        return f"shared {word}" if pool.spec.sharing.replicas > 1 else word
    if pool.spec.sharing.replicas > 1:
        return "share" if count == 1 else "shares"
    return "GPU" if count == 1 else "GPUs"


def _grants(cluster: ClusterPlan) -> dict[tuple[str, str], list[Grant]]:
    out: dict[tuple[str, str], list[Grant]] = {}
    for alloc in cluster.allocations:
        for grant in alloc.grants:
            out.setdefault((grant.pool.name, grant.resource), []).append(grant)
    return out


def _where(grant: Grant) -> tuple[str, int, int, str]:
    source = grant.owner.tenant.source
    line, col = source.position(grant.loc)
    return source.path, line, col, format_path(grant.loc)


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def _per_node_text(pool: PoolPlan, resource: str) -> str:
    return str(pool.resources[resource].per_node)


@check
def check_pool_capacity(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when nominal quotas exceed a pool at nodes.max; warn above nodes.min."""
    for cluster in fleet.clusters.values():
        for (pool_name, resource), grants in sorted(_grants(cluster).items()):
            pool = cluster.pools[pool_name]
            asked = sum(g.nominal for g in grants)
            most, least = pool.capacity(resource), pool.capacity(resource, at_least=True)
            last = grants[-1]
            file, line, col, path = _where(last)
            units = unit_name(pool, resource, asked)
            per_node = _per_node_text(pool, resource)
            if asked > most:
                share = " + ".join(f"{g.owner.name} {g.nominal}" for g in grants)
                message = (
                    f"tenants ask {asked} {units} of pool {pool_name}, which has at most {most} "
                    f"({_nodes(pool.nodes_most)} x {per_node}); {share}"
                )
                yield Diagnostic(file, line, col, Severity.ERROR, path, message)
            elif asked > least and pool.spec.nodes.autoscaled:
                message = (
                    f"{asked} {units} of pool {pool_name} exceed its always-on {least} "
                    f"(nodes.min {pool.nodes_least} x {per_node}); the rest depends on autoscaling"
                )
                yield Diagnostic(file, line, col, Severity.WARNING, path, message)
