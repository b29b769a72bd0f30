"""The Cluster Autoscaler on managed node groups: its Application, the priority expander's order,
always-on nodes.min, and the node-group requirements `gpuplan requirements` prints."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from ruamel.yaml import YAML

from gpuplan.pipeline import compile_fleet
from tests.conftest import run

CASE = Path(__file__).resolve().parent / "cases" / "cluster-autoscaler-eks"
APPLICATION = CASE / "expected" / "argocd" / "ca-explicit" / "cluster-autoscaler.yaml"
ON_DEMAND = "eks-h100-od-3ac6f1b2-0d4e-4c1a-9f1e-2b7d5e8a9c10"
SPOT = "eks-h100-spot-7d1e2f3a-4b5c-4d6e-8f70-81a2b3c4d5e6"


def _values(path: Path) -> dict:
    documents = list(YAML(typ="safe").load_all(path.read_text()))
    return documents[0]["spec"]["source"]["helm"]["valuesObject"]


def _chosen(priorities: dict[int, list[str]], groups: list[str]) -> list[str]:
    """Return the groups the priority expander may pick: those matched under the highest matching value.

    kubernetes/autoscaler cluster-autoscaler-chart-9.59.0 cluster-autoscaler/expander/priority/readme.md:
    "The highest value wins"; a group no expression matches is never expanded.
    """
    for value in sorted(priorities, reverse=True):
        matched = [g for g in groups if any(re.search(p, g) for p in priorities[value])]
        if matched:
            return matched
    return []


def test_production_prefers_on_demand() -> None:
    values = _values(APPLICATION)
    assert "priority" in values["extraArgs"]["expander"].split(
        ","
    )  # else the chart writes no ConfigMap
    priorities = YAML(typ="safe").load(values["expanderPriorities"])
    assert all(
        isinstance(k, int) and k > 0 for k in priorities
    )  # positive values, as the readme asks
    assert _chosen(priorities, [ON_DEMAND, SPOT]) == [ON_DEMAND]
    assert _chosen(priorities, [SPOT]) == [SPOT]  # spot still grows when it is the only fit
    assert _chosen(priorities, ["eks-unrelated"]) == [
        "eks-unrelated"
    ]  # the catch-all keeps other groups scaling


def test_priority_of_the_pool_overrides_the_capacity_type(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE / "input", root)
    cluster = root / "clusters" / "ca-explicit.yaml"
    cluster.write_text(
        cluster.read_text().replace("capacityType: spot}", "capacityType: spot, priority: 90}")
    )
    out = tmp_path / "out"
    result = run("render", "--root", str(root), "--out", str(out))
    assert result.code == 0, result.stderr
    priorities = YAML(typ="safe").load(
        _values(out / "argocd" / "ca-explicit" / "cluster-autoscaler.yaml")["expanderPriorities"]
    )
    assert _chosen(priorities, [ON_DEMAND, SPOT]) == [SPOT]


def test_explicit_groups_carry_the_pools_min_and_max() -> None:
    groups = {
        g["name"]: (g["minSize"], g["maxSize"]) for g in _values(APPLICATION)["autoscalingGroups"]
    }
    assert groups == {ON_DEMAND: (2, 4), SPOT: (0, 8)}


def test_twin_pools_are_balanced_and_others_not() -> None:
    assert (
        "balance-similar-node-groups" not in _values(APPLICATION)["extraArgs"]
    )  # on-demand and spot differ
    example = (
        Path(__file__).resolve().parents[1]
        / "output"
        / "argocd"
        / "eks-batch"
        / "cluster-autoscaler.yaml"
    )
    values = _values(example)
    assert values["extraArgs"]["balance-similar-node-groups"] is True
    assert values["autoDiscovery"] == {"clusterName": "eks-batch"}


def test_cluster_autoscaler_keeps_nodes_min_up() -> None:
    fleet = compile_fleet(CASE / "input", emit_output=False).fleet
    assert fleet is not None
    pools = fleet.clusters["ca-explicit"].pools
    assert pools["h100-od"].nodes_least == 2 and pools["h100-od"].nodes_most == 4
    assert pools["h100-od"].capacity("nvidia.com/gpu", at_least=True) == 16
    assert not pools["h100-od"].karpenter_made


def test_a_cluster_autoscaler_pool_above_its_minimum_warns_like_a_karpenter_pool() -> None:
    result = run("check", "--root", str(CASE / "input"))
    assert result.code == 0, result.stderr
    assert "Karpenter" not in result.stderr  # not Karpenter's warning: the group keeps nodes.min
    warnings = [line for line in result.stderr.splitlines() if "[pool-capacity-autoscaled]" in line]
    assert warnings == [
        "clusters/ca-explicit.yaml:30:18: warning: nodePools[0].nodes.min: tenants' 32 GPUs of pool "
        "h100-spot (prod 32) exceed the 0 that nodes.min 0 keeps up: the rest waits for the Cluster "
        "Autoscaler to grow node group h100-spot; raise nodes.min for capacity that must stay up "
        "[pool-capacity-autoscaled]"
    ]  # h100-od's quota fits in the nodes its minimum keeps up
    assert run("check", "--root", str(CASE / "input"), "--strict").code == 1


def test_requirements_print_the_scale_from_zero_tags() -> None:
    result = run("requirements", "--root", str(CASE / "input"))
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    spot = lines.index("ca-explicit: pool h100-spot, node group h100-spot (Cluster Autoscaler)")
    end = next((i for i in range(spot + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    block = lines[spot:end]
    assert "  node group label k8s.amazonaws.com/accelerator = nvidia-h100-sxm5-80gb" in block
    assert "  ASG name " + SPOT in block
    assert "  tag k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu = 8" in block
    assert (
        "  tag k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu = present:NoSchedule"
        in block
    )
    assert (
        "  tag k8s.io/cluster-autoscaler/node-template/label/eks.amazonaws.com/nodegroup = h100-spot"
        in block
    )


def test_requirements_of_a_bad_fleet_fail_with_diagnostics() -> None:
    result = run("requirements", "--root", str(CASE.parent / "error-cluster-autoscaler" / "input"))
    assert result.code == 1 and result.stdout == ""
    assert "needs nodeGroup" in result.stderr and "Traceback" not in result.stderr
    unknown = run("requirements", "--root", str(CASE / "input"), "--cluster", "nope")
    assert unknown.code == 1 and "--cluster nope: no such cluster" in unknown.stderr


AKS = Path(__file__).resolve().parent / "cases" / "cluster-autoscaler-aks" / "expected"
AKS_CONFIGMAP = (
    AKS / "aks-ca" / "cluster-autoscaler" / "configmap-cluster-autoscaler-priority-expander.yaml"
)


def test_aks_gets_the_expander_configmap_in_kube_system_and_no_chart() -> None:
    configmap = YAML(typ="safe").load(AKS_CONFIGMAP.read_text())
    assert configmap["metadata"]["namespace"] == "kube-system"
    priorities = YAML(typ="safe").load(configmap["data"]["priorities"])
    # AKS names a node pool's scale set aks-<pool>-<number>-vmss; on-demand first, spot as the fallback.
    on_demand, spot = "aks-a100od-12345678-vmss", "aks-a100spot-12345678-vmss"
    assert _chosen(priorities, [on_demand, spot]) == [on_demand]
    assert _chosen(priorities, [spot]) == [spot]
    assert not (AKS / "argocd" / "aks-ca" / "cluster-autoscaler.yaml").exists()
    kustomization = YAML(typ="safe").load((AKS / "aks-ca" / "kustomization.yaml").read_text())
    assert AKS_CONFIGMAP.relative_to(AKS / "aks-ca").as_posix() in kustomization["resources"]


def test_a_pool_named_in_node_groups_is_matched_by_that_name(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(AKS.parent / "input", root)
    cluster = root / "clusters" / "aks-ca.yaml"
    cluster.write_text(
        cluster.read_text().replace(
            "    clusterName: prod-aks-weu\n",
            "    clusterName: prod-aks-weu\n    nodeGroups: {a100-od: legacy-a100-vmss}\n",
        )
    )
    out = tmp_path / "out"
    result = run("render", "--root", str(root), "--out", str(out))
    assert result.code == 0, result.stderr
    rendered = out / AKS_CONFIGMAP.relative_to(AKS)
    priorities = YAML(typ="safe").load(
        YAML(typ="safe").load(rendered.read_text())["data"]["priorities"]
    )
    assert priorities[20] == ["^legacy-a100-vmss$"]
    assert _chosen(priorities, ["legacy-a100-vmss", "aks-a100spot-1-vmss"]) == ["legacy-a100-vmss"]


def test_capacity_marks_a_cluster_autoscaler_min_as_always_on_and_karpenters_not() -> None:
    project = Path(__file__).resolve().parents[1]
    eks = run("capacity", "--root", str(project), "--cluster", "eks-batch").stdout.splitlines()
    assert "  l40s-od-a: L40S, exclusive, 1-6 nodes (1 always on), 24 GPUs" in eks
    assert "  l40s-spot: L40S, exclusive, 0-10 nodes (0 always on), 40 GPUs" in eks
    karpenter = run("capacity", "--root", str(project), "--cluster", "h100-prod").stdout
    assert "always on" not in karpenter  # h100-train's nodes.min is no capacity anyone can count on
    table = run(
        "capacity", "--root", str(project), "--cluster", "eks-batch", "--format", "markdown"
    )
    assert "| 1-6 (1 always on) | 24 |" in table.stdout
    rows = json.loads(
        run("capacity", "--root", str(project), "--cluster", "eks-batch", "--format", "json").stdout
    )["pools"]
    od = next(r for r in rows if r["pool"] == "l40s-od-a")
    assert (od["autoscaler"], od["always_on_nodes"], od["always_on"]) == (
        "cluster-autoscaler",
        1,
        4,
    )


def test_html_report_names_the_autoscaler_and_its_always_on_nodes() -> None:
    project = Path(__file__).resolve().parents[1]
    page = run("report", "--root", str(project), "--cluster", "eks-batch", "--out", "-").stdout
    assert (
        "1\u20136 nodes (Cluster Autoscaler, 1 always on) \u00d7 4 GPUs = 24 GPUs at most" in page
    )
    assert "Cluster Autoscaler chart 9.59.0" in page
    gke = run("report", "--root", str(project), "--cluster", "gke-serving", "--out", "-").stdout
    assert "Cluster Autoscaler chart" not in gke  # GKE's own autoscaler: no chart installed
