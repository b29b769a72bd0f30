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

