"""Issue 35, points 6 to 11: what a clean `check --strict` used to let through and a real cluster refuses.

Each test edits the example fleet the way the issue describes and runs the CLI or compiles it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.pipeline import compile_fleet
from tests.conftest import copy_example, run


def _example(tmp_path: Path, edits: dict[str, tuple[str, str]] | None = None) -> Path:
    """Copy the example fleet and replace, in each named file, one text by another."""
    root = copy_example(tmp_path / "repo")
    for relative, (old, new) in (edits or {}).items():
        path = root / relative
        text = path.read_text()
        assert old in text, (relative, old)
        path.write_text(text.replace(old, new, 1))
    return root


def _objects(root: Path, kind: str) -> dict[str, dict[str, Any]]:
    compiled = compile_fleet(root)
    assert not [d for d in compiled.diagnostics if d.severity.name == "ERROR"], compiled.diagnostics
    return {m.path: m.obj for m in compiled.manifests if m.kind == kind}


# Point 6: KAI treats priority >= 100 as non-preemptible, which runs only within quota.
GB200 = "clusters/gb200-train.yaml"
CLASSES = "  - {name: production, value: 90, "


def test_kai_non_preemptible_class_makes_borrowing_inert(tmp_path: Path) -> None:
    root = _example(tmp_path, {GB200: (CLASSES, "  - {name: production, value: 100, ")})
    result = run("check", "--strict", "--root", str(root))
    assert result.code == 1
    assert (
        "tenants/llm-pretrain.yaml:4:16: warning: priorityClass: KAI Scheduler treats priority 100 (class production) "
        "as non-preemptible" in result.stderr
    )
    assert "[kai-preemptibility]" in result.stderr


def test_kai_class_just_below_the_threshold_passes(tmp_path: Path) -> None:
    root = _example(tmp_path, {GB200: (CLASSES, "  - {name: production, value: 99, ")})
    result = run("check", "--strict", "--root", str(root))
    assert result.code == 0, result.stderr
    assert "kai-preemptibility" not in result.stderr


# Point 7: Volcano's enqueue action with overcommit holds PodGroups Pending on pools that grow on demand.
def _volcano_conf(root: Path) -> str:
    app = _objects(root, "Application")["argocd/h100-prod/volcano.yaml"]
    return str(app["spec"]["source"]["helm"]["valuesObject"]["custom"]["scheduler_config_override"])


def test_volcano_has_no_enqueue_gate_beside_pools_that_grow(tmp_path: Path) -> None:
    conf = _volcano_conf(_example(tmp_path))
    assert conf.startswith('actions: "allocate, backfill"\n')
    assert "overcommit" not in conf


def test_volcano_keeps_its_enqueue_gate_when_every_pool_is_static(tmp_path: Path) -> None:
    h100 = "clusters/h100-prod.yaml"
    root = copy_example(tmp_path / "repo")
    text = (root / h100).read_text()
    text = text.replace("nodes: {min: 0, max: 16}", "nodes: {count: 16}").replace(
        "nodes: {min: 0, max: 8}", "nodes: {count: 8}"
    )
    (root / h100).write_text(text)
    conf = _volcano_conf(root)
    assert conf.startswith('actions: "enqueue, allocate, backfill"\n')
    assert "  - name: overcommit\n" in conf


# Point 9: a namespace's ResourceQuota must let in what the tenant's ClusterQueue admits there.
def _cores(value: str) -> float:
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


def test_each_namespace_quota_holds_what_kueue_admits_there(tmp_path: Path) -> None:
    root = _example(tmp_path)
    queues = _objects(root, "ClusterQueue")
    quotas = _objects(root, "ResourceQuota")
    queue = queues["h100-prod/kueue/clusterqueue-team-a.yaml"]
    admits = 0.0  # cpu nominal plus borrowing limit, over the flavors
    for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
        for resource in flavor["resources"]:
            if resource["name"] == "cpu":
                admits += _cores(resource["nominalQuota"]) + _cores(
                    resource.get("borrowingLimit", "0")
                )
    assert admits >= 912
    hard = [
        quotas[f"h100-prod/namespaces/{ns}/resourcequota-team-a.yaml"]["spec"]["hard"]
        for ns in ("team-a", "team-a-batch")
    ]
    assert hard[0] == hard[1]  # the tenant's total in each: a backstop, Kueue splits the use
    assert _cores(hard[1]["requests.cpu"]) >= admits
