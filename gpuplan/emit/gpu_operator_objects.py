"""NVIDIA GPU Operator objects as plain dicts: mig-parted config, device-plugin config,
their ConfigMaps, and the ClusterPolicy that wires them in.

Pure functions: no I/O, no YAML files. The caller adds labels and annotations.

How the pieces fit at run time:

- MIG manager reads the mig-parted document from the ConfigMap named in
  ``spec.migManager.config.name``, key ``config.yaml``, and applies the named
  configuration that the node label ``nvidia.com/mig.config`` selects.
  ``spec.migManager.config.default`` may only be ``all-disabled`` (or ``""``), so every
  mig-parted document built here contains ``all-disabled``.
- The device plugin reads the ConfigMap named in ``spec.devicePlugin.config.name``;
  each key is one named config, selected per node by the label
  ``nvidia.com/device-plugin.config``. Nodes without the label use the key named by
  ``spec.devicePlugin.config.default``: ``cluster_policy`` defaults it to
  ``DEVICE_PLUGIN_DEFAULT_CONFIG`` ("default"), so the caller must put a key of that
  name in the device-plugin ConfigMap (normally
  ``device_plugin_config(mig_strategy=..., sharing=None, replicas=None, resources=[])``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from gpuplan.model.common import DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_VALUE

# Node label MIG manager watches for the mig-parted config name.
# Source: ../shared/facts/mig.md rule 12 (mig-parted v0.15.0
# cmd/nvidia-mig-manager/main.go, deployments/container/reconfigure-mig.sh).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# Node label selecting a device-plugin config key.
# Source: NVIDIA/cloud-native-docs gpu-operator/gpu-sharing.rst, "Applying a
# Time-Slicing Configuration Per Node".
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"

# Key of the mig-parted file in its ConfigMap: the operator mounts the ConfigMap at
# /mig-parted-config and points MIG manager at /mig-parted-config/config.yaml.
# Source: NVIDIA/gpu-operator controllers/object_controls_test.go ("custom-config":
# CONFIG_FILE=/mig-parted-config/config.yaml); mig-manager flag default of the same path.
MIG_PARTED_CONFIG_KEY = "config.yaml"
# The always-present mig-parted config; also the only non-empty value the CRD allows for
# spec.migManager.config.default (enum ['all-disabled', ''], default 'all-disabled').
ALL_DISABLED = "all-disabled"
# gpuplan's choice (sources are silent): name of the device-plugin config for unlabelled nodes.
DEVICE_PLUGIN_DEFAULT_CONFIG = "default"

# Device-plugin config format. Source: NVIDIA/k8s-device-plugin api/config/v1/config.go
# (Config: version "v1", flags, sharing), sharing.go (Sharing: timeSlicing, mps),
# ReplicatedResources (renameByDefault, failRequestsGreaterThanOne, resources[name, replicas]).
DEVICE_PLUGIN_CONFIG_VERSION = "v1"
# Source: CRD clusterpolicies spec.mig.strategy enum; device plugin flags.migStrategy.
MIG_STRATEGIES = ("none", "single", "mixed")
# Source: CRD clusterpolicies spec.migManager.config.default enum.
MIG_MANAGER_DEFAULTS = (ALL_DISABLED, "")

SharingKind = Literal["time-slicing", "mps"]

_CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# mig-parted profile grammar (facts/mig.md rule 5): [<C>c.]<G>g.<GB>gb[+attrs | -attrs].
_MIG_PROFILE = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.(\d+)gb(?:([+-])([A-Za-z0-9.,]+))?$")
_MIG_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9.]*$")
_GPU_RESOURCE = "nvidia.com/gpu"
_MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


@dataclass(frozen=True)
class _Image:
    repository: str
    image: str
    version: str


# Operand images the chart's values.yaml sets, per operator version.
# v26.7.0 = NVIDIA/gpu-operator commit 10ee5b3638b89e11e949412aafa5ba99279c3721 (the CRD
# in ../shared/crds). Repositories and image names: the chart's ClusterPolicy snapshot
# deployments/gpu-operator/tests/__snapshot__/clusterpolicy_test.yaml.snap. Versions:
# - devicePlugin, gfd v0.20.0; migManager v0.15.0; driver manager v0.12.0: the v26.3.3 ->
#   v26.7.0 bump of bundle CSV relatedImages and values.yaml (compare 7ab78b49...10ee5b36).
# - validator, nodeStatusExporter: the gpu-operator image at the chart's appVersion.
# - dcgm 4.6.0-1: values.yaml reverted 4.6.1 -> 4.6.0 in the same range; the "-ubuntu24.04"
#   suffix is INFERRED from the v26.7.1 chart (dcgm:4.6.1-1-ubuntu24.04).
# - toolkit v1.20.0, dcgmExporter 4.6.0-4.8.3-distroless: INFERRED (the upstream releases
#   current at the v26.7.0 commit; v26.7.1 ships v1.20.1 and 4.6.1-4.8.4-distroless).
#   Not confirmed against the v26.7.0 values.yaml: check before relying on them.
_OPERANDS: dict[str, dict[str, _Image]] = {
    "v26.7.0": {
        "driver": _Image("nvcr.io/nvidia", "driver", ""),  # version: the cluster's driverVersion
        "driverManager": _Image("nvcr.io/nvidia/cloud-native", "k8s-driver-manager", "v0.12.0"),
        "toolkit": _Image("nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0"),
        "devicePlugin": _Image("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "gfd": _Image("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "dcgm": _Image("nvcr.io/nvidia/cloud-native", "dcgm", "4.6.0-1-ubuntu24.04"),
        "dcgmExporter": _Image("nvcr.io/nvidia/k8s", "dcgm-exporter", "4.6.0-4.8.3-distroless"),
        "migManager": _Image("nvcr.io/nvidia/cloud-native", "k8s-mig-manager", "v0.15.0"),
        "nodeStatusExporter": _Image("nvcr.io/nvidia", "gpu-operator", "v26.7.0"),
        "validator": _Image("nvcr.io/nvidia", "gpu-operator", "v26.7.0"),
    },
}
SUPPORTED_OPERATOR_VERSIONS = tuple(sorted(_OPERANDS))


def mig_entry(devices: Literal["all"] | Sequence[int], layout: Mapping[str, int]) -> dict:
    """Return one mig-parted entry enabling MIG with ``layout`` on ``devices``."""
    if devices != "all":
        devices = _gpu_indices(devices)
    if not layout:
        raise ValueError("a MIG layout needs at least one profile")
    mig_devices = {}
    for profile in sorted(layout):
        _check_profile(profile)
        count = layout[profile]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"MIG profile {profile!r}: count must be an integer >= 1")
        mig_devices[profile] = count
    return {"devices": devices, "mig-enabled": True, "mig-devices": mig_devices}


def mig_parted_config(layouts: Mapping[str, list[dict]]) -> dict:
    """Return the mig-parted document with ``layouts`` and ``all-disabled``."""
    configs: dict[str, list[dict]] = {ALL_DISABLED: [_all_disabled_entry()]}
    for name in sorted(layouts):
        _check_label_value(name, "mig-parted config name")
        entries = [_checked_entry(name, entry) for entry in layouts[name]]
        if not entries:
            raise ValueError(f"mig-parted config {name!r} has no entries")
        if name == ALL_DISABLED and entries != configs[ALL_DISABLED]:
            raise ValueError(f"{ALL_DISABLED!r} is reserved for MIG disabled on every GPU")
        configs[name] = entries
    return {"version": "v1", "mig-configs": dict(sorted(configs.items()))}


def device_plugin_config(
    *,
    mig_strategy: str,
    sharing: SharingKind | None,
    replicas: int | None,
    resources: list[str],
    rename_by_default: bool = True,
    fail_requests_greater_than_one: bool = False,
) -> dict:
    """Return one device-plugin config document (one key of the device-plugin ConfigMap)."""
    _check_choice(mig_strategy, MIG_STRATEGIES, "mig_strategy")
    doc: dict[str, Any] = {
        "version": DEVICE_PLUGIN_CONFIG_VERSION,
        "flags": {"migStrategy": mig_strategy},
    }
    if sharing is None:
        if replicas is not None or resources:
            raise ValueError("replicas and resources need a sharing mode")
        return doc
    _check_choice(sharing, ("time-slicing", "mps"), "sharing")
    _check_bool(rename_by_default, "rename_by_default")
    _check_bool(fail_requests_greater_than_one, "fail_requests_greater_than_one")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ValueError("replicas must be an integer >= 1")  # plugin rejects <= 0
    names = _shared_resources(resources, mig_strategy)
    shared: dict[str, Any] = {
        "renameByDefault": rename_by_default,
        "resources": [{"name": name, "replicas": replicas} for name in names],
    }
    if sharing == "time-slicing":
        shared["failRequestsGreaterThanOne"] = fail_requests_greater_than_one
        doc["sharing"] = {"timeSlicing": shared}
        return doc
    # k8s-device-plugin cmd/nvidia-device-plugin/main.go validateFlags:
    # "using --mig-strategy=mixed is not supported with MPS" (the plugin crash-loops).
    if mig_strategy == "mixed":
        raise ValueError("MPS sharing does not work with migStrategy 'mixed'")
    # k8s-device-plugin api/config/v1/config.go: an unset mps.failRequestsGreaterThanOne
    # means true (historical MPS behaviour); write it only when asked, never a relaxing false.
    if fail_requests_greater_than_one:
        shared["failRequestsGreaterThanOne"] = True
    doc["sharing"] = {"mps": shared}
    return doc


def config_map(name: str, namespace: str, data: Mapping[str, dict]) -> dict:
    """Return a v1 ConfigMap whose values are ``data``'s documents as YAML text."""
    _check_dns(name, DNS1123_SUBDOMAIN, 253, "ConfigMap name")
    _check_dns(namespace, DNS1123_LABEL, 63, "namespace")
    for key in data:
        if not _CONFIGMAP_KEY.fullmatch(key) or len(key) > 253:
            raise ValueError(f"invalid ConfigMap key {key!r}")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {key: _yaml_text(data[key]) for key in sorted(data)},
    }


def cluster_policy(
    *,
    operator_version: str,
    driver_version: str,
    mig_strategy: str,
    dcgm_exporter: bool,
    mig_config_map: str | None,
    mig_default: str,
    device_plugin_config_map: str | None,
    device_plugin_default: str | None,
    namespace: str,
    tolerations: Sequence[Mapping[str, str]] = (),
) -> dict:
    """Return the ClusterPolicy ``cluster-policy`` wired to the MIG and device-plugin ConfigMaps."""
    # ``namespace`` is the operator namespace, where both ConfigMaps must live. It is
    # checked, not emitted: ClusterPolicy is cluster-scoped (the chart's
    # metadata.namespace is ignored by the API server).
    images = _operands(operator_version)
    _check_choice(mig_strategy, MIG_STRATEGIES, "mig_strategy")
    _check_choice(mig_default, MIG_MANAGER_DEFAULTS, "mig_default")
    _check_dns(namespace, DNS1123_LABEL, 63, "namespace")
    _check_bool(dcgm_exporter, "dcgm_exporter")
    if not driver_version or any(ch.isspace() for ch in driver_version):
        raise ValueError(f"invalid driver version {driver_version!r}")
    spec = {
        "cdi": {"default": False, "enabled": True, "nriPluginEnabled": False},
        "daemonsets": _daemonsets(tolerations),
        "dcgm": {"enabled": False, **_image(images["dcgm"])},
        "dcgmExporter": _dcgm_exporter(images["dcgmExporter"], dcgm_exporter),
        "devicePlugin": _device_plugin(
            images["devicePlugin"], device_plugin_config_map, device_plugin_default
        ),
        "driver": _driver(images, driver_version),
        "gfd": {"enabled": True, **_image(images["gfd"])},
        "hostPaths": {
            "driverInstallDir": "/run/nvidia/driver",
            "kubeletRootDir": "/var/lib/kubelet",  # CRD default
            "rootFS": "/",
        },
        "mig": {"strategy": mig_strategy},
        "migManager": _mig_manager(images["migManager"], mig_config_map, mig_default),
        "nodeStatusExporter": {"enabled": False, **_image(images["nodeStatusExporter"])},
        "operator": {"runtimeClass": "nvidia"},  # CRD default, the chart renders it
        "psa": {"enabled": False},
        "toolkit": {
            "enabled": True,
            **_image(images["toolkit"]),
            "installDir": "/usr/local/nvidia",  # CRD default
        },
        "validator": _image(images["validator"]),
    }
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


# --- ClusterPolicy sections ----------------------------------------------------------
# Shapes follow the chart's ClusterPolicy snapshot (tests/__snapshot__/clusterpolicy_test
# .yaml.snap). Sections for components the chart leaves off by default and that only run
# with sandbox workloads or their own opt-in (ccManager, gdrcopy, gds, kataManager,
# kataSandboxDevicePlugin, sandboxDevicePlugin, sandboxWorkloads, vfioManager,
# vgpuDeviceManager, vgpuManager) are omitted; so are the chart's empty-string
# references (driver.certConfig, kernelModuleConfig, repoConfig, licensingConfig,
# virtualTopology, migManager.gpuClientsConfig), which configure nothing.


def _operands(operator_version: str) -> dict[str, _Image]:
    """Return the operand images of a supported operator version."""
    try:
        return _OPERANDS[operator_version]
    except KeyError:
        supported = ", ".join(SUPPORTED_OPERATOR_VERSIONS)
        raise ValueError(
            f"GPU Operator {operator_version!r} is not supported (supported: {supported})"
        ) from None


def _image(image: _Image) -> dict:
    """Return the repository/image/version/pull-policy fields of one operand."""
    return {
        "image": image.image,
        "imagePullPolicy": "IfNotPresent",
        "repository": image.repository,
        "version": image.version,
    }


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


def _dcgm_exporter(image: _Image, enabled: bool) -> dict:
    """Return the DCGM exporter section."""
    return {
        "enabled": enabled,
        **_image(image),
        "service": {"internalTrafficPolicy": "Cluster"},
        "serviceMonitor": {
            "additionalLabels": {},
            "enabled": False,
            "honorLabels": False,
            "interval": "15s",
            "relabelings": [],
            "scrapeTimeout": "10s",
        },
    }


def _device_plugin(image: _Image, config_map_name: str | None, default: str | None) -> dict:
    """Return the device plugin section, with its config when a ConfigMap is given."""
    section: dict[str, Any] = {"enabled": True, **_image(image)}
    if config_map_name is None:
        if default is not None:
            raise ValueError("device_plugin_default needs device_plugin_config_map")
        return section
    _check_dns(config_map_name, DNS1123_SUBDOMAIN, 253, "device-plugin ConfigMap name")
    default = DEVICE_PLUGIN_DEFAULT_CONFIG if default is None else default
    _check_label_value(default, "device-plugin default config")
    section["config"] = {"default": default, "name": config_map_name}
    return section


def _driver(images: Mapping[str, _Image], version: str) -> dict:
    """Return the driver section with the chart's defaults and ``version``."""
    driver = images["driver"]
    return {
        "enabled": True,
        "image": driver.image,
        "imagePullPolicy": "IfNotPresent",
        "kernelModuleType": "auto",  # CRD default
        "manager": _image(images["driverManager"]),
        "rdma": {"enabled": False, "useHostMofed": False},
        "repository": driver.repository,
        "startupProbe": {
            "failureThreshold": 120,
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "timeoutSeconds": 60,
        },
        "upgradePolicy": {
            "autoUpgrade": True,
            # The values below are the CRD defaults, written so Argo CD sees no drift.
            "drain": {
                "deleteEmptyDir": False,
                "enable": False,
                "force": False,
                "timeoutSeconds": 300,
            },
            "maxParallelUpgrades": 1,
            "maxUnavailable": "25%",
            "podDeletion": {"deleteEmptyDir": False, "force": False, "timeoutSeconds": 300},
            "waitForCompletion": {"timeoutSeconds": 0},
        },
        "useNvidiaDriverCRD": False,
        "usePrecompiled": False,
        "version": version,
    }


def _mig_manager(image: _Image, config_map_name: str | None, default: str) -> dict:
    """Return the MIG manager section, with the custom mig-parted ConfigMap when given."""
    config = {"default": default}
    if config_map_name is not None:
        _check_dns(config_map_name, DNS1123_SUBDOMAIN, 253, "mig-parted ConfigMap name")
        config["name"] = config_map_name
    return {"config": config, "enabled": True, **_image(image)}


# --- helpers ---------------------------------------------------------------------------


def _all_disabled_entry() -> dict:
    """Return the mig-parted entry that disables MIG on every GPU."""
    return {"devices": "all", "mig-enabled": False}


def _checked_entry(config_name: str, entry: Mapping[str, Any]) -> dict:
    """Return a copy of one mig-parted entry after checking mig-parted's parse rules."""
    where = f"mig-parted config {config_name!r}"
    unknown = set(entry) - {"devices", "mig-enabled", "mig-devices", "device-filter"}
    if unknown:
        raise ValueError(f"{where}: unknown entry fields {sorted(unknown)}")
    if "devices" not in entry or "mig-enabled" not in entry:
        raise ValueError(f"{where}: every entry needs 'devices' and 'mig-enabled'")
    if not isinstance(entry["mig-enabled"], bool):
        raise ValueError(f"{where}: 'mig-enabled' must be a boolean")
    checked = dict(entry)
    if checked["devices"] != "all":
        checked["devices"] = _gpu_indices(checked["devices"])
    if checked["mig-enabled"]:
        if "mig-devices" not in checked:
            raise ValueError(f"{where}: 'mig-devices' is required when MIG is enabled")
        if checked["mig-devices"]:
            checked.update(mig_entry(checked["devices"], checked["mig-devices"]))
    elif checked.get("mig-devices"):
        raise ValueError(f"{where}: 'mig-devices' given while 'mig-enabled' is false")
    return checked


def _gpu_indices(devices: Any) -> list[int]:
    """Return sorted GPU indices after checking they are distinct non-negative integers."""
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence) or not devices:
        raise ValueError("devices must be 'all' or a non-empty list of GPU indices")
    for index in devices:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"invalid GPU index {index!r}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"GPU indices repeat in {list(devices)}")
    return sorted(devices)


def _check_profile(profile: str) -> None:
    """Raise ValueError unless ``profile`` is a well-formed MIG profile name."""
    match = _MIG_PROFILE.match(profile) if isinstance(profile, str) else None
    if not match:
        raise ValueError(f"malformed MIG profile {profile!r}")
    compute, gpu, _gb, _sign, attributes = match.groups()
    if compute is not None and int(compute) >= int(gpu):
        raise ValueError(f"MIG profile {profile!r}: compute slices must be fewer than GPU slices")
    if attributes is not None:
        names = attributes.split(",")
        if len(set(names)) != len(names) or not all(
            _MIG_ATTRIBUTE.match(name) and not name.endswith(".") for name in names
        ):
            raise ValueError(f"MIG profile {profile!r}: malformed attributes")


def _shared_resources(resources: Sequence[str], mig_strategy: str) -> list[str]:
    """Return the sorted resources to share after checking the plugin can share them."""
    if not resources:
        raise ValueError("sharing needs at least one resource")
    if len(set(resources)) != len(resources):
        raise ValueError(f"resources repeat in {list(resources)}")
    for name in resources:
        if name == _GPU_RESOURCE:
            continue
        # gpu-sharing.rst: only nvidia.com/gpu and the mixed-strategy MIG resources share.
        if not name.startswith(_MIG_RESOURCE_PREFIX):
            raise ValueError(f"resource {name!r} cannot be shared")
        _check_profile(name[len(_MIG_RESOURCE_PREFIX) :])
        if mig_strategy != "mixed":
            raise ValueError(f"resource {name!r} exists only with migStrategy 'mixed'")
    return sorted(resources)


def _check_choice(value: Any, choices: Sequence[str], what: str) -> None:
    """Raise ValueError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{what} must be one of {list(choices)}, not {value!r}")


def _check_bool(value: Any, what: str) -> None:
    """Raise ValueError unless ``value`` is a boolean."""
    if not isinstance(value, bool):
        raise ValueError(f"{what} must be a boolean, not {value!r}")


def _check_label_value(value: str, what: str) -> None:
    """Raise ValueError unless ``value`` is a valid, non-empty Kubernetes label value."""
    if not isinstance(value, str) or not value or len(value) > 63 or not LABEL_VALUE.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a valid label value")


def _check_dns(value: str, pattern: re.Pattern[str], limit: int, what: str) -> None:
    """Raise ValueError unless ``value`` matches a DNS-1123 ``pattern`` within ``limit``."""
    if not isinstance(value, str) or len(value) > limit or not pattern.fullmatch(value):
        raise ValueError(f"invalid {what} {value!r}")


def _yaml_text(document: Mapping[str, Any]) -> str:
    """Return ``document`` as deterministic block-style YAML."""
    return yaml.safe_dump(dict(document), sort_keys=True, default_flow_style=False)
