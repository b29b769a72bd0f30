"""NVIDIA GPU Operator objects as plain dicts: mig-parted config, device-plugin config and
their ConfigMaps (the ClusterPolicy that wires them in: gpu_operator_policy.py).

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
        check_label_value(name, "mig-parted config name")
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
    check_choice(mig_strategy, MIG_STRATEGIES, "mig_strategy")
    doc: dict[str, Any] = {
        "version": DEVICE_PLUGIN_CONFIG_VERSION,
        "flags": {"migStrategy": mig_strategy},
    }
    if sharing is None:
        if replicas is not None or resources:
            raise ValueError("replicas and resources need a sharing mode")
        return doc
    check_choice(sharing, ("time-slicing", "mps"), "sharing")
    check_bool(rename_by_default, "rename_by_default")
    check_bool(fail_requests_greater_than_one, "fail_requests_greater_than_one")
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
    check_dns(name, DNS1123_SUBDOMAIN, 253, "ConfigMap name")
    check_dns(namespace, DNS1123_LABEL, 63, "namespace")
    for key in data:
        if not _CONFIGMAP_KEY.fullmatch(key) or len(key) > 253:
            raise ValueError(f"invalid ConfigMap key {key!r}")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {key: _yaml_text(data[key]) for key in sorted(data)},
    }


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


def check_choice(value: Any, choices: Sequence[str], what: str) -> None:
    """Raise ValueError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{what} must be one of {list(choices)}, not {value!r}")


def check_bool(value: Any, what: str) -> None:
    """Raise ValueError unless ``value`` is a boolean."""
    if not isinstance(value, bool):
        raise ValueError(f"{what} must be a boolean, not {value!r}")


def check_label_value(value: str, what: str) -> None:
    """Raise ValueError unless ``value`` is a valid, non-empty Kubernetes label value."""
    if (
        not isinstance(value, str)
        or not value
        or len(value) > 63
        or not LABEL_VALUE.fullmatch(value)
    ):
        raise ValueError(f"{what} {value!r} is not a valid label value")


def check_dns(value: str, pattern: re.Pattern[str], limit: int, what: str) -> None:
    """Raise ValueError unless ``value`` matches a DNS-1123 ``pattern`` within ``limit``."""
    if not isinstance(value, str) or len(value) > limit or not pattern.fullmatch(value):
        raise ValueError(f"invalid {what} {value!r}")


_TEXTS: dict[str, str] = {}  # repr of a plain document -> its YAML text (see _yaml_text)
_TEXTS_KEPT = 1024


def _yaml_text(document: Mapping[str, Any]) -> str:
    """Return ``document`` as deterministic block-style YAML.

    PyYAML takes milliseconds a document and clusters repeat the same configs, so the text is
    kept per document: keyed by its repr, which tells apart everything safe_dump writes
    differently (1 and "1", a tuple and a list), for documents of plain values only.
    """
    plain = dict(document)
    if not _plain(plain):
        return yaml.safe_dump(plain, sort_keys=True, default_flow_style=False)
    key = repr(plain)
    found = _TEXTS.get(key)
    if found is None:
        if len(_TEXTS) >= _TEXTS_KEPT:
            _TEXTS.clear()
        found = _TEXTS[key] = yaml.safe_dump(plain, sort_keys=True, default_flow_style=False)
    return found


def _plain(value: Any) -> bool:
    """Tell whether a value is made of dicts, lists, text, numbers, booleans and None only."""
    kind = type(value)
    if kind is dict:
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in (str, int, float, bool, type(None))
