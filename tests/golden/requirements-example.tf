# edge-inference: pool nvl-shared, node group nvlshared
resource "azurerm_kubernetes_cluster_node_pool" "edge_inference_nvl_shared" {
  name        = "nvlshared"
  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
  node_labels = {
    "nvidia.com/device-plugin.config" = "nvl-shared"
    "nvidia.com/mig.config"           = "gpuplan-7x1g.12gb"
  }
}

# edge-inference: pool l4-mps, node group l4mps
resource "azurerm_kubernetes_cluster_node_pool" "edge_inference_l4_mps" {
  name        = "l4mps"
  node_taints = ["nvidia.com/gpu=present:NoSchedule"]
  node_labels = {
    "nvidia.com/device-plugin.config" = "l4-mps"
  }
}

# eks-batch: pool l40s-od-a, node group l40s-od-a (Cluster Autoscaler)
resource "aws_eks_node_group" "eks_batch_l40s_od_a" {
  cluster_name    = "eks-batch"
  node_group_name = "l40s-od-a"
  capacity_type   = "ON_DEMAND"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-l40s"
  }
  scaling_config {
    desired_size = 1
    max_size     = 6
    min_size     = 1
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

resource "aws_autoscaling_group_tag" "eks_batch_l40s_od_a" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "l40s-od-a"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-l40s"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "4"
  }
  autoscaling_group_name = aws_eks_node_group.eks_batch_l40s_od_a.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

# eks-batch: pool l40s-od-b, node group l40s-od-b (Cluster Autoscaler)
resource "aws_eks_node_group" "eks_batch_l40s_od_b" {
  cluster_name    = "eks-batch"
  node_group_name = "l40s-od-b"
  capacity_type   = "ON_DEMAND"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-l40s"
  }
  scaling_config {
    desired_size = 1
    max_size     = 6
    min_size     = 1
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

resource "aws_autoscaling_group_tag" "eks_batch_l40s_od_b" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "l40s-od-b"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-l40s"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "4"
  }
  autoscaling_group_name = aws_eks_node_group.eks_batch_l40s_od_b.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

# eks-batch: pool l40s-spot, node group l40s-spot (Cluster Autoscaler)
resource "aws_eks_node_group" "eks_batch_l40s_spot" {
  cluster_name    = "eks-batch"
  node_group_name = "l40s-spot"
  capacity_type   = "SPOT"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-l40s"
  }
  scaling_config {
    desired_size = 0
    max_size     = 10
    min_size     = 0
  }
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
  taint {
    key    = "example.com/spot"
    value  = "true"
    effect = "NO_SCHEDULE"
  }
  lifecycle {
    ignore_changes = [scaling_config[0].desired_size]
  }
}

resource "aws_autoscaling_group_tag" "eks_batch_l40s_spot" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "l40s-spot"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-l40s"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/taint/example.com/spot"              = "true:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "4"
  }
  autoscaling_group_name = aws_eks_node_group.eks_batch_l40s_spot.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

# gke-serving: pool a100-mig, node group a100-mig
resource "google_container_node_pool" "gke_serving_a100_mig" {
  name    = "a100-mig"
  cluster = "gke-serving"
  # node_count is per zone: a pool in several zones has this many in each
  node_count = 2
  node_config {
    machine_type = "a2-ultragpu-8g"
    guest_accelerator {
      type               = "nvidia-a100-80gb"
      count              = 8
      gpu_partition_size = "1g.10gb"
      gpu_driver_installation_config {
        gpu_driver_version = "DEFAULT"
      }
    }
    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }
  }
}

# gke-serving: pool l4-shared, node group l4-shared
resource "google_container_node_pool" "gke_serving_l4_shared" {
  name    = "l4-shared"
  cluster = "gke-serving"
  autoscaling {
    total_min_node_count = 1
    total_max_node_count = 10
  }
  node_config {
    machine_type = "g2-standard-4"
    guest_accelerator {
      type  = "nvidia-l4"
      count = 1
      gpu_driver_installation_config {
        gpu_driver_version = "DEFAULT"
      }
      gpu_sharing_config {
        gpu_sharing_strategy       = "TIME_SHARING"
        max_shared_clients_per_gpu = 4
      }
    }
    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }
  }
}

# h100-prod: pool h100-infer, node group h100-infer
resource "aws_eks_node_group" "h100_prod_h100_infer" {
  cluster_name    = "h100-prod"
  node_group_name = "h100-infer"
  labels = {
    "nvidia.com/mig.config" = "gpuplan-7x1g.10gb"
  }
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

# h100-prod: pool a100-mixed, node group a100-mixed
resource "aws_eks_node_group" "h100_prod_a100_mixed" {
  cluster_name    = "h100-prod"
  node_group_name = "a100-mixed"
  labels = {
    "nvidia.com/mig.config" = "gpuplan-per-gpu-cffeb2e2b8"
  }
  taint {
    key    = "nvidia.com/gpu"
    value  = "present"
    effect = "NO_SCHEDULE"
  }
}

