# ca-explicit: pool h100-spot, node group h100-spot (Cluster Autoscaler)
resource "aws_eks_node_group" "ca_explicit_h100_spot" {
  cluster_name    = "ca-explicit"
  node_group_name = "h100-spot"
  capacity_type   = "SPOT"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-h100-sxm5-80gb"
  }
  scaling_config {
    desired_size = 0
    max_size     = 8
    min_size     = 0
  }
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
  lifecycle {
    ignore_changes = [scaling_config[0].desired_size]
  }
}

resource "aws_autoscaling_group_tag" "ca_explicit_h100_spot" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "h100-spot"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-h100-sxm5-80gb"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "8"
  }
  autoscaling_group_name = aws_eks_node_group.ca_explicit_h100_spot.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

# ca-explicit: pool h100-od, node group h100-od (Cluster Autoscaler)
resource "aws_eks_node_group" "ca_explicit_h100_od" {
  cluster_name    = "ca-explicit"
  node_group_name = "h100-od"
  capacity_type   = "ON_DEMAND"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-h100-sxm5-80gb"
  }
  scaling_config {
    desired_size = 2
    max_size     = 4
    min_size     = 2
  }
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
  lifecycle {
    ignore_changes = [scaling_config[0].desired_size]
  }
}

resource "aws_autoscaling_group_tag" "ca_explicit_h100_od" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "h100-od"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-h100-sxm5-80gb"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "8"
  }
  autoscaling_group_name = aws_eks_node_group.ca_explicit_h100_od.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

