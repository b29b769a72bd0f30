"""Dynamic Resource Allocation: the DeviceClasses of a DRA pool and the quota resource of each.

A DRA pool's GPUs (or MIG instances) are devices of the NVIDIA DRA driver. gpuplan gives every kind of
device a pool offers one DeviceClass, selected by CEL on the driver's attributes (type, productName,
profile: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go),
with the pool's sharing as the class's opaque config. A tenant's quota on the pool counts devices of
that class: the ResourceQuota key `<class>.deviceclass.resource.k8s.io/devices` (Kubernetes
docs concepts/policy/resource-quotas, "Resource quota for extended resources / DRA"; since 1.31), which
is also the name Kueue's deviceClassMappings give the class, so one number is both quotas. The key is
the same whichever resource.k8s.io version the claims are written in: the quota evaluator counts the
API server's internal ResourceClaim (kubernetes/kubernetes pkg/quota/v1/evaluator/core/resource_claims.go,
read in the stored snapshot of its main branch, no tag checked: the repository is too large to fetch here;
KEP-4381 "<device-class-name>.deviceclass.resource.k8s.io/devices").

Sharing under DRA is among the consumers of one ResourceClaim (../shared/facts/upstream-components.md,
"NVIDIA DRA driver"): a claim gets a whole device, so quotas count devices, never shares. The config
sits on the class, not on the claim, because Kueue does not support per-request config (kubernetes-sigs/kueue
v0.19.2 site/content/en/docs/concepts/dynamic_resource_allocation.md, "Limitations") and the driver
honours a class's config (../shared/facts/upstream-components.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplan.components.dra_driver import CONFIG_API_VERSION, DRIVER, RESOURCE_API
from gpuplan.plan.drivers import COS_INSTALL_DIR, pool_drivers

QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
DEFAULT_DOMAIN = "gpuplan.io"
HOST_ROOT = "/"
OPERATOR_ROOT = "/run/nvidia/driver"  # the GPU Operator's driver container mounts the driver here
STRATEGIES = {"time-slicing": "TimeSlicing", "mps": "MPS"}  # pool sharing -> the driver's strategy


@dataclass(frozen=True)
class DraClass:
    """One DeviceClass gpuplan emits: what it selects and the sharing it configures."""

    name: str
    model: str  # catalog name of the GPU model
    product_labels: tuple[str, ...]  # GFD product labels of the model (NVML names, spaces as '-')
    profile: str | None = None  # MIG profile, None for whole GPUs
    strategy: str | None = None  # TimeSlicing | MPS | None (exclusive)
    interval: str | None = None  # TimeSlicing's interval, if stated

    @property
    def resource(self) -> str:
        """Return the quota resource of the class (also Kueue's mapping name)."""
        return quota_resource(self.name)


def quota_resource(device_class: str) -> str:
    """Return the ResourceQuota key counting the devices of one DeviceClass."""
    return device_class + QUOTA_SUFFIX


def is_dra_resource(resource: str) -> bool:
    """Tell whether a resource name counts DRA devices (it is a ResourceQuota key without requests.)."""
    return resource.endswith(QUOTA_SUFFIX)


def strategy_of(pool: Any) -> str | None:
    """Return the DRA sharing strategy of a pool's GPUs (TimeSlicing, MPS), None when exclusive."""
    sharing = pool.sharing
    if sharing.mps is not None:
        return "MPS"
    return "TimeSlicing" if sharing.time_slicing is not None else None


def base_name(pool: Any, model: str) -> str:
    """Return the DeviceClass name of a pool's whole GPUs: the one stated, else <prefix.><model>.gpuplan.io."""
    if pool.dra.device_class:
        return str(pool.dra.device_class)
    prefix = {"TimeSlicing": "time-slicing.", "MPS": "mps.", None: ""}[strategy_of(pool)]
    name = f"{model.lower()}.{DEFAULT_DOMAIN}"
    return prefix + name if pool.sharing.mig is None else name


def class_of(pool: Any, model: Any, profile: str | None) -> DraClass:
    """Return the DeviceClass of a pool's whole GPUs (profile None) or of one MIG profile."""
    base = base_name(pool, model.name)
    name = base
    if profile is not None:
        name = f"{profile}.{base}"
        if not pool.dra.device_class and pool.sharing.time_slicing is not None:
            name = "time-slicing." + name
    interval = pool.sharing.time_slicing.interval if pool.sharing.time_slicing else None
    return DraClass(name, model.name, model.product_labels, profile, strategy_of(pool), interval)


def selector(cls: DraClass) -> str:
    """Return the CEL expression selecting the class's devices among the driver's.

    productName is NVML's device name; GPU Feature Discovery's product label is that name with its
    spaces as '-', which the catalog holds, so the name is compared the same way (strings library
    split/join, in every Kubernetes CEL environment since 1.27).
    """
    attrs = f"device.attributes['{DRIVER}']"
    kind = "mig" if cls.profile else "gpu"
    names = ", ".join(f"'{label}'" for label in cls.product_labels)
    parts = [
        f"device.driver == '{DRIVER}'",
        f"{attrs}.type == '{kind}'",
        f"{attrs}.productName.split(' ').join('-') in [{names}]",
    ]
    if cls.profile:
        parts.append(f"{attrs}.profile == '{cls.profile}'")
    return " && ".join(parts)


def opaque_config(cls: DraClass) -> dict[str, Any] | None:
    """Return the class's opaque driver config: GpuConfig or MigDeviceConfig sharing, None when exclusive.

    api/nvidia.com/resource/v1beta1 at v0.4.1: GpuSharing {strategy, timeSlicingConfig {interval}};
    MigDeviceSharing {strategy, mpsConfig} (no timeSlicingConfig: check/dra.py refuses an interval).
    """
    if cls.strategy is None:
        return None
    sharing: dict[str, Any] = {"strategy": cls.strategy}
    if cls.interval is not None and cls.profile is None:
        sharing["timeSlicingConfig"] = {"interval": cls.interval}
    kind = "MigDeviceConfig" if cls.profile else "GpuConfig"
    parameters = {"apiVersion": CONFIG_API_VERSION, "kind": kind, "sharing": sharing}
    return {"opaque": {"driver": DRIVER, "parameters": parameters}}


def classes(cluster: Any) -> dict[str, DraClass]:
    """Return every DeviceClass of a cluster's DRA pools, by name (the first pool's wins a clash)."""
    out: dict[str, DraClass] = {}
    for pool in cluster.pools.values():
        for resource in pool.resources.values():
            if resource.device_class is not None:
                out.setdefault(resource.device_class.name, resource.device_class)
    return dict(sorted(out.items()))


def resource_api(spec: Any) -> str:
    """Return the resource.k8s.io version a cluster's DRA objects are written in (its spec's components)."""
    driver = spec.components.dra_driver
    return str(driver.resource_api) if driver is not None and driver.resource_api else RESOURCE_API


def dra_pools(cluster: Any) -> list[Any]:
    """Return the cluster's pools whose GPUs DRA allocates, in cluster order."""
    return [p for p in cluster.pools.values() if p.spec.dra is not None]


def driver_roots(cluster: Any) -> dict[str, str]:
    """Return the host driver root of each DRA pool, by pool name."""
    drivers = {d.pool: d for d in pool_drivers(cluster)}
    roots = {}
    for pool in dra_pools(cluster):
        driver = drivers.get(pool.name)
        if driver is None or driver.mode != "managed":
            roots[pool.name] = (
                COS_INSTALL_DIR if driver is not None and driver.os == "cos" else HOST_ROOT
            )
        else:
            roots[pool.name] = OPERATOR_ROOT
    return roots
