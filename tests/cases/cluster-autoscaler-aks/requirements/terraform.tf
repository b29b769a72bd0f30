# aks-ca: the managed Cluster Autoscaler's profile
resource "azurerm_kubernetes_cluster" "aks_ca" {
  auto_scaler_profile {
    expander                    = "priority"
    scale_down_delay_after_add  = "30m"
    scale_down_unneeded         = "20m"
    skip_nodes_with_system_pods = true
  }
}

# aks-ca: pool a100-spot, node group a100spot (Cluster Autoscaler)
resource "azurerm_kubernetes_cluster_node_pool" "aks_ca_a100_spot" {
  name                 = "a100spot"
  auto_scaling_enabled = true
  min_count            = 0
  max_count            = 6
  node_taints          = ["nvidia.com/gpu=present:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
  priority             = "Spot"
}

# aks-ca: pool a100-od, node group a100od (Cluster Autoscaler)
resource "azurerm_kubernetes_cluster_node_pool" "aks_ca_a100_od" {
  name                 = "a100od"
  auto_scaling_enabled = true
  min_count            = 1
  max_count            = 4
  node_taints          = ["nvidia.com/gpu=present:NoSchedule"]
}

