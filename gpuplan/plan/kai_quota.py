"""KAI Scheduler's view of the tenants' entitlements: quotas in KAI's units, per leaf and per cohort parent.

Units (../shared/facts/upstream-components.md, KAI Scheduler): GPU devices, CPU millicores, memory MB
(1e6 bytes). KAI counts `nvidia.com/gpu` per device and a MIG instance `nvidia.com/mig-<N>g.<M>gb` as N
GPUs (kai-scheduler/KAI-Scheduler v0.17.0 pkg/scheduler/api/common_info/resources/mig.go,
ExtractGpuAndMemoryFromMigResourceName, whose pattern is anchored at both ends: a `+me` name is no
GPU to it); other resources are not GPUs to KAI. The emitter and the
checks both read these numbers, so the Queues and the proofs cannot disagree.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from gpuplan.components.kai import UNLIMITED, authority
from gpuplan.plan.dra import QUOTA_SUFFIX, is_dra_resource
from gpuplan.plan.entitlements import CPU, MEMORY, flavor_amounts, namespace_limits
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan

RESOURCES = ("cpu", "gpu", "memory")
DEFAULT_WEIGHT = 1  # overQuotaWeight of a parent Queue and of an allocation without a weight
# KAI's MIG resource names (v0.17.0 pkg/scheduler/api/common_info/resources/mig.go)
_MIG = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb$")


def gpu_units(resource: str) -> int:
    """Return the GPUs KAI counts for one unit of a resource (0: not a GPU to KAI)."""
    if resource == "nvidia.com/gpu":
        return 1
    if is_dra_resource(resource):
        # KAI counts a DRA claim's device as a GPU when its deviceClassName contains "gpu", in any case
        # (v0.17.0 pkg/common/resources/dra.go IsGPUDeviceClass); check/dra.py refuses other names there.
        return 1 if "gpu" in resource.removesuffix(QUOTA_SUFFIX) else 0
    match = _MIG.match(resource)
    return int(match.group(1)) if match else 0


def kai_units(values: dict[str, int]) -> dict[str, int]:
    """Return entitlements (millicores, bytes, GPU resource units) as KAI's gpu, cpu (millicores) and memory (MB)."""
    return {
        "gpu": sum(amount * gpu_units(resource) for resource, amount in values.items()),
        "cpu": values.get(CPU, 0),
        "memory": values.get(MEMORY, 0) // 1_000_000,  # rounded down: never more than granted
    }


def leaf_quota(alloc: AllocationPlan) -> dict[str, int]:
    """Return the allocation's nominal quota in KAI's units."""
    total: dict[str, int] = {}
    for amounts in flavor_amounts(alloc).values():
        for resource, amount in amounts.items():
            total[resource] = total.get(resource, 0) + amount.nominal
    return kai_units(total)


def parent_quota(cluster: ClusterPlan, cohort: str) -> dict[str, int]:
    """Return a cohort's parent quota: its components.kai.parents entry, else its children's sum."""
    children = [leaf_quota(a) for a in cluster.allocations if a.spec.cohort == cohort]
    out = {r: sum(c[r] for c in children) for r in RESOURCES}
    kai = cluster.spec.components.kai
    stated = kai.parents.get(cohort) if kai is not None else None
    if stated is not None:
        if stated.gpu is not None:
            out["gpu"] = stated.gpu
        if stated.cpu is not None:
            out["cpu"] = math.floor(Fraction(stated.cpu) * 1000)
        if stated.memory is not None:
            out["memory"] = math.floor(Fraction(stated.memory) / 1_000_000)
    return out


def cohorts(cluster: ClusterPlan) -> list[str]:
    """Return the cohorts of the cluster's allocations, sorted."""
    return sorted({a.spec.cohort for a in cluster.allocations if a.spec.cohort is not None})


def leaf_limit(alloc: AllocationPlan) -> dict[str, int]:
    """Return what the allocation may use at most (its namespaces' quota) in KAI's units."""
    return kai_units(namespace_limits(alloc))


def leaf_weight(alloc: AllocationPlan) -> int:
    """Return the leaf Queue's overQuotaWeight: the allocation's weight (default 1)."""
    return alloc.spec.weight if alloc.spec.weight is not None else DEFAULT_WEIGHT


@dataclass(frozen=True)
class QueueRow:
    """One KAI Queue as emitted: its parent, quota and limit in KAI's units (-1 unlimited), weight."""

    cluster: str
    queue: str
    parent: str | None  # the cohort's parent Queue of a leaf; None for a parent or a top-level leaf
    quota: dict[str, int]
    limit: dict[str, int]
    over_quota_weight: int
    enforced: bool  # False: another scheduler enforces the quotas and every figure is -1

    def cell(self, resource: str, sep: str = " / ") -> str:
        """Return `quota / limit` of a resource as a reader reads it (cores, GB or TB, unlimited)."""
        return shown(resource, self.quota[resource]) + sep + shown(resource, self.limit[resource])

    @property
    def depth(self) -> int:
        """Return the queue's depth under the cluster: 1 for a parent or top-level leaf, 2 under a parent."""
        return 2 if self.parent else 1


def shown(resource: str, value: int) -> str:
    """Return a figure in KAI's units (cpu millicores, memory MB) as cores, GB or TB; -1 unlimited."""
    if value == UNLIMITED:
        return "unlimited"
    if resource == "cpu":
        return f"{value / 1000:g}"
    if resource == "memory":
        for unit, size in (("TB", 1_000_000), ("GB", 1000)):
            if value >= size:
                return f"{value / size:.1f} {unit}"
        return f"{value} MB"
    return str(value)


def queue_rows(cluster: ClusterPlan) -> list[QueueRow]:
    """Return the cluster's KAI Queues in tree order: each cohort's parent then its leaves, then the other leaves."""
    enforced = authority(cluster.spec.components) == "kai"
    unlimited = dict.fromkeys(RESOURCES, UNLIMITED)

    def row(
        name: str,
        parent: str | None,
        quota: dict[str, int],
        limit: dict[str, int] | None,
        weight: int,
    ) -> QueueRow:
        if not enforced:
            quota, limit = unlimited, None
        return QueueRow(
            cluster.name, name, parent, dict(quota), dict(limit or unlimited), weight, enforced
        )

    def leaves(cohort: str | None) -> list[QueueRow]:
        chosen = [a for a in cluster.allocations if a.spec.cohort == cohort]
        return [row(a.name, cohort, leaf_quota(a), leaf_limit(a), leaf_weight(a)) for a in chosen]

    out: list[QueueRow] = []
    for cohort in cohorts(cluster):
        out.append(row(cohort, None, parent_quota(cluster, cohort), None, DEFAULT_WEIGHT))
        out += leaves(cohort)
    return out + leaves(None)


def queue_tree(cluster: ClusterPlan) -> list[str]:
    """Return the cluster's KAI Queue tree as text lines: quota/limit per resource."""
    rows = queue_rows(cluster)
    head = f"cluster {cluster.name}: KAI Queues, quota/limit (cpu cores, gpu GPUs, memory)"
    if authority(cluster.spec.components) != "kai":
        head += f", {authority(cluster.spec.components)} enforces the quotas"
    lines = [head]
    for item in rows:
        cells = [f"{r} {item.cell(r, '/')}" for r in RESOURCES]
        indent = "  " * item.depth
        lines.append(f"{indent}{item.queue:<{30 - 2 * item.depth}}  " + "  ".join(cells))
    return lines
