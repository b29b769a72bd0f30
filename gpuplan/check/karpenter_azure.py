"""Self-hosted Karpenter on AKS: the settings its controller cannot start without.

The Azure provider's controller exits at start-up without a cluster endpoint, bootstrap token, SSH
public key, subnet and node resource group (Azure/karpenter-provider-azure
pkg/operator/options/options_validation.go validateRequiredFields, v1.6.2 to v1.14.2) and cannot
reach Azure without a subscription (pkg/auth/config.go Validate); gpuplan takes them from
`components.karpenter.azure` (gpuplan/model/karpenter_azure.py), so a self-hosted cluster without
that section would install a controller that never runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.diagnostics import Diagnostic, Severity, format_path
from gpuplan.plan.fleet import Fleet

WHERE = ("components", "karpenter")
REQUIRED = (
    "clusterEndpoint, subscriptionId, location, resourceGroup, nodeResourceGroup, vnetSubnetId, "
    "network, sshPublicKey and workloadIdentityClientId"
)


@check
def check_self_hosted_karpenter(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a self-hosted AKS Karpenter without its azure settings, or azure settings off Azure."""
    for cluster in clusters_with(fleet, "karpenter"):
        karpenter = cluster.spec.components.karpenter
        assert karpenter is not None
        source, provider = cluster.located.source, cluster.spec.provider
        if provider == "azure" and karpenter.self_hosted and karpenter.azure is None:
            yield source.diagnostic(
                (*WHERE, "selfHosted"),
                f"a self-hosted Karpenter on AKS needs components.karpenter.azure ({REQUIRED}): "
                "its controller does not start without them",
                at_key=True,
            )
        elif karpenter.azure is not None and provider != "azure":
            yield source.diagnostic(
                (*WHERE, "azure"),
                f"azure Karpenter settings on a cluster whose provider is {provider}: remove them",
                at_key=True,
            )
        elif karpenter.azure is not None and not karpenter.self_hosted:
            loc = (*WHERE, "azure")
            line, col = source.position(loc, True)
            yield Diagnostic(
                source.path, line, col, Severity.WARNING, format_path(loc),
                "AKS Node Auto Provisioning runs Karpenter here, so these settings are unused: "
                "set selfHosted: true to install Karpenter yourself, or remove them",
            )  # fmt: skip
