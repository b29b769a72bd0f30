"""Karpenter: the provider releases gpuplan supports, each with its core release and node class.

A cluster installs a provider's Karpenter: aws/karpenter-provider-aws (EC2NodeClass) or
Azure/karpenter-provider-azure (AKSNodeClass), so `components.karpenter.version` names a provider
release and the cluster's `provider` picks the line. The AWS provider releases alongside core (v1.N.x
builds on core v1.N.y); the Azure provider has its own releases and says which core it builds on in
go.mod (`sigs.k8s.io/karpenter`).

Facts and where they were read, at each provider tag:
- core release: go.mod `sigs.k8s.io/karpenter` (AWS v1.14.1 pins core commit 6e7eab7a0f48, core v1.14.1);
- NodePool (karpenter.sh/v1 in every release below): pkg/apis/crds/karpenter.sh_nodepools.yaml, the copy
  the provider installs. `spec.replicas` (static NodePools) exists from core v1.8.0, behind the
  StaticCapacity feature gate, off by default up to v1.14.1 (kubernetes-sigs/karpenter
  pkg/operator/options/options.go); consolidationPolicy `Balanced` from core v1.14.0;
- capacity type `reserved`: core v1.3.0 on (pkg/apis/v1/labels.go CapacityTypeReserved), behind the
  ReservedCapacity gate, on by default from v1.6.0 (options.go);
- node class fields: the spec properties of pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml or
  karpenter.azure.com_aksnodeclasses.yaml;
- chart: hack/release/common.sh `helm push` of charts `karpenter` and `karpenter-crd`, version = the tag
  without "v"; AWS to oci://public.ecr.aws/karpenter (website getting-started step08-apply-helm-chart.sh),
  Azure to oci://mcr.microsoft.com/aks/karpenter (README.md "Install Karpenter").
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

NODEPOOL_API = "karpenter.sh/v1"  # served and stored from core v1.0.0 on
CORE_REPO = "kubernetes-sigs/karpenter"
AWS_REPO = "aws/karpenter-provider-aws"
AZURE_REPO = "Azure/karpenter-provider-azure"


@dataclass(frozen=True)
class NodeClass:
    """A provider's node class kind: what a NodePool's nodeClassRef names."""

    group: str
    kind: str
    version: str  # the served storage version

    @property
    def api_version(self) -> str:
        """Return group/version."""
        return f"{self.group}/{self.version}"


EC2_NODE_CLASS = NodeClass("karpenter.k8s.aws", "EC2NodeClass", "v1")
AKS_NODE_CLASS = NodeClass("karpenter.azure.com", "AKSNodeClass", "v1beta1")  # v1alpha2 served too
NODE_CLASSES = {"aws": EC2_NODE_CLASS, "azure": AKS_NODE_CLASS}


def _minor(version: str) -> tuple[int, int]:
    major, minor, *_ = version.removeprefix("v").split(".")
    return int(major), int(minor)


@dataclass(frozen=True, kw_only=True)
class KarpenterRelease(Release):
    """A provider release of Karpenter: the core it builds on and its node class's fields."""

    core: str  # the kubernetes-sigs/karpenter release it builds on
    node_class: NodeClass
    node_class_fields: frozenset[str]  # top-level spec fields of the node class CRD

    @property
    def static_node_pools(self) -> bool:
        """Tell whether the NodePool CRD has spec.replicas (core v1.8.0; StaticCapacity gate, off by default)."""
        return _minor(self.core) >= (1, 8)

    @property
    def reserved_capacity(self) -> bool:
        """Tell whether karpenter.sh/capacity-type `reserved` exists (core v1.3.0)."""
        return _minor(self.core) >= (1, 3)

    @property
    def reserved_capacity_by_default(self) -> bool:
        """Tell whether the ReservedCapacity feature gate is on by default (core v1.6.0)."""
        return _minor(self.core) >= (1, 6)

    @property
    def subscription_env(self) -> str:
        """Return the variable the Azure controller reads its subscription from.

        v1.6.x reads ARM_SUBSCRIPTION_ID only; from v1.7 AZURE_SUBSCRIPTION_ID, falling back to ARM_
        (Azure/karpenter-provider-azure pkg/auth/config.go Build at v1.6.8 and v1.7.2).
        """
        return "ARM_SUBSCRIPTION_ID" if _minor(self.version) < (1, 7) else "AZURE_SUBSCRIPTION_ID"

    @property
    def consolidation_policies(self) -> tuple[str, ...]:
        """Return the enum of spec.disruption.consolidationPolicy."""
        base = ("WhenEmpty", "WhenEmptyOrUnderutilized")
        return base + ("Balanced",) if _minor(self.core) >= (1, 14) else base


_EC2_V1_0 = frozenset({
    "amiFamily", "amiSelectorTerms", "associatePublicIPAddress", "blockDeviceMappings", "context",
    "detailedMonitoring", "instanceProfile", "instanceStorePolicy", "kubelet", "metadataOptions", "role",
    "securityGroupSelectorTerms", "subnetSelectorTerms", "tags", "userData",
})  # fmt: skip
_EC2_V1_3 = _EC2_V1_0 | {"capacityReservationSelectorTerms"}
_EC2_V1_8 = _EC2_V1_3 | {"ipPrefixCount"}
_EC2_V1_11 = _EC2_V1_8 | {
    "networkInterfaces",
    "placementGroupSelector",
}  # EFA interfaces, placement groups
_EC2_V1_13 = _EC2_V1_11 | {"connectionTracking", "cpuOptions"}

_AKS_V1_6_2 = frozenset(
    {"fipsMode", "imageFamily", "kubelet", "maxPods", "osDiskSizeGB", "tags", "vnetSubnetID"}
)
_AKS_V1_6_8 = _AKS_V1_6_2 | {"localDNS", "security"}
_AKS_V1_10 = _AKS_V1_6_8 | {"artifactStreaming", "linuxOSConfig"}
_AKS_V1_12 = _AKS_V1_10 | {
    "gpu"
}  # spec.gpu.mode Driver|None: None leaves the GPU driver to the operator


def _aws(tag: str, core: str, fields: frozenset[str]) -> KarpenterRelease:
    sources = (
        f"{AWS_REPO}@{tag}:go.mod",
        f"{AWS_REPO}@{tag}:pkg/apis/crds/karpenter.sh_nodepools.yaml",
        f"{AWS_REPO}@{tag}:pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml",
        f"{AWS_REPO}@{tag}:hack/release/common.sh",
        f"{CORE_REPO}@{core}:pkg/operator/options/options.go",
    )
    chart = Chart("oci://public.ecr.aws/karpenter", "karpenter", tag.removeprefix("v"))
    return KarpenterRelease(
        version=tag, sources=sources, chart=chart, crds=f"karpenter-provider-aws/{tag}", line="aws",
        core=core, node_class=EC2_NODE_CLASS, node_class_fields=fields,
    )  # fmt: skip


def _azure(tag: str, core: str, fields: frozenset[str]) -> KarpenterRelease:
    sources = (
        f"{AZURE_REPO}@{tag}:go.mod",
        f"{AZURE_REPO}@{tag}:pkg/apis/crds/karpenter.sh_nodepools.yaml",
        f"{AZURE_REPO}@{tag}:pkg/apis/crds/karpenter.azure.com_aksnodeclasses.yaml",
        f"{AZURE_REPO}@{tag}:README.md",
        f"{AZURE_REPO}@{tag}:pkg/operator/options/options.go",
        f"{AZURE_REPO}@{tag}:pkg/auth/config.go",
        f"{AZURE_REPO}@{tag}:charts/karpenter/templates/deployment.yaml",
        f"{CORE_REPO}@{core}:pkg/operator/options/options.go",
    )
    chart = Chart("oci://mcr.microsoft.com/aks/karpenter", "karpenter", tag.removeprefix("v"))
    return KarpenterRelease(
        version=tag, sources=sources, chart=chart, crds=f"karpenter-provider-azure/{tag}", line="azure",
        core=core, node_class=AKS_NODE_CLASS, node_class_fields=fields,
    )  # fmt: skip


RELEASES: tuple[KarpenterRelease, ...] = (
    _aws("v1.0.14", "v1.0.9", _EC2_V1_0),
    _aws("v1.1.10", "v1.1.5", _EC2_V1_0),
    _aws("v1.2.8", "v1.2.5", _EC2_V1_0),
    _aws("v1.3.8", "v1.3.5", _EC2_V1_3),
    _aws("v1.4.4", "v1.4.2", _EC2_V1_3),
    _aws("v1.5.8", "v1.5.5", _EC2_V1_3),
    _aws("v1.6.8", "v1.6.4", _EC2_V1_3),
    _aws("v1.7.6", "v1.7.2", _EC2_V1_3),
    _aws("v1.8.8", "v1.8.3", _EC2_V1_8),
    _aws("v1.9.2", "v1.9.1", _EC2_V1_8),
    _aws("v1.10.2", "v1.10.1", _EC2_V1_8),
    _aws("v1.11.3", "v1.11.2", _EC2_V1_11),
    _aws("v1.12.2", "v1.12.1", _EC2_V1_11),
    _aws("v1.13.1", "v1.13.0", _EC2_V1_13),
    _aws("v1.14.1", "v1.14.1", _EC2_V1_13),
    _azure("v1.6.2", "v1.6.2", _AKS_V1_6_2),
    _azure("v1.6.8", "v1.6.2", _AKS_V1_6_8),
    _azure("v1.7.2", "v1.7.1", _AKS_V1_6_8),
    _azure("v1.10.2", "v1.10.0", _AKS_V1_10),
    _azure("v1.12.2", "v1.12.0", _AKS_V1_12),
    _azure("v1.13.1", "v1.13.0", _AKS_V1_12),
    _azure("v1.14.2", "v1.14.0", _AKS_V1_12),
)

KARPENTER = Component(
    name="karpenter",
    field="karpenter",
    releases=RELEASES,
    emitter="gpuplan.emit.karpenter:emit",
    checks=("gpuplan.check.karpenter", "gpuplan.check.nodeclass", "gpuplan.check.karpenter_azure"),
    line_field="provider",
)
