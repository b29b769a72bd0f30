"""The Cluster Autoscaler's Application (aws): the upstream chart with values from the model.

Facts: kubernetes/autoscaler at cluster-autoscaler-chart-9.59.0 (gpuplan/components/cluster_autoscaler.py).
- The priority expander prefers the node group whose expression sits under the HIGHEST value, and never
  grows a group no expression matches (cluster-autoscaler/expander/priority/readme.md); so every pool's
  group is listed under its priority and a catch-all `.*` sits at 1, below every pool, so that a group
  gpuplan's expression misses still scales.
- The chart writes `expanderPriorities` (a string is written verbatim) into the ConfigMap
  cluster-autoscaler-priority-expander only when `extraArgs.expander` names priority
  (templates/priority-expander-configmap.yaml, templates/_helpers.tpl priorityExpanderEnabled).
- `autoDiscovery.clusterName` turns on --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,
  k8s.io/cluster-autoscaler/<clusterName>; `autoscalingGroups` passes --nodes=<min>:<max>:<name> per group
  (templates/deployment.yaml, values.yaml).
AKS and GKE run the Cluster Autoscaler themselves, configured on the node pool: nothing is installed there.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.cluster_autoscaler import IMAGE_TAGS
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.fleet import ClusterPlan
from gpuplan.pools import PoolPlan

NAME = "cluster-autoscaler"
CATCH_ALL = 1
DEFAULT_PRIORITY = {"on-demand": 20, "spot": 10}
# An EKS managed node group's Auto Scaling group is named eks-<node group>-<node group id, a UUID>.
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
    """Return the regular expression matching the pool's Auto Scaling group name."""
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None and pool.spec.node_group is not None
    explicit = autoscaler.node_groups.get(pool.name)
    if explicit is not None:
        return f"^{_literal(explicit)}$"
    return f"^eks-{_literal(pool.spec.node_group)}-{UUID}$"


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


def values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the chart's values: discovery, the priority expander and GPU-friendly scale-down."""
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
    out: dict[str, Any] = {"cloudProvider": "aws", "awsRegion": autoscaler.region}
    if autoscaler.discovery == "auto":
        out["autoDiscovery"] = {"clusterName": autoscaler.cluster_name or cluster.name}
    else:
        out["autoscalingGroups"] = [
            {
                "name": autoscaler.node_groups[p.name],
                "minSize": p.spec.nodes.min,
                "maxSize": p.spec.nodes.max,
            }
            for p in scaled_pools(cluster)
        ]
    out["expanderPriorities"] = expander_priorities(cluster)
    out["extraArgs"] = args
    tag = IMAGE_TAGS.get(cluster.spec.kubernetes_version)
    if tag is not None:
        out["image"] = {"tag": tag}
    return out


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the Cluster Autoscaler's Application on aws clusters with Cluster Autoscaler pools."""
    autoscaler = cluster.spec.components.cluster_autoscaler
    release = cluster.release(NAME)
    if (
        autoscaler is None
        or release is None
        or release.chart is None
        or cluster.spec.provider != "aws"
    ):
        return []
    if not scaled_pools(cluster):
        return []
    return [
        Operator(
            NAME,
            autoscaler.namespace,
            chart=release.chart,
            values=values(cluster),
            create_namespace=autoscaler.namespace != "kube-system",
        )
    ]
