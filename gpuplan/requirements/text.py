"""`gpuplan requirements` as text: the tags, sizes and cloud CLI commands each node group needs.

Facts beyond gpuplan/requirements/nodegroup.py:
- AKS: `az aks update --cluster-autoscaler-profile <key>=<value> ...` (space-separated pairs) sets the
  managed autoscaler's profile for every autoscaled pool; `az aks nodepool update --enable-cluster-autoscaler
  --min-count N --max-count M` turns it on for a pool (MicrosoftDocs/azure-docs articles/aks/cluster-autoscaler.md);
  `az aks nodepool add --priority Spot --node-taints k=v:Effect,... --labels k=v ...` sets what a pool is made
  with (articles/aks/spot-node-pool.md; the page "Manage node pools for a cluster in AKS", section "Specify a
  taint, label, or tag"), and AKS hands a pool's labels and taints to its autoscaler for scale-from-zero
  (Azure/AKS#2359 logs them in the autoscaler's node-group list).
  The profile keys (expander, skip-nodes-with-system-pods, scale-down-delay-after-add, scale-down-unneeded-time,
  balance-similar-node-groups) are the ARM ManagedClusterAutoScalerProfile's, whose `expander` accepts priority
  (Azure/azure-rest-api-specs managedClusters.json, quoted in Azure/AKS#2610).
- GKE: `gcloud container node-pools create --enable-autoscaling --total-min-nodes N --total-max-nodes M`
  bounds the whole node pool (GKE 1.24 and later; --min-nodes/--max-nodes are per zone), while --num-nodes
  is the count in each of the pool's zones (cloud.google.com/kubernetes-engine/docs/how-to/cluster-autoscaler).
  GKE's node pool autoscaling is GKE's own Cluster Autoscaler: gpuplan installs no chart there. `--spot` makes
  the pool's nodes Spot VMs (cloud.google.com/kubernetes-engine/docs/how-to/spot-vms; the Terraform
  node_config `spot` of terraform.py). `--machine-type` names the Compute Engine machine type, which fixes the
  GPU model and count of accelerator-optimized VMs (gpuplan/plan/gke.py MACHINE_TYPES has the sources).
"""

from __future__ import annotations

import shlex

from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.gke import accelerator, gcloud_accelerator, google_stack, machine_type
from gpuplan.plan.pools import PoolPlan
from gpuplan.requirements.hosts import hand_labels, sriov_hosts
from gpuplan.requirements.karpenter_azure import self_hosted_karpenter
from gpuplan.requirements.monitoring import existing_prometheus
from gpuplan.requirements.nodegroup import (
    aws_discovery_tags,
    aws_node_labels,
    aws_template_tags,
    cloud_name,
    gke_labels,
    group_labels,
    profile,
    taint_text,
)


def _aws(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None
    nodes = pool.spec.nodes
    lines = [
        f"  ASG min size {nodes.min}, max size {nodes.max} (the pool's nodes.min and nodes.max)"
    ]
    if autoscaler.discovery == "auto":
        lines += [
            f"  tag {key} = {value} (EKS tags managed node groups' ASGs so)"
            for key, value in aws_discovery_tags(cluster).items()
        ]
    else:
        lines.append(f"  ASG name {autoscaler.node_groups[pool.name]}")
    lines += [f"  node group label {k} = {v}" for k, v in aws_node_labels(pool).items()]
    lines += [f"  tag {key} = {value}" for key, value in aws_template_tags(pool).items()]
    return lines


def _sh(*words: object) -> str:
    """Return words quoted for a POSIX shell, so a pasted command runs nothing a name holds."""
    return " ".join(shlex.quote(str(word)) for word in words)


def _aks_profile(cluster: ClusterPlan) -> list[str]:
    pairs = _sh(*(f"{k}={v}" for k, v in profile(cluster).items()))
    name = _sh(cloud_name(cluster))
    return [
        f"{cluster.name}: AKS cluster autoscaler profile (the priority expander reads kube-system/cluster-autoscaler-priority-expander)",
        f"  az aks update --name {name} --cluster-autoscaler-profile {pairs}",
    ]


def _aks(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    nodes = pool.spec.nodes
    name = _sh(cloud_name(cluster))
    lines = [
        f"  az aks nodepool update --cluster-name {name} --name {_sh(pool.spec.node_group)} "
        f"--enable-cluster-autoscaler --min-count {nodes.min} --max-count {nodes.max}"
    ]
    created = []
    if nodes.capacity_type == "spot":
        created.append("--priority Spot")
    if pool.taints:
        created.append("--node-taints " + _sh(",".join(taint_text(t) for t in pool.taints)))
    if labels := group_labels(pool):
        created.append("--labels " + _sh(*(f"{k}={v}" for k, v in labels.items())))
    if created:
        lines.append("  the node pool is created (az aks nodepool add) with " + " ".join(created))
    return lines


def _gke(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    kind = accelerator(pool.spec, pool.model.name)
    machine = machine_type(pool.model.name, pool.gpus_per_node, kind)
    google = google_stack(cluster.spec)
    flags = [f"--machine-type {_sh(machine.name)}"] if machine.name else []
    flags.append(
        f"--accelerator {_sh(gcloud_accelerator(pool.spec, pool.gpus_per_node, kind or '<accelerator>', google))}"
    )
    if pool.taints:
        flags.append("--node-taints " + _sh(",".join(taint_text(t) for t in pool.taints)))
    if labels := gke_labels(pool):
        flags.append("--node-labels " + _sh(",".join(f"{k}={v}" for k, v in labels.items())))
    nodes = pool.spec.nodes
    if nodes.capacity_type == "spot":
        flags.append("--spot")
    if nodes.by_cluster_autoscaler:
        flags.append(
            f"--enable-autoscaling --total-min-nodes {nodes.min} --total-max-nodes {nodes.max}"
        )
    else:
        flags.append(f"--num-nodes {nodes.most}")
    lines = [
        f"{cluster.name}: GKE node pool {pool.spec.node_group} (pool {pool.name})",
        f"  gcloud container node-pools create {_sh(pool.spec.node_group)} --cluster {_sh(cloud_name(cluster))} "
        + " ".join(flags),
        f"  machine type for {pool.gpus_per_node}x {pool.model.name} per node: {machine.text}",
    ]
    if not nodes.by_cluster_autoscaler:
        lines.append(
            f"  --num-nodes counts each zone's nodes: a pool in several zones has {nodes.most} in each"
        )
    return lines


def _static_group(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    """Return the labels and taints a fixed-size node group must give its nodes (gpuplan labels none)."""
    if not pool.label_selected or pool.spec.node_group is None:
        return []
    lines = [f"{cluster.name}: pool {pool.name}, node group {pool.spec.node_group}"]
    lines += [f"  node group label {k} = {v}" for k, v in group_labels(pool).items()]
    return lines + [f"  node group taint {taint_text(t)}" for t in pool.taints]


def cluster_requirements(cluster: ClusterPlan) -> list[str]:
    """Return the lines of what one cluster's node groups need set on the cloud side."""
    lines = []
    provider = cluster.spec.provider
    scaled = [p for p in cluster.pools.values() if p.spec.nodes.by_cluster_autoscaler]
    if provider == "azure" and scaled:
        lines += _aks_profile(cluster)
    for pool in cluster.pools.values():
        if provider == "gcp" and pool.spec.node_group is not None:
            lines += _gke(cluster, pool)
            continue
        if not pool.spec.nodes.by_cluster_autoscaler:
            lines += _static_group(cluster, pool)
            continue
        lines.append(
            f"{cluster.name}: pool {pool.name}, node group {pool.spec.node_group} (Cluster Autoscaler)"
        )
        lines += _aws(cluster, pool) if provider == "aws" else _aks(cluster, pool)
    lines += self_hosted_karpenter(cluster) + sriov_hosts(cluster) + hand_labels(cluster)
    return lines + existing_prometheus(cluster)
