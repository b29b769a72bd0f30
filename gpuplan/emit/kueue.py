"""Kueue: ResourceFlavors, ClusterQueues, LocalQueues, Cohorts and WorkloadPriorityClasses."""

from __future__ import annotations

from typing import Any

from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.entitlements import Amount, covered_resources, flavor_amounts, quantity
from gpuplan.fleet import AllocationPlan, ClusterPlan
from gpuplan.model.cluster import CpuPool
from gpuplan.model.common import version_tuple
from gpuplan.pools import PoolPlan

GROUP = "kueue.x-k8s.io"
NAMESPACE_NAME = "kubernetes.io/metadata.name"


def api_version(version: str) -> str:
    """Return Kueue's apiVersion: v1beta2 from v0.15 on, v1beta1 before."""
    return f"{GROUP}/v1beta2" if version_tuple(version) >= (0, 15, 0) else f"{GROUP}/v1beta1"


def has_cohort_kind(version: str) -> bool:
    """Tell whether this Kueue version serves the Cohort kind as beta (v0.13 promoted it)."""
    return version_tuple(version) >= (0, 13, 0)


def tolerations(pool: PoolPlan) -> list[dict[str, str]]:
    """Return tolerations that match the pool's taints exactly."""
    return [_toleration(taint) for taint in pool.taints]


def _toleration(taint: dict[str, str]) -> dict[str, str]:
    toleration = {"key": taint["key"], "effect": taint["effect"]}
    if "value" in taint:
        toleration |= {"operator": "Equal", "value": taint["value"]}
    else:
        toleration["operator"] = "Exists"
    return toleration


def resource_flavor(api: str, pool: PoolPlan) -> dict[str, Any]:
    """Return the ResourceFlavor that pins workloads to one pool's nodes."""
    spec = {"nodeLabels": pool.selector_labels, "tolerations": tolerations(pool)}
    return k8s(api, "ResourceFlavor", pool.name, spec=spec)


def cpu_flavor(api: str, pool: CpuPool) -> dict[str, Any]:
    """Return the ResourceFlavor of a CPU-only pool: its own node labels, tolerations of its taints only."""
    taints = [t.model_dump(exclude_none=True, by_alias=True) for t in pool.taints]
    spec = {"nodeLabels": dict(sorted(pool.labels.items())), "tolerations": [_toleration(t) for t in taints]}
    return k8s(api, "ResourceFlavor", pool.name, spec=spec)


def _resource(name: str, amount: Amount) -> dict[str, str]:
    entry = {"name": name, "nominalQuota": quantity(name, amount.nominal)}
    if amount.borrowing is not None:
        entry["borrowingLimit"] = quantity(name, amount.borrowing)
    if amount.lending is not None:
        entry["lendingLimit"] = quantity(name, amount.lending)
    return entry


def resource_groups(alloc: AllocationPlan) -> list[dict[str, Any]]:
    """Return one resource group covering cpu, memory and every GPU resource, all flavors alike."""
    covered = covered_resources(alloc)
    flavors = []
    for pool, amounts in flavor_amounts(alloc).items():
        flavors.append({"name": pool, "resources": [_resource(r, amounts[r]) for r in covered]})
    return [{"coveredResources": covered, "flavors": flavors}]


def cluster_queue(api: str, alloc: AllocationPlan) -> dict[str, Any]:
    """Return the ClusterQueue of one tenant allocation, admitting only its namespaces."""
    cohort = alloc.spec.cohort
    settings = alloc.spec.kueue
    selector = {"key": NAMESPACE_NAME, "operator": "In", "values": sorted(alloc.namespaces)}
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchExpressions": [selector]},
        "queueingStrategy": settings.queueing_strategy,
        "stopPolicy": settings.stop_policy,
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": preemption(alloc),
        "resourceGroups": resource_groups(alloc),
    }
    if cohort:
        spec["cohortName" if api.endswith("v1beta2") else "cohort"] = cohort
    if alloc.spec.weight is not None:
        spec["fairSharing"] = {"weight": str(alloc.spec.weight)}
    return k8s(api, "ClusterQueue", alloc.name, spec=spec)


def preemption(alloc: AllocationPlan) -> dict[str, Any]:
    """Return the ClusterQueue's preemption: the tenant's settings, reclaimWithinCohort Any by default in a cohort."""
    wanted = alloc.spec.kueue.preemption
    reclaim = wanted.reclaim_within_cohort or ("Any" if alloc.spec.cohort else "Never")
    borrow: dict[str, Any] = {"policy": wanted.borrow_within_cohort.policy}
    if wanted.borrow_within_cohort.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = wanted.borrow_within_cohort.max_priority_threshold
    return {"borrowWithinCohort": borrow, "reclaimWithinCohort": reclaim, "withinClusterQueue": wanted.within_cluster_queue}


def local_queues(api: str, alloc: AllocationPlan, namespace: str) -> list[dict[str, Any]]:
    """Return the LocalQueues of one tenant namespace, each pointing at the tenant's ClusterQueue."""
    out = []
    for queue in alloc.spec.kueue.local_queues:
        spec = {"clusterQueue": alloc.name, "stopPolicy": queue.stop_policy}
        out.append(k8s(api, "LocalQueue", queue.name, namespace, spec=spec))
    return out


def cohort(api: str, name: str, parent: str | None) -> dict[str, Any]:
    """Return a Cohort (with its parent for hierarchical cohorts)."""
    return k8s(api, "Cohort", name, spec={"parentName": parent} if parent else {})


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return every Kueue object of the cluster, or nothing when Kueue is not a component."""
    kueue = cluster.spec.components.kueue
    if kueue is None:
        return []
    api = api_version(kueue.version)
    source = cluster.located.source.path
    out = [manifest(cluster.name, "kueue", resource_flavor(api, p), source) for p in cluster.pools.values()]
    out += [manifest(cluster.name, "kueue", cpu_flavor(api, p), source) for p in cluster.spec.cpu_pools]
    for priority in cluster.spec.priority_classes:
        body: dict[str, Any] = {"value": priority.value}
        if priority.description:
            body["description"] = priority.description
        obj = k8s(api, "WorkloadPriorityClass", priority.name, **body)
        out.append(manifest(cluster.name, "kueue", obj, source))
    if has_cohort_kind(kueue.version):
        for item in cluster.spec.cohorts:
            out.append(manifest(cluster.name, "kueue", cohort(api, item.name, item.parent), source))
    for alloc in cluster.allocations:
        sources = (alloc.tenant.source.path, source)
        out.append(manifest(cluster.name, "kueue", cluster_queue(api, alloc), *sources))
        for namespace in alloc.namespaces:
            for queue in local_queues(api, alloc, namespace):
                out.append(manifest(cluster.name, f"namespaces/{namespace}", queue, *sources))
    return out
