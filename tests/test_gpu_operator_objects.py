"""Tests for the GPU Operator objects: mig-parted and device-plugin configs, ConfigMaps,
and the ClusterPolicy checked strictly against the upstream CRD."""

from __future__ import annotations

import copy
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
    config_map,
    device_plugin_config,
    mig_entry,
    mig_parted_config,
)
from gpuplan.emit.gpu_operator_policy import cluster_policy
from gpuplan.validate.crds import CrdIndex

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
def crd_schema(crds: CrdIndex) -> dict:
    """Return the ClusterPolicy openAPIV3Schema (not yet made strict) of the tests' CRDs."""
    [crd] = crds.lookup("nvidia.com", "ClusterPolicy")
    return crd.versions["v1"].schema


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
        {"operator_version": "v24.9.0"},  # older than the 18 months gpuplan supports
        {"mig_strategy": "both"},
        {"mig_default": "all-1g.10gb"},
        {"dcgm_exporter": "yes"},
        {"driver_version": ""},
        {"driver_version": "580"},  # no free text: <branch>.<minor>[.<patch>]
        {"driver_version": None},  # a managed driver needs its version
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


# --- every supported release -----------------------------------------------------------

import gzip  # noqa: E402
import json  # noqa: E402

from gpuplan.components.gpu_operator import COMPONENT, release  # noqa: E402
from gpuplan.emit.gpu_operator_policy import Settings, Upgrade, nvidia_driver  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[1] / "gpuplan" / "crds" / "gpu-operator"
EVERYTHING_ON = Settings(
    use_driver_crd=True,
    rdma=True,
    use_host_mofed=True,
    upgrade=Upgrade(
        max_parallel_upgrades=2, max_unavailable="10%", drain=True, drain_timeout_seconds=600
    ),
    gds=True,
    service_monitor={"interval": "30s", "additionalLabels": {"release": "prometheus"}},
    node_status_exporter=True,
    mirror="registry.example.com:5000/mirror",
    repositories={"driver": "registry.example.com/drivers"},
    pull_secrets=("nvcr-pull",),
)


def _shipped_validator(version: str, plural: str) -> jsonschema.Draft7Validator:
    """Return a strict validator for the CRD gpuplan ships for one GPU Operator release."""
    crd = json.loads(
        gzip.decompress((SHIPPED / version / f"{plural}.nvidia.com.json.gz").read_bytes())
    )
    return jsonschema.Draft7Validator(
        _strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    )


def test_registry_covers_the_last_18_months() -> None:
    assert COMPONENT.versions[0] == "v25.3.1" and COMPONENT.versions[-1] == "v26.7.0"
    assert len(COMPONENT.versions) == 11
    assert all(release(v).crds == v and release(v).chart.version == v for v in COMPONENT.versions)


@pytest.mark.parametrize("version", COMPONENT.versions)
@pytest.mark.parametrize("settings", [Settings(), EVERYTHING_ON], ids=["defaults", "everything-on"])
def test_every_release_validates_against_its_own_crds(version: str, settings: Settings) -> None:
    policy = _policy(operator_version=version, settings=settings)
    assert _errors(_shipped_validator(version, "clusterpolicies"), policy) == []
    driver = nvidia_driver(
        operator_version=version, name="gpuplan-train", driver_version="580.82.07",
        node_selector={"gpuplan.io/pool": "train"}, settings=settings,
    )  # fmt: skip
    assert _errors(_shipped_validator(version, "nvidiadrivers"), driver) == []


def test_newest_fields_are_refused_by_an_older_crd() -> None:
    """The gating matters: v26.7.0's ClusterPolicy does not validate against v25.3.1's CRD."""
    errors = _errors(
        _shipped_validator("v25.3.1", "clusterpolicies"), _policy(operator_version="v26.7.0")
    )
    assert any("nriPluginEnabled" in e for e in errors) and any(
        "kubeletRootDir" in e for e in errors
    )


def test_older_release_renders_its_own_operands_and_fields() -> None:
    spec = _policy(operator_version="v25.3.1")["spec"]

    def ref(section: dict) -> str:
        return f"{section['repository']}/{section['image']}:{section['version']}"

    assert ref(spec["devicePlugin"]) == "nvcr.io/nvidia/k8s-device-plugin:v0.17.2"
    assert ref(spec["toolkit"]) == "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04"
    assert (
        ref(spec["migManager"]) == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.1-ubuntu20.04"
    )
    assert ref(spec["validator"]) == "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.1"
    assert ref(spec["driver"]["manager"]) == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.0"
    assert spec["cdi"] == {"default": False, "enabled": False}  # chart default then; no NRI field
    assert "kubeletRootDir" not in spec["hostPaths"]
    assert "scrapeTimeout" not in spec["dcgmExporter"]["serviceMonitor"]


def test_v26_7_0_operands_are_the_values_yaml_ones() -> None:
    """The three versions once inferred, as values.yaml at v26.7.0 sets them."""
    spec = _policy()["spec"]
    assert spec["toolkit"]["version"] == "v1.20.0"
    assert spec["dcgmExporter"]["version"] == "4.6.0-4.8.3-distroless"
    assert spec["dcgm"]["version"] == "4.6.0-1-ubuntu24.04"


def test_private_registry_rewrites_every_operand() -> None:
    spec = _policy(settings=EVERYTHING_ON)["spec"]
    assert spec["driver"]["repository"] == "registry.example.com/drivers"
    assert spec["toolkit"]["repository"] == "registry.example.com:5000/mirror/nvidia/k8s"
    assert (
        spec["driver"]["manager"]["repository"]
        == "registry.example.com:5000/mirror/nvidia/cloud-native"
    )
    for name in (
        "driver",
        "toolkit",
        "devicePlugin",
        "gfd",
        "dcgm",
        "dcgmExporter",
        "migManager",
        "validator",
        "gds",
    ):
        assert spec[name]["imagePullSecrets"] == ["nvcr-pull"], name
        assert not spec[name]["repository"].startswith("nvcr.io"), name


def test_settings_land_in_their_fields() -> None:
    spec = _policy(settings=EVERYTHING_ON)["spec"]
    assert spec["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}
    assert spec["driver"]["useNvidiaDriverCRD"] is True
    assert spec["driver"]["kernelModuleType"] == "open"  # GDS needs the open modules
    assert spec["gds"]["enabled"] is True and spec["gds"]["image"] == "nvidia-fs"
    policy = spec["driver"]["upgradePolicy"]
    assert policy["maxParallelUpgrades"] == 2 and policy["maxUnavailable"] == "10%"
    assert policy["drain"] == {
        "deleteEmptyDir": False,
        "enable": True,
        "force": False,
        "timeoutSeconds": 600,
    }
    monitor = spec["dcgmExporter"]["serviceMonitor"]
    assert monitor["enabled"] is True and monitor["interval"] == "30s"
    assert monitor["additionalLabels"] == {"release": "prometheus"}
    assert spec["nodeStatusExporter"]["enabled"] is True


def test_preinstalled_driver_and_toolkit() -> None:
    spec = _policy(driver_version=None, settings=Settings(driver_enabled=False, toolkit=False))[
        "spec"
    ]
    assert spec["driver"]["enabled"] is False and spec["toolkit"]["enabled"] is False
    assert spec["driver"]["version"] == "595.91.07"  # unused; the chart's default


def test_nvidia_driver_fields_follow_the_release() -> None:
    def driver(version: str) -> dict:
        return nvidia_driver(
            operator_version=version, name="gpuplan-b200", driver_version="580.82.07",
            node_selector={"gpuplan.io/pool": "b200"}, settings=Settings(),
        )["spec"]  # fmt: skip

    assert driver("v26.7.0")["default"] is False and "upgradePolicy" in driver("v26.7.0")
    assert "default" not in driver("v26.3.3") and "upgradePolicy" not in driver("v26.3.3")
    with pytest.raises(ValueError, match="node selector"):
        nvidia_driver(
            operator_version="v26.7.0",
            name="x",
            driver_version="580.82.07",
            node_selector={},
            settings=Settings(),
        )


def test_validator_workload_follows_the_chart_values() -> None:
    env = [{"name": "WITH_WORKLOAD", "value": "false"}]
    assert _policy(operator_version="v25.3.2")["spec"]["validator"]["plugin"] == {"env": env}
    assert "plugin" not in _policy(operator_version="v25.3.3")["spec"]["validator"]


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"version": "v1", "flags": {1: "a"}}, {"version": "v1", "flags": {"1": "a"}}),
        ({"version": "v1", "count": 1}, {"version": "v1", "count": True}),
        ({"version": "v1", "count": 1}, {"version": "v1", "count": 1.0}),
    ],
)
def test_config_map_text_is_kept_per_document_not_per_look(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    """Documents that print the same JSON but different YAML keep their own text, each what PyYAML writes."""
    first, second = (config_map("cfg", "gpu-operator", {"config.yaml": d}) for d in (one, other))
    for made, document in ((first, one), (second, other)):
        assert made["data"]["config.yaml"] == yaml.safe_dump(document, sort_keys=True)
    assert first["data"] != second["data"]
    again = config_map("cfg", "gpu-operator", {"config.yaml": copy.deepcopy(one)})
    assert again == first
