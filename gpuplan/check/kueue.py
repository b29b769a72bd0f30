"""Kueue's size limits, caught on the input: what its schema and webhooks would reject.

Source: kubernetes-sigs/kueue v0.19.2 (../shared/facts/kueue-admission-rules.md): a resource
group holds 1-64 flavors and 1-64 covered resources, at most 512 flavor x resource entries;
a ResourceFlavor has at most 8 nodeLabels and 8 tolerations. The group limits differ by release
(16 and 16, no entry limit, before v0.14): they are read from the cluster's Kueue release
(gpuplan/components/kueue.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import allocation_check, check, clusters_with
from gpuplan.components.kueue import KueueRelease
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.entitlements import covered_resources
from gpuplan.plan.fleet import AllocationPlan, Fleet

MAX_FLAVOR_LABELS = 8
MAX_TOLERATIONS = 8


@allocation_check
def check_resource_group_size(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when a tenant's one resource group would exceed Kueue's flavor or resource limits."""
    release = alloc.cluster.release("kueue")
    if release is None:
        return  # the cluster does not run Kueue (or a version gpuplan does not know: resolve.py)
    assert isinstance(release, KueueRelease)
    most_flavors, most_covered, most_entries = (
        release.max_flavors,
        release.max_covered_resources,
        release.max_group_entries,
    )
    kueue = f"Kueue {release.version}"
    flavors, covered = len(alloc.pools()), len(covered_resources(alloc))
    where = alloc.loc("quotas")
    if flavors > most_flavors:
        yield alloc.tenant.source.diagnostic(
            where,
            f"quota on {flavors} pools: a {kueue} resource group holds at most {most_flavors} flavors (one per pool)",
        )
    if covered > most_covered:
        yield alloc.tenant.source.diagnostic(
            where,
            f"{covered} resources (cpu, memory and {covered - 2} GPU resources): a {kueue} resource group covers at most {most_covered}",
        )
    if most_entries is not None and flavors * covered > most_entries:
        yield alloc.tenant.source.diagnostic(
            where,
            f"{flavors} pools x {covered} resources = {flavors * covered} quota entries: {kueue} allows at most {most_entries} in one resource group",
        )


@check
def check_flavor_size(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a pool's ResourceFlavor would carry more than 8 node labels or tolerations."""
    for cluster in clusters_with(fleet, "kueue"):
        for pool in cluster.pools.values():
            source = cluster.located.source
            if len(pool.selector_labels) > MAX_FLAVOR_LABELS:
                yield source.diagnostic(
                    ("nodePools", pool.index, "labels"),
                    f"{len(pool.selector_labels)} labels select this pool's nodes: a Kueue ResourceFlavor takes at most {MAX_FLAVOR_LABELS} (give the pool hostnames so gpuplan labels the nodes itself)",
                )
            if len(pool.taints) > MAX_TOLERATIONS:
                yield source.diagnostic(
                    ("nodePools", pool.index, "taints"),
                    f"{len(pool.taints)} taints: a Kueue ResourceFlavor takes at most {MAX_TOLERATIONS} tolerations",
                )


@check
def check_admission_fair_sharing(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on admission fair sharing with a Kueue release whose ClusterQueue has no admission modes (before v0.15)."""
    for cluster in clusters_with(fleet, "kueue"):
        kueue, release = cluster.spec.components.kueue, cluster.release("kueue")
        if (
            kueue is None
            or kueue.admission_fair_sharing is None
            or not isinstance(release, KueueRelease)
        ):
            continue
        if (
            not release.admission_modes
        ):  # an alpha gate, off by default, before v0.15 (pkg/features/kube_features.go)
            where = ("components", "kueue", "admissionFairSharing")
            yield cluster.located.source.diagnostic(
                where,
                f"admission fair sharing needs Kueue v0.15 or later (cluster {cluster.name} runs {release.version})",
            )


@allocation_check
def check_local_queue_weights(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error on a LocalQueue weight where Kueue does not order workloads by admission fair sharing.

    Kueue reads a LocalQueue's spec.fairSharing.weight only with admission fair sharing on (the
    Configuration's admissionFairSharing, the AdmissionFairSharing gate on by default from v0.15:
    kubernetes-sigs/kueue v0.15.8 pkg/cache/queue/cluster_queue.go); elsewhere it changes nothing.
    """
    cluster = alloc.cluster
    if cluster.release("kueue") is None:
        return  # the cluster does not run Kueue (or a version gpuplan does not know: resolve.py)
    kueue = cluster.spec.components.kueue
    if kueue is not None and kueue.admission_fair_sharing is not None:
        return  # before v0.15 check_admission_fair_sharing already refuses it
    for index, queue in enumerate(alloc.spec.kueue.local_queues):
        if queue.weight is not None:
            yield alloc.tenant.source.diagnostic(
                alloc.loc("kueue", "localQueues", index, "weight"),
                f"LocalQueue {queue.name} has a weight, which Kueue only reads under admission fair sharing: "
                f"set components.kueue.admissionFairSharing on cluster {cluster.name} (Kueue v0.15 or later) or drop the weight",
            )


@check
def check_kueue_frameworks(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on an integrations.frameworks name the cluster's Kueue has not built in, or listed twice."""
    for cluster in clusters_with(fleet, "kueue"):
        kueue, release = cluster.spec.components.kueue, cluster.release("kueue")
        if kueue is None or not isinstance(release, KueueRelease):
            continue
        seen: set[str] = set()
        for index, name in enumerate(kueue.frameworks):
            where = ("components", "kueue", "frameworks", index)
            if name not in release.frameworks:
                yield cluster.located.source.diagnostic(
                    where,
                    f"Kueue {release.version} has no job integration {name!r} and would not start: "
                    f"use one of {', '.join(sorted(release.frameworks))}",
                )
            elif name in seen:
                yield cluster.located.source.diagnostic(
                    where, f"{name} is listed twice: Kueue would not start"
                )
            seen.add(name)
