"""KAI Scheduler (issue 19): the Queue tree, who enforces quotas beside Kueue and Volcano, and the chart."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.pipeline import compile_fleet
from gpuplan.plan.headroom import kai_queues
from gpuplan.plan.kai_quota import gpu_units
from tests.conftest import PROJECT, run

CASE = Path(__file__).resolve().parent / "cases" / "kai-queues" / "input"


def _compile(tmp_path: Path, edit: tuple[str, str] | None = None) -> Any:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    if edit is not None:
        cluster = root / "clusters" / "kai.yaml"
        text = cluster.read_text()
        assert edit[0] in text
        cluster.write_text(text.replace(edit[0], edit[1]))
    return compile_fleet(root)


def _objects(compiled: Any, kind: str, group: str = "") -> dict[str, dict[str, Any]]:
    return {
        m.obj["metadata"]["name"]: m.obj
        for m in compiled.manifests
        if m.kind == kind and m.obj["apiVersion"].startswith(group)
    }


def test_kai_counts_a_mig_instance_of_ng_as_n_gpus() -> None:
    assert [
        gpu_units(r)
        for r in (
            "nvidia.com/gpu",
            "nvidia.com/mig-3g.40gb",
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/gpu.shared",
        )
    ] == [1, 3, 1, 0]


def test_a_parent_without_a_stated_quota_gets_its_childrens_sum(
    tmp_path: Path, crds_dir: Path
) -> None:
    compiled = _compile(tmp_path, ("    parents:\n      research: {gpu: 28}\n", ""))
    assert not [d for d in compiled.diagnostics if d.severity.value == "error"]
    queues = _objects(compiled, "Queue", "scheduling.run.ai/")
    parent = queues["research"]["spec"]["resources"]
    children = [queues[n]["spec"]["resources"] for n in ("nlp", "vision")]
    for resource in ("gpu", "cpu", "memory"):
        assert parent[resource]["quota"] == sum(c[resource]["quota"] for c in children)
        assert parent[resource]["limit"] == -1
    assert parent["gpu"]["quota"] == 28  # nlp: 8 H100 + 4 x mig-3g.40gb (3 each); vision: 8
    assert (
        "parentQueue" not in queues["serving"]["spec"]
        and queues["vision"]["spec"]["parentQueue"] == "research"
    )
    assert queues["vision"]["spec"]["resources"]["gpu"] == {
        "quota": 8,
        "limit": 16,
        "overQuotaWeight": 2,
    }


def test_beside_kueue_kueue_enforces_and_kai_queues_are_unlimited(
    tmp_path: Path, crds_dir: Path
) -> None:
    compiled = _compile(tmp_path, ("  quotaAuthority: kai\n", "  kueue:\n    version: v0.19.2\n"))
    warnings = [d for d in compiled.diagnostics if d.code == "kai-authority"]
    assert len(warnings) == 1 and "beside Kueue, so Kueue enforces" in warnings[0].message
    for queue in _objects(compiled, "Queue", "scheduling.run.ai/").values():
        assert all(
            r == {"quota": -1, "limit": -1, "overQuotaWeight": r["overQuotaWeight"]}
            for r in queue["spec"]["resources"].values()
        )
    app = _objects(compiled, "Application")["kai-kai-scheduler"]
    assert "valuesObject" not in app["spec"]["source"]["helm"]  # the chart's default queues stay
    # `gpuplan capacity` (json, markdown) shows the same unlimited queues, and says who enforces.
    rows = kai_queues(compiled.fleet)
    assert [r.queue for r in rows] == ["research", "nlp", "vision", "serving"]
    assert all(
        not r.enforced and set(r.quota.values()) == set(r.limit.values()) == {-1} for r in rows
    )
    assert [r.over_quota_weight for r in rows] == [1, 1, 2, 1]


def test_where_kai_enforces_the_chart_creates_no_unlimited_default_queue(
    tmp_path: Path, crds_dir: Path
) -> None:
    compiled = _compile(tmp_path)
    assert not [d for d in compiled.diagnostics if d.severity.value == "error"]
    app = _objects(compiled, "Application")["kai-kai-scheduler"]
    assert app["spec"]["source"]["helm"]["valuesObject"] == {
        "defaultQueue": {"createDefaultQueue": False}
    }
    assert (
        app["spec"]["source"]["repoURL"] == "ghcr.io/kai-scheduler/kai-scheduler"
        and app["spec"]["source"]["targetRevision"] == "v0.17.0"
    )


@pytest.mark.parametrize("authority", ["kai", "volcano"])
def test_volcano_enforces_queues_only_as_the_authority(
    tmp_path: Path, crds_dir: Path, authority: str
) -> None:
    compiled = _compile(
        tmp_path,
        (
            "  quotaAuthority: kai\n",
            f"  volcano:\n    version: v1.15.1\n  quotaAuthority: {authority}\n",
        ),
    )
    assert not [d for d in compiled.diagnostics if d.severity.value == "error"]
    conf = _objects(compiled, "Application")["kai-volcano"]["spec"]["source"]["helm"][
        "valuesObject"
    ]["custom"]["scheduler_config_override"]
    kai_gpu = _objects(compiled, "Queue", "scheduling.run.ai/")["vision"]["spec"]["resources"][
        "gpu"
    ]
    if authority == "kai":
        assert "proportion" not in conf and "capacity" not in conf and kai_gpu["quota"] == 8
    else:
        assert "- name: capacity" in conf and kai_gpu["quota"] == -1


def test_kai_gets_a_topology_per_pool_with_levels(tmp_path: Path, crds_dir: Path) -> None:
    compiled = _compile(tmp_path)
    topologies = _objects(compiled, "Topology", "kai.scheduler/")
    assert {name: t["spec"]["levels"] for name, t in topologies.items()} == {
        "h100": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}]
    }
    assert not _objects(compiled, "Topology", "kueue.x-k8s.io/")  # no Kueue on this cluster


def test_an_nvlink_level_needs_gpu_feature_discovery(tmp_path: Path, crds_dir: Path) -> None:
    compiled = _compile(
        tmp_path, ('  gpuOperator:\n    version: v26.7.0\n    driverVersion: "580.82.07"\n', "")
    )
    found = [d for d in compiled.diagnostics if d.code == "topology-labels"]
    assert (
        len(found) == 1
        and "carries label nvidia.com/gpu.clique: run the GPU Operator" in found[0].message
    )
    assert (found[0].file, found[0].path, found[0].severity.value) == (
        "clusters/kai.yaml",
        "nodePools[0].topology[0]",
        "error",
    )


def test_capacity_shows_the_kai_queue_tree(crds_dir: Path) -> None:
    result = run("capacity", "--root", str(CASE))
    assert result.code == 0, result.stderr
    tree = result.stdout.split("cluster kai: KAI Queues", 1)[1].splitlines()[1:]
    assert [line.split()[0] for line in tree] == ["research", "nlp", "vision", "serving"]
    assert tree[0].startswith("  research ") and tree[1].startswith("    nlp ")
    # a KAI limit of -1 is shown as "unlimited" (JSON keeps KAI's own -1)
    assert "gpu 28/unlimited" in tree[0] and "gpu 20/28" in tree[1] and "gpu 16/16" in tree[3]


def test_the_example_kai_cluster_has_a_department_tree_and_topologies() -> None:
    out = PROJECT / "output" / "gb200-train"
    objects = [yaml.safe_load(p.read_text()) for p in sorted(out.rglob("*.yaml"))]
    queues = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Queue"}
    assert {n: q.get("parentQueue") for n, q in queues.items()} == {
        "llm": None, "research": None,
        "llm-pretrain": "llm", "llm-alignment": "llm", "ml-research": "research", "vision": "research",
    }  # fmt: skip
    for department in ("llm", "research"):  # the departments' quotas add up to their teams' quotas
        teams = [q for q in queues.values() if q.get("parentQueue") == department]
        assert (
            sum(q["resources"]["gpu"]["quota"] for q in teams)
            == queues[department]["resources"]["gpu"]["quota"]
        )
    levels = {
        o["metadata"]["name"]: [level["nodeLabel"] for level in o["spec"]["levels"]]
        for o in objects
        if o["kind"] == "Topology"
    }
    assert levels == {
        "gb200-nvl72": ["nvidia.com/gpu.clique", "kubernetes.io/hostname"],
        "dgx-b200": ["example.com/superpod-su", "kubernetes.io/hostname"],
    }
    assert not any(o["apiVersion"].startswith("kueue.x-k8s.io/") for o in objects)  # KAI alone
