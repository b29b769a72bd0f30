"""What a self-hosted Karpenter on AKS needs from the cluster (`components.karpenter.azure`).

The Azure provider's controller reads these from its environment and refuses to start without the
required ones (Azure/karpenter-provider-azure, every supported tag v1.6.2 to v1.14.2:
pkg/operator/options/options.go AddFlags and options_validation.go validateRequiredFields,
validateNetworkingOptions, validateVnetSubnetID; pkg/auth/config.go: the subscription and LOCATION;
karpenter-values-template.yaml and hack/deploy/configure-values.sh say where each value comes from).
The bootstrap token is a secret: gpuplan never holds it, the controller reads it from a Secret.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from gpuplan.model.common import Model

UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
Uuid = Annotated[str, Field(pattern=UUID)]
# ARM resource ids, compared case-insensitively by Azure (pkg/utils/subnet_parser.go: 11 parts).
SUBNET_ID = (
    r"(?i)^/subscriptions/[^/\s,]+/resourceGroups/[^/\s,]+/providers/Microsoft\.Network"
    r"/virtualNetworks/[^/\s,]+/subnets/[^/\s,]+$"
)
IDENTITY_ID = (
    r"(?i)^/subscriptions/[^/\s,]+/resourceGroups/[^/\s,]+/providers/Microsoft\.ManagedIdentity"
    r"/userAssignedIdentities/[^/\s,]+$"
)
# Azure resource group names: 1-90 letters, digits, '_', '-', '.', '(' and ')', not ending in '.'.
ResourceGroup = Annotated[str, Field(pattern=r"^[-\w.()]{0,89}[-\w()]$")]


class AzureNetwork(Model):
    """The AKS cluster's network profile (`az aks show --query networkProfile`): new nodes must match it."""

    plugin: Literal["azure", "none"]
    """networkPlugin: azure (Azure CNI) or none (bring your own CNI); Karpenter supports no other."""
    plugin_mode: Literal["overlay", "none"]
    """networkPluginMode: overlay (pod IPs outside the VNet), or none (Azure CNI on the VNet, or plugin none)."""
    dataplane: Literal["azure", "cilium"]
    """networkDataplane: azure or cilium (Karpenter's own default is cilium, AKS's is azure: state it)."""
    policy: Literal["none", "azure", "calico", "cilium"] = "none"
    """networkPolicy engine; default none."""

    @model_validator(mode="after")
    def _mode_needs_azure(self) -> AzureNetwork:
        if self.plugin == "none" and self.plugin_mode != "none":
            raise ValueError("pluginMode must be none when plugin is none (Karpenter refuses it)")
        return self


class SecretKey(Model):
    """A key of a Secret in Karpenter's namespace."""

    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    ]
    """Name of the Secret."""
    key: Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
    """Key in the Secret's data."""


class SelfHostedAzure(Model):
    """Settings of Karpenter self-hosted on AKS (`selfHosted: true`): where new nodes join and live."""

    cluster_endpoint: Annotated[
        str, Field(max_length=2048, pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$")
    ]
    """API server URL new nodes join, such as https://aks-dns-1a2b.hcp.eastus.azmk8s.io:443."""
    subscription_id: Uuid
    """Azure subscription of the cluster."""
    location: Annotated[str, Field(pattern=r"^[a-z0-9]{1,40}$")]
    """Azure region of the cluster, such as eastus."""
    resource_group: ResourceGroup
    """Resource group of the AKS cluster object."""
    node_resource_group: ResourceGroup
    """Resource group AKS created for the nodes (nodeResourceGroup, MC_...): Karpenter's VMs go there."""
    vnet_subnet_id: Annotated[str, Field(max_length=1024, pattern=SUBNET_ID)]
    """ARM id of the subnet new nodes get (an AKSNodeClass's vnetSubnetID overrides it)."""
    vnet_guid: Uuid | None = None
    """resourceGuid of the VNet; needed with Azure CNI overlay on your own VNet."""
    network: AzureNetwork
    """The cluster's network profile."""
    ssh_public_key: Annotated[
        str,
        Field(
            max_length=16384,
            pattern=r"^(ssh-rsa|ssh-ed25519|ecdsa-sha2-nistp(256|384|521)) AAAA[0-9A-Za-z+/]+=*( [^\x00-\x1f\x7f]*)?$",
        ),
    ]
    """Public SSH key put on every node (a public key: safe in git)."""
    node_identities: list[Annotated[str, Field(max_length=1024, pattern=IDENTITY_ID)]] = []
    """User-assigned identities put on every node, usually the kubelet identity's ARM id."""
    kubelet_identity_client_id: Uuid | None = None
    """Client id of the kubelet identity (identityProfile.kubeletidentity.clientId)."""
    workload_identity_client_id: Uuid
    """Client id of the managed identity Karpenter's controller acts as (Azure workload identity): it
    needs Virtual Machine Contributor, Network Contributor and Managed Identity Operator on the node
    resource group, and a federated credential for Karpenter's service account."""
    bootstrap_token: SecretKey = SecretKey(name="karpenter-bootstrap-token", key="token")
    """Secret holding the kubelet bootstrap token (<token-id>.<token-secret>) new nodes join with, in
    Karpenter's namespace; gpuplan never writes it (`gpuplan requirements` says what to create).
    Default: Secret karpenter-bootstrap-token, key token."""
