"""What a self-hosted Karpenter on AKS needs that gpuplan must not or cannot write (text format).

Azure/karpenter-provider-azure v1.14.2: the bootstrap token is a kube-system Secret of type
bootstrap.kubernetes.io/token, `<token-id>.<token-secret>` (hack/deploy/configure-values.sh); the
controller's identity gets a federated credential for its service account (`karpenter`, the release
name: charts/karpenter/templates/_helpers.tpl fullname) and three roles on the node resource group,
plus Network Contributor on a subnet outside it (Makefile-az.mk az-perm, az-perm-subnet-custom,
az-create-federated-cred).
"""

from __future__ import annotations

from gpuplan.fleet import ClusterPlan


def self_hosted_karpenter(cluster: ClusterPlan) -> list[str]:
    """Return the lines of a self-hosted AKS Karpenter's Secret, federated credential and roles."""
    karpenter = cluster.spec.components.karpenter
    if cluster.spec.provider != "azure" or karpenter is None or not karpenter.self_hosted:
        return []
    azure, namespace = karpenter.azure, karpenter.namespace
    if azure is None:
        return []
    token = azure.bootstrap_token
    return [
        f"{cluster.name}: Karpenter self-hosted on AKS (identity {azure.workload_identity_client_id})",
        f"  Secret {token.name} in namespace {namespace}, key {token.key} = <token-id>.<token-secret> of a "
        "bootstrap token that does not expire (not in git: gpuplan only references it)",
        f"  federated credential: issuer = the cluster's OIDC issuer, subject = system:serviceaccount:{namespace}:karpenter, "
        "audience = api://AzureADTokenExchange (the cluster runs with --enable-oidc-issuer --enable-workload-identity)",
        f"  roles on resource group {azure.node_resource_group}: Virtual Machine Contributor, Network Contributor, "
        "Managed Identity Operator (and Network Contributor on the subnet's resource group if it is another)",
    ]
