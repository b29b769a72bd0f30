"""PriorityClasses (scheduling.k8s.io/v1), one per priority class of the cluster."""

from __future__ import annotations

from typing import Any

from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.fleet import ClusterPlan


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a PriorityClass per priority class of the cluster."""
    out = []
    for priority in cluster.spec.priority_classes:
        body: dict[str, Any] = {
            "value": priority.value,
            "globalDefault": False,
            "preemptionPolicy": priority.preemption_policy,
        }
        if priority.description:
            body["description"] = priority.description
        obj = k8s("scheduling.k8s.io/v1", "PriorityClass", priority.name, **body)
        out.append(manifest(cluster.name, "priorities", obj, cluster.located.source.path))
    return out
