"""The Azure chart values of a self-hosted Karpenter on AKS, from `components.karpenter.azure`.

Azure/karpenter-provider-azure charts/karpenter at each supported tag (v1.6.2 to v1.14.2): the
chart's values carry `settings.clusterName` and `settings.clusterEndpoint` only
(templates/deployment.yaml CLUSTER_NAME, CLUSTER_ENDPOINT); every other setting is an environment
variable of the controller, passed through `controller.env` as upstream's own
karpenter-values-template.yaml does (names: pkg/operator/options/options.go AddFlags, and
pkg/auth/config.go for the subscription, LOCATION and ARM_RESOURCE_GROUP). The controller
authenticates with Azure workload identity: the service account's
`azure.workload.identity/client-id` annotation and the pod label `azure.workload.identity/use`
(karpenter-values-template.yaml). The bootstrap token comes from a Secret (`valueFrom`), never from git.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.karpenter import KarpenterRelease
from gpuplan.model.karpenter_azure import SelfHostedAzure

WORKLOAD_IDENTITY_CLIENT = "azure.workload.identity/client-id"
WORKLOAD_IDENTITY_USE = "azure.workload.identity/use"


def _env(azure: SelfHostedAzure, release: KarpenterRelease) -> list[dict[str, Any]]:
    network = azure.network
    token = {"secretKeyRef": {"name": azure.bootstrap_token.name, "key": azure.bootstrap_token.key}}
    plain = {
        "SSH_PUBLIC_KEY": azure.ssh_public_key,
        "NETWORK_PLUGIN": network.plugin,
        # "" is the option's "no mode"; unset, the controller assumes overlay
        "NETWORK_PLUGIN_MODE": "" if network.plugin_mode == "none" else network.plugin_mode,
        "NETWORK_POLICY": "" if network.policy == "none" else network.policy,
        "NETWORK_DATAPLANE": network.dataplane,
        "VNET_SUBNET_ID": azure.vnet_subnet_id,
        "VNET_GUID": azure.vnet_guid,
        "NODE_IDENTITIES": ",".join(azure.node_identities) or None,
        release.subscription_env: azure.subscription_id,
        "LOCATION": azure.location,
        "ARM_RESOURCE_GROUP": azure.resource_group,
        "AZURE_NODE_RESOURCE_GROUP": azure.node_resource_group,
        "KUBELET_IDENTITY_CLIENT_ID": azure.kubelet_identity_client_id,
    }
    env: list[dict[str, Any]] = [{"name": "KUBELET_BOOTSTRAP_TOKEN", "valueFrom": token}]
    return env + [{"name": k, "value": v} for k, v in plain.items() if v is not None]


def values(azure: SelfHostedAzure, release: KarpenterRelease) -> dict[str, Any]:
    """Return the chart values (besides settings.clusterName) a self-hosted controller needs to run."""
    return {
        "settings": {"clusterEndpoint": azure.cluster_endpoint},
        "controller": {"env": _env(azure, release)},
        "serviceAccount": {
            "annotations": {WORKLOAD_IDENTITY_CLIENT: azure.workload_identity_client_id}
        },
        "podLabels": {WORKLOAD_IDENTITY_USE: "true"},
    }
