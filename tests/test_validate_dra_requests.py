"""`gpuplan validate` on DRA claims as the API server checks them in Go (counts, allocation modes,
request names, `exactly` with `firstAvailable`, CEL in claim selectors), on every resource.k8s.io
version gpuplan supports; and Kueue's onFlavors webhook rule only on the releases that have it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import run

GOOD = {
    "v1": {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
            {
                "name": "any",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.nvidia.com"},
                    {"name": "mig", "deviceClassName": "mig.nvidia.com", "allocationMode": "All"},
                ],
            },
        ],
        "constraints": [{"requests": ["gpu", "any/big"], "matchAttribute": "gpu.nvidia.com/uuid"}],
    },
    "v1beta1": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}]},
}


def _template(version: str, devices: dict) -> dict:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "claim", "namespace": "team"},
        "spec": {"spec": {"devices": devices}},
    }


def _validate(tmp_path: Path, obj: dict, *args: str) -> str:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    result = run("validate", str(path), "--kubernetes-version", "1.34", *args)
    assert result.code in (0, 1), result.stderr
    return result.stderr


@pytest.mark.parametrize("version", ["v1", "v1beta2"])
def test_valid_claims_pass(tmp_path: Path, version: str) -> None:
    assert " error: " not in _validate(tmp_path, _template(version, GOOD["v1"]))


def test_valid_v1beta1_claim_passes(tmp_path: Path) -> None:
    assert " error: " not in _validate(tmp_path, _template("v1beta1", GOOD["v1beta1"]))


@pytest.mark.parametrize(
    ("version", "devices", "path", "message"),
    [
        (
            "v1",
            {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": "gpu.nvidia.com"},
                        "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}],
                    }
                ]
            },
            "spec.spec.devices.requests[0]",
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        ),
        (
            "v1beta1",
            {
                "requests": [
                    {
                        "name": "gpu",
                        "deviceClassName": "gpu.nvidia.com",
                        "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}],
                    }
                ]
            },
            "spec.spec.devices.requests[0]",
            "multiple fields are set",
        ),
        (
            "v1",
            {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "allocationMode": "All",
                            "count": 2,
                        },
                    }
                ]
            },
            "spec.spec.devices.requests[0].exactly.count",
            "must not be specified when allocationMode is 'All'",
        ),
        (
            "v1beta2",
            {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
                ]
            },
            "spec.spec.devices.requests[1].name",
            "Duplicate value: 'gpu'",
        ),
        (
            "v1",
            {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                "config": [
                    {
                        "requests": ["gpu/a"],
                        "opaque": {"driver": "gpu.nvidia.com", "parameters": {}},
                    }
                ],
            },
            "spec.spec.devices.config[0].requests[0]",
            "must be the name of a request in the claim",
        ),
        (
            "v1",
            {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "selectors": [{"cel": {"expression": "device.driver =="}}],
                        },
                    }
                ]
            },
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression",
            "CEL selector does not compile",
        ),
        (
            "v1",
            {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": f"s{i}", "deviceClassName": "gpu.nvidia.com"} for i in range(9)
                        ],
                    }
                ]
            },
            "spec.spec.devices.requests[0].firstAvailable",
            "must have at most 8 items",
        ),
    ],
)
def test_invalid_claims_are_errors(
    tmp_path: Path, version: str, devices: dict, path: str, message: str
) -> None:
    err = _validate(tmp_path, _template(version, devices))
    line = next((x for x in err.splitlines() if f"ResourceClaimTemplate/claim {path}:" in x), "")
    assert " error: " in line and message in line, err


QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "ClusterQueue",
    "metadata": {"name": "team"},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "h100", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
            }
        ],
        "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["b200"]}]},
    },
}


def test_on_flavors_rule_only_where_kueue_has_it(tmp_path: Path) -> None:
    wrong = "onFlavors[0]: must name a flavor of this ClusterQueue's resourceGroups"
    assert wrong in _validate(tmp_path, QUEUE, "--component", "kueue=v0.16.9")
    assert wrong not in _validate(tmp_path, QUEUE, "--component", "kueue=v0.14.4")
