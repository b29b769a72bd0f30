"""Karpenter node classes gpuplan renders from the model (components.karpenter.nodeClass.aws/azure).

EC2NodeClass (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go at the pinned tag): exactly one
of `role` / `instanceProfile` (CEL rule on the spec); `amiSelectorTerms[].alias` "<family>@<version>",
where al2023 and bottlerocket pick their NVIDIA variant for GPU instance types
(pkg/providers/amifamily); subnet and security-group selector `tags`; `capacityReservationSelectorTerms`
(v1.3 on), `placementGroupSelector` and `networkInterfaces` (v1.11 on, interfaceType interface|efa-only,
a primary interface on card 0 device 0 and at most one efa-only per card: the CEL rules on the field).
AKSNodeClass (Azure/karpenter-provider-azure pkg/apis/v1beta1/aksnodeclass.go): `imageFamily`,
`osDiskSizeGB`, `tags`, and `gpu.mode` (v1.12 on): Driver lets AKS install the GPU driver, None leaves
it to the GPU Operator.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.karpenter import KarpenterRelease
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.nodeclass import AksNodeClassSettings, Ec2NodeClassSettings
from gpuplan.plan.drivers import layout, rendered_ami, rendered_image_family
from gpuplan.plan.fleet import ClusterPlan

FOLDER = "karpenter"
IMDS_V2 = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def efa_interfaces(cards: int) -> list[dict[str, Any]]:
    """Return the primary interface plus one EFA-only interface on every network card."""
    out = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
    out.append({"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"})
    out += [
        {"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"}
        for card in range(1, cards)
    ]
    return out


def ec2_node_class(
    cluster: ClusterPlan, name: str, settings: Ec2NodeClassSettings, release: KarpenterRelease
) -> dict[str, Any]:
    """Return the EC2NodeClass of the cluster's NodePools."""
    # subnets and security groups are tagged karpenter.sh/discovery: <the cloud's cluster name>
    # (aws/karpenter-provider-aws v1.14.1 website/content/en/docs/concepts/nodeclasses.md), the
    # name Karpenter's settings.clusterName holds
    karpenter = cluster.spec.components.karpenter
    cloud = (karpenter.cluster_name if karpenter else None) or cluster.name
    tags = dict(settings.discovery_tags or {"karpenter.sh/discovery": cloud})
    spec: dict[str, Any] = (
        {"role": settings.role} if settings.role else {"instanceProfile": settings.instance_profile}
    )
    spec |= {
        "amiSelectorTerms": [{"alias": f"{rendered_ami(cluster)}@{settings.ami_version}"}],
        "subnetSelectorTerms": [{"tags": tags}],
        "securityGroupSelectorTerms": [{"tags": dict(tags)}],
        "metadataOptions": dict(
            IMDS_V2
        ),  # IMDSv2, one hop: pods cannot read the node's credentials
    }
    fields = release.node_class_fields
    if settings.capacity_reservation_ids and "capacityReservationSelectorTerms" in fields:
        spec["capacityReservationSelectorTerms"] = [
            {"id": i} for i in settings.capacity_reservation_ids
        ]
    if settings.placement_group and "placementGroupSelector" in fields:
        spec["placementGroupSelector"] = {"name": settings.placement_group}
    if settings.efa_network_cards and "networkInterfaces" in fields:
        spec["networkInterfaces"] = efa_interfaces(settings.efa_network_cards)
    if settings.tags:
        spec["tags"] = dict(settings.tags)
    return k8s(release.node_class.api_version, release.node_class.kind, name, spec=spec)


def aks_node_class(
    cluster: ClusterPlan, name: str, settings: AksNodeClassSettings, release: KarpenterRelease
) -> dict[str, Any]:
    """Return the AKSNodeClass of the cluster's NodePools."""
    family = rendered_image_family(cluster)
    # The CRD defaults osDiskSizeGB to 128 (karpenter.azure.com_aksnodeclasses.yaml, v1.6.2 to v1.14.2):
    # written out, or the API server's default would show as drift in Argo CD.
    spec: dict[str, Any] = {"imageFamily": family, "osDiskSizeGB": settings.os_disk_size_gb or 128}
    if "gpu" in release.node_class_fields:
        # The GPU Operator installs the driver on managed pools: AKS must then install none.
        spec["gpu"] = {"mode": "None" if layout(cluster).enabled else "Driver"}
    if settings.tags:
        spec["tags"] = dict(settings.tags)
    return k8s(release.node_class.api_version, release.node_class.kind, name, spec=spec)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the node class gpuplan renders for the cluster, if its settings are in the model."""
    karpenter = cluster.spec.components.karpenter
    release = cluster.release("karpenter")
    if karpenter is None or not isinstance(release, KarpenterRelease):
        return []
    ref, source = karpenter.node_class, cluster.located.source.path
    if ref.aws is not None and release.line == "aws":
        return [
            manifest(
                cluster.name, FOLDER, ec2_node_class(cluster, ref.name, ref.aws, release), source
            )
        ]
    if ref.azure is not None and release.line == "azure":
        return [
            manifest(
                cluster.name, FOLDER, aks_node_class(cluster, ref.name, ref.azure, release), source
            )
        ]
    return []
