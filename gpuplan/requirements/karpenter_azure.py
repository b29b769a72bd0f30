"""What a self-hosted Karpenter on AKS needs that gpuplan must not or cannot write (text and Terraform).

Azure/karpenter-provider-azure v1.14.2: the bootstrap token is a kube-system Secret of type
bootstrap.kubernetes.io/token, `<token-id>.<token-secret>` (hack/deploy/configure-values.sh); the
controller's identity gets a federated credential for its service account (`karpenter`, the release
name: charts/karpenter/templates/_helpers.tpl fullname) and three roles on the node resource group,
plus Network Contributor on a subnet outside it (Makefile-az.mk az-perm, az-perm-subnet-custom,
az-create-federated-cred).
"""

from __future__ import annotations

from gpuplan.model.karpenter_azure import SelfHostedAzure
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.requirements.hcl import Block, Expr, identifier

SERVICE_ACCOUNT = "karpenter"  # the chart's fullname for the release gpuplan installs (see above)
AUDIENCE = "api://AzureADTokenExchange"
# The controller identity's roles on the node resource group (Makefile-az.mk az-perm).
NODE_GROUP_ROLES = (
    "Virtual Machine Contributor",
    "Network Contributor",
    "Managed Identity Operator",
)


def _self_hosted(cluster: ClusterPlan) -> tuple[SelfHostedAzure, str] | None:
    """Return a self-hosted AKS Karpenter's settings and namespace, if the cluster runs one."""
    karpenter = cluster.spec.components.karpenter
    if cluster.spec.provider != "azure" or karpenter is None or not karpenter.self_hosted:
        return None
    return (karpenter.azure, karpenter.namespace) if karpenter.azure is not None else None


def _group_scope(resource_id: str) -> str:
    """Return `/subscriptions/<s>/resourceGroups/<g>` of an Azure resource ID (checked by the model)."""
    return "/".join(resource_id.split("/")[:5])


def self_hosted_karpenter(cluster: ClusterPlan) -> list[str]:
    """Return the lines of a self-hosted AKS Karpenter's Secret, federated credential and roles."""
    found = _self_hosted(cluster)
    if found is None:
        return []
    azure, namespace = found
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


def terraform_blocks(cluster: ClusterPlan) -> list[Block]:
    """Return the federated credential and role assignments of a self-hosted AKS Karpenter.

    Attribute names: hashicorp/terraform-provider-azurerm@v5.2.0 website/docs/r/
    federated_identity_credential.html.markdown (name, user_assigned_identity_id, audience, issuer,
    subject), role_assignment.html.markdown (scope, role_definition_name, principal_id,
    principal_type), user_assigned_identity.html.markdown (exports id, principal_id) and
    kubernetes_cluster.html.markdown (exports oidc_issuer_url). The identity and the cluster are the
    user's own resources: the blocks refer to them by the names gpuplan's other blocks use.
    """
    found = _self_hosted(cluster)
    if found is None:
        return []
    azure, namespace = found
    identity = f"azurerm_user_assigned_identity.{identifier(cluster.name, 'karpenter')}"
    credential = Block(
        "resource", ("azurerm_federated_identity_credential", identifier(cluster.name, "karpenter"))
    )
    credential.comment(f"the identity whose client ID is {azure.workload_identity_client_id}")
    credential.set("name", f"{cluster.name}-karpenter")
    credential.set("user_assigned_identity_id", Expr(f"{identity}.id"))
    credential.set("audience", [AUDIENCE])
    credential.set(
        "issuer", Expr(f"azurerm_kubernetes_cluster.{identifier(cluster.name)}.oidc_issuer_url")
    )
    credential.set("subject", f"system:serviceaccount:{namespace}:{SERVICE_ACCOUNT}")
    node_group = (
        f"/subscriptions/{azure.subscription_id}/resourceGroups/{azure.node_resource_group}"
    )
    grants = [(node_group, role) for role in NODE_GROUP_ROLES]
    subnet_group = _group_scope(azure.vnet_subnet_id)
    if subnet_group.lower() != node_group.lower():  # Makefile-az.mk az-perm-subnet-custom
        grants.append((subnet_group, "Network Contributor"))
    blocks = [credential]
    for scope, role in grants:
        where = "subnet" if scope == subnet_group and scope != node_group else "nodes"
        name = identifier(cluster.name, "karpenter", where, role.lower())
        block = Block("resource", ("azurerm_role_assignment", name))
        block.set("scope", scope).set("role_definition_name", role)
        block.set("principal_id", Expr(f"{identity}.principal_id"))
        blocks.append(block.set("principal_type", "ServicePrincipal"))
    return blocks
