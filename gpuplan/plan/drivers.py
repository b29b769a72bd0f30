"""Who installs each pool's NVIDIA driver and container toolkit, and at which version.

Read by the driver checks and the GPU Operator emitter alike (check/ never imports emit/).

Preinstalled by default where the node image ships the driver:
- aws al2023 and bottlerocket: the EKS NVIDIA AMI variants Karpenter picks for GPU instance types
  ship the driver and the NVIDIA container toolkit (awslabs/amazon-eks-ami
  templates/al2023/provisioners/install-nvidia-driver.sh installs nvidia-container-toolkit;
  bottlerocket-os/bottlerocket variants/aws-k8s-1.33-nvidia/Cargo.toml includes
  nvidia-container-toolkit-k8s and a kmod-...-nvidia driver);
- azure: "AKS images ... always include a preinstalled NVIDIA GPU driver and a preinstalled NVIDIA
  Container Toolkit" (NVIDIA/cloud-native-docs gpu-operator/microsoft-aks.rst);
- dgx-os: "Pre-Installed NVIDIA GPU Drivers and NVIDIA Container Toolkit ... applies to NVIDIA DGX
  Systems" (gpu-operator/getting-started.rst, driver.enabled=false and toolkit.enabled=false);
- gcp cos: GKE installs the driver; the operator's toolkit runs with installDir COS_INSTALL_DIR
  (gpu-operator/google-gke.rst).
Everything else (generic Ubuntu, RHEL, Rocky hosts) is managed: the operator installs both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplan.inputs.sources import IMAGE_OS
from gpuplan.model.cluster import NodePool
from gpuplan.model.drivers import DEFAULT_OS

# Node images that ship the driver, by provider ("*": any OS of that provider).
_PREINSTALLED = {
    ("aws", "al2023"),
    ("aws", "bottlerocket"),
    ("azure", "*"),
    ("gcp", "cos"),
    ("*", "dgx-os"),
}
# Node images that also ship the container toolkit (and configure containerd for it).
_TOOLKIT_SHIPPED = {("aws", "al2023"), ("aws", "bottlerocket"), ("azure", "*"), ("*", "dgx-os")}
# Every `cluster` below is a ClusterPlan (gpuplan.plan.fleet, which imports this module through pools
# and dra: typed Any, as in dra.py, so that no import cycle forms).
# Where GKE COS nodes keep the driver and the toolkit: a path on the node, given by NVIDIA/cloud-native-docs
# gpu-operator/google-gke.rst (toolkit.installDir), not a path of any machine of ours.
COS_INSTALL_DIR = "/home/kubernetes/bin/nvidia"


def _matches(table: set[tuple[str, str]], provider: str, os: str) -> bool:
    return bool({(provider, os), (provider, "*"), ("*", os)} & table)


def _karpenter_oses(cluster: Any) -> set[str]:
    provider = cluster.spec.provider
    return {p.spec.os or DEFAULT_OS[provider] for p in cluster.pools.values() if p.spec.karpenter}


def rendered_ami(cluster: Any) -> str:
    """Return the AMI family of the EC2NodeClass gpuplan renders: as set, else the Karpenter pools' os."""
    karpenter = cluster.spec.components.karpenter
    settings = karpenter.node_class.aws if karpenter is not None else None
    if settings is not None and settings.ami:
        return settings.ami
    return "bottlerocket" if _karpenter_oses(cluster) == {"bottlerocket"} else "al2023"


def rendered_image_family(cluster: Any) -> str:
    """Return the imageFamily of the AKSNodeClass gpuplan renders: as set, else the Karpenter pools' os."""
    karpenter = cluster.spec.components.karpenter
    settings = karpenter.node_class.azure if karpenter is not None else None
    if settings is not None and settings.image_family:
        return settings.image_family
    return "AzureLinux" if _karpenter_oses(cluster) == {"azurelinux"} else "Ubuntu2204"


def node_class_os(cluster: Any, pool: str) -> str | None:
    """Return the OS the image of a pool's node class runs (None: no node class gpuplan can read)."""
    name = cluster.node_class(pool)
    karpenter = cluster.spec.components.karpenter
    if name is None or karpenter is None:
        return None
    ref, provider = karpenter.node_class, cluster.spec.provider
    if name == ref.name and provider == "aws" and ref.aws is not None:
        return rendered_ami(cluster)
    if name == ref.name and provider == "azure" and ref.azure is not None:
        return IMAGE_OS[rendered_image_family(cluster)]
    image = cluster.node_images.get(name)
    return image.os if image is not None else None


def pool_os(cluster: Any, pool: NodePool) -> str:
    """Return a pool's node OS: its own, else its node class's image's, else the provider's default."""
    return pool.os or node_class_os(cluster, pool.name) or DEFAULT_OS[cluster.spec.provider]


def default_mode(provider: str, os: str) -> str:
    """Return preinstalled where the provider's image for ``os`` ships the driver, else managed."""
    return "preinstalled" if _matches(_PREINSTALLED, provider, os) else "managed"


def ships_toolkit(provider: str, os: str) -> bool:
    """Tell whether the node image already ships and configures the NVIDIA container toolkit."""
    return _matches(_TOOLKIT_SHIPPED, provider, os)


@dataclass(frozen=True)
class PoolDriver:
    """The driver of one pool as resolved: mode, version and where the version was written."""

    pool: str
    index: int
    os: str
    mode: str  # managed | preinstalled
    version: (
        str | None
    )  # managed: what the operator installs; preinstalled: what the image ships, if stated
    path: tuple[str | int, ...] | None  # field path of the version, for diagnostics
    needs_toolkit: bool  # the operator must run the toolkit on these nodes


def pool_drivers(cluster: Any) -> list[PoolDriver]:
    """Return every pool's resolved driver, in pool order (empty without the GPU Operator)."""
    operator = cluster.spec.components.gpu_operator
    if operator is None:
        return []
    out = []
    provider = cluster.spec.provider
    for index, pool in enumerate(cluster.spec.node_pools):
        os = pool_os(cluster, pool)
        own = pool.driver
        mode = (own and own.mode) or operator.driver.mode or default_mode(provider, os)
        version: str | None
        path: tuple[str | int, ...] | None
        if own is not None and own.version is not None:
            version, path = own.version, ("nodePools", index, "driver", "version")
        elif operator.driver_version is not None:
            version, path = operator.driver_version, ("components", "gpuOperator", "driverVersion")
        else:
            version, path = None, None
        toolkit = mode == "managed" or not ships_toolkit(provider, os)
        out.append(PoolDriver(pool.name, index, os, mode, version, path, toolkit))
    return out


# The annotation on a pool's Kueue ResourceFlavor that states its preinstalled GPU stack, so that two
# rendered folders tell a changed stack (gpuplan diff OLD_DIR NEW_DIR) as the compiled fleets do (--base).
STACK_ANNOTATION = "gpuplan.io/gpu-stack"


def stack_text(driver: PoolDriver) -> str | None:
    """Return what a preinstalled pool's image ships (driver, OS, toolkit), or None for a managed one.

    The pool's own version only: the cluster's driverVersion is what the operator installs elsewhere.
    """
    if driver.mode != "preinstalled":
        return None
    own = driver.path is not None and driver.path[0] == "nodePools"
    version = driver.version if own else "(version not stated)"
    toolkit = "the operator's toolkit" if driver.needs_toolkit else "its own toolkit"
    return f"driver {version} preinstalled on {driver.os}, {toolkit}"


@dataclass(frozen=True)
class DriverLayout:
    """How the ClusterPolicy and NVIDIADrivers install the drivers of one cluster."""

    enabled: bool  # ClusterPolicy driver.enabled
    version: str | None  # ClusterPolicy driver.version (None: the release's default)
    per_pool: tuple[PoolDriver, ...]  # pools that get their own NVIDIADriver (useNvidiaDriverCRD)
    toolkit: bool  # ClusterPolicy toolkit.enabled
    cos: bool  # GKE COS install dirs


def layout(cluster: Any) -> DriverLayout:
    """Return one ClusterPolicy driver for uniform pools, else an NVIDIADriver per managed pool."""
    operator = cluster.spec.components.gpu_operator
    drivers = pool_drivers(cluster)
    managed = [d for d in drivers if d.mode == "managed"]
    toolkit = any(d.needs_toolkit for d in drivers)
    if operator is not None and operator.toolkit is not None:
        toolkit = operator.toolkit
    cos = any(d.os == "cos" for d in drivers)
    versions = {d.version for d in managed}
    # When the ClusterPolicy installs nothing itself, its driver.version is unused: show the cluster's.
    stated = operator.driver_version if operator is not None else None
    if not managed:
        return DriverLayout(False, stated, (), toolkit, cos)
    if len(managed) == len(drivers) and len(versions) == 1:
        return DriverLayout(True, managed[0].version, (), toolkit, cos)
    return DriverLayout(True, stated, tuple(managed), toolkit, cos)
