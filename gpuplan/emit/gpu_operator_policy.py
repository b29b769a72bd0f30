"""The GPU Operator's ClusterPolicy and per-pool NVIDIADrivers, as plain dicts, for one release.

Shapes follow the chart's ClusterPolicy (deployments/gpu-operator/templates/clusterpolicy.yaml and
the snapshot tests/__snapshot__/clusterpolicy_test.yaml.snap) with the values.yaml defaults of the
release in use (gpuplan.components.gpu_operator); a field a release's CRD lacks is never written.
Sections for components the chart leaves off and that only run with sandbox workloads or their own
opt-in (ccManager, gdrcopy, kataManager, kataSandboxDevicePlugin, sandboxDevicePlugin,
sandboxWorkloads, vfioManager, vgpuDeviceManager, vgpuManager) are omitted; so are the chart's
empty-string references (driver.certConfig, kernelModuleConfig, repoConfig, licensingConfig,
virtualTopology, migManager.gpuClientsConfig), which configure nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuplan.components.base import UnknownVersion
from gpuplan.components.gpu_operator import (
    CDI_NRI,
    DEFAULT_RUNTIME,
    DRIVER_CR_DEFAULT,
    DRIVER_CR_UPGRADE_POLICY,
    KUBELET_ROOT_DIR,
    SCRAPE_TIMEOUT,
    GpuOperatorRelease,
    Image,
    release,
)
from gpuplan.emit.gpu_operator_objects import (
    DEVICE_PLUGIN_DEFAULT_CONFIG,
    MIG_MANAGER_DEFAULTS,
    MIG_STRATEGIES,
    check_bool,
    check_choice,
    check_dns,
    check_label_value,
)
from gpuplan.model.common import DNS1123_LABEL, DNS1123_SUBDOMAIN
from gpuplan.model.drivers import DRIVER_VERSION
from gpuplan.plan.drivers import COS_INSTALL_DIR

DRIVER_INSTALL_DIR = "/run/nvidia/driver"  # values.yaml hostPaths.driverInstallDir
TOOLKIT_INSTALL_DIR = "/usr/local/nvidia"  # values.yaml toolkit.installDir (CRD default)
NVCR = "nvcr.io"


@dataclass(frozen=True)
class Upgrade:
    """Driver upgrade policy (values.yaml driver.upgradePolicy defaults)."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = 1
    max_unavailable: int | str = "25%"  # a count, or a percentage string (intstr)
    drain: bool = False
    drain_force: bool = False
    drain_timeout_seconds: int = 300
    drain_delete_empty_dir: bool = False


@dataclass(frozen=True)
class Settings:
    """The ClusterPolicy settings beyond MIG and the device plugin (defaults: the chart's)."""

    driver_enabled: bool = True
    use_driver_crd: bool = False
    toolkit: bool = True
    cos: bool = False  # GKE COS: the toolkit installs under gpuplan.plan.drivers.COS_INSTALL_DIR
    rdma: bool = False
    use_host_mofed: bool = False
    upgrade: Upgrade = Upgrade()
    gds: bool = False
    service_monitor: Mapping[str, Any] | None = None  # {"interval": ..., "additionalLabels": {...}}
    node_status_exporter: bool = False
    validator_workload: str | None = None  # "run" or "skip"; None: the release's chart default
    mirror: str | None = None  # replaces nvcr.io in every operand repository
    repositories: Mapping[str, str] = field(default_factory=dict)  # operand -> repository
    pull_secrets: tuple[str, ...] = ()
    # DRA pools: the driver manager also evicts the pods of nodes with this label (the DRA kubelet plugin)
    # on a driver upgrade (NODE_LABEL_FOR_GPU_POD_EVICTION: NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst).
    eviction_label: str | None = None


def operator_release(version: str) -> GpuOperatorRelease:
    """Return the release's facts, or raise ValueError naming the supported versions."""
    try:
        return release(version)
    except UnknownVersion as exc:
        raise ValueError(str(exc)) from None


def cluster_policy(
    *,
    operator_version: str,
    driver_version: str | None,
    mig_strategy: str,
    dcgm_exporter: bool,
    mig_config_map: str | None,
    mig_default: str,
    device_plugin_config_map: str | None,
    device_plugin_default: str | None,
    namespace: str,
    tolerations: Sequence[Mapping[str, str]] = (),
    settings: Settings = Settings(),
) -> dict:
    """Return the ClusterPolicy ``cluster-policy`` of one release, wired to the MIG and device-plugin ConfigMaps."""
    # ``namespace`` is the operator namespace, where both ConfigMaps must live. It is checked, not
    # emitted: ClusterPolicy is cluster-scoped (the chart's metadata.namespace is ignored).
    facts = operator_release(operator_version)
    check_choice(mig_strategy, MIG_STRATEGIES, "mig_strategy")
    check_choice(mig_default, MIG_MANAGER_DEFAULTS, "mig_default")
    check_dns(namespace, DNS1123_LABEL, 63, "namespace")
    check_bool(dcgm_exporter, "dcgm_exporter")
    if driver_version is not None and not DRIVER_VERSION.fullmatch(driver_version):
        raise ValueError(f"invalid driver version {driver_version!r}")
    if settings.driver_enabled and not settings.use_driver_crd and driver_version is None:
        raise ValueError("a managed driver needs a driver version")
    image = _Images(facts, settings)
    spec: dict[str, Any] = {
        "cdi": _cdi(facts),
        "daemonsets": _daemonsets(tolerations),
        "dcgm": {"enabled": False, **image("dcgm")},
        "dcgmExporter": _dcgm_exporter(
            facts, image("dcgmExporter"), dcgm_exporter, settings.service_monitor
        ),
        "devicePlugin": _device_plugin(
            image("devicePlugin"), device_plugin_config_map, device_plugin_default
        ),
        "driver": _driver(facts, image, driver_version or facts.default_driver, settings),
        "gfd": {"enabled": True, **image("gfd")},
        "hostPaths": _host_paths(facts, settings.cos),
        "mig": {"strategy": mig_strategy},
        "migManager": _mig_manager(image("migManager"), mig_config_map, mig_default),
        "nodeStatusExporter": {
            "enabled": settings.node_status_exporter,
            **image("nodeStatusExporter"),
        },
        "operator": _operator(facts),
        "psa": {"enabled": False},
        "toolkit": {
            "enabled": settings.toolkit,
            **image("toolkit"),
            "installDir": COS_INSTALL_DIR if settings.cos else TOOLKIT_INSTALL_DIR,
        },
        "validator": _validator(facts, image("validator"), settings.validator_workload),
    }
    if settings.gds:
        spec["gds"] = {"enabled": True, **image("gds")}
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def nvidia_driver(
    *,
    operator_version: str,
    name: str,
    driver_version: str,
    node_selector: Mapping[str, str],
    settings: Settings,
) -> dict:
    """Return the NVIDIADriver that installs ``driver_version`` on the nodes ``node_selector`` picks."""
    facts = operator_release(operator_version)
    check_dns(name, DNS1123_SUBDOMAIN, 253, "NVIDIADriver name")
    if not DRIVER_VERSION.fullmatch(driver_version):
        raise ValueError(f"invalid driver version {driver_version!r}")
    if not node_selector:
        # A non-default NVIDIADriver without a nodeSelector selects every GPU node
        # (NVIDIA/cloud-native-docs gpu-operator/gpu-driver-configuration.rst, nodeSelector).
        raise ValueError("an NVIDIADriver for one pool needs a node selector")
    image = _Images(facts, settings)
    driver = image("driver")
    spec: dict[str, Any] = {
        "driverType": "gpu",  # CRD default; immutable
        "image": driver["image"],
        "imagePullPolicy": "IfNotPresent",
        "kernelModuleType": "open" if settings.gds else "auto",
        "manager": _manager(image, settings),
        "nodeSelector": dict(sorted(node_selector.items())),
        "rdma": {"enabled": settings.rdma, "useHostMofed": settings.use_host_mofed},
        "repository": driver["repository"],
        "usePrecompiled": False,
        "version": driver_version,
    }
    if "imagePullSecrets" in driver:
        spec["imagePullSecrets"] = driver["imagePullSecrets"]
    if settings.gds:
        spec["gds"] = {"enabled": True, **image("gds")}
    if facts.has(DRIVER_CR_DEFAULT):
        spec["default"] = False  # required from v26.7.0; only the fallback CR is default
    if facts.has(DRIVER_CR_UPGRADE_POLICY):
        spec["upgradePolicy"] = _upgrade_policy(settings.upgrade)
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": name},
        "spec": spec,
    }


class _Images:
    """The repository/image/version/pull fields of each operand, after the registry settings."""

    def __init__(self, facts: GpuOperatorRelease, settings: Settings) -> None:
        self.facts, self.settings = facts, settings

    def __call__(self, operand: str) -> dict[str, Any]:
        """Return the image fields of one operand."""
        image: Image = self.facts.operands[operand]
        out: dict[str, Any] = {
            "image": image.image,
            "imagePullPolicy": "IfNotPresent",
            "repository": self._repository(operand, image),
            "version": image.version,
        }
        if self.settings.pull_secrets:
            out["imagePullSecrets"] = list(self.settings.pull_secrets)
        return out

    def _repository(self, operand: str, image: Image) -> str:
        if operand in self.settings.repositories:
            return self.settings.repositories[operand]
        if self.settings.mirror and image.host == NVCR:
            return self.settings.mirror.rstrip("/") + image.repository[len(NVCR) :]
        return image.repository


def _cdi(facts: GpuOperatorRelease) -> dict:
    """Return the CDI section: the release's chart default, NRI off where the field exists."""
    cdi: dict[str, Any] = {"default": False, "enabled": facts.cdi_enabled}
    if facts.has(CDI_NRI):
        cdi["nriPluginEnabled"] = False
    return cdi


def _validator(facts: GpuOperatorRelease, image: dict, workload: str | None) -> dict:
    """Return the validator section: WITH_WORKLOAD as the model says, else as the release's chart sets it.

    The plugin validator's --with-workload defaults to true, read from WITH_WORKLOAD
    (NVIDIA/gpu-operator cmd/nvidia-validator/main.go at every supported tag); the chart sets it
    false on v25.3.1 and v25.3.2 (deployments/gpu-operator/values.yaml validator.plugin.env).
    """
    run = facts.validator_workload if workload is None else workload == "run"
    if workload is None and run:
        return image
    value = "true" if run else "false"
    return {**image, "plugin": {"env": [{"name": "WITH_WORKLOAD", "value": value}]}}


def _operator(facts: GpuOperatorRelease) -> dict:
    """Return the operator section: runtimeClass (CRD default, the chart renders it), and up to
    v25.10.1 the CRD's required defaultRuntime at its default, which the API server would fill."""
    section = {"runtimeClass": "nvidia"}
    if facts.has(DEFAULT_RUNTIME):
        section["defaultRuntime"] = "docker"
    return section


def _host_paths(facts: GpuOperatorRelease, cos: bool) -> dict:
    """Return hostPaths; GKE COS keeps the driver under COS_INSTALL_DIR (google-gke.rst)."""
    paths = {
        "driverInstallDir": COS_INSTALL_DIR if cos else DRIVER_INSTALL_DIR,
        "rootFS": "/",
    }
    if facts.has(KUBELET_ROOT_DIR):
        paths["kubeletRootDir"] = "/var/lib/kubelet"  # CRD default
    return paths


def _daemonsets(extra_tolerations: Sequence[Mapping[str, str]] = ()) -> dict:
    """Return the chart's default daemonset settings, tolerating every GPU pool's taints.

    The operands (driver, device plugin, MIG manager, ...) must run on every GPU node; a pool
    tainted with anything but nvidia.com/gpu would otherwise never get its GPUs advertised.
    """
    tolerations = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
    for toleration in extra_tolerations:
        if dict(toleration) not in tolerations:
            tolerations.append(dict(toleration))
    return {
        "priorityClassName": "system-node-critical",
        "rollingUpdate": {"maxUnavailable": "1"},
        "tolerations": tolerations,
        "updateStrategy": "RollingUpdate",  # CRD default
    }


def _dcgm_exporter(
    facts: GpuOperatorRelease, image: dict, enabled: bool, monitor: Mapping[str, Any] | None
) -> dict:
    """Return the DCGM exporter section with its ServiceMonitor (values.yaml defaults when off)."""
    service_monitor: dict[str, Any] = {
        "additionalLabels": dict(sorted((monitor or {}).get("additionalLabels", {}).items())),
        "enabled": monitor is not None,
        "honorLabels": False,
        "interval": (monitor or {}).get("interval", "15s"),
        "relabelings": [],
    }
    if facts.has(SCRAPE_TIMEOUT):
        service_monitor["scrapeTimeout"] = "10s"
    return {
        "enabled": enabled,
        **image,
        "service": {"internalTrafficPolicy": "Cluster"},
        "serviceMonitor": service_monitor,
    }


def _device_plugin(image: dict, config_map_name: str | None, default: str | None) -> dict:
    """Return the device plugin section, with its config when a ConfigMap is given."""
    section: dict[str, Any] = {"enabled": True, **image}
    if config_map_name is None:
        if default is not None:
            raise ValueError("device_plugin_default needs device_plugin_config_map")
        return section
    check_dns(config_map_name, DNS1123_SUBDOMAIN, 253, "device-plugin ConfigMap name")
    default = DEVICE_PLUGIN_DEFAULT_CONFIG if default is None else default
    check_label_value(default, "device-plugin default config")
    section["config"] = {"default": default, "name": config_map_name}
    return section


def _upgrade_policy(upgrade: Upgrade) -> dict:
    """Return driver.upgradePolicy; values the model leaves alone are the CRD defaults (no drift)."""
    return {
        "autoUpgrade": upgrade.auto_upgrade,
        "drain": {
            "deleteEmptyDir": upgrade.drain_delete_empty_dir,
            "enable": upgrade.drain,
            "force": upgrade.drain_force,
            "timeoutSeconds": upgrade.drain_timeout_seconds,
        },
        "maxParallelUpgrades": upgrade.max_parallel_upgrades,
        "maxUnavailable": upgrade.max_unavailable,
        "podDeletion": {"deleteEmptyDir": False, "force": False, "timeoutSeconds": 300},
        "waitForCompletion": {"timeoutSeconds": 0},
    }


def _manager(image: _Images, settings: Settings) -> dict[str, Any]:
    """Return the driver manager's image, with the DRA kubelet plugin's label to evict by where there is one."""
    manager = dict(image("driverManager"))
    if settings.eviction_label is not None:
        env = {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": settings.eviction_label}
        manager["env"] = [*manager.get("env", []), env]
    return manager


def _driver(facts: GpuOperatorRelease, image: _Images, version: str, settings: Settings) -> dict:
    """Return the driver section with the chart's defaults and the cluster's settings."""
    driver = image("driver")
    return {
        "enabled": settings.driver_enabled,
        **driver,
        # GPUDirect Storage needs the open kernel modules (platform-support.rst, GDS note).
        "kernelModuleType": "open" if settings.gds else "auto",
        "manager": _manager(image, settings),
        "rdma": {"enabled": settings.rdma, "useHostMofed": settings.use_host_mofed},
        "startupProbe": {
            "failureThreshold": 120,
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "timeoutSeconds": 60,
        },
        "upgradePolicy": _upgrade_policy(settings.upgrade),
        "useNvidiaDriverCRD": settings.use_driver_crd,
        "usePrecompiled": False,
        "version": version,
    }


def _mig_manager(image: dict, config_map_name: str | None, default: str) -> dict:
    """Return the MIG manager section, with the custom mig-parted ConfigMap when given."""
    config = {"default": default}
    if config_map_name is not None:
        check_dns(config_map_name, DNS1123_SUBDOMAIN, 253, "mig-parted ConfigMap name")
        config["name"] = config_map_name
    return {"config": config, "enabled": True, **image}
