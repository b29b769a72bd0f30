"""Static pools on clouds (node-group labels, not node names), the NFD worker tolerating every pool
taint, and the GPU Operator chart values gpuplan derives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.emit.gpu_operator_values import NFD_WORKER_DEFAULT_TOLERATIONS, chart_values
from gpuplan.pipeline import compile_fleet
from gpuplan.plan.fleet import ClusterPlan
from tests.builders import cluster, fleet, pool, position
from tests.conftest import run

TAINTS = [
    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "inference", "effect": "NoExecute"},
]
HOSTNAMES = {"hostnames": ["infer-[0-9]+"]}
DRIVER = {"driver": {"version": "580.82.07"}}


def _cluster(provider: str, select: dict[str, Any], operator: dict[str, str], *more: str) -> str:
    """Pool infer (2 nodes, tainted, MIG) selected by select, and the GPU Operator settings given."""
    infer = pool("infer", nodes={"count": 2}, taints=TAINTS, sharing={"mig": {"layout": {"1g.10gb": 7}}}, **select)  # fmt: skip
    return cluster(infer, *more, provider=provider, components={"gpuOperator": operator})


def _check(tmp_path: Path, provider: str, select: dict[str, Any], operator: str = "v26.7.0") -> str:
    text = _cluster(provider, select, {"version": operator})
    result = run("check", "--root", str(fleet(tmp_path, {"c1": text})))
    assert "Traceback" not in result.stderr and result.code == (operator != "v26.7.0"), (
        result.stderr
    )
    return result.stderr


@pytest.mark.parametrize(
    ("provider", "label"),
    [("aws", "eks.amazonaws.com/nodegroup"), ("azure", "kubernetes.azure.com/agentpool")],
)
def test_hostnames_on_a_cloud_warn_and_name_the_node_group_label(
    tmp_path: Path, provider: str, label: str
) -> None:
    err = _check(tmp_path, provider, HOSTNAMES)
    at = position(_cluster(provider, HOSTNAMES, {"version": "v26.7.0"}), '["infer')
    assert (
        f"clusters/c1.yaml:{at}: warning: nodePools[0].hostnames: {provider} names nodes at launch"
        in err
    )
    assert (
        f"select its nodes by node group instead, nodeGroup: <group> (the {label} label), and drop hostnames"
        in err
    )


def test_hostnames_on_prem_are_fine(tmp_path: Path) -> None:
    assert "cloud-hostnames" not in _check(tmp_path, "onprem", HOSTNAMES | DRIVER)


def test_node_group_pool_needs_only_the_config_labels(tmp_path: Path) -> None:
    err = _check(tmp_path / "bare", "aws", {"labels": {"eks.amazonaws.com/nodegroup": "infer"}})
    assert (
        "pool infer selects its nodes by labels only, so gpuplan labels none of them: they must already carry "
        "nvidia.com/mig.config=gpuplan-7x1g.10gb; say so by adding these to labels, or set them as Kubernetes "
        "labels of the node group"
    ) in err
    assert "gpuplan.io/pool" not in err  # nothing selects these nodes by the pool label
    labels = {
        "labels": {
            "eks.amazonaws.com/nodegroup": "infer",
            "nvidia.com/mig.config": "gpuplan-7x1g.10gb",
        }
    }
    assert "warning" not in _check(tmp_path / "declared", "aws", labels)


def test_old_chart_renders_its_own_cluster_policy(tmp_path: Path) -> None:
    err = _check(tmp_path, "onprem", HOSTNAMES | DRIVER, operator="v26.3.3")
    at = position(_cluster("onprem", HOSTNAMES | DRIVER, {"version": "v26.3.3"}), "v26.3.3")
    assert (
        f"clusters/c1.yaml:{at}: error: components.gpuOperator.version: the gpu-operator chart v26.3.3 always renders "
        "its own ClusterPolicy named cluster-policy" in err
    )
    assert "chart-cluster-policy" not in _check(tmp_path / "new", "onprem", HOSTNAMES | DRIVER)


def _cluster_plan(tmp_path: Path, operator: str, *more: str) -> ClusterPlan:
    settings = {"version": operator, "driverVersion": "580.82.07"}
    root = fleet(tmp_path, {"c1": _cluster("onprem", HOSTNAMES, settings, *more)})
    compiled = compile_fleet(root, emit_output=False)
    assert compiled.fleet is not None and not [  # an old chart's own ClusterPolicy aside
        d
        for d in compiled.diagnostics
        if d.severity.value == "error" and d.code != "chart-cluster-policy"
    ]
    return compiled.fleet.clusters["c1"]


def test_nfd_worker_tolerates_every_pool_taint(tmp_path: Path) -> None:
    values = chart_values(_cluster_plan(tmp_path, "v26.7.0"))
    tolerations = values["node-feature-discovery"]["worker"]["tolerations"]
    assert tolerations[:2] == list(NFD_WORKER_DEFAULT_TOLERATIONS)  # the chart's own, kept
    assert tolerations[2:] == [{"effect": "NoExecute", "key": "dedicated", "operator": "Exists"}]


def test_chart_values_follow_the_release_and_the_driver_layout(tmp_path: Path) -> None:
    new = chart_values(_cluster_plan(tmp_path / "new", "v26.7.0"))
    assert new["clusterPolicy"] == {"deployCR": False}
    assert new["driver"] == {
        "enabled": True,
        "nvidiaDriverCRD": {"enabled": False, "deployDefaultCR": False},
    }
    old = chart_values(_cluster_plan(tmp_path / "old", "v26.3.3"))
    assert "clusterPolicy" not in old  # no such value before v26.7.0
    dgx = pool("dgx", "B200", cpu=224, nodes={"count": 1}, hostnames=["dgx-[0-9]+"], os="dgx-os")
    mixed = chart_values(_cluster_plan(tmp_path / "mixed", "v26.7.0", dgx))
    assert mixed["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
