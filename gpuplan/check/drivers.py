"""Driver rules: every pool gets a driver its GPU runs on and its GPU Operator release supports."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.gpu_operator import GpuOperatorRelease
from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile, format_path
from gpuplan.model.drivers import branch
from gpuplan.plan.drivers import default_mode, node_class_os, pool_drivers
from gpuplan.plan.fleet import ClusterPlan, Fleet

_OPERATOR = ("components", "gpuOperator")


def _warning(source: SourceFile, loc: Key, message: str) -> Diagnostic:
    line, col = source.position(loc)
    return Diagnostic(source.path, line, col, Severity.WARNING, format_path(loc), message)


def _branches(branches: tuple[int, ...]) -> str:
    return ", ".join(f"R{b}" for b in branches)


@check
def check_driver_version_required(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a managed pool with no driver version to install."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        for driver in pool_drivers(cluster):
            if driver.mode == "managed" and driver.version is None:
                message = (
                    f"pool {driver.pool!r} ({driver.os} on {cluster.spec.provider}) gets its driver from the GPU Operator: "
                    "set components.gpuOperator.driverVersion, or this pool's driver.version, "
                    "or driver.mode: preinstalled if its image ships one"
                )
                yield cluster.located.source.diagnostic(
                    ("nodePools", driver.index, "name"), message
                )


@check
def check_driver_branch_gpu(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a pool's driver branch is older than its GPU's first supported branch."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        for driver in pool_drivers(cluster):
            pool = cluster.pools.get(driver.pool)
            if driver.version is None or driver.path is None or pool is None:
                continue
            model = pool.model
            need = model.min_driver_branch
            if branch(driver.version) < need:
                message = (
                    f"driver {driver.version} (R{branch(driver.version)}) does not run {model.name} "
                    f"({model.architecture}) in pool {driver.pool!r}: it needs R{need} or later"
                )
                yield cluster.located.source.diagnostic(driver.path, message)


def _release(cluster: ClusterPlan) -> GpuOperatorRelease | None:
    found = cluster.release("gpu-operator")  # None for an unknown version, which resolve.py reports
    return found if isinstance(found, GpuOperatorRelease) else None


@check
def check_driver_branch_operator(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a managed driver's branch is not one the GPU Operator release supports."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        facts = _release(cluster)
        if facts is None:
            continue
        branches, version = facts.driver_branches, facts.version
        reported: set[tuple[str | int, ...]] = set()
        for driver in pool_drivers(cluster):
            if driver.mode != "managed" or driver.version is None or driver.path is None:
                continue
            if branch(driver.version) not in branches and driver.path not in reported:
                reported.add(driver.path)
                message = (
                    f"GPU Operator {version} has no driver container for R{branch(driver.version)} "
                    f"(driver {driver.version}); it supports {_branches(branches)}"
                )
                yield cluster.located.source.diagnostic(driver.path, message)


@check
def check_driver_settings(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on settings that need an operator-managed driver, or the DCGM exporter, without it."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        operator = cluster.spec.components.gpu_operator
        assert operator is not None
        source = cluster.located.source
        managed = any(d.mode == "managed" for d in pool_drivers(cluster))
        if operator.gpu_direct_storage and not managed:
            message = "GPUDirect Storage runs nvidia-fs in the operator's driver pod: it needs a pool with driver.mode managed"
            yield source.diagnostic((*_OPERATOR, "gpuDirectStorage"), message)
        if operator.driver.rdma.enabled and not managed:
            message = "GPUDirect RDMA (driver.rdma) loads nvidia-peermem from the operator's driver: no pool has a managed driver"
            yield source.diagnostic((*_OPERATOR, "driver", "rdma", "enabled"), message)
        if operator.service_monitor is not None and not operator.dcgm_exporter:
            message = "serviceMonitor scrapes the DCGM exporter: set dcgmExporter: true or drop serviceMonitor"
            yield source.diagnostic((*_OPERATOR, "serviceMonitor"), message)


@check
def check_toolkit_mixed(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when some pools' images ship the container toolkit and others need the operator's."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        operator = cluster.spec.components.gpu_operator
        if operator is None or operator.toolkit is not None:
            continue
        drivers = pool_drivers(cluster)
        shipped = [d.pool for d in drivers if not d.needs_toolkit]
        if shipped and len(shipped) < len(drivers):
            message = (
                f"the operator's container toolkit runs on every GPU node, also on pools whose image ships one "
                f"({', '.join(shipped)}); set components.gpuOperator.toolkit to decide"
            )
            yield _warning(cluster.located.source, (*_OPERATOR, "version"), message)


def _image(cluster: ClusterPlan, pool: str) -> str:
    """Return where a pool's node OS comes from when the pool does not say it: its node class."""
    name = cluster.node_class(pool)
    image = cluster.node_images.get(name) if name is not None else None
    return f"node class {name} ({image.source.path})" if image else f"node class {name}"


@check
def check_pool_os_node_class(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a pool's os is not what the image of its Karpenter node class runs."""
    for cluster in sorted(fleet.clusters.values(), key=lambda c: c.name):
        for index, pool in enumerate(cluster.spec.node_pools):
            runs = node_class_os(cluster, pool.name)
            if pool.os is None or runs is None or runs == pool.os:
                continue
            message = (
                f"pool {pool.name!r} says os: {pool.os}, but its {_image(cluster, pool.name)} launches {runs} "
                "nodes: the driver, toolkit and device-plugin settings would be those of the wrong image; "
                f"make them agree (os: {runs}, or change the node class)"
            )
            yield cluster.located.source.diagnostic(("nodePools", index, "os"), message)


@check
def check_bottlerocket_device_plugin(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on Bottlerocket pools (their os, or their node class's image): the image runs its own NVIDIA device plugin."""
    # bottlerocket-os/bottlerocket variants/aws-k8s-1.33-nvidia/Cargo.toml includes the
    # nvidia-k8s-device-plugin package: the host registers nvidia.com/gpu itself.
    for cluster in clusters_with(fleet, "gpu-operator"):
        for driver in pool_drivers(cluster):
            if driver.os != "bottlerocket":
                continue
            pool = cluster.spec.node_pools[driver.index]
            whose = "" if pool.os else f" (the image of its {_image(cluster, pool.name)})"
            message = (
                f"pool {driver.pool!r}: Bottlerocket's NVIDIA variant{whose} runs its own device plugin, so the GPU "
                "Operator's device plugin (and the sharing and MIG settings gpuplan gives it) competes with it "
                "for nvidia.com/gpu; run these nodes on al2023 (the node class's alias al2023@..., os: al2023)"
            )
            loc = ("nodePools", driver.index, "os" if pool.os else "karpenter")
            yield _warning(cluster.located.source, loc, message)


@check
def check_managed_on_driver_image(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a pool is forced to managed on a node image that already ships the driver."""
    # "If ... nodes in the cluster have a pre-installed GPU driver, the init container in the driver
    # pod detects that the driver is preinstalled and labels the node so that the driver pod is
    # terminated" (NVIDIA/cloud-native-docs gpu-operator/getting-started.rst): the version is not installed.
    for cluster in clusters_with(fleet, "gpu-operator"):
        for driver in pool_drivers(cluster):
            if (
                driver.mode != "managed"
                or default_mode(cluster.spec.provider, driver.os) != "preinstalled"
            ):
                continue
            message = (
                f"pool {driver.pool!r} runs {driver.os} on {cluster.spec.provider}, whose image ships the driver: the "
                "operator's driver pod finds it and stands down, so this driver version is never installed; "
                "use an image without a driver (os: ubuntu) or driver.mode: preinstalled"
            )
            yield _warning(cluster.located.source, ("nodePools", driver.index, "name"), message)
