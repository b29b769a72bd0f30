"""Tests for the GPU Operator objects: mig-parted and device-plugin configs, ConfigMaps,
and the ClusterPolicy checked strictly against the upstream CRD."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpuplan.emit.gpu_operator_objects import (
    ALL_DISABLED,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEFAULT_CONFIG,
    MIG_CONFIG_LABEL,
    MIG_PARTED_CONFIG_KEY,
    cluster_policy,
    config_map,
    device_plugin_config,
    mig_entry,
    mig_parted_config,
)

CRD_FILE = Path("gpu-operator") / "nvidia.com_clusterpolicies.yaml"


# --- strict CRD schema -----------------------------------------------------------------


def _strict(schema: Any) -> Any:
    """Return a copy of an OpenAPI v3 schema that rejects fields it does not declare."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _strict(value) for key, value in schema.items()}
    if out.get("x-kubernetes-int-or-string") and "anyOf" not in out and "type" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@pytest.fixture(scope="module")
def crd_schema() -> dict:
    """Return the ClusterPolicy openAPIV3Schema (not yet made strict)."""
    folder = os.environ.get("GPUPLAN_CRDS")
    if not folder:
        pytest.skip("GPUPLAN_CRDS is not set: upstream CRDs needed")
    crd = yaml.safe_load((Path(folder) / CRD_FILE).read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module")
def strict_validator(crd_schema: dict) -> jsonschema.Draft7Validator:
    """Return a validator for the CRD schema with unknown fields forbidden."""
    return jsonschema.Draft7Validator(_strict(crd_schema))


def _errors(validator: jsonschema.Draft7Validator, obj: dict) -> list[str]:
    """Return readable validation errors of ``obj``."""
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    ]


def _with_crd_defaults(schema: dict, value: Any) -> Any:
    """Return ``value`` with the CRD's structural defaults applied, as the API server does."""
    if isinstance(value, dict) and "properties" in schema:
        out = dict(value)
        for name, sub in schema["properties"].items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
            if name in out:
                out[name] = _with_crd_defaults(sub, out[name])
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_with_crd_defaults(schema["items"], item) for item in value]
    return value


def _policy(**overrides: Any) -> dict:
    """Return a ClusterPolicy for the v26.7.0 operator with ``overrides`` applied."""
    args: dict[str, Any] = {
        "operator_version": "v26.7.0",
        "driver_version": "580.82.07",
        "mig_strategy": "mixed",
        "dcgm_exporter": True,
        "mig_config_map": "gpuplan-mig-parted-config",
        "mig_default": ALL_DISABLED,
        "device_plugin_config_map": "gpuplan-device-plugin-config",
        "device_plugin_default": DEVICE_PLUGIN_DEFAULT_CONFIG,
        "namespace": "gpu-operator",
    }
    args.update(overrides)
    return cluster_policy(**args)


POLICY_CASES = {
    "mixed-with-configs": {},
    "single-with-configs": {"mig_strategy": "single"},
    "mixed-without-configs": {
        "mig_config_map": None,
        "device_plugin_config_map": None,
        "device_plugin_default": None,
    },
    "single-without-configs-no-exporter": {
        "mig_strategy": "single",
        "dcgm_exporter": False,
        "mig_config_map": None,
        "device_plugin_config_map": None,
        "device_plugin_default": None,
    },
}


# --- ClusterPolicy ---------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(POLICY_CASES))
def test_cluster_policy_validates_strictly_against_crd(
    case: str, strict_validator: jsonschema.Draft7Validator
) -> None:
    assert _errors(strict_validator, _policy(**POLICY_CASES[case])) == []


@pytest.mark.parametrize("case", sorted(POLICY_CASES))
def test_cluster_policy_already_carries_crd_defaults(case: str, crd_schema: dict) -> None:
    policy = _policy(**POLICY_CASES[case])
    assert _with_crd_defaults(crd_schema, policy) == policy


def test_cluster_policy_has_every_required_section(crd_schema: dict) -> None:
    spec = _policy()["spec"]
    assert set(crd_schema["properties"]["spec"]["required"]) <= set(spec)


@pytest.mark.parametrize(
    ("path", "bad_value"),
    [
        (("spec", "devicePlugin", "configMap"), "typo"),
        (("spec", "migManager", "config", "defualt"), "all-disabled"),
        (("spec", "unknownComponent"), {"enabled": True}),
    ],
)
def test_strict_check_catches_unknown_fields(
    path: tuple[str, ...], bad_value: Any, strict_validator: jsonschema.Draft7Validator
) -> None:
    policy = _policy()
    target = policy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad_value
    errors = _errors(strict_validator, policy)
    assert errors and all("Additional properties" in e for e in errors)


def test_strict_check_catches_enum_violation(strict_validator: jsonschema.Draft7Validator) -> None:
    policy = _policy()
    policy["spec"]["migManager"]["config"]["default"] = "all-1g.10gb"
    assert _errors(strict_validator, policy)


def test_cluster_policy_wiring() -> None:
    policy = _policy(mig_strategy="single", dcgm_exporter=False)
    assert policy["apiVersion"] == "nvidia.com/v1"
    assert policy["kind"] == "ClusterPolicy"
    assert policy["metadata"] == {"name": "cluster-policy"}
    spec = policy["spec"]
    assert spec["mig"] == {"strategy": "single"}
    assert spec["migManager"]["enabled"] is True
    assert spec["migManager"]["config"] == {
        "default": "all-disabled",
        "name": "gpuplan-mig-parted-config",
    }
    assert spec["devicePlugin"]["config"] == {
        "default": "default",
        "name": "gpuplan-device-plugin-config",
    }
    assert spec["dcgmExporter"]["enabled"] is False
    assert spec["driver"]["version"] == "580.82.07"
    assert spec["driver"]["enabled"] is True
    assert spec["toolkit"]["enabled"] is True
    assert spec["gfd"]["enabled"] is True
    assert spec["dcgm"]["enabled"] is False
    assert spec["nodeStatusExporter"]["enabled"] is False


def test_cluster_policy_operand_images_for_v26_7_0() -> None:
    spec = _policy()["spec"]

    def ref(section: dict) -> str:
        return f"{section['repository']}/{section['image']}:{section['version']}"

    assert ref(spec["devicePlugin"]) == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    assert ref(spec["gfd"]) == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    assert ref(spec["migManager"]) == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
    assert ref(spec["driver"]) == "nvcr.io/nvidia/driver:580.82.07"
    assert ref(spec["driver"]["manager"]) == (
        "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    )
    assert ref(spec["validator"]) == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert ref(spec["nodeStatusExporter"]) == "nvcr.io/nvidia/gpu-operator:v26.7.0"


def test_cluster_policy_without_configs_uses_operator_defaults() -> None:
    spec = _policy(**POLICY_CASES["mixed-without-configs"])["spec"]
    assert "config" not in spec["devicePlugin"]
    assert spec["migManager"]["config"] == {"default": "all-disabled"}


def test_device_plugin_default_falls_back_to_documented_name() -> None:
    spec = _policy(device_plugin_default=None)["spec"]
    assert spec["devicePlugin"]["config"]["default"] == DEVICE_PLUGIN_DEFAULT_CONFIG == "default"


@pytest.mark.parametrize(
    "overrides",
    [
        {"operator_version": "v25.10.1"},
        {"mig_strategy": "both"},
        {"mig_default": "all-1g.10gb"},
        {"dcgm_exporter": "yes"},
        {"driver_version": ""},
        {"namespace": "GPU_Operator"},
        {"device_plugin_config_map": None},  # a default without a ConfigMap
        {"device_plugin_default": "Bad Name"},
    ],
)
def test_cluster_policy_rejects_bad_arguments(overrides: dict) -> None:
    with pytest.raises(ValueError):
        _policy(**overrides)


def test_cluster_policy_is_deterministic() -> None:
    assert yaml.safe_dump(_policy()) == yaml.safe_dump(_policy())


# --- mig-parted config -----------------------------------------------------------------


def _check_mig_parted_rules(doc: dict) -> None:
    """Assert the structural rules of facts/mig.md (mig-parted api/spec/v1/spec.go)."""
    assert set(doc) == {"version", "mig-configs"}
    assert doc["version"] == "v1"
    assert doc["mig-configs"], "mig-configs must not be empty"
    assert doc["mig-configs"][ALL_DISABLED] == [{"devices": "all", "mig-enabled": False}]
    for entries in doc["mig-configs"].values():
        assert isinstance(entries, list) and entries
        for entry in entries:
            assert {"devices", "mig-enabled"} <= set(entry)
            assert set(entry) <= {"devices", "mig-enabled", "mig-devices", "device-filter"}
            assert entry["devices"] == "all" or (
                isinstance(entry["devices"], list)
                and all(isinstance(i, int) and not isinstance(i, bool) for i in entry["devices"])
            )
            assert isinstance(entry["mig-enabled"], bool)
            if entry["mig-enabled"]:
                assert "mig-devices" in entry
                counts = entry["mig-devices"].values()
                assert all(c >= 0 for c in counts) and (not counts or max(counts) > 0)
            else:
                assert not entry.get("mig-devices")


def test_mig_entry_sorts_profiles_and_devices() -> None:
    entry = mig_entry([7, 4, 6, 5], {"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 1})
    assert entry == {
        "devices": [4, 5, 6, 7],
        "mig-enabled": True,
        "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    }
    assert list(entry["mig-devices"]) == ["1g.10gb", "2g.20gb", "3g.40gb"]


def test_mig_parted_config_layouts_and_all_disabled() -> None:
    doc = mig_parted_config(
        {
            "h100-infer": [mig_entry("all", {"1g.10gb": 7})],
            "a100-mixed": [
                mig_entry([0, 1, 2, 3], {"3g.40gb": 2}),
                mig_entry([4, 5, 6, 7], {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
            ],
        }
    )
    _check_mig_parted_rules(doc)
    assert list(doc["mig-configs"]) == ["a100-mixed", "all-disabled", "h100-infer"]
    assert doc["mig-configs"]["h100-infer"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}
    ]


def test_mig_parted_config_always_has_all_disabled() -> None:
    doc = mig_parted_config({})
    _check_mig_parted_rules(doc)
    assert doc == {
        "version": "v1",
        "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]},
    }


def test_mig_parted_config_accepts_profile_attributes() -> None:
    doc = mig_parted_config({"me": [mig_entry("all", {"1g.10gb+me": 1, "1g.10gb": 5})]})
    _check_mig_parted_rules(doc)


@pytest.mark.parametrize(
    "layouts",
    [
        {"empty": []},
        {"bad-profile": [{"devices": "all", "mig-enabled": True, "mig-devices": {"bogus": 1}}]},
        {"no-mig-devices": [{"devices": "all", "mig-enabled": True}]},
        {"on-disabled": [{"devices": "all", "mig-enabled": False, "mig-devices": {"1g.10gb": 1}}]},
        {"missing-devices": [{"mig-enabled": False}]},
        {"string-devices": [{"devices": "some", "mig-enabled": False}]},
        {"typo": [{"devices": "all", "mig-enabled": False, "mig-device": {}}]},
        {"all-disabled": [mig_entry("all", {"1g.10gb": 7})]},
        {"Not A Label!": [{"devices": "all", "mig-enabled": False}]},
    ],
)
def test_mig_parted_config_rejects_what_mig_parted_rejects(layouts: dict) -> None:
    with pytest.raises(ValueError):
        mig_parted_config(layouts)


@pytest.mark.parametrize(
    ("devices", "layout"),
    [
        ([], {"1g.10gb": 1}),
        ([0, 0], {"1g.10gb": 1}),
        ([-1], {"1g.10gb": 1}),
        ("some", {"1g.10gb": 1}),
        ("all", {}),
        ("all", {"1g.10gb": 0}),
        ("all", {"1g.10gb": True}),
        ("all", {"3c.2g.20gb": 1}),
        ("all", {"1g.10gb+me,me": 1}),
        ("all", {"1g.10gb+": 1}),
    ],
)
def test_mig_entry_rejects_bad_input(devices: Any, layout: dict) -> None:
    with pytest.raises(ValueError):
        mig_entry(devices, layout)


# --- device-plugin config --------------------------------------------------------------


def test_device_plugin_config_time_slicing() -> None:
    doc = device_plugin_config(
        mig_strategy="mixed", sharing="time-slicing", replicas=4, resources=["nvidia.com/gpu"]
    )
    assert doc == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": False,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }


def test_device_plugin_config_time_slicing_options() -> None:
    doc = device_plugin_config(
        mig_strategy="none",
        sharing="time-slicing",
        replicas=2,
        resources=["nvidia.com/gpu"],
        rename_by_default=False,
        fail_requests_greater_than_one=True,
    )
    assert doc["sharing"]["timeSlicing"] == {
        "renameByDefault": False,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
    }


def test_device_plugin_config_mps() -> None:
    doc = device_plugin_config(
        mig_strategy="single", sharing="mps", replicas=4, resources=["nvidia.com/gpu"]
    )
    assert doc == {
        "version": "v1",
        "flags": {"migStrategy": "single"},
        "sharing": {
            "mps": {
                "renameByDefault": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }


def test_device_plugin_config_mps_keeps_fail_requests_when_asked() -> None:
    doc = device_plugin_config(
        mig_strategy="none",
        sharing="mps",
        replicas=2,
        resources=["nvidia.com/gpu"],
        fail_requests_greater_than_one=True,
    )
    assert doc["sharing"]["mps"]["failRequestsGreaterThanOne"] is True


def test_device_plugin_config_mig_with_time_slicing() -> None:
    doc = device_plugin_config(
        mig_strategy="mixed",
        sharing="time-slicing",
        replicas=2,
        resources=["nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"],
    )
    assert doc == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": False,
                "resources": [
                    {"name": "nvidia.com/mig-1g.10gb", "replicas": 2},
                    {"name": "nvidia.com/mig-2g.20gb", "replicas": 2},
                ],
            }
        },
    }


def test_device_plugin_config_exclusive() -> None:
    doc = device_plugin_config(mig_strategy="mixed", sharing=None, replicas=None, resources=[])
    assert doc == {"version": "v1", "flags": {"migStrategy": "mixed"}}


_GPU = ["nvidia.com/gpu"]
_TS = {"mig_strategy": "mixed", "sharing": "time-slicing", "replicas": 2, "resources": _GPU}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mig_strategy": "mixed", "sharing": "mps", "replicas": 4, "resources": _GPU},
        {"mig_strategy": "bogus", "sharing": None, "replicas": None, "resources": []},
        {**_TS, "sharing": "spatial"},
        {"mig_strategy": "mixed", "sharing": None, "replicas": 4, "resources": []},
        {"mig_strategy": "mixed", "sharing": None, "replicas": None, "resources": _GPU},
        {**_TS, "replicas": 0},
        {**_TS, "replicas": True},
        {**_TS, "replicas": None},
        {**_TS, "resources": []},
        {**_TS, "resources": _GPU + _GPU},
        {**_TS, "resources": ["example.com/fpga"]},
        {**_TS, "resources": ["nvidia.com/mig-bogus"]},
        {**_TS, "mig_strategy": "single", "resources": ["nvidia.com/mig-1g.10gb"]},
        {**_TS, "rename_by_default": "yes"},
        {**_TS, "fail_requests_greater_than_one": 1},
    ],
)
def test_device_plugin_config_rejects_bad_input(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        device_plugin_config(**kwargs)


# --- ConfigMaps ------------------------------------------------------------------------


def test_config_map_serialises_documents_deterministically() -> None:
    mig = mig_parted_config({"h100-infer": [mig_entry("all", {"1g.10gb": 7})]})
    cm = config_map("gpuplan-mig-parted-config", "gpu-operator", {MIG_PARTED_CONFIG_KEY: mig})
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpuplan-mig-parted-config", "namespace": "gpu-operator"},
        "data": {
            "config.yaml": (
                "mig-configs:\n"
                "  all-disabled:\n"
                "  - devices: all\n"
                "    mig-enabled: false\n"
                "  h100-infer:\n"
                "  - devices: all\n"
                "    mig-devices:\n"
                "      1g.10gb: 7\n"
                "    mig-enabled: true\n"
                "version: v1\n"
            )
        },
    }
    assert yaml.safe_load(cm["data"]["config.yaml"]) == mig


def test_device_plugin_config_map_round_trips_and_sorts_keys() -> None:
    docs = {
        "l40s-dev": device_plugin_config(
            mig_strategy="mixed", sharing="time-slicing", replicas=4, resources=["nvidia.com/gpu"]
        ),
        DEVICE_PLUGIN_DEFAULT_CONFIG: device_plugin_config(
            mig_strategy="mixed", sharing=None, replicas=None, resources=[]
        ),
    }
    cm = config_map("gpuplan-device-plugin-config", "gpu-operator", docs)
    assert list(cm["data"]) == ["default", "l40s-dev"]
    assert {key: yaml.safe_load(text) for key, text in cm["data"].items()} == docs
    reordered = dict(reversed(docs.items()))
    assert cm == config_map("gpuplan-device-plugin-config", "gpu-operator", reordered)


@pytest.mark.parametrize(
    ("name", "namespace", "key"),
    [
        ("Bad_Name", "gpu-operator", "k"),
        ("ok", "gpu.operator", "k"),
        ("ok", "gpu-operator", "a/b"),
    ],
)
def test_config_map_rejects_invalid_names(name: str, namespace: str, key: str) -> None:
    with pytest.raises(ValueError):
        config_map(name, namespace, {key: {"version": "v1"}})


def test_node_label_keys() -> None:
    assert MIG_CONFIG_LABEL == "nvidia.com/mig.config"
    assert DEVICE_PLUGIN_CONFIG_LABEL == "nvidia.com/device-plugin.config"
