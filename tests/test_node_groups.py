"""Static pools on clouds (node-group labels, not node names), the NFD worker tolerating every pool
taint, and the GPU Operator chart values gpuplan derives."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.emit.gpu_operator_values import NFD_WORKER_DEFAULT_TOLERATIONS, chart_values
from gpuplan.pipeline import compile_fleet
from gpuplan.plan.fleet import ClusterPlan
from tests.conftest import run, write_repo

CLUSTER = """\
name: c1
kubernetesVersion: "1.33"
provider: {provider}
gitops: {{repoURL: https://git.example.com/fleet.git}}
components:
  gpuOperator: {{version: {operator}}}
nodePools:
  - name: infer
    gpu: H100-SXM5-80GB
    gpusPerNode: 8
    cpu: 192
    memory: 1900Gi
    nodes: {{count: 2}}
{select}
    taints:
      - {{key: nvidia.com/gpu, value: present, effect: NoSchedule}}
      - {{key: dedicated, value: inference, effect: NoExecute}}
    sharing: {{mig: {{layout: {{1g.10gb: 7}}}}}}
"""
HOSTNAMES = '    hostnames: ["infer-[0-9]+"]'


def _check(tmp_path: Path, provider: str, select: str, operator: str = "v26.7.0") -> str:
    text = CLUSTER.format(provider=provider, select=select, operator=operator)
    result = run("check", "--root", str(write_repo(tmp_path, {"clusters/c1.yaml": text})))
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
    assert (
        f"clusters/c1.yaml:14:16: warning: nodePools[0].hostnames: {provider} names nodes at launch"
        in err
    )
    assert (
        f"select its nodes by node group instead, nodeGroup: <group> (the {label} label), and drop hostnames"
        in err
    )


def test_hostnames_on_prem_are_fine(tmp_path: Path) -> None:
    assert "cloud-hostnames" not in _check(
        tmp_path, "onprem", HOSTNAMES + '\n    driver: {version: "580.82.07"}'
    )


def test_node_group_pool_needs_only_the_config_labels(tmp_path: Path) -> None:
    err = _check(tmp_path / "bare", "aws", "    labels: {eks.amazonaws.com/nodegroup: infer}")
    assert (
        "pool infer selects its nodes by labels only, so gpuplan labels none of them: they must already carry "
        "nvidia.com/mig.config=gpuplan-7x1g.10gb; say so by adding these to labels, or set them as Kubernetes "
        "labels of the node group"
    ) in err
    assert "gpuplan.io/pool" not in err  # nothing selects these nodes by the pool label
    labels = (
        "    labels: {eks.amazonaws.com/nodegroup: infer, nvidia.com/mig.config: gpuplan-7x1g.10gb}"
    )
    assert "warning" not in _check(tmp_path / "declared", "aws", labels)


def test_old_chart_renders_its_own_cluster_policy(tmp_path: Path) -> None:
    err = _check(
        tmp_path, "onprem", HOSTNAMES + '\n    driver: {version: "580.82.07"}', operator="v26.3.3"
    )
    assert (
        "clusters/c1.yaml:6:26: error: components.gpuOperator.version: the gpu-operator chart v26.3.3 always renders "
        "its own ClusterPolicy named cluster-policy" in err
    )
    assert "chart-cluster-policy" not in _check(
        tmp_path / "new", "onprem", HOSTNAMES + '\n    driver: {version: "580.82.07"}'
    )


def _cluster_plan(tmp_path: Path, operator: str, extra_pool: str = "") -> ClusterPlan:
    text = CLUSTER.format(provider="onprem", select=HOSTNAMES, operator=operator) + extra_pool
    text = text.replace(
        "  gpuOperator: {version: " + operator + "}",
        f'  gpuOperator: {{version: {operator}, driverVersion: "580.82.07"}}',
    )
    root = write_repo(tmp_path, {"clusters/c1.yaml": text})
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
    dgx = '  - {name: dgx, gpu: B200, gpusPerNode: 8, cpu: 224, memory: 1900Gi, nodes: {count: 1}, hostnames: ["dgx-[0-9]+"], os: dgx-os}\n'
    mixed = chart_values(_cluster_plan(tmp_path / "mixed", "v26.7.0", dgx))
    assert mixed["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
