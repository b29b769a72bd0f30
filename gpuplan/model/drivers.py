"""The GPU node stack's input: driver mode and version, node OS, and the GPU Operator settings
(GPUDirect, metrics, private registry, driver upgrades) a platform team sets."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from gpuplan.model.common import LabelKey, LabelValue, Model, Name

# An NVIDIA data-center driver version: <branch>.<minor>[.<patch>], such as 580.82.07 or 610.57.04
# (the tags of nvcr.io/nvidia/driver are "<version>-<os>": NVIDIA/cloud-native-docs
# gpu-operator/life-cycle-policy.rst lists them).
DRIVER_VERSION = re.compile(r"^([1-9][0-9]{2})\.([0-9]{1,3})(\.[0-9]{1,3})?$")

DriverMode = Literal["managed", "preinstalled"]
"""managed: the GPU Operator installs the driver; preinstalled: the node image ships it."""

NodeOs = Literal["ubuntu", "rhel", "rocky", "dgx-os", "al2023", "bottlerocket", "azurelinux", "cos"]
"""Operating system of a pool's nodes (al2023 and bottlerocket: the EKS NVIDIA AMI variants)."""

# The node OS a pool gets when it names none: what nodes of that provider run by default.
# aws: Karpenter's EC2NodeClass alias al2023@latest, which picks the NVIDIA variant for GPU
# instance types (karpenter-provider-aws pkg/providers/amifamily/al2023.go, VariantNvidia;
# ../shared/facts/upstream-components.md); azure: the AKS Ubuntu GPU image; gcp: GKE's
# Container-Optimized OS; onprem: a generic Ubuntu host.
DEFAULT_OS: dict[str, str] = {"aws": "al2023", "azure": "ubuntu", "gcp": "cos", "onprem": "ubuntu"}


def branch(version: str) -> int:
    """Return the driver branch of a version (580.82.07 -> 580)."""
    match = DRIVER_VERSION.fullmatch(version)
    if match is None:
        raise ValueError(f"{version!r} is not a driver version")
    return int(match.group(1))


def _driver_version(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(
            f'{value!r} reads as a number: quote the driver version, such as "580.82.07"'
        )
    if isinstance(value, str) and not DRIVER_VERSION.fullmatch(value):
        raise ValueError(
            f'{value[:40]!r} is not an NVIDIA driver version: <branch>.<minor>.<patch>, such as "580.82.07"'
        )
    return value


DriverVersion = Annotated[
    str,
    BeforeValidator(_driver_version),
    WithJsonSchema({"type": "string", "pattern": DRIVER_VERSION.pattern}),
]


class Drain(Model):
    """Node drain before the driver reloads (ClusterPolicy driver.upgradePolicy.drain)."""

    enable: bool = False
    """Drain the node (kubectl drain) when deleting the GPU pods is not enough; CRD default false."""
    force: bool = False
    """Delete pods that no controller manages."""
    timeout_seconds: int = Field(default=300, ge=0)
    """Give up the drain after this many seconds (0: wait for ever); CRD default 300."""
    delete_empty_dir: bool = False
    """Also evict pods with emptyDir volumes (their data is lost)."""


class UpgradePolicy(Model):
    """How the operator rolls a driver change over the GPU nodes (driver.upgradePolicy)."""

    auto_upgrade: bool = True
    """Let the operator's upgrade controller roll driver changes; false: pods restart on node reboot."""
    max_parallel_upgrades: int = Field(default=1, ge=0, le=10_000)
    """Nodes upgraded at once (0: all at once); CRD default 1."""
    max_unavailable: (
        Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,3}%$")]
    ) = "25%"
    """Most GPU nodes unavailable during the upgrade: a count (2) or a percentage ("25%"); CRD default 25%."""
    drain: Drain = Drain()
    """Drain settings."""


class Rdma(Model):
    """GPUDirect RDMA: the driver loads nvidia-peermem (ClusterPolicy driver.rdma)."""

    enabled: bool = False
    """Load nvidia-peermem so NICs read and write GPU memory directly."""
    use_host_mofed: bool = False
    """The host has MLNX_OFED installed (instead of the Network Operator's driver container)."""

    @model_validator(mode="after")
    def _mofed_needs_rdma(self) -> Rdma:
        if self.use_host_mofed and not self.enabled:
            raise ValueError("useHostMofed only matters with GPUDirect RDMA: set enabled: true")
        return self


class Driver(Model):
    """The cluster's NVIDIA driver: who installs it and how upgrades roll."""

    mode: DriverMode | None = None
    """managed (the operator installs it) or preinstalled (the node image ships it). Default per pool:
    preinstalled on EKS al2023/bottlerocket, AKS, GKE COS and DGX OS nodes; managed elsewhere."""
    rdma: Rdma = Rdma()
    """GPUDirect RDMA (managed drivers only)."""
    upgrade_policy: UpgradePolicy = UpgradePolicy()
    """Driver upgrade policy (managed drivers only)."""


class PoolDriver(Model):
    """A pool's own driver, when it differs from the cluster's (rendered as an NVIDIADriver)."""

    mode: DriverMode | None = None
    """managed or preinstalled; default: the cluster's driver.mode, else what the pool's OS needs."""
    version: DriverVersion | None = None
    """Driver version of this pool: required when managed and the cluster sets no driverVersion;
    when preinstalled, the version the node image ships (checked against the GPU)."""


class ServiceMonitor(Model):
    """A Prometheus Operator ServiceMonitor for the DCGM exporter (dcgmExporter.serviceMonitor)."""

    interval: Annotated[str, Field(pattern=r"^[0-9]+(ms|s|m|h)$")] = "15s"
    """Scrape interval, such as 15s."""
    additional_labels: dict[LabelKey, LabelValue] = {}
    """Labels the Prometheus serviceMonitorSelector matches."""


Operand = Literal[
    "driver",
    "driverManager",
    "toolkit",
    "devicePlugin",
    "gfd",
    "dcgm",
    "dcgmExporter",
    "migManager",
    "gds",
    "validator",
    "nodeStatusExporter",
]


class Registry(Model):
    """A private or air-gapped registry that mirrors nvcr.io."""

    mirror: (
        Annotated[
            str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._/-]+)?$")
        ]
        | None
    ) = None
    """Registry host (and optional path) that replaces nvcr.io in every operand's repository, keeping
    the path: registry.example.com gives registry.example.com/nvidia/k8s for nvcr.io/nvidia/k8s."""
    repositories: dict[Operand, Annotated[str, Field(min_length=1, max_length=255)]] = {}
    """Repository per operand, overriding the mirror (such as {driver: registry.example.com/drivers})."""
    image_pull_secrets: list[Name] = []
    """Secrets (in the operator namespace) every operand pulls its image with."""
