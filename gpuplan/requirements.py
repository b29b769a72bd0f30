"""What the cloud's node groups must carry for gpuplan's output to work: printed, never written to output/.

gpuplan does not create node groups (they are IaC), and every file under output/<cluster>/ must be in
the cluster's kustomization (a file Argo CD would apply), so these requirements are a command's
output (`gpuplan requirements`), derived from the checked model. GKE node pools get the gcloud flags
that set up what gpuplan's output expects (gpuplan/gke.py: accelerator, driver, MIG partition size,
time-sharing, autoscaling).

Facts: kubernetes/autoscaler at cluster-autoscaler-chart-9.59.0:
- cloudprovider/aws/README.md: auto-discovery finds ASGs tagged k8s.io/cluster-autoscaler/enabled and
  k8s.io/cluster-autoscaler/<cluster name>; an ASG at zero nodes is described to the autoscaler by the
  tags k8s.io/cluster-autoscaler/node-template/label/<label>, .../taint/<key> (value "<value>:<effect>")
  and .../resources/<resource>, without which a pending pod asking for a GPU resource never scales it up.
"""

from __future__ import annotations

from gpuplan.components.cluster_autoscaler import NODE_TEMPLATE_TAG
from gpuplan.fleet import ClusterPlan, Fleet
from gpuplan.gke import ACCELERATOR_LABEL, gcloud_accelerator, google_stack
from gpuplan.pools import NODE_GROUP_LABELS, PoolPlan


def _aws(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    autoscaler = cluster.spec.components.cluster_autoscaler
    assert autoscaler is not None
    nodes = pool.spec.nodes
    lines = [
        f"  ASG min size {nodes.min}, max size {nodes.max} (the pool's nodes.min and nodes.max)"
    ]
    if autoscaler.discovery == "auto":
        name = autoscaler.cluster_name or cluster.name
        lines.append("  tag k8s.io/cluster-autoscaler/enabled = true")
        lines.append(f"  tag k8s.io/cluster-autoscaler/{name} = owned")
    else:
        lines.append(f"  ASG name {autoscaler.node_groups[pool.name]}")
    labels = {NODE_GROUP_LABELS["aws"]: str(pool.spec.node_group), **pool.spec.labels}
    lines += [
        f"  tag {NODE_TEMPLATE_TAG}/label/{key} = {value}" for key, value in sorted(labels.items())
    ]
    for taint in pool.taints:
        lines.append(
            f"  tag {NODE_TEMPLATE_TAG}/taint/{taint['key']} = {taint.get('value', '')}:{taint['effect']}"
        )
    for resource, plan in sorted(pool.resources.items()):
        lines.append(f"  tag {NODE_TEMPLATE_TAG}/resources/{resource} = {plan.per_node}")
    return lines


def _managed(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    nodes = pool.spec.nodes
    return [
        f"  az aks nodepool update --name {pool.spec.node_group} --enable-cluster-autoscaler --min-count {nodes.min} --max-count {nodes.max}"
    ]


def _gke(cluster: ClusterPlan, pool: PoolPlan) -> list[str]:
    accelerator = pool.spec.labels.get(ACCELERATOR_LABEL, "<accelerator>")
    google = google_stack(cluster.spec)
    flags = [
        f"--accelerator {gcloud_accelerator(pool.spec, pool.gpus_per_node, accelerator, google)}"
    ]
    taints = [f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in pool.taints]
    if taints:
        flags.append("--node-taints " + ",".join(taints))
    nodes = pool.spec.nodes
    if nodes.by_cluster_autoscaler:
        flags.append(
            f"--enable-autoscaling --total-min-nodes {nodes.min} --total-max-nodes {nodes.max}"
        )
    else:
        flags.append(f"--num-nodes {nodes.most}")
    return [
        f"{cluster.name}: GKE node pool {pool.spec.node_group} (pool {pool.name})",
        f"  gcloud container node-pools create {pool.spec.node_group} " + " ".join(flags),
    ]


def cluster_requirements(cluster: ClusterPlan) -> list[str]:
    """Return the lines of what one cluster's node groups need set on the cloud side."""
    lines = []
    for pool in sorted(cluster.pools.values(), key=lambda p: p.index):
        if cluster.spec.provider == "gcp" and pool.spec.node_group is not None:
            lines += _gke(cluster, pool)
            continue
        if not pool.spec.nodes.by_cluster_autoscaler:
            continue
        lines.append(
            f"{cluster.name}: pool {pool.name}, node group {pool.spec.node_group} (Cluster Autoscaler)"
        )
        lines += _aws(cluster, pool) if cluster.spec.provider == "aws" else _managed(cluster, pool)
    return lines


def requirements(fleet: Fleet, only: str | None = None) -> str:
    """Return the fleet's node-group requirements as text (empty when no cluster has any)."""
    lines = []
    for name in sorted(fleet.clusters):
        if only is None or name == only:
            lines += cluster_requirements(fleet.clusters[name])
    return "".join(line + "\n" for line in lines)
