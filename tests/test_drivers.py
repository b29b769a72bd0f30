"""Driver rules and defaults: the branch a GPU needs, the branches an operator release ships, the
mode each provider and OS gets, and what lands in the ClusterPolicy and NVIDIADrivers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.gpus.catalog import CATALOG
from gpuplan.model.drivers import branch
from gpuplan.plan.drivers import default_mode, ships_toolkit
from tests.builders import Raw, cluster, fleet, flow, pool, position
from tests.conftest import run

DRIVER = {"driverVersion": "580.82.07"}


def _render(tmp_path: Path, *, provider: str = "onprem", operator: str = "v26.7.0",
            settings: dict[str, Any] = DRIVER, pools: tuple[str, ...] = (), **train: Any,
            ) -> tuple[int, str, Path]:  # fmt: skip
    """Render a cluster with the GPU Operator at a version with settings, and pool train (2 nodes)."""
    components = {"gpuOperator": {"version": operator} | settings}
    text = cluster(pool("train", **train), *pools, provider=provider, components=components,
                   priority_classes=[{"name": "research", "value": 100}], cohorts=[{"name": "shared"}])  # fmt: skip
    root = fleet(tmp_path / "repo", {"c1": text})
    out = tmp_path / "out"
    result = run("render", "--root", str(root), "--out", str(out))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr, out


def _at(tmp_path: Path, value: str) -> str:
    """`clusters/c1.yaml:line:col` of a value (as written) in the cluster _render wrote under tmp_path."""
    text = (tmp_path / "repo/clusters/c1.yaml").read_text()
    return f"clusters/c1.yaml:{position(text, flow(value))}"


def _only_the_chart_error(err: str) -> bool:
    """Tell whether the one error is the old chart's own ClusterPolicy (a release gpuplan refuses)."""
    errors = [line for line in err.splitlines() if ": error: " in line]
    return len(errors) == 1 and errors[0].endswith("[chart-cluster-policy]")


def _policy(out: Path) -> dict:
    return yaml.safe_load(
        (out / "c1" / "gpu-operator" / "clusterpolicy-cluster-policy.yaml").read_text()
    )["spec"]


# --- the branch a GPU needs ---------------------------------------------------------------


def test_blackwell_with_r535_is_an_error_at_the_version(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path, gpu="B200", settings={"driverVersion": "535.309.01"})
    assert code == 1 and not out.exists()
    assert (
        f"{_at(tmp_path, '535.309.01')}: error: components.gpuOperator.driverVersion: driver 535.309.01 (R535) does not run "
        "B200 (blackwell) in pool 'train': it needs R570 or later [driver-branch-gpu]"
    ) in err


def test_blackwell_at_its_first_supported_branch_passes(tmp_path: Path) -> None:
    # R570 is Blackwell's first branch; v26.3.3 still ships R570 driver containers.
    code, err, _ = _render(
        tmp_path, gpu="B200", operator="v26.3.3", settings={"driverVersion": "570.211.01"}
    )
    assert code == 1 and _only_the_chart_error(err), err  # the driver passes; the chart does not


def test_pool_driver_version_is_checked_at_the_pool(tmp_path: Path) -> None:
    driver = {"version": "550.163.01"}
    code, err, _ = _render(tmp_path, gpu="H200-141GB", operator="v25.10.1", driver=driver)
    assert code == 1 and _only_the_chart_error(err), err  # H200's first branch is R550
    code, err, _ = _render(tmp_path / "old", gpu="H200-141GB", operator="v25.10.1",
                           driver={"version": "535.274.02"})  # fmt: skip
    assert code == 1
    assert (
        f"{_at(tmp_path / 'old', '535.274.02')}: error: nodePools[0].driver.version: driver 535.274.02 (R535) does not run H200-141GB"
        in err
    )


def test_preinstalled_version_is_checked_against_the_gpu(tmp_path: Path) -> None:
    """A DGX OS pool's stated driver is the image's: checked against the GPU, not the operator."""
    code, err, _ = _render(
        tmp_path, gpu="B200", settings={}, os="dgx-os", driver={"version": "535.288.01"}
    )
    assert code == 1 and "R535) does not run B200" in err


@pytest.mark.parametrize(
    ("gpu", "first"),
    [("B200", 570), ("GB200", 570), ("H100-SXM5-80GB", 525), ("H200-141GB", 550), ("L40S", 525), ("A100-SXM4-80GB", 450),
     ("T4", 410)],
)  # fmt: skip
def test_catalog_first_branches(gpu: str, first: int) -> None:
    assert CATALOG[gpu].min_driver_branch == first


# --- the branches an operator release ships -------------------------------------------------


def test_branch_the_release_does_not_ship_is_an_error(tmp_path: Path) -> None:
    # v26.7.0 ships R535, R580, R595 and R610 driver containers; R570 is gone.
    code, err, _ = _render(tmp_path, settings={"driverVersion": "570.211.01"})
    assert code == 1
    assert (
        f"{_at(tmp_path, '570.211.01')}: error: components.gpuOperator.driverVersion: GPU Operator v26.7.0 has no driver "
        "container for R570 (driver 570.211.01); it supports R535, R580, R595, R610"
    ) in err


def test_preinstalled_driver_is_not_held_to_the_operator_branches(tmp_path: Path) -> None:
    driver = {"version": "570.211.01"}
    code, err, out = _render(tmp_path, settings={}, os="dgx-os", driver=driver)
    assert code == 0, err
    assert _policy(out)["driver"]["enabled"] is False


def test_managed_pool_without_a_version_is_an_error(tmp_path: Path) -> None:
    code, err, _ = _render(tmp_path, settings={})
    assert code == 1
    assert (
        f"{_at(tmp_path, 'train')}: error: nodePools[0].name: pool 'train' (ubuntu on onprem) gets its driver from the GPU Operator"
        in err
    )


@pytest.mark.parametrize("bad", ['"580"', '"latest"', "580.82", '" 580.82.07"'])
def test_driver_version_is_no_free_text(tmp_path: Path, bad: str) -> None:
    code, err, _ = _render(tmp_path, settings={"driverVersion": Raw(bad)})
    assert (
        code == 1
        and f"{_at(tmp_path, Raw(bad))}: error: components.gpuOperator.driverVersion" in err
    )
    assert "Traceback" not in err


def test_branch_of_a_version() -> None:
    assert branch("580.82.07") == 580 and branch("610.57.04") == 610
    with pytest.raises(ValueError):
        branch("r580")


# --- defaults per provider and OS -----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "os", "mode", "toolkit_shipped"),
    [
        ("aws", "al2023", "preinstalled", True),
        ("aws", "bottlerocket", "preinstalled", True),
        ("aws", "ubuntu", "managed", False),
        ("azure", "ubuntu", "preinstalled", True),
        ("azure", "azurelinux", "preinstalled", True),
        ("gcp", "cos", "preinstalled", False),
        ("onprem", "ubuntu", "managed", False),
        ("onprem", "rhel", "managed", False),
        ("onprem", "dgx-os", "preinstalled", True),
    ],
)
def test_default_mode_per_provider_and_os(
    provider: str, os: str, mode: str, toolkit_shipped: bool
) -> None:
    assert default_mode(provider, os) == mode
    assert ships_toolkit(provider, os) is toolkit_shipped


def test_eks_default_is_preinstalled_driver_and_toolkit(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path, provider="aws", settings={})
    assert code == 0, err
    spec = _policy(out)
    assert spec["driver"]["enabled"] is False and spec["toolkit"]["enabled"] is False


def test_onprem_default_is_managed(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path)
    assert code == 0, err
    spec = _policy(out)
    assert spec["driver"]["enabled"] is True and spec["driver"]["version"] == "580.82.07"
    assert spec["toolkit"]["enabled"] is True and spec["driver"]["useNvidiaDriverCRD"] is False


def test_mode_can_be_forced(tmp_path: Path) -> None:
    managed = DRIVER | {"driver": {"mode": "managed"}}
    code, err, out = _render(tmp_path, provider="aws", settings=managed, os="ubuntu")
    assert code == 0, err
    assert _policy(out)["driver"]["enabled"] is True


# --- pools that need different drivers ------------------------------------------------------


SECOND_POOL = (
    pool(
        "b200",
        "B200",
        nodes={"count": 1},
        hostnames=["b200-[0-9]+"],
        driver={"version": "595.91.07"},
    ),
    pool("dgx", nodes={"count": 1}, hostnames=["dgx-[0-9]+"], os="dgx-os"),
)


def test_pools_with_different_drivers_get_nvidia_drivers(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path, pools=SECOND_POOL)
    assert code == 0, err
    assert _policy(out)["driver"]["useNvidiaDriverCRD"] is True
    folder = out / "c1" / "gpu-operator"
    names = sorted(p.name for p in folder.glob("nvidiadriver-*.yaml"))
    assert names == [
        "nvidiadriver-gpuplan-b200.yaml",
        "nvidiadriver-gpuplan-train.yaml",
    ]  # none for the DGX pool
    b200 = yaml.safe_load((folder / "nvidiadriver-gpuplan-b200.yaml").read_text())["spec"]
    assert b200["version"] == "595.91.07" and b200["nodeSelector"] == {"gpuplan.io/pool": "b200"}
    assert b200["default"] is False  # required by the v26.7.0 CRD
    train = yaml.safe_load((folder / "nvidiadriver-gpuplan-train.yaml").read_text())["spec"]
    assert train["version"] == "580.82.07"


# --- settings that need something else --------------------------------------------------------


def test_gpudirect_storage_needs_a_managed_driver(tmp_path: Path) -> None:
    code, err, _ = _render(tmp_path, provider="aws", settings={"gpuDirectStorage": True})
    assert (
        code == 1
        and "components.gpuOperator.gpuDirectStorage: GPUDirect Storage runs nvidia-fs" in err
    )


def test_service_monitor_needs_the_exporter(tmp_path: Path) -> None:
    settings = DRIVER | {"dcgmExporter": False, "serviceMonitor": {"interval": "30s"}}
    code, err, _ = _render(tmp_path, settings=settings)
    assert code == 1 and "serviceMonitor scrapes the DCGM exporter" in err


def test_mixed_toolkit_needs_is_a_warning(tmp_path: Path) -> None:
    code, err, _ = _render(tmp_path, pools=SECOND_POOL)
    assert code == 0
    assert (
        "the operator's container toolkit runs on every GPU node, also on pools whose image ships one (dgx)"
        in err
    )


def test_bottlerocket_pool_warns_about_its_own_device_plugin(tmp_path: Path) -> None:
    code, err, _ = _render(tmp_path, provider="aws", settings={}, os="bottlerocket")
    assert code == 0
    assert (
        f"{_at(tmp_path, 'bottlerocket')}: warning: nodePools[0].os: pool 'train': Bottlerocket's NVIDIA variant runs its own device plugin"
        in err
    )


def test_managed_on_an_image_with_a_driver_warns(tmp_path: Path) -> None:
    managed = DRIVER | {"driver": {"mode": "managed"}}
    code, err, _ = _render(tmp_path, provider="aws", settings=managed)
    assert code == 0
    assert (
        "warning: nodePools[0].name: pool 'train' runs al2023 on aws, whose image ships the driver"
        in err
    )


def test_upgrade_policy_counts_and_percentages(tmp_path: Path) -> None:
    policy = DRIVER | {"driver": {"upgradePolicy": {"maxUnavailable": 2}}}
    code, err, out = _render(tmp_path, settings=policy)
    assert code == 0, err
    assert _policy(out)["driver"]["upgradePolicy"]["maxUnavailable"] == 2  # an int, not "2"
    bad = DRIVER | {"driver": {"upgradePolicy": {"maxUnavailable": "2"}}}
    code, err, _ = _render(tmp_path / "bad", settings=bad)
    assert code == 1 and "components.gpuOperator.driver.upgradePolicy.maxUnavailable" in err


def test_host_mofed_needs_rdma(tmp_path: Path) -> None:
    rdma = DRIVER | {"driver": {"rdma": {"useHostMofed": True}}}
    code, err, _ = _render(tmp_path, settings=rdma)
    assert code == 1 and "useHostMofed only matters with GPUDirect RDMA" in err


@pytest.mark.parametrize(
    ("operator", "driver_version", "setting", "env"),
    [
        ("v26.7.0", "580.173.02", "", None),  # the validator's own default: run
        ("v26.7.0", "580.173.02", "skip", [{"name": "WITH_WORKLOAD", "value": "false"}]),
    ],
)
def test_validator_workload_per_release(
    tmp_path: Path, operator: str, driver_version: str, setting: str, env: list | None
) -> None:
    settings = {"driverVersion": driver_version} | (
        {"validatorWorkload": setting} if setting else {}
    )
    code, err, out = _render(tmp_path, operator=operator, settings=settings)
    assert code == 0, err
    validator = _policy(out)["validator"]
    assert validator.get("plugin", {}).get("env") == env
