"""Topology-aware scheduling rules: every level of a pool has a node label its nodes actually carry."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.kueue import KueueRelease
from gpuplan.diagnostics import Diagnostic, Severity, format_path
from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.plan.pools import PoolPlan
from gpuplan.plan.topology import HOSTNAME, carried, node_label


@check
def check_topology_labels(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on topology levels whose node label is unknown, carried by no node of the pool, or repeated.

    A level no node carries leaves every workload that asks for it pending (Kueue finds no domain).
    """
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for pool in cluster.pools.values():
            yield from _pool_levels(cluster, pool)


def _pool_levels(cluster: ClusterPlan, pool: PoolPlan) -> Iterator[Diagnostic]:
    source, provider = cluster.located.source, str(cluster.spec.provider)
    gfd = (
        cluster.spec.components.gpu_operator is not None
    )  # GPU Feature Discovery sets nvidia.com/gpu.clique
    seen: set[str] = set()
    levels = pool.spec.topology
    for index, level in enumerate(levels):
        where = ("nodePools", pool.index, "topology", index)
        label = node_label(provider, level)
        if label is None:
            yield source.diagnostic(
                where,
                f"no node label is known for topology level {level.level} on {provider}: name it with nodeLabel and set it in the pool's labels",
            )
        elif label in seen:
            yield source.diagnostic(
                where, f"topology level {level.level} repeats node label {label}"
            )
        elif level.per_node and label in pool.spec.labels:
            yield source.diagnostic(
                where,
                f"topology level {level.level}: {label} is per node (perNode), but the pool's labels give all its nodes one value: drop it from labels or perNode",
            )
        elif not level.per_node and not carried(provider, label, pool.spec, gfd):
            hint = (
                "run the GPU Operator (its GPU Feature Discovery sets it)"
                if level.level == "clique"
                else "set it in the pool's labels (NFD or Karpenter puts them on its nodes), or, when its value differs node by node and the nodes carry it already, say perNode: true"
            )
            yield source.diagnostic(
                where,
                f"topology level {level.level}: no node of pool {pool.name} carries label {label}: {hint}",
            )
        elif label == HOSTNAME and index != len(levels) - 1:
            # Kueue (../shared/facts/upstream-components.md) and KAI (kai.scheduler_topologies.yaml CEL at v0.17.0): hostname only last
            yield source.diagnostic(
                where,
                f"topology level {level.level} uses {HOSTNAME}, which Kueue and KAI allow only as the last level",
            )
        if label is not None:
            seen.add(label)
    release = cluster.release("kueue")
    if isinstance(release, KueueRelease) and len(levels) > release.max_topology_levels:
        yield source.diagnostic(
            ("nodePools", pool.index, "topology"),
            f"Kueue {release.version} takes at most {release.max_topology_levels} topology levels",
        )


@check
def check_topology_autoscaled(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when Kueue's topology-aware scheduling covers a pool that scales from fewer nodes than its most.

    TAS places a workload by the free capacity of nodes that exist, Ready and schedulable
    (kubernetes-sigs/kueue v0.19.2 site/content/en/docs/concepts/topology_aware_scheduling.md,
    "Capacity calculation"); it reaches nodes still to come only through a ProvisioningRequest
    admission check ("ClusterAutoscaler support"), which gpuplan does not write and Karpenter does not
    serve. Workloads beyond the running nodes stay pending, and nothing scales up for them.
    """
    for cluster in clusters_with(fleet, "kueue"):
        for pool in cluster.pools.values():
            nodes = pool.spec.nodes
            kept = 0 if nodes.by_karpenter else nodes.least  # Karpenter keeps no minimum
            if not pool.spec.topology or kept >= nodes.most:
                continue
            loc = ("nodePools", pool.index, "topology")
            line, col = cluster.located.source.position(loc, True)
            message = (
                f"Kueue's topology-aware scheduling places workloads only on nodes that exist, and pool {pool.name} "
                f"scales from {kept} to {nodes.most} nodes: workloads beyond the running nodes stay pending and "
                "nothing scales up for them (Kueue reaches new nodes only through a ProvisioningRequest admission check, "
                "which gpuplan does not write); keep the pool static, or accept this where its nodes stay up"
            )
            yield Diagnostic(
                cluster.located.source.path, line, col, Severity.WARNING, format_path(loc), message
            )
