# aks-self: self-hosted Karpenter's identity (federated credential, roles)
resource "azurerm_federated_identity_credential" "aks_self_karpenter" {
  # the identity whose client ID is 9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b
  name                      = "aks-self-karpenter"
  user_assigned_identity_id = azurerm_user_assigned_identity.aks_self_karpenter.id
  audience                  = ["api://AzureADTokenExchange"]
  issuer                    = azurerm_kubernetes_cluster.aks_self.oidc_issuer_url
  subject                   = "system:serviceaccount:kube-system:karpenter"
}

resource "azurerm_role_assignment" "aks_self_karpenter_nodes_virtual_machine_contributor" {
  scope                = "/subscriptions/6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f/resourceGroups/MC_ml-platform_aks-self_westeurope"
  role_definition_name = "Virtual Machine Contributor"
  principal_id         = azurerm_user_assigned_identity.aks_self_karpenter.principal_id
  principal_type       = "ServicePrincipal"
}

resource "azurerm_role_assignment" "aks_self_karpenter_nodes_network_contributor" {
  scope                = "/subscriptions/6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f/resourceGroups/MC_ml-platform_aks-self_westeurope"
  role_definition_name = "Network Contributor"
  principal_id         = azurerm_user_assigned_identity.aks_self_karpenter.principal_id
  principal_type       = "ServicePrincipal"
}

resource "azurerm_role_assignment" "aks_self_karpenter_nodes_managed_identity_operator" {
  scope                = "/subscriptions/6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f/resourceGroups/MC_ml-platform_aks-self_westeurope"
  role_definition_name = "Managed Identity Operator"
  principal_id         = azurerm_user_assigned_identity.aks_self_karpenter.principal_id
  principal_type       = "ServicePrincipal"
}

# eks-ca-old: pool l40s, node group l40s (Cluster Autoscaler)
resource "aws_eks_node_group" "eks_ca_old_l40s" {
  cluster_name    = "eks-ca-old"
  node_group_name = "l40s"
  capacity_type   = "ON_DEMAND"
  labels = {
    "k8s.amazonaws.com/accelerator" = "nvidia-l40s"
  }
  scaling_config {
    desired_size = 0
    max_size     = 6
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

resource "aws_autoscaling_group_tag" "eks_ca_old_l40s" {
  for_each = {
    "k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup"   = "l40s"
    "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator" = "nvidia-l40s"
    "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"                = "present:NoSchedule"
    "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"            = "4"
  }
  autoscaling_group_name = aws_eks_node_group.eks_ca_old_l40s.resources[0].autoscaling_groups[0].name
  tag {
    key                 = each.key
    value               = each.value
    propagate_at_launch = false
  }
}

