"""Static pools found on every provider (nodeGroup, hostnames, taints through NFD) and Karpenter as
it really runs: static NodePools, no minimum for autoscaled pools, drift inside a maintenance window."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.check.nfd import shared_name
from gpuplan.emit.karpenter import budgets, closed_gaps
from gpuplan.emit.nfd import master_values
from gpuplan.model.cluster import MaintenanceWindow
from gpuplan.pipeline import compile_fleet
from tests import builders
from tests.builders import KUEUE, allocation, aws_karpenter, cluster, position, tenant
from tests.conftest import run, write_repo

TENANT = tenant("t", allocation(quotas=[{"pool": "p", "gpus": 8}]))
BY_NAME = {"nodes": {"count": 2}, "hostnames": ["gpu-.*"]}
BY_GROUP = {"nodes": {"count": 2}, "nodeGroup": "gpu-a"}


def _files(provider: str, pool: dict[str, Any], karpenter: dict[str, Any] | None = None,
           tenant: bool = False, operator: dict[str, Any] | None = None, *more: str,
           ) -> dict[str, str]:  # fmt: skip
    """Cluster c1 with Kueue (and Karpenter, the GPU Operator when given), and pool p with fields."""
    components = ({"gpuOperator": operator} if operator else {}) | {"kueue": KUEUE}
    components |= {"karpenter": karpenter} if karpenter else {}
    text = cluster(builders.pool("p", **pool), *more, provider=provider, components=components)
    return {"clusters/c1.yaml": text} | ({"tenants/t.yaml": TENANT} if tenant else {})


def _check(tmp_path: Path, files: dict[str, str]) -> tuple[int, str]:
    result = run("check", "--root", str(write_repo(tmp_path, files)))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr


def _objects(tmp_path: Path, files: dict[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    result = compile_fleet(write_repo(tmp_path, files))
    errors = [d.text() for d in result.diagnostics if d.severity.value == "error"]
    assert not errors, errors
    return {(m.kind, m.name): m.obj for m in result.manifests}


def _karpenter(version: str = "v1.14.1", **extra: Any) -> dict[str, Any]:
    return aws_karpenter(version) | extra


# --- nodeGroup: static pools on clouds selected by the node-group label ----------------------------


@pytest.mark.parametrize(
    ("provider", "label"),
    [
        ("aws", "eks.amazonaws.com/nodegroup"),
        ("azure", "kubernetes.azure.com/agentpool"),
        ("gcp", "cloud.google.com/gke-nodepool"),
    ],
)
def test_node_group_selects_the_pool_by_the_provider_label(
    tmp_path: Path, provider: str, label: str
) -> None:
    # GKE pools state the accelerator label GKE puts on GPU nodes (gpuplan requires it there).
    accelerator = (
        {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"} if provider == "gcp" else {}
    )
    pool = BY_GROUP | {"taints": []} | ({"labels": accelerator} if accelerator else {})
    found = _objects(tmp_path, _files(provider, pool))
    flavor = found[("ResourceFlavor", "p")]
    assert flavor["spec"]["nodeLabels"] == {label: "gpu-a", **accelerator}
    assert not any(kind == "NodeFeatureRule" for kind, _ in found)  # nodes gpuplan does not label


def test_node_group_on_prem_and_with_hostnames_are_errors(tmp_path: Path) -> None:
    files = _files("onprem", BY_GROUP)
    code, err = _check(tmp_path / "onprem", files)
    assert code == 1
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], 'gpu-a')}: error: nodePools[0].nodeGroup: nodeGroup selects nodes by a cloud's node-group label, which onprem nodes have none of"
        in err
    )
    code, err = _check(tmp_path / "both", _files("aws", BY_GROUP | BY_NAME))
    assert code == 1
    assert "error: nodePools[0].hostnames: set nodeGroup or hostnames, not both" in err


def test_a_static_pool_needs_something_to_select_it(tmp_path: Path) -> None:
    files = _files("aws", {"nodes": {"count": 2}})
    code, err = _check(tmp_path, files)
    assert code == 1
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '{count: 2}')}: error: nodePools[0].nodes: a static pool needs nodeGroup, hostnames or labels"
        in err
    )


def test_hostnames_on_aws_warn_and_point_to_node_group(tmp_path: Path) -> None:
    code, err = _check(tmp_path, _files("aws", BY_NAME))
    assert code == 0
    assert "warning: nodePools[0].hostnames: aws names nodes at launch" in err
    assert (
        "nodeGroup: <group> (the eks.amazonaws.com/nodegroup label), and drop hostnames [cloud-hostnames]"
        in err
    )


# --- taints of static pools: applied by NFD, or a warning ---------------------------------------------


def test_hostname_pool_taints_go_into_the_node_feature_rule(tmp_path: Path) -> None:
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
              {"key": "example.com/team", "effect": "NoExecute"}]  # fmt: skip
    files = _files("onprem", BY_NAME | {"taints": taints})
    rule = _objects(tmp_path, files)[("NodeFeatureRule", "gpuplan-p")]["spec"]["rules"][0]
    assert rule["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "example.com/team", "effect": "NoExecute"},
    ]
    fleet = compile_fleet(tmp_path, emit_output=False).fleet
    assert fleet is not None
    assert master_values(fleet.clusters["c1"]) == {
        "enableTaints": True
    }  # nfd-master applies them only so


def test_taints_nfd_refuses_are_left_out_with_a_warning(tmp_path: Path) -> None:
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
              {"key": "node.kubernetes.io/gpu", "effect": "NoSchedule"}]  # fmt: skip
    files = _files("onprem", BY_NAME | {"taints": taints})
    code, err = _check(tmp_path / "check", files)
    assert code == 0
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '{key: dedicated')}: warning: nodePools[0].taints[0]: nfd-master sets no taint without a prefix (example.com/key), so taint dedicated of pool p is not applied"
        in err
    )
    assert (
        "warning: nodePools[0].taints[1]: nfd-master sets no taint in the kubernetes.io domain (except feature.node.kubernetes.io)"
        in err
    )
    rule = _objects(tmp_path / "render", files)[("NodeFeatureRule", "gpuplan-p")]["spec"]["rules"][
        0
    ]
    assert "taints" not in rule
    fleet = compile_fleet(tmp_path / "render", emit_output=False).fleet
    assert fleet is not None and master_values(fleet.clusters["c1"]) == {}


def test_default_taint_on_a_node_group_pool_warns(tmp_path: Path) -> None:
    files = _files("aws", BY_GROUP)
    code, err = _check(tmp_path / "default", files)
    assert code == 0
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], 'p', after='- name: ')}: warning: nodePools[0].name: pool p's taints default to nvidia.com/gpu=present:NoSchedule, "
        "which gpuplan cannot put on nodes it does not label (no NodeFeatureRule selects them): taint the node group so"
    ) in err
    stated = BY_GROUP | {
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    }
    assert "static-pool-taints" not in _check(tmp_path / "stated", _files("aws", stated))[1]


# --- Karpenter: static NodePools ------------------------------------------------------------------

STATIC = {"nodes": {"count": 3}, "karpenter": {"instanceTypes": ["p5.48xlarge"]}}


def test_count_pool_with_karpenter_is_a_static_node_pool(tmp_path: Path) -> None:
    found = _objects(tmp_path, _files("aws", STATIC, _karpenter()))
    spec = found[("NodePool", "p")]["spec"]
    assert spec["replicas"] == 3
    assert "limits" not in spec  # the CRD allows only limits.nodes on a static NodePool
    assert spec["template"]["metadata"]["labels"]["gpuplan.io/pool"] == "p"
    assert found[("ResourceFlavor", "p")]["spec"]["nodeLabels"] == {"gpuplan.io/pool": "p"}
    assert not any(kind == "NodeFeatureRule" for kind, _ in found)


def test_static_node_pool_turns_the_feature_gate_on(tmp_path: Path) -> None:
    from gpuplan.emit.bootstrap.karpenter import values

    files = _files("aws", STATIC, _karpenter())
    code, err = _check(tmp_path, files)
    assert code == 0 and "static-node-pools" not in err, err
    fleet = compile_fleet(tmp_path, emit_output=False).fleet
    assert fleet is not None
    assert values(fleet.clusters["c1"])["settings"]["featureGates"] == {"staticCapacity": True}


def test_static_node_pool_on_aks_managed_karpenter_warns(tmp_path: Path) -> None:
    node_class = {
        "group": "karpenter.azure.com",
        "kind": "AKSNodeClass",
        "name": "gpu",
        "azure": {},
    }
    karpenter = {"version": "v1.14.2", "nodeClass": node_class}
    pool = {"nodes": {"count": 3}, "karpenter": {"instanceTypes": ["Standard_ND96isr_H100_v5"]}}
    files = _files("azure", pool, karpenter)
    code, err = _check(tmp_path, files)
    assert code == 0
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '{instanceTypes')}: warning: nodePools[0].karpenter: a static NodePool keeps 3 nodes only with Karpenter's "
        "StaticCapacity feature gate on (alpha, off by default in v1.14.2), which AKS's managed Karpenter"
    ) in err


def test_static_node_pool_before_core_v1_8_names_the_first_release(tmp_path: Path) -> None:
    files = _files("aws", STATIC, _karpenter("v1.7.6"))
    code, err = _check(tmp_path, files)
    assert code == 1
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '{instanceTypes')}: error: nodePools[0].karpenter: Karpenter v1.7.6 (core v1.7.2) has no static NodePools "
        "(spec.replicas came with core v1.8.0; the first aws release with it is v1.8.8)"
    ) in err


def test_static_node_pool_needs_the_karpenter_component(tmp_path: Path) -> None:
    code, err = _check(tmp_path, _files("aws", STATIC))
    assert code == 1
    assert (
        "error: nodePools[0].karpenter: a karpenter section (a static NodePool) needs components.karpenter"
        in err
    )


# --- Karpenter keeps no minimum ------------------------------------------------------------------

AUTOSCALED = {"nodes": {"min": 2, "max": 4}, "karpenter": {"instanceTypes": ["p5.48xlarge"]}}


def test_nodes_min_is_not_always_on_capacity(tmp_path: Path) -> None:
    files = _files("aws", AUTOSCALED, _karpenter(), tenant=True)
    code, err = _check(tmp_path, files)
    assert code == 0
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '2', after='{min: ')}: warning: nodePools[0].nodes.min: Karpenter keeps no minimum: it launches nodes of pool p "
        "only for pending pods and removes empty ones, so nodes.min 2 is never kept up"
    ) in err
    # 8 GPUs fit in nodes.min 2 x 8, yet nothing of the pool is always there: the quota depends on autoscaling.
    assert (
        "tenants' 8 GPUs of pool p (t 8) all depend on autoscaling: Karpenter keeps no minimum"
        in err
    )
    fleet = compile_fleet(tmp_path, emit_output=False).fleet
    assert fleet is not None and fleet.clusters["c1"].pools["p"].nodes_least == 0


def test_nodes_min_zero_has_no_minimum_warning(tmp_path: Path) -> None:
    pool = AUTOSCALED | {"nodes": {"min": 0, "max": 4}}
    assert "karpenter-minimum" not in _check(tmp_path, _files("aws", pool, _karpenter()))[1]


# --- disruption: drift inside a maintenance window ------------------------------------------------


def test_default_window_drains_one_drifted_node_on_sunday_mornings() -> None:
    assert budgets(MaintenanceWindow()) == [
        {"nodes": "1", "reasons": ["Drifted"]},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 6 * * 0", "duration": "164h"},
        {"nodes": "10%", "reasons": ["Empty"]},
    ]


def test_window_gaps_cover_the_week_between_windows() -> None:
    window = MaintenanceWindow(
        days=["saturday", "sunday"], start="23:30", duration="1h45m", nodes="10%"
    )
    gaps = closed_gaps(window)
    # Sunday 23:30 + 1h45m = Monday 01:15 until Saturday 23:30; Saturday's window ends Sunday 01:15.
    assert gaps == [(1 * 1440 + 75, 142 * 60 + 15), (75, 22 * 60 + 15)]
    assert sum(length for _, length in gaps) + 2 * window.minutes == 7 * 1440
    assert budgets(window)[1:3] == [
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "15 1 * * 1", "duration": "142h15m"},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "15 1 * * 0", "duration": "22h15m"},
    ]


def test_a_window_open_all_week_and_one_that_never_opens() -> None:
    every_day = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    assert closed_gaps(MaintenanceWindow(days=every_day, duration="24h")) == []  # type: ignore[arg-type]
    assert budgets(MaintenanceWindow(nodes="0")) == [
        {"nodes": "0", "reasons": ["Drifted"]},
        {"nodes": "10%", "reasons": ["Empty"]},
    ]


def test_maintenance_window_is_rendered_into_every_node_pool(tmp_path: Path) -> None:
    window = {"days": ["wednesday"], "start": "03:00", "duration": "2h", "nodes": "2"}
    found = _objects(tmp_path, _files("aws", AUTOSCALED, _karpenter(maintenance=window)))
    disruption = found[("NodePool", "p")]["spec"]["disruption"]
    assert disruption["consolidationPolicy"] == "WhenEmpty"
    assert disruption["budgets"][:2] == [
        {"nodes": "2", "reasons": ["Drifted"]},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 5 * * 3", "duration": "166h"},
    ]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"duration": "25h"}, "duration 25h is longer than a day"),
        ({"start": "24:00"}, "is not a time of day such as 02:00"),
        ({"nodes": "101%"}, 'is not a node count or percentage such as "1" or "10%"'),
        ({"days": ["sunday", "sunday"]}, "days lists a day twice"),
    ],
)
def test_bad_maintenance_windows_are_input_errors(
    tmp_path: Path, window: dict[str, Any], message: str
) -> None:
    files = _files("aws", AUTOSCALED, _karpenter(maintenance=window))
    code, err = _check(tmp_path, files)
    assert code == 1 and message in err, err
    line = position(files["clusters/c1.yaml"], "karpenter:").split(":")[0]
    assert f"clusters/c1.yaml:{line}:" in err  # at the karpenter line


def test_rendered_node_pools_validate_against_the_crd(tmp_path: Path, crds_dir: Path) -> None:
    window = {"days": ["saturday", "sunday"], "start": "22:00", "duration": "3h30m"}
    q = builders.pool("q", **AUTOSCALED)
    root = write_repo(
        tmp_path, _files("aws", STATIC, _karpenter(maintenance=window), False, None, q)
    )
    result = run("render", "--root", str(root), "--crds", str(crds_dir))
    assert result.code == 0, result.stderr
    static = yaml.safe_load((root / "output/c1/karpenter/nodepool-p.yaml").read_text())
    assert static["spec"]["replicas"] == 3


@pytest.mark.parametrize(
    ("operator", "application", "path"),
    [
        # NFD bundled with the GPU Operator: the subchart's values, under node-feature-discovery.
        (
            {"version": "v26.7.0", "driverVersion": "580.95.05"},
            "c1-gpu-operator",
            ("node-feature-discovery", "master"),
        ),
        # NFD standalone: its own chart's values.
        (
            {"version": "v26.7.0", "driverVersion": "580.95.05", "nfd": "standalone"},
            "c1-nfd",
            ("master",),
        ),
        # No GPU Operator, but NodeFeatureRules for Kueue's pool label: NFD's own chart.
        ({}, "c1-nfd", ("master",)),
    ],
    ids=["bundled", "standalone", "no-gpu-operator"],
)
def test_nfd_master_runs_with_enable_taints_wherever_it_comes_from(
    tmp_path: Path, operator: dict[str, str], application: str, path: tuple[str, ...]
) -> None:
    # nfd-master applies a NodeFeatureRule's taints only with -enable-taints, which the chart value
    # master.enableTaints passes, and which overrides master.config (NFD v0.17.3 to v0.19.0).
    files = _files("onprem", BY_NAME, tenant=True, operator=operator)
    objects = _objects(tmp_path, files)
    assert objects[("NodeFeatureRule", "gpuplan-p")]["spec"]["rules"][0]["taints"]
    values = objects[("Application", application)]["spec"]["source"]["helm"]["valuesObject"]
    for key in path:
        values = values[key]
    assert values == {"enableTaints": True}
    if operator.get("nfd") == "standalone":
        gpu_operator = objects[("Application", "c1-gpu-operator")]["spec"]["source"]["helm"]
        assert gpu_operator["valuesObject"]["nfd"] == {"enabled": False}
        assert "node-feature-discovery" not in gpu_operator["valuesObject"]


# Two static pools' hostnames: the automata intersection against brute force over short names.
_PIECES = ("a", "b", "0", "[ab]", "[0-9]", ".", "a*", "b+", "(a|0)", "x?")


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4), min_size=1, max_size=2),
    st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4), min_size=1, max_size=2),
)
def test_two_pools_share_a_node_name_exactly_when_some_name_matches_both(
    first: list[list[str]], second: list[list[str]]
) -> None:
    left, right = ["".join(p) for p in first], ["".join(p) for p in second]
    name = shared_name(left, right)
    if name is not None:  # a name it gives matches a regex of each pool, whole
        assert any(re.fullmatch(r, name) for r in left) and any(
            re.fullmatch(r, name) for r in right
        )
    names = ("".join(c) for n in range(6) for c in itertools.product("ab0xz", repeat=n))
    common = next(
        (
            n
            for n in names
            if any(re.fullmatch(r, n) for r in left) and any(re.fullmatch(r, n) for r in right)
        ),
        None,
    )
    if common is not None:  # some name matches both: it is found
        assert name is not None
