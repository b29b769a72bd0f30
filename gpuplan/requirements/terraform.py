"""`gpuplan requirements --format terraform`: each node group's attributes as Terraform resource blocks.

The blocks hold only what gpuplan's output depends on; merge them into the resources that create the
node groups (their roles, subnets, machine types and the like are the IaC's own). Attribute names:
- hashicorp/terraform-provider-aws website/docs/r/eks_node_group.html.markdown: `capacity_type`
  (ON_DEMAND, SPOT), `labels`, `scaling_config` {desired_size, max_size, min_size}, `taint` {key, value,
  effect NO_SCHEDULE|NO_EXECUTE|PREFER_NO_SCHEDULE}, and `resources[].autoscaling_groups[].name`; the
  page's "Ignoring Changes to Desired Size" (lifecycle ignore_changes on scaling_config[0].desired_size)
  keeps Terraform from undoing the autoscaler. website/docs/r/autoscaling_group_tag.html.markdown:
  `aws_autoscaling_group_tag` {autoscaling_group_name, tag {key, value, propagate_at_launch}}, "for ASGs
  implicitly created by EKS Node Groups", its example a node-template tag.
- hashicorp/terraform-provider-azurerm@v5.2.0 website/docs/r/kubernetes_cluster.html.markdown:
  `auto_scaler_profile` {balance_similar_node_groups, expander (priority among its values),
  scale_down_delay_after_add, scale_down_unneeded, skip_nodes_with_system_pods};
  kubernetes_cluster_node_pool.html.markdown: `auto_scaling_enabled`, `min_count`, `max_count`,
  `node_labels`, `node_taints` (key=value:NoSchedule), `priority` (Regular, Spot).
- A node group of fixed size (no autoscaler) gets the same resource with its labels and taints only.
- hashicorp/terraform-provider-google@v7.45.0 website/docs/r/container_node_pool.html.markdown:
  `autoscaling` {total_min_node_count, total_max_node_count} (the pool's total, not per zone), `node_count`
  (per zone); container_cluster.html.markdown node_config: `spot`, `guest_accelerator` {type, count,
  gpu_partition_size, gpu_driver_installation_config {gpu_driver_version DEFAULT|INSTALLATION_DISABLED|...},
  gpu_sharing_config {gpu_sharing_strategy TIME_SHARING|MPS, max_shared_clients_per_gpu}}, `taint`
  {key, value, effect NO_SCHEDULE|PREFER_NO_SCHEDULE|NO_EXECUTE}, `machine_type` (a Compute Engine machine
  type: gpuplan/plan/gke.py MACHINE_TYPES), `labels` (the Kubernetes labels applied to each node).
"""

from __future__ import annotations

from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.gke import (
    CLIENTS_LABEL,
    PARTITION_LABEL,
    STRATEGY_LABEL,
    google_stack,
    machine_type,
    node_labels,
)
from gpuplan.plan.gke import accelerator as accelerator_type
from gpuplan.plan.pools import PoolPlan
from gpuplan.requirements.hcl import Block, Expr, identifier, render
from gpuplan.requirements.karpenter_azure import terraform_blocks
from gpuplan.requirements.nodegroup import (
    aws_node_labels,
    aws_template_tags,
    cloud_name,
    gke_labels,
    group_labels,
    profile,
    taint_text,
)

EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}
# The AKS autoscaler profile's keys (gpuplan/requirements/nodegroup.py profile()) as azurerm's attributes.
AZURERM_PROFILE = {
    "balance-similar-node-groups": "balance_similar_node_groups",
    "expander": "expander",
    "scale-down-delay-after-add": "scale_down_delay_after_add",
    "scale-down-unneeded-time": "scale_down_unneeded",
    "skip-nodes-with-system-pods": "skip_nodes_with_system_pods",
}


def _taints(pool: PoolPlan) -> list[Block]:
    return [
        Block("taint")
        .set("key", t["key"])
        .set("value", t.get("value", ""))
        .set("effect", EFFECTS[t["effect"]])
        for t in pool.taints
    ]


def _aws(cluster: ClusterPlan, pool: PoolPlan) -> list[Block]:
    nodes = pool.spec.nodes
    name = identifier(cluster.name, pool.name)
    group = Block("resource", ("aws_eks_node_group", name))
    group.set("cluster_name", cloud_name(cluster)).set("node_group_name", pool.spec.node_group)
    group.set("capacity_type", "SPOT" if nodes.capacity_type == "spot" else "ON_DEMAND")
    group.set("labels", aws_node_labels(pool))
    scaling = Block("scaling_config").set("desired_size", nodes.min)
    group.add(scaling.set("max_size", nodes.max).set("min_size", nodes.min))
    for taint in _taints(pool):
        group.add(taint)
    ignore = Expr("[scaling_config[0].desired_size]")
    group.add(Block("lifecycle").set("ignore_changes", ignore))
    tags = Block("resource", ("aws_autoscaling_group_tag", name))
    tags.set("for_each", aws_template_tags(pool))
    asg = Expr(f"aws_eks_node_group.{name}.resources[0].autoscaling_groups[0].name")
    tags.set("autoscaling_group_name", asg)
    tag = Block("tag").set("key", Expr("each.key")).set("value", Expr("each.value"))
    tags.add(tag.set("propagate_at_launch", False))
    return [group, tags]


def _static_aws(cluster: ClusterPlan, pool: PoolPlan) -> list[Block]:
    """Return the labels and taints of a fixed-size EKS node group (no autoscaler tags or sizes)."""
    group = Block("resource", ("aws_eks_node_group", identifier(cluster.name, pool.name)))
    group.set("cluster_name", cloud_name(cluster)).set("node_group_name", pool.spec.node_group)
    if labels := group_labels(pool):
        group.set("labels", labels)
    for taint in _taints(pool):
        group.add(taint)
    return [group]


def _static_aks(cluster: ClusterPlan, pool: PoolPlan) -> list[Block]:
    """Return the labels and taints of a fixed-size AKS node pool."""
    block = Block(
        "resource", ("azurerm_kubernetes_cluster_node_pool", identifier(cluster.name, pool.name))
    )
    block.set("name", pool.spec.node_group)
    block.set("node_taints", [taint_text(t) for t in pool.taints])
    if labels := group_labels(pool):
        block.set("node_labels", labels)
    return [block]


def _aks_profile(cluster: ClusterPlan) -> Block:
    block = Block("auto_scaler_profile")
    settings = profile(cluster)
    for key in sorted(settings, key=lambda k: AZURERM_PROFILE[k]):
        value = settings[key]
        block.set(AZURERM_PROFILE[key], value == "true" if value in ("true", "false") else value)
    return Block("resource", ("azurerm_kubernetes_cluster", identifier(cluster.name))).add(block)


def _aks(cluster: ClusterPlan, pool: PoolPlan) -> list[Block]:
    nodes = pool.spec.nodes
    block = Block(
        "resource", ("azurerm_kubernetes_cluster_node_pool", identifier(cluster.name, pool.name))
    )
    block.set("name", pool.spec.node_group).set("auto_scaling_enabled", True)
    block.set("min_count", nodes.min).set("max_count", nodes.max)
    block.set("node_taints", [taint_text(t) for t in pool.taints])
    if nodes.capacity_type == "spot":
        block.set("priority", "Spot")
    if labels := group_labels(pool):
        block.set("node_labels", labels)
    return [block]


def _gke(cluster: ClusterPlan, pool: PoolPlan) -> list[Block]:
    nodes = pool.spec.nodes
    block = Block("resource", ("google_container_node_pool", identifier(cluster.name, pool.name)))
    block.set("name", pool.spec.node_group).set("cluster", cloud_name(cluster))
    if nodes.by_cluster_autoscaler:
        limits = Block("autoscaling").set("total_min_node_count", nodes.min)
        block.add(limits.set("total_max_node_count", nodes.max))
    else:
        block.comment("node_count is per zone: a pool in several zones has this many in each")
        block.set("node_count", nodes.most)
    google = google_stack(cluster.spec)
    # With the GPU Operator (driver disabled) its MIG manager and device plugin partition and share.
    gke = node_labels(pool.spec) if google else {}
    kind = accelerator_type(pool.spec, pool.model.name)
    machine = machine_type(pool.model.name, pool.gpus_per_node, kind)
    accelerator = Block("guest_accelerator")
    accelerator.set("type", kind or "<accelerator>")
    accelerator.set("count", pool.gpus_per_node)
    if PARTITION_LABEL in gke:
        accelerator.set("gpu_partition_size", gke[PARTITION_LABEL])
    driver = "DEFAULT" if google else "INSTALLATION_DISABLED"
    accelerator.add(Block("gpu_driver_installation_config").set("gpu_driver_version", driver))
    if STRATEGY_LABEL in gke:
        sharing = Block("gpu_sharing_config").set("gpu_sharing_strategy", "TIME_SHARING")
        accelerator.add(sharing.set("max_shared_clients_per_gpu", int(gke[CLIENTS_LABEL])))
    config = Block("node_config")
    if machine.name:
        config.set("machine_type", machine.name)
    else:
        config.comment(f"machine_type: {machine.text}")
    if labels := gke_labels(pool):
        config.set("labels", labels)
    if nodes.capacity_type == "spot":
        config.set("spot", True)
    config.add(accelerator)
    for taint in _taints(pool):
        config.add(taint)
    return [block.add(config)]


def cluster_requirements(cluster: ClusterPlan) -> list[str]:
    """Return the Terraform blocks (as lines) of what one cluster's node groups need set."""
    provider = cluster.spec.provider
    pools = list(cluster.pools.values())
    blocks: list[tuple[str, list[Block]]] = []
    if provider == "azure" and any(p.spec.nodes.by_cluster_autoscaler for p in pools):
        blocks.append(
            (f"{cluster.name}: the managed Cluster Autoscaler's profile", [_aks_profile(cluster)])
        )
    for pool in pools:
        title = f"{cluster.name}: pool {pool.name}, node group {pool.spec.node_group}"
        if provider == "gcp" and pool.spec.node_group is not None:
            blocks.append((title, _gke(cluster, pool)))
        elif pool.spec.nodes.by_cluster_autoscaler:
            emit = _aws if provider == "aws" else _aks
            blocks.append((title + " (Cluster Autoscaler)", emit(cluster, pool)))
        elif pool.label_selected and pool.spec.node_group is not None:
            # a fixed-size group: the labels and taints its nodes must carry (text.py _static_group)
            emit = _static_aws if provider == "aws" else _static_aks
            blocks.append((title, emit(cluster, pool)))
    karpenter = terraform_blocks(cluster)
    if karpenter:
        title = f"{cluster.name}: self-hosted Karpenter's identity (federated credential, roles)"
        blocks.append((title, karpenter))
    lines = []
    for title, group in blocks:
        lines.append(f"# {title}")
        for block in group:
            lines += [*render(block), ""]
    return lines
