"""Kueue: ResourceFlavors, ClusterQueues, LocalQueues, Cohorts and WorkloadPriorityClasses.

Every version-dependent choice reads the cluster's Kueue release (gpuplan/components/kueue.py): the
apiVersion, the ClusterQueue's cohort field, whenCanBorrow's value and the Cohort kind's version.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpuplan.components.kueue import GROUP, KueueRelease
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.cluster import Cohort, CpuPool
from gpuplan.model.tenant import LocalQueue
from gpuplan.plan.drivers import STACK_ANNOTATION, pool_drivers, stack_text
from gpuplan.plan.entitlements import Amount, covered_resources, flavor_amounts, quantity
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan
from gpuplan.plan.pools import PoolPlan
from gpuplan.plan.topology import labels_of

NAMESPACE_NAME = "kubernetes.io/metadata.name"


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
    spec = {
        "nodeLabels": dict(sorted(pool.labels.items())),
        "tolerations": [_toleration(t) for t in taints],
    }
    return k8s(api, "ResourceFlavor", pool.name, spec=spec)


@lru_cache(maxsize=65536)
def _resource(name: str, amount: Amount) -> dict[str, str]:
    """Return a ClusterQueue flavor's entry for one resource: a shared template, never handed out as is.

    Kept per (resource, amount), both plain values: a fleet repeats the same few thousand.
    """
    nominal, borrowing, lending = amount
    entry = {"name": name, "nominalQuota": quantity(name, nominal)}
    if borrowing is not None:
        entry["borrowingLimit"] = quantity(name, borrowing)
    if lending is not None:
        entry["lendingLimit"] = quantity(name, lending)
    return entry


def resource_groups(alloc: AllocationPlan) -> list[dict[str, Any]]:
    """Return one resource group covering cpu, memory and every GPU resource, all flavors alike."""
    covered = covered_resources(alloc)
    flavors = [
        {"name": pool, "resources": [{**_resource(r, amounts[r])} for r in covered]}
        for pool, amounts in flavor_amounts(alloc).items()
    ]  # each entry copied from its template: no two objects share a dict
    return [{"coveredResources": covered, "flavors": flavors}]


def cluster_queue(release: KueueRelease, alloc: AllocationPlan) -> dict[str, Any]:
    """Return the ClusterQueue of one tenant allocation, admitting only its namespaces."""
    cohort = alloc.spec.cohort
    settings = alloc.spec.kueue
    selector = {"key": NAMESPACE_NAME, "operator": "In", "values": sorted(alloc.namespaces)}
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchExpressions": [selector]},
        "queueingStrategy": settings.queueing_strategy,
        "stopPolicy": settings.stop_policy,
        # Stop at the first flavor that fits, borrowing: MayStopSearch from v0.15, Borrow before.
        "flavorFungibility": {
            "whenCanBorrow": release.stop_search,
            "whenCanPreempt": "TryNextFlavor",
        },
        "preemption": preemption(alloc),
        "resourceGroups": resource_groups(alloc),
    }
    if cohort:
        spec[release.cohort_field] = cohort
    if alloc.spec.weight is not None:
        spec["fairSharing"] = {"weight": str(alloc.spec.weight)}
    if admission_fair_sharing(release, alloc.cluster):
        # admissionScope.admissionMode enum (clusterqueues CRD, v0.15 on: components/kueue.py admission_modes)
        spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    return k8s(release.api_version, "ClusterQueue", alloc.name, spec=spec)


def preemption(alloc: AllocationPlan) -> dict[str, Any]:
    """Return the ClusterQueue's preemption: the tenant's settings, reclaimWithinCohort Any by default in a cohort."""
    wanted = alloc.spec.kueue.preemption
    reclaim = wanted.reclaim_within_cohort or ("Any" if alloc.spec.cohort else "Never")
    borrow: dict[str, Any] = {"policy": wanted.borrow_within_cohort.policy}
    if wanted.borrow_within_cohort.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = wanted.borrow_within_cohort.max_priority_threshold
    return {
        "borrowWithinCohort": borrow,
        "reclaimWithinCohort": reclaim,
        "withinClusterQueue": wanted.within_cluster_queue,
    }


def admission_fair_sharing(release: KueueRelease, cluster: ClusterPlan) -> bool:
    """Tell whether Kueue orders the cluster's workloads by their LocalQueues' usage (v0.15 on)."""
    kueue = cluster.spec.components.kueue
    return (
        kueue is not None
        and kueue.admission_fair_sharing is not None
        and bool(release.admission_modes)
    )


def local_queue_weight(alloc: AllocationPlan, namespace: str, queue: LocalQueue) -> int:
    """Return a LocalQueue's admission fair sharing weight: its namespace's share times its own weight."""
    shares = alloc.spec.namespace_shares or {}
    return shares.get(namespace, 1) * (queue.weight or 1)


def local_queues(
    release: KueueRelease, alloc: AllocationPlan, namespace: str
) -> list[dict[str, Any]]:
    """Return the LocalQueues of one tenant namespace, each pointing at the tenant's ClusterQueue.

    Under admission fair sharing each gets spec.fairSharing.weight, which Kueue divides the queue's
    usage by (kubernetes-sigs/kueue v0.15.8 pkg/cache/queue/cluster_queue.go, v0.19.2
    pkg/util/admissionfairsharing/admission_fair_sharing.go). The field is in the LocalQueue CRD of
    every supported release (kueue.x-k8s.io_localqueues.yaml, v0.12.10 to v0.19.2) but only read with
    the AdmissionFairSharing gate, on by default from v0.15 (pkg/features/kube_features.go); gpuplan
    refuses admission fair sharing before (check/kueue.py).
    """
    out = []
    fair = admission_fair_sharing(release, alloc.cluster)
    for queue in alloc.spec.kueue.local_queues:
        spec: dict[str, Any] = {"clusterQueue": alloc.name, "stopPolicy": queue.stop_policy}
        if fair:
            spec["fairSharing"] = {"weight": str(local_queue_weight(alloc, namespace, queue))}
        out.append(k8s(release.api_version, "LocalQueue", queue.name, namespace, spec=spec))
    return out


def cohort(release: KueueRelease, name: str, parent: str | None) -> dict[str, Any]:
    """Return a Cohort (with its parent for hierarchical cohorts): v1alpha1 `parent` on v0.12."""
    spec = {release.cohort_parent_field: parent} if parent else {}
    return k8s(release.cohort_api_version, "Cohort", name, spec=spec)


def cohorts(release: KueueRelease, cluster: ClusterPlan) -> list[Cohort]:
    """Return the cohorts that get a Cohort object.

    Where the Cohort kind is still v1alpha1 (v0.12), only the cohorts of a hierarchy: a flat cohort
    needs no object (Kueue creates it implicitly from the ClusterQueues' spec.cohort), so gpuplan
    writes alpha objects only where the tree needs them.
    """
    if release.cohort_version != "v1alpha1":
        return list(cluster.spec.cohorts)
    parents = {c.parent for c in cluster.spec.cohorts if c.parent}
    return [c for c in cluster.spec.cohorts if c.parent or c.name in parents]


def topology(release: KueueRelease, cluster: ClusterPlan, pool: PoolPlan) -> dict[str, Any]:
    """Return the Topology of a pool's levels (TAS), named after the pool; the levels' labels are checked (check/topology.py)."""
    levels = [{"nodeLabel": label} for label in labels_of(cluster.spec.provider, pool.spec)]
    return k8s(
        f"{GROUP}/{release.topology_version}", "Topology", pool.name, spec={"levels": levels}
    )


def _gpu_flavors(release: KueueRelease, cluster: ClusterPlan) -> list[dict[str, Any]]:
    """Return the GPU pools' ResourceFlavors, naming their pool's Topology where it has levels."""
    out = []
    stacks = {d.pool: stack_text(d) for d in pool_drivers(cluster)}
    for pool in cluster.pools.values():
        flavor = resource_flavor(release.api_version, pool)
        if stack := stacks.get(pool.name):
            # what the pool's image ships, for `gpuplan diff OLD_DIR NEW_DIR` (gpuplan/diff/blast.py)
            flavor["metadata"]["annotations"] = {STACK_ANNOTATION: stack}
        if pool.spec.topology:
            flavor["spec"]["topologyName"] = (
                pool.name
            )  # ResourceFlavor spec.topologyName, every supported tag
        out.append(flavor)
    return out


def _cluster_objects(cluster: ClusterPlan) -> list[Manifest]:
    """Return the Kueue objects of the cluster that belong to no allocation."""
    release = cluster.release("kueue")
    if not isinstance(release, KueueRelease):
        return []  # not a component here (an unknown version is reported by resolve.py)
    api = release.api_version
    source = cluster.located.source.path
    out = [
        manifest(cluster.name, "kueue", flavor, source) for flavor in _gpu_flavors(release, cluster)
    ]
    out += [
        manifest(cluster.name, "kueue", topology(release, cluster, p), source)
        for p in cluster.pools.values()
        if p.spec.topology
    ]
    out += [
        manifest(cluster.name, "kueue", cpu_flavor(api, p), source) for p in cluster.spec.cpu_pools
    ]
    for priority in cluster.spec.priority_classes:
        body: dict[str, Any] = {"value": priority.value}
        if priority.description:
            body["description"] = priority.description
        obj = k8s(api, "WorkloadPriorityClass", priority.name, **body)
        out.append(manifest(cluster.name, "kueue", obj, source))
    for item in cohorts(release, cluster):
        out.append(manifest(cluster.name, "kueue", cohort(release, item.name, item.parent), source))
    return out


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return every Kueue object of the cluster, or nothing when Kueue is not a component."""
    if not isinstance(cluster.release("kueue"), KueueRelease):
        return []  # not a component here (an unknown version is reported by resolve.py)
    # the ClusterQueue states the allocation's own amounts (lending limits, not the cohort's)
    return _cluster_objects(cluster) + [
        m for alloc in cluster.allocations for m in allocation_objects(alloc)
    ]


def gates(cluster: ClusterPlan) -> set[str]:
    """Return the feature gates the cluster's Kueue objects rely on (emit/bootstrap/kueue.py turns
    them on in Kueue's Configuration): those of its cluster objects, and AdmissionFairSharing
    when every ClusterQueue states an admissionScope (cluster_queue)."""
    found = feature_gates(_cluster_objects(cluster))
    release = cluster.release("kueue")
    if (
        isinstance(release, KueueRelease)
        and cluster.allocations
        and admission_fair_sharing(release, cluster)
    ):
        found.add("AdmissionFairSharing")
    return found


def allocation_objects(alloc: AllocationPlan) -> list[Manifest]:
    """Return the ClusterQueue and LocalQueues of one allocation (its cluster runs Kueue)."""
    cluster = alloc.cluster
    release = cluster.release("kueue")
    assert isinstance(release, KueueRelease)
    sources = alloc.sources
    out = [manifest(cluster.name, "kueue", cluster_queue(release, alloc), *sources)]
    for namespace in alloc.namespaces:
        for queue in local_queues(release, alloc, namespace):
            out.append(manifest(cluster.name, f"namespaces/{namespace}", queue, *sources))
    return out


def feature_gates(manifests: list[Manifest]) -> set[str]:
    """Return the feature gates these Kueue objects rely on."""
    gates = set()
    for item in manifests:
        spec = item.obj.get("spec") or {}
        if item.kind == "Cohort" and (spec.get("parent") or spec.get("parentName")):
            gates.add("HierarchicalCohorts")
        if item.kind == "ClusterQueue" and spec.get("admissionScope"):
            gates.add("AdmissionFairSharing")
        if item.kind == "ResourceFlavor" and spec.get("topologyName"):
            gates.add("TopologyAwareScheduling")
    return gates
