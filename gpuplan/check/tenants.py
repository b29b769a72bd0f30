"""Tenant rules: CPU-only work has a home, namespaces split the quota, defaults fit it, RDMA pods can start."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from gpuplan.check.registry import allocation_check, check
from gpuplan.diagnostics import Diagnostic, Key, Located, Severity, SourceFile, format_path
from gpuplan.model.cluster import Network
from gpuplan.model.quantity import format_bytes, format_cpu
from gpuplan.plan.entitlements import CPU, MEMORY, namespace_quotas, per_unit, quantity
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet


def _warning(source: SourceFile, loc: Key, message: str) -> Diagnostic:
    line, col = source.position(loc)
    return Diagnostic(source.path, line, col, Severity.WARNING, format_path(loc), message)


def _show(what: str, value: Fraction) -> str:
    return format_cpu(value) if what == CPU else format_bytes(value)


@check
def check_cpu_pool_names(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a CPU pool repeats a name of the cluster's pools (each pool is one ResourceFlavor)."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        seen = {p.name for p in cluster.spec.node_pools}
        for index, pool in enumerate(cluster.spec.cpu_pools):
            if pool.name in seen:
                yield cluster.located.source.diagnostic(
                    ("cpuPools", index, "name"),
                    f"pool {pool.name} is defined already: every pool, GPU or CPU, needs its own name (it names its Kueue ResourceFlavor)",
                )
            seen.add(pool.name)


@allocation_check
def check_cpu_quota_pools(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when a cpuQuotas entry names no CPU pool of the cluster, or one named already."""
    pools = [p.name for p in alloc.cluster.spec.cpu_pools]
    seen: set[str] = set()
    for index, quota in enumerate(alloc.spec.cpu_quotas):
        loc = alloc.loc("cpuQuotas", index, "pool")
        if quota.pool not in pools:
            known = ", ".join(pools) or "none"
            yield alloc.tenant.source.diagnostic(
                loc,
                f"cluster {alloc.cluster.name} has no CPU pool {quota.pool!r} (its cpuPools: {known})",
            )
        elif quota.pool in seen:
            yield alloc.tenant.source.diagnostic(
                loc, f"CPU pool {quota.pool} has a quota already in this allocation"
            )
        seen.add(quota.pool)


def _cpu_grants(cluster: ClusterPlan, pool: str) -> list[tuple[AllocationPlan, int]]:
    return [
        (a, i)
        for a in cluster.allocations
        for i, q in enumerate(a.spec.cpu_quotas)
        if q.pool == pool
    ]


@check
def check_cpu_pool_capacity(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when the tenants' cpu or memory on a CPU pool add up to more than its nodes have at nodes.max."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for pool in cluster.spec.cpu_pools:
            grants = _cpu_grants(cluster, pool.name)
            for what in (CPU, MEMORY):
                asked = sum((getattr(a.spec.cpu_quotas[i], what) for a, i in grants), Fraction(0))
                per_node = getattr(pool, what)
                most = per_node * pool.nodes.most
                if asked <= most:
                    continue
                shares = " + ".join(
                    f"{a.name} {_show(what, getattr(a.spec.cpu_quotas[i], what))}"
                    for a, i in grants
                )
                for (
                    alloc,
                    index,
                ) in grants:  # at every contributing quota: each tenant sees its own share
                    own = _show(what, getattr(alloc.spec.cpu_quotas[index], what))
                    message = f"tenants ask {_show(what, asked)} {what} of CPU pool {pool.name}, which has {_show(what, most)} ({pool.nodes.most} x {_show(what, per_node)}); tenant {alloc.name} asks {own} ({shares})"
                    yield alloc.tenant.source.diagnostic(
                        alloc.loc("cpuQuotas", index, what), message
                    )


@allocation_check
def check_cpu_only_work(alloc: AllocationPlan) -> list[Diagnostic]:
    """Warn when a tenant with GPU quota under Kueue has no CPU pool quota: its CPU-only jobs take a GPU flavor."""
    if alloc.cluster.spec.components.kueue is None or not alloc.grants or alloc.spec.cpu_quotas:
        return []
    first = alloc.pools()[0].name
    hint = (
        "give it cpuQuotas on one of the cluster's cpuPools"
        if alloc.cluster.spec.cpu_pools
        else "add cpuPools to the cluster and give the tenant cpuQuotas there"
    )
    message = f"Kueue admits the CPU-only workloads of tenant {alloc.name} on the first flavor that has cpu, GPU pool {first}: they take GPU nodes; {hint}"
    return [_warning(alloc.tenant.source, alloc.loc("quotas"), message)]


@allocation_check
def check_namespace_shares(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when namespaceShares does not list exactly the tenant's namespaces."""
    shares = alloc.spec.namespace_shares
    if shares is None:
        return
    names = alloc.namespaces
    for namespace in sorted(set(shares) - set(names)):
        yield alloc.tenant.source.diagnostic(
            alloc.loc("namespaceShares", namespace),
            f"{namespace} is not a namespace of tenant {alloc.name} ({', '.join(names)})",
        )
    missing = [n for n in names if n not in shares]
    if missing:
        yield alloc.tenant.source.diagnostic(
            alloc.loc("namespaceShares"),
            f"namespace {', '.join(missing)} has no share: list every namespace of the tenant",
        )


@allocation_check  # the namespace quotas read the cohort's lending
def check_container_defaults_fit(alloc: AllocationPlan) -> list[Diagnostic]:
    """Error when a default container request is above a namespace's cpu or memory quota (every such pod is rejected)."""
    owner, loc = _defaults_at(alloc)
    defaults = alloc.tenant.model.container_defaults or alloc.cluster.spec.container_defaults
    found = []
    for namespace, quota in namespace_quotas(alloc).items():
        for what in (CPU, MEMORY):
            request = getattr(defaults.requests, what)
            limit = quota.get(what, 0)  # millicores or bytes
            # 0 < limit < request in the same unit (a zero quota admits no pod anyway), in integers
            if limit > 0 and limit * request.denominator < request.numerator * per_unit(what):
                message = f"the default {what} request {_show(what, request)} is above the {what} quota {quantity(what, limit)} of namespace {namespace} (tenant {alloc.name}): every pod without its own request would be rejected"
                found.append(
                    owner.source.diagnostic(
                        loc + ((what,) if loc[0] == "containerDefaults" else ()), message
                    )
                )
    return found


def _defaults_at(alloc: AllocationPlan) -> tuple[Located[Any], Key]:
    """Return where the allocation's container defaults are written: tenant, cluster, or (built in) its quotas."""
    if alloc.tenant.model.container_defaults is not None:
        return alloc.tenant, ("containerDefaults", "requests")
    if "containerDefaults" in alloc.cluster.located.source.data:
        return alloc.cluster.located, ("containerDefaults", "requests")
    return alloc.tenant, alloc.loc("quotas")


@allocation_check
def check_local_queues(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error on a LocalQueue name given twice, or borrowWithinCohort preemption without a cohort."""
    settings = alloc.spec.kueue
    seen: set[str] = set()
    for index, queue in enumerate(settings.local_queues):
        if queue.name in seen:
            yield alloc.tenant.source.diagnostic(
                alloc.loc("kueue", "localQueues", index, "name"),
                f"LocalQueue {queue.name} is listed already",
            )
        seen.add(queue.name)
    if alloc.spec.cohort is None and settings.preemption.borrow_within_cohort.policy != "Never":
        loc = alloc.loc("kueue", "preemption", "borrowWithinCohort", "policy")
        yield alloc.tenant.source.diagnostic(
            loc, "borrowWithinCohort needs a cohort to borrow from: set the allocation's cohort"
        )


def is_rdma(network: Network) -> bool:
    """Tell whether pods on this network use RDMA: InfiniBand (ipoib, ib-sriov), EFA, RoCE VFs (sriov.rdma),
    or an RDMA device-plugin resource."""
    return (
        network.type in ("ipoib", "ib-sriov", "efa")
        or network.rdma_vfs
        or "rdma" in (network.resource_name or "").lower()
    )


@allocation_check
def check_rdma_pod_security(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Warn when a tenant attaches an RDMA network under PSA baseline or restricted (IPC_LOCK is refused)."""
    level = alloc.tenant.model.pod_security
    if level == "privileged" or not alloc.spec.networks:
        return
    networks = {n.name: n for n in alloc.cluster.spec.networks}
    for index, name in enumerate(alloc.spec.networks):
        network = networks.get(name)
        if network is None or not is_rdma(network):
            continue
        # Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards):
        # baseline allows adding only AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD,
        # NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT; restricted only NET_BIND_SERVICE.
        message = (
            f"network {name} is RDMA, and RDMA pods add the IPC_LOCK capability to pin memory, which PSA {level} "
            f"refuses: set podSecurity: privileged for tenant {alloc.name}, or make the container runtime's memlock "
            "limit unlimited on the network's nodes (then no IPC_LOCK is needed) and accept this warning"
        )
        yield _warning(alloc.tenant.source, alloc.loc("networks", index), message)
