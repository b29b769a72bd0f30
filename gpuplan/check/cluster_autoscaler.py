"""Cluster Autoscaler pools: what the cloud does to their nodes that gpuplan's output must allow for.

AKS taints and labels every node of a Spot node pool kubernetes.azure.com/scalesetpriority=spot:NoSchedule
(learn.microsoft.com/azure/aks/spot-node-pool, Limitations; MicrosoftDocs/azure-docs
articles/aks/spot-node-pool.md). A pool's Kueue flavor tolerates exactly the pool's taints, so a spot pool
that does not list this one admits pods that can never run on its nodes, and the autoscaler, seeing pods
that do not tolerate the group, never grows it.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet

AKS_SPOT_TAINT = {
    "key": "kubernetes.azure.com/scalesetpriority",
    "value": "spot",
    "effect": "NoSchedule",
}


@check
def check_aks_spot_taint(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on an AKS spot pool whose taints lack the one AKS puts on every spot node."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if cluster.spec.provider != "azure":
            continue
        for pool in cluster.pools.values():
            nodes = pool.spec.nodes
            if not nodes.by_cluster_autoscaler or nodes.capacity_type != "spot":
                continue
            if any(_same(taint, AKS_SPOT_TAINT) for taint in pool.taints):
                continue
            listed = "taints" if pool.spec.taints is not None else "nodes"
            message = (
                "AKS taints every node of a Spot node pool kubernetes.azure.com/scalesetpriority=spot:NoSchedule: "
                "add {key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule} to taints, "
                "else the pool's workloads do not tolerate its nodes and never run"
            )
            yield cluster.located.source.diagnostic(("nodePools", pool.index, listed), message)


def _same(taint: dict[str, str], other: dict[str, str]) -> bool:
    return all(taint.get(k, "") == v for k, v in other.items())
