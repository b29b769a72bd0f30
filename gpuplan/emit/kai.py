"""KAI Scheduler: a parent Queue per cohort and a leaf Queue per tenant allocation (scheduling.run.ai/v2).

Every field is in the v0.17.0 Queue CRD (kai-scheduler/KAI-Scheduler deployments/kai-scheduler/crds/
scheduling.run.ai_queues.yaml): spec.parentQueue and spec.resources.{gpu,cpu,memory}.{quota, limit,
overQuotaWeight}, numbers in KAI's units (GPU devices, CPU millicores, memory MB of 1e6 bytes; -1
unlimited: ../shared/facts/upstream-components.md). All three resources are always written, since the
webhook rejects a Queue without `resources` (pkg/admission/webhook/queuehooks/queue_validator.go).

- A leaf's quota is the allocation's nominal quota, its limit what the namespaces' ResourceQuotas
  allow (`entitlements.namespace_limits`, nominal plus what it may borrow), its overQuotaWeight the
  allocation's weight (default 1): the same numbers Kueue, Volcano and the quotas are written from.
- GPUs as KAI counts them (a MIG instance of Ng is N GPUs): gpuplan/plan/kai_quota.py.
- A parent's quota is the cohort's entry in components.kai.parents, else its children's sum; its limit
  is unlimited (the children's limits bound their use).
- A pool with topology levels gets a Topology (kai.scheduler/v1alpha1, spec.levels[].nodeLabel:
  deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml), named after the pool.
- Where KAI is not the quota authority (components.quotaAuthority), every quota and limit is -1: KAI
  places and gang-schedules pods, and the authority alone decides what runs.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.kai import API_VERSION, TOPOLOGY_API_VERSION, UNLIMITED, authority
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan
from gpuplan.plan.kai_quota import (
    DEFAULT_WEIGHT,
    RESOURCES,
    cohorts,
    leaf_limit,
    leaf_quota,
    leaf_weight,
    parent_quota,
)
from gpuplan.plan.topology import labels_of

FOLDER = "kai"


def _resources(
    quota: dict[str, int], limit: dict[str, int] | None, weight: int, enforced: bool
) -> dict[str, Any]:
    out = {}
    for name in RESOURCES:
        out[name] = {
            "quota": quota[name] if enforced else UNLIMITED,
            "limit": limit[name] if enforced and limit is not None else UNLIMITED,
            "overQuotaWeight": weight,
        }
    return out


def leaf(alloc: AllocationPlan, enforced: bool) -> dict[str, Any]:
    """Return the leaf Queue of one tenant allocation, named after the tenant."""
    weight = leaf_weight(alloc)
    spec: dict[str, Any] = {}
    if alloc.spec.cohort is not None:
        spec["parentQueue"] = alloc.spec.cohort
    spec["resources"] = _resources(leaf_quota(alloc), leaf_limit(alloc), weight, enforced)
    return k8s(API_VERSION, "Queue", alloc.name, spec=spec)


def parent(cluster: ClusterPlan, cohort: str, enforced: bool) -> dict[str, Any]:
    """Return the parent Queue of a cohort, named after it."""
    spec = {"resources": _resources(parent_quota(cluster, cohort), None, DEFAULT_WEIGHT, enforced)}
    return k8s(API_VERSION, "Queue", cohort, spec=spec)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the parent and leaf Queues and the pools' Topologies, or nothing when KAI is not a component."""
    if cluster.release("kai-scheduler") is None:
        return []  # not a component here (an unknown version is reported by resolve.py)
    enforced = authority(cluster.spec.components) == "kai"
    source = cluster.located.source.path
    out = [
        manifest(cluster.name, FOLDER, parent(cluster, c, enforced), source)
        for c in cohorts(cluster)
    ]
    for alloc in cluster.allocations:
        out.append(
            manifest(cluster.name, FOLDER, leaf(alloc, enforced), alloc.tenant.source.path, source)
        )
    for pool in cluster.pools.values():
        if pool.spec.topology:
            levels = [{"nodeLabel": label} for label in labels_of(cluster.spec.provider, pool.spec)]
            out.append(
                manifest(
                    cluster.name,
                    FOLDER,
                    k8s(TOPOLOGY_API_VERSION, "Topology", pool.name, spec={"levels": levels}),
                    source,
                )
            )
    return out
