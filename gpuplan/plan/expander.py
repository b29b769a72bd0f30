"""The Cluster Autoscaler's view of a cluster's pools: node-group names, priority-expander order, twins.

Shared by the aws chart's values (gpuplan/emit/bootstrap/cluster_autoscaler.py), the AKS ConfigMap
(gpuplan/emit/cluster_autoscaler.py) and `gpuplan requirements` (gpuplan/requirements.py).

Facts (kubernetes/autoscaler at cluster-autoscaler-1.35.0, the appVersion of chart 9.59.0):
- cluster-autoscaler/expander/priority/readme.md: the ConfigMap cluster-autoscaler-priority-expander maps
  priorities to lists of regular expressions over node-group names; "The highest value wins"; a group no
  expression matches is never expanded, hence a low catch-all `.*`.
- The node-group name the expressions see is the cloud's: the Auto Scaling group's name on aws, the
  scale set's name on azure (cloudprovider/azure/azure_scale_set.go: ScaleSet.Id() returns its Name).
- Node-group names the cloud makes (neither is settable, so gpuplan matches the pattern):
  - an EKS managed node group's Auto Scaling group is `eks-<node group name>-<UUID>` for node groups
    created since EKS's Kubernetes 1.21 release (July 2021, aws.amazon.com/blogs/containers/amazon-eks-1-21-released,
    as docs.gruntwork.io/discussions/knowledge-base/131 quotes it; terraform-aws-modules/terraform-aws-eks#3007
    shows `eks-{nodegroup-name}-<uuid>` in 2024); older groups are `eks-<UUID>` alone
    (aws/containers-roadmap#1304), and EKS offers no way to set the name: give such a group's name in
    components.clusterAutoscaler.nodeGroups.
  - an AKS node pool's scale set is `aks-<pool name>-<number>-vmss` (the autoscaler's own error text
    quotes `aks-newnp-11436513-vmss`, cloudprovider/azure/azure_force_delete_scale_set.go; Azure/AKS#2359
    logs `aks-cpu-29141059-vmss`, `aks-gpuspot-29141059-vmss`).
"""

from __future__ import annotations

from typing import Any

from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import PoolPlan

CATCH_ALL = 1
DEFAULT_PRIORITY = {"on-demand": 20, "spot": 10}
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def scaled_pools(cluster: ClusterPlan) -> list[PoolPlan]:
    """Return the cluster's pools the Cluster Autoscaler scales, in file order."""
    return sorted(
        (p for p in cluster.pools.values() if p.spec.nodes.by_cluster_autoscaler),
        key=lambda p: p.index,
    )


def priority(pool: PoolPlan) -> int:
    """Return the pool's priority-expander value (higher is preferred): its own, else by capacity type."""
    nodes = pool.spec.nodes
    return nodes.priority if nodes.priority is not None else DEFAULT_PRIORITY[nodes.capacity_type]


def _literal(name: str) -> str:
    """Return a group name as a Go (RE2) regular expression matching it literally."""
    # RE2 accepts a backslash before punctuation only, so escape just its metacharacters.
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in name)


def group_pattern(cluster: ClusterPlan, pool: PoolPlan) -> str:
    """Return the regular expression matching the pool's node-group name (ASG on aws, VMSS on azure)."""
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None and pool.spec.node_group is not None
    explicit = autoscaler.node_groups.get(pool.name)
    if explicit is not None:
        return f"^{_literal(explicit)}$"
    name = _literal(pool.spec.node_group)
    if cluster.spec.provider == "azure":
        return f"^aks-{name}-[0-9]+-vmss$"
    return f"^eks-{name}-{UUID}$"


def expander_priorities(cluster: ClusterPlan) -> str:
    """Return the priority expander's `priorities` text: highest value first, a catch-all at 1."""
    by_value: dict[int, list[str]] = {}
    for pool in scaled_pools(cluster):
        by_value.setdefault(priority(pool), []).append(group_pattern(cluster, pool))
    by_value.setdefault(CATCH_ALL, []).append(".*")
    lines = []
    for value in sorted(by_value, reverse=True):
        lines.append(f"{value}:")
        lines += ["  - '" + pattern.replace("'", "''") + "'" for pattern in by_value[value]]
    return "\n".join(lines) + "\n"


def _shape(pool: PoolPlan) -> tuple[Any, ...]:
    spec = pool.spec
    return (
        pool.model.name,
        pool.gpus_per_node,
        spec.cpu,
        spec.memory,
        pool.mode,
        spec.nodes.capacity_type,
    )


def has_twins(cluster: ClusterPlan) -> bool:
    """Tell whether two Cluster Autoscaler pools are twins (same GPUs, node size, sharing and capacity type)."""
    shapes = [_shape(p) for p in scaled_pools(cluster)]
    return len(shapes) != len(set(shapes))


def settings(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the autoscaler's flags gpuplan sets: the priority expander and GPU-friendly scale-down.

    Flag names and defaults: cluster-autoscaler/config/flags/flags.go (skip-nodes-with-system-pods
    default true, balance-similar-node-groups default false, scale-down-delay-after-add default 10m,
    expander default least-waste).
    """
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None
    args: dict[str, Any] = {
        "expander": "priority",
        # Pods of kube-system (other than DaemonSets) hold a node: a GPU node is not drained for them.
        "skip-nodes-with-system-pods": True,
        # GPU nodes boot and pull images slowly; a fresh one must not be removed as idle.
        "scale-down-delay-after-add": autoscaler.scale_down_delay_after_add,
        "scale-down-unneeded-time": autoscaler.scale_down_unneeded_time,
    }
    if has_twins(cluster):
        args["balance-similar-node-groups"] = True
    return args
