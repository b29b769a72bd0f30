"""What gpuplan needs to render a cluster's Karpenter node class (EC2NodeClass or AKSNodeClass).

Without these settings the node class is the user's, in extra/<cluster>/ (own manifests).
Fields follow aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go and
Azure/karpenter-provider-azure pkg/apis/v1beta1/aksnodeclass.go at the pinned tags.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from gpuplan.model.common import Model

# AWS tag keys and values (1-128 and 0-256 characters, no control characters); EC2 ids by their prefix.
TagKey = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]
TagValue = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
CapacityReservationId = Annotated[str, Field(pattern=r"^cr-[0-9a-z]+$")]
IamName = Annotated[
    str, Field(min_length=1, max_length=128, pattern=re.compile(r"^[\w+=,.@-]+$").pattern)
]


class Ec2NodeClassSettings(Model):
    """The EC2NodeClass gpuplan renders for the cluster's NodePools."""

    role: IamName | None = None
    """IAM role of the nodes (Karpenter makes the instance profile); set this or instanceProfile."""
    instance_profile: IamName | None = None
    """An existing IAM instance profile of the nodes; set this or role."""
    ami: Literal["al2023", "bottlerocket"] | None = None
    """AMI family alias; Karpenter picks its NVIDIA variant for GPU instance types. Default: the pools' os."""
    ami_version: Annotated[
        str,
        Field(
            pattern=r"^(latest|v?[0-9][0-9A-Za-z.\-]*)$",
            examples=["v20250505", "1.39.0", "latest"],
        ),
    ] = "latest"
    """AMI release of the alias, or latest: v20250505 (al2023@v20250505), 1.39.0 (bottlerocket@1.39.0); pin it to roll nodes on purpose."""
    discovery_tags: dict[TagKey, TagValue] | None = Field(default=None, min_length=1, max_length=20)
    """Tags selecting the subnets and security groups; default {karpenter.sh/discovery: <karpenter.clusterName, else the cluster's name>}."""
    capacity_reservation_ids: list[CapacityReservationId] = []
    """On-demand capacity reservations or capacity blocks the nodes may launch into (pools use capacity type reserved)."""
    placement_group: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    """Name of a cluster placement group to launch nodes into (low latency between GPU nodes)."""
    efa_network_cards: int | None = Field(default=None, ge=1, le=64)
    """Network cards of the pools' EFA instance types (32 on p5.48xlarge): one EFA interface each."""
    tags: dict[TagKey, TagValue] = {}
    """Tags on every instance and volume Karpenter launches."""

    @model_validator(mode="after")
    def _one_identity(self) -> Ec2NodeClassSettings:
        if (self.role is None) == (self.instance_profile is None):
            raise ValueError("set exactly one of role or instanceProfile")
        return self


class AksNodeClassSettings(Model):
    """The AKSNodeClass gpuplan renders for the cluster's NodePools."""

    image_family: Literal["Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux"] | None = None
    """Node image family; default: the pools' os (ubuntu: Ubuntu2204, azurelinux: AzureLinux)."""
    os_disk_size_gb: int | None = Field(default=None, ge=30, le=2048, alias="osDiskSizeGB")
    """OS disk size in GB (container images of GPU workloads are large); default 128, the CRD's."""
    tags: dict[TagKey, TagValue] = {}
    """Azure tags on the node VMs."""
