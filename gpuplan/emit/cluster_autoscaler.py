"""The priority expander's ConfigMap on AKS, where Azure runs the Cluster Autoscaler itself.

AKS's managed autoscaler takes the expander from the cluster's autoscaler profile (`az aks update
--cluster-autoscaler-profile expander=priority`, printed by `gpuplan requirements`) and reads the ConfigMap
cluster-autoscaler-priority-expander from kube-system, a higher value being preferred (Azure/AKS
website/blog/2025-07-17-scaling-safely-with-azure-aks-spot-node-pools-using-cluster-autoscaler-priority-expander;
the profile's `expander` enum lists priority: Azure/AKS#1931, shipped). Its `priorities` key and format:
kubernetes/autoscaler cluster-autoscaler-1.35.0 cluster-autoscaler/expander/priority/readme.md.
On aws the chart writes this ConfigMap from `expanderPriorities` (gpuplan/emit/bootstrap/cluster_autoscaler.py);
GKE's autoscaler has no priority expander to configure.
"""

from __future__ import annotations

from gpuplan.components.cluster_autoscaler import PRIORITY_CONFIGMAP
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.expander import expander_priorities, scaled_pools
from gpuplan.plan.fleet import ClusterPlan

FOLDER = "cluster-autoscaler"
AKS_NAMESPACE = "kube-system"


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the priority expander's ConfigMap of an azure cluster with Cluster Autoscaler pools."""
    if cluster.spec.provider != "azure" or not scaled_pools(cluster):
        return []
    obj = k8s(
        "v1",
        "ConfigMap",
        PRIORITY_CONFIGMAP,
        AKS_NAMESPACE,
        data={"priorities": expander_priorities(cluster)},
    )
    return [manifest(cluster.name, FOLDER, obj, cluster.located.source.path)]
