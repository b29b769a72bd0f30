"""The facts `gpuplan requirements` prints, whatever the format: per cloud, what a node group must carry.

Facts (each checked at the source named):
- kubernetes/autoscaler cluster-autoscaler-1.35.0 cluster-autoscaler/cloudprovider/aws/README.md:
  auto-discovery finds ASGs tagged k8s.io/cluster-autoscaler/enabled and k8s.io/cluster-autoscaler/<cluster
  name> (only the keys matter); an ASG at zero nodes is described to the autoscaler by the tags
  k8s.io/cluster-autoscaler/node-template/label/<label> = <value>, .../taint/<key> = <value>:<effect> and
  .../resources/<resource> = <quantity>, without which a pending pod asking for a GPU resource or
  selecting the pool's labels never scales the group up from zero. "Special note on GPU instances": GPU
  nodes should carry the label k8s.amazonaws.com/accelerator from boot (the provider's GPULabel,
  cloudprovider/aws/aws_cloud_provider.go; utils/gpu/gpu.go NodeHasGpu checks only that it is there),
  else the autoscaler, seeing no GPU until the device plugin reports it, scales out again.
- docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html: "Nodes launched as part of a managed
  node group are automatically tagged for auto-discovery by the Kubernetes Cluster Autoscaler".
- The cloud's autoscaler settings on AKS (the cluster's autoscaler profile) and GKE (the node pool's
  autoscaling limits): gpuplan/requirements/text.py and terraform.py name their sources.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.cluster_autoscaler import NODE_TEMPLATE_TAG
from gpuplan.plan.expander import settings
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import (
    MIG_CONFIG_LABEL,
    MIG_DISABLED,
    NODE_GROUP_LABELS,
    POOL_LABEL,
    PoolPlan,
)

ACCELERATOR_LABEL_AWS = "k8s.amazonaws.com/accelerator"
DISCOVERY_TAG = "k8s.io/cluster-autoscaler"
GKE_PREFIX = "cloud.google.com/"


def cloud_name(cluster: ClusterPlan) -> str:
    """Return the cloud's name of the cluster (components.clusterAutoscaler.clusterName, else its name)."""
    autoscaler = cluster.spec.components.cluster_autoscaler
    return (autoscaler.cluster_name if autoscaler else None) or cluster.name


def aws_accelerator(pool: PoolPlan) -> str:
    """Return the value of the pool's k8s.amazonaws.com/accelerator label (its GPU model, as a label value)."""
    return pool.spec.labels.get(
        ACCELERATOR_LABEL_AWS, "nvidia-" + pool.model.name.lower().replace(" ", "-")
    )


def group_labels(pool: PoolPlan) -> dict[str, str]:
    """Return the Kubernetes labels a node group must give its nodes: the pool's labels and the
    configurations gpuplan names (MIG layout, device-plugin config), which it cannot put on nodes
    it does not label (the cloud sets its node-group label itself)."""
    skip = {POOL_LABEL, pool.node_group_label, *pool.gke_labels}
    if pool.mig_config == MIG_DISABLED:
        # the GPU Operator labels a MIG-capable node without the label all-disabled itself
        # (NVIDIA/gpu-operator v26.7.0 controllers/nodelabeling_controller.go)
        skip.add(MIG_CONFIG_LABEL)
    return {k: v for k, v in sorted(pool.node_labels.items()) if k not in skip}


def gke_labels(pool: PoolPlan) -> dict[str, str]:
    """Return the Kubernetes labels a GKE node pool is made with: the group's, less GKE's own
    (cloud.google.com/gke-accelerator and the like, which GKE puts on the nodes itself)."""
    return {k: v for k, v in group_labels(pool).items() if not k.startswith(GKE_PREFIX)}


def aws_node_labels(pool: PoolPlan) -> dict[str, str]:
    """Return the Kubernetes labels an EKS node group sets on its nodes for this pool (EKS adds its own)."""
    return dict(
        sorted({ACCELERATOR_LABEL_AWS: aws_accelerator(pool), **group_labels(pool)}.items())
    )


def aws_discovery_tags(cluster: ClusterPlan) -> dict[str, str]:
    """Return the ASG tags auto-discovery looks for (EKS puts them on managed node groups' ASGs)."""
    name = cloud_name(cluster)
    return {f"{DISCOVERY_TAG}/enabled": "true", f"{DISCOVERY_TAG}/{name}": "owned"}


def aws_template_tags(pool: PoolPlan) -> dict[str, str]:
    """Return the node-template ASG tags that let the autoscaler scale the pool's group up from zero."""
    labels = {NODE_GROUP_LABELS["aws"]: str(pool.spec.node_group), **aws_node_labels(pool)}
    tags = {f"{NODE_TEMPLATE_TAG}/label/{k}": v for k, v in sorted(labels.items())}
    for taint in pool.taints:
        tags[f"{NODE_TEMPLATE_TAG}/taint/{taint['key']}"] = (
            f"{taint.get('value', '')}:{taint['effect']}"
        )
    for resource, plan in sorted(pool.resources.items()):
        tags[f"{NODE_TEMPLATE_TAG}/resources/{resource}"] = str(plan.per_node)
    return tags


def profile(cluster: ClusterPlan) -> dict[str, str]:
    """Return the autoscaler settings gpuplan expects, as strings (AKS's autoscaler profile takes strings)."""
    out: dict[str, str] = {}
    for key, value in settings(cluster).items():
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def taint_text(taint: dict[str, Any]) -> str:
    """Return a taint as key=value:Effect (value may be empty)."""
    return f"{taint['key']}={taint.get('value', '')}:{taint['effect']}"
