"""The Cluster Autoscaler's Application (aws): the upstream chart with values from the model.

Facts: kubernetes/autoscaler at cluster-autoscaler-chart-9.59.0 (gpuplan/components/cluster_autoscaler.py).
- The priority expander's order (higher wins, a catch-all `.*` at 1) and the node-group names it
  matches: gpuplan/plan/expander.py.
- The chart writes `expanderPriorities` (a string is written verbatim) into the ConfigMap
  cluster-autoscaler-priority-expander only when `extraArgs.expander` names priority
  (templates/priority-expander-configmap.yaml, templates/_helpers.tpl priorityExpanderEnabled).
- `autoDiscovery.clusterName` turns on --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,
  k8s.io/cluster-autoscaler/<clusterName>; `autoscalingGroups` passes --nodes=<min>:<max>:<name> per group
  (templates/deployment.yaml, values.yaml).
AKS and GKE run the Cluster Autoscaler themselves, configured on the cluster and node pool: no chart is
installed there (AKS gets the priority expander's ConfigMap, gpuplan/emit/cluster_autoscaler.py).
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.cluster_autoscaler import IMAGE_TAGS
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.plan.expander import expander_priorities, scaled_pools, settings
from gpuplan.plan.fleet import ClusterPlan

NAME = "cluster-autoscaler"


def values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the chart's values: discovery, the priority expander and GPU-friendly scale-down."""
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None
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
    out["extraArgs"] = settings(cluster)
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
