"""KAI Scheduler rules: what KAI's Queue webhook lets through or only warns about."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import allocation_check, check, clusters_with
from gpuplan.components.kai import RESERVED_QUEUES, authority, running_schedulers
from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet
from gpuplan.plan.kai_quota import RESOURCES, cohorts, leaf_limit, leaf_quota, parent_quota

UNITS = {"gpu": "GPUs", "cpu": "millicores of cpu", "memory": "MB of memory"}  # KAI's units


@check
def check_kai_parent_quota(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a cohort's children ask for more than its KAI parent Queue's quota.

    KAI only warns about it, and only with --enable-quota-validation (kai-scheduler/KAI-Scheduler
    v0.17.0 pkg/admission/webhook/queuehooks/queue_validator.go); the children's quotas then promise
    GPUs the parent never gets.
    """
    for cluster in clusters_with(fleet, "kai-scheduler"):
        kai = cluster.spec.components.kai
        assert kai is not None
        source = cluster.located.source
        used = set(cohorts(cluster))
        for cohort, stated in kai.parents.items():
            where = ("components", "kai", "parents", cohort)
            if cohort not in used:
                yield source.diagnostic(
                    where,
                    f"no tenant allocation on cluster {cluster.name} is in cohort {cohort!r}: its KAI parent Queue would have no children",
                )
                continue
            yield from _over_parent(
                cluster, cohort, {r for r in RESOURCES if getattr(stated, r) is not None}
            )


def _over_parent(cluster: ClusterPlan, cohort: str, stated: set[str]) -> Iterator[Diagnostic]:
    """Yield an error per resource where the cohort's children add up to more than the parent."""
    source = cluster.located.source
    parent = parent_quota(cluster, cohort)
    children = [a for a in cluster.allocations if a.spec.cohort == cohort]
    for resource in sorted(stated):
        total = sum(leaf_quota(a)[resource] for a in children)
        if total > parent[resource]:
            names = ", ".join(f"{a.name} {leaf_quota(a)[resource]}" for a in children)
            yield source.diagnostic(("components", "kai", "parents", cohort, resource), (
                f"the children of KAI parent Queue {cohort!r} on cluster {cluster.name} ask for {total} {UNITS[resource]} "
                f"({names}), more than the parent's {parent[resource]}: raise the parent's quota or lower the tenants'"
            ))  # fmt: skip


@check
def check_kai_queue_names(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a tenant's leaf Queue would take a cohort's parent Queue name or one KAI creates itself."""
    for cluster in clusters_with(fleet, "kai-scheduler"):
        parents = set(cohorts(cluster))
        for alloc in cluster.allocations:
            if alloc.name in parents:
                yield alloc.tenant.source.diagnostic(
                    ("name",),
                    f"tenant {alloc.name!r} and cohort {alloc.name!r} would both be KAI Queue {alloc.name!r} on cluster {cluster.name}: rename one",
                )
            elif alloc.name in RESERVED_QUEUES:
                yield alloc.tenant.source.diagnostic(
                    ("name",),
                    f"tenant {alloc.name!r} would take over KAI's own queue of that name on cluster {cluster.name}: rename the tenant",
                )


@check
def check_kai_authority(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when KAI runs beside Kueue or Volcano and no quota authority is named."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        components = cluster.spec.components
        running = running_schedulers(components)
        if components.kai is None or len(running) < 2 or components.quota_authority is not None:
            continue
        source = cluster.located.source
        line, col = source.position(("components",), True)
        others = " and ".join(r.capitalize() for r in running if r != "kai")
        yield Diagnostic(source.path, line, col, Severity.WARNING, "components", (
            f"cluster {cluster.name} runs KAI Scheduler beside {others}, so {running[0].capitalize()} enforces the tenants' "
            "quotas and KAI's Queues are unlimited: say so with components.quotaAuthority, or name kai to have KAI enforce them"
        ))  # fmt: skip


# KAI treats a pod group whose priority is at least this as non-preemptible unless it says
# otherwise, and a non-preemptible workload runs only within its Queue's quota, never over it
# (kai-scheduler/KAI-Scheduler v0.16.8 and v0.17.0 pkg/common/podgroup/preemptible.go,
# nonPreemptiblePriorityThreshold; docs/priority/README.md "Preemptibility").
NON_PREEMPTIBLE = 100


@allocation_check
def check_kai_preemptibility(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Warn when KAI enforces a tenant's quota and its priority class makes its borrowing inert."""
    cluster = alloc.cluster
    own = alloc.tenant.model.priority_class
    if cluster.release("kai-scheduler") is None or authority(cluster.spec.components) != "kai":
        return
    value = next((p.value for p in cluster.spec.priority_classes if p.name == own), None)
    quota, limit = leaf_quota(alloc), leaf_limit(alloc)
    over = sorted(r for r in RESOURCES if limit[r] > quota[r])
    if value is None or value < NON_PREEMPTIBLE or not over:
        return
    line, col = alloc.tenant.source.position(("priorityClass",))
    yield Diagnostic(alloc.tenant.source.path, line, col, Severity.WARNING, "priorityClass", (
        f"KAI Scheduler treats priority {value} (class {own}) as non-preemptible, and a non-preemptible workload runs only "
        f"within its Queue's quota: tenant {alloc.name}'s limit above quota on cluster {cluster.name} ({', '.join(over)}) "
        f"and its overQuotaWeight are inert for workloads of its class; give it a class below {NON_PREEMPTIBLE} "
        "(or label the workloads kai.scheduler/preemptibility: preemptible)"
    ))  # fmt: skip
