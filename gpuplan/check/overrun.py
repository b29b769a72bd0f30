"""Capacity: the tenants' nominal quotas on a pool fit what the pool's nodes offer."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, codes
from gpuplan.diagnostics import Diagnostic, Severity, format_path
from gpuplan.plan.fleet import ClusterPlan, Fleet, Grant
from gpuplan.plan.pools import PoolPlan


def unit_name(pool: PoolPlan, resource: str, count: int) -> str:
    """Return what a resource's units are called, such as `GPUs`, `shares` or `1g.10gb instances`."""
    info = pool.resources[resource]
    if info.device_class is not None:  # DRA: devices of a DeviceClass, whatever the sharing
        word = f"{info.profile} instance" if info.profile else "GPU"
        return f"{word}{'' if count == 1 else 's'} of DeviceClass {info.device_class.name}"
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


def base_key(
    cluster: ClusterPlan, pool: str, resource: str, tenant: str
) -> tuple[str, str, str, str]:
    """Return the key of a quota (or with tenant "" a pool's capacity) in Fleet.base."""
    return (cluster.name, pool, resource, tenant)


def _changed(
    fleet: Fleet, cluster: ClusterPlan, pool: PoolPlan, resource: str, grants: list[Grant]
) -> list[Grant] | None:
    """Return the grants whose quota differs from the git base (None: no base, or only the pool changed)."""
    if fleet.base is None:
        return None
    changed = [
        g
        for g in grants
        if fleet.base.get(base_key(cluster, pool.name, resource, g.owner.name)) != g.nominal
    ]
    return changed or None


def _shrank(fleet: Fleet, cluster: ClusterPlan, pool: PoolPlan, resource: str) -> bool:
    """Tell whether the pool offers less of a resource than at the git base."""
    if fleet.base is None:
        return False
    before = fleet.base.get(base_key(cluster, pool.name, resource, ""))
    return before is not None and before > pool.capacity(resource)


# At most this many tenants are named in a sum; the rest are counted (a 200-tenant pool would
# otherwise print every tenant in each of its diagnostics).
NAMED = 8


def _addends(grants: list[Grant]) -> str:
    """Return "a 2 + b 4 + ...", naming the first NAMED tenants and summing the others."""
    named = " + ".join(f"{g.owner.name} {g.nominal}" for g in grants[:NAMED])
    rest = grants[NAMED:]
    if not rest:
        return named
    return f"{named} + {len(rest)} other tenants {sum(g.nominal for g in rest)}"


def _share(grant: Grant, grants: list[Grant]) -> str:
    others = _addends([g for g in grants if g is not grant])
    return f"tenant {grant.owner.name} asks {grant.nominal}" + (
        f", with {others}" if others else ""
    )


@check
@codes(
    (
        "pool-capacity-autoscaled",
        "Warn when nominal quotas of an autoscaled pool (within nodes.max) depend on the autoscaler: "
        "Karpenter keeps no minimum, and the Cluster Autoscaler keeps only nodes.min up.",
    )
)
def check_pool_capacity(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when nominal quotas exceed a pool at nodes.max; warn (at the pool) above nodes.min.

    The error stands at the quota that changed since `check --base REF` when there is one, and
    otherwise at every contributing tenant's quota, each quoting that tenant's own share.
    """
    for cluster in fleet.clusters.values():
        yield from _capacity(fleet, cluster)


def _capacity(fleet: Fleet, cluster: ClusterPlan) -> Iterator[Diagnostic]:
    """Yield the capacity findings of one cluster's pools (check_pool_capacity)."""
    for (pool_name, resource), grants in sorted(_grants(cluster).items()):
        pool = cluster.pools[pool_name]
        asked = sum(g.nominal for g in grants)
        most, least = pool.capacity(resource), pool.capacity(resource, at_least=True)
        units = unit_name(pool, resource, asked)
        per_node = _per_node_text(pool, resource)
        if asked > most:
            total = f"tenants ask {asked} {units} of pool {pool_name}, which has at most {most} ({_nodes(pool.nodes_most)} x {per_node})"
            changed = _changed(fleet, cluster, pool, resource, grants)
            if changed is None and _shrank(fleet, cluster, pool, resource):
                yield _pool_at(
                    cluster,
                    pool,
                    ("nodes",),
                    Severity.ERROR,
                    f"{total}: the pool shrank below its quotas",
                )
                continue
            for grant in changed or grants:
                file, line, col, path = _where(grant)
                yield Diagnostic(
                    file, line, col, Severity.ERROR, path, f"{total}; {_share(grant, grants)}"
                )
        elif asked > least and (nodes := pool.spec.nodes).autoscaled:
            share = _addends(grants)
            if nodes.by_karpenter:
                # Karpenter keeps no minimum, so no node of an autoscaled pool is always there
                # (PoolPlan.nodes_least): every unit asked depends on Karpenter launching nodes.
                kept = f" (nodes.min {nodes.min} is not kept)" if nodes.min else ""
                message = (
                    f"tenants' {asked} {units} of pool {pool_name} ({share}) all depend on autoscaling: Karpenter "
                    f"keeps no minimum, so none of the pool is always-on{kept}; "
                    "for capacity that must stay up, use a static pool ({count: N})"
                )
            else:
                # the Cluster Autoscaler keeps a node group at its minimum (PoolPlan.nodes_least)
                # and grows it only for pending pods: the rest waits for a node to launch
                message = (
                    f"tenants' {asked} {units} of pool {pool_name} ({share}) exceed the {least} "
                    f"that nodes.min {nodes.min} keeps up: the rest waits for the Cluster Autoscaler "
                    f"to grow node group {pool.spec.node_group}; raise nodes.min for capacity that must stay up"
                )
            yield _pool_at(
                cluster,
                pool,
                ("nodes", "min"),
                Severity.WARNING,
                message,
                "pool-capacity-autoscaled",
            )


def _pool_at(
    cluster: ClusterPlan,
    pool: PoolPlan,
    rest: tuple[str, ...],
    severity: Severity,
    message: str,
    code: str = "",
) -> Diagnostic:
    loc: tuple[str | int, ...] = ("nodePools", pool.index, *rest)
    source = cluster.located.source
    line, col = source.position(loc)
    return Diagnostic(source.path, line, col, severity, format_path(loc), message, code)
