"""`gpuplan diff` on changes that reach nodes gpuplan does not label (issue 37): node-group pools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run
from tests.test_diff import call, committed_example, edit_yaml, git

pytestmark = pytest.mark.usefixtures("git_identity")  # a git author, for committed_example

NEW_CONFIG = "gpuplan-4x1g.10gb-1x3g.40gb"


def relayout_h100_infer(root: Path) -> None:
    """Re-partition pool h100-infer (an EKS node group), its stated mig.config label with it
    (gpuplan refuses a label that names another layout's config: check unlabelled-static-pools)."""

    def change(cluster: dict[str, Any]) -> None:
        pool = next(p for p in cluster["nodePools"] if p["name"] == "h100-infer")
        pool["sharing"]["mig"]["layout"] = {"1g.10gb": 4, "3g.40gb": 1}
        if "nvidia.com/mig.config" in pool.get("labels", {}):
            pool["labels"]["nvidia.com/mig.config"] = NEW_CONFIG

    edit_yaml(root / "clusters/h100-prod.yaml", change)


def relayout(document: dict[str, Any]) -> dict[str, Any]:
    return next(
        d
        for d in document["disruptions"]
        if d["code"] == "mig-relayout" and d["subject"] == "h100-infer"
    )


@pytest.fixture(scope="module")
def relaid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = committed_example(tmp_path_factory.mktemp("relaid") / "repo")
    relayout_h100_infer(root)
    return root


def test_a_node_group_pool_relayout_is_disruptive_and_names_the_label_to_set(
    relaid: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = call(capsys, root=relaid, base="HEAD", fmt="json", exit_code=True)
    document = json.loads(out)
    found = relayout(document)
    assert code == 1 and found["severity"] == "disruptive"
    assert (
        f"set nvidia.com/mig.config={NEW_CONFIG} on node group h100-infer (eks.amazonaws.com/nodegroup)"
        in found["message"]
    )
    assert (found["blastRadius"]["nodes"], found["blastRadius"]["gpus"]) == (4, 32)
    assert found["blastRadius"]["tenants"] == ["team-a", "team-b"]
    layouts = {(m["cluster"], m["pool"]) for m in document["migLayouts"]}
    assert ("h100-prod", "h100-infer") in layouts


def test_two_rendered_folders_report_the_node_group_relayout_too(
    relaid: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = committed_example(tmp_path / "before")
    assert run("render", "--root", str(before), "--out", str(tmp_path / "old")).code == 0
    assert run("render", "--root", str(relaid), "--out", str(tmp_path / "new")).code == 0
    _, out, _ = call(capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="json")
    found = relayout(json.loads(out))
    assert f"set nvidia.com/mig.config={NEW_CONFIG} on node group h100-infer" in found["message"]
    _, markdown, _ = call(
        capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="markdown"
    )
    assert "**h100-prod · pool h100-infer" in markdown  # the MIG layout section


def test_requirements_print_the_mig_label_every_node_group_must_carry(relaid: Path) -> None:
    before = committed_example(relaid.parent / "unchanged")
    old = run("requirements", "--root", str(before), "--cluster", "h100-prod")
    new = run("requirements", "--root", str(relaid), "--cluster", "h100-prod")
    assert old.code == new.code == 0
    block = "h100-prod: pool h100-infer, node group h100-infer\n  node group label nvidia.com/mig.config = {}\n  node group taint nvidia.com/gpu=present:NoSchedule\n"
    assert block.format("gpuplan-7x1g.10gb") in old.stdout
    assert block.format(NEW_CONFIG) in new.stdout
    assert "node group label nvidia.com/mig.config = gpuplan-per-gpu-" in new.stdout  # a100-mixed


def replaced_in(tmp_path: Path, relative: str, old: str, new: str) -> Path:
    """Return the committed example fleet with `old` replaced by `new` in one input file."""
    root = committed_example(tmp_path / "repo")
    path = root / relative
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    return root


def replaced(root: Path, capsys: pytest.CaptureFixture[str], subject: str) -> dict[str, Any]:
    code, out, _ = call(capsys, root=root, base="HEAD", fmt="json", exit_code=True)
    document = json.loads(out)
    assert code == 1
    return next(
        d
        for d in document["disruptions"]
        if d["code"] == "nodes-replaced" and d["subject"] == subject
    )


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("al2023@latest", "al2023@v20250915", "whose AMI the new terms no longer select"),
        ("volumeSize: 500Gi", "volumeSize: 800Gi", "every node it launched"),
        ("role: KarpenterNodeRole-h100-prod", "role: GpuNodeRole", "every node it launched"),
        (
            "subnetSelectorTerms:\n    - tags: {karpenter.sh/discovery: h100-prod}",
            "subnetSelectorTerms:\n    - tags: {example.com/tier: gpu}",
            "in a subnet the new terms no longer select",
        ),
    ],
)
def test_an_own_ec2nodeclass_change_replaces_the_nodes_of_its_nodepools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, said: str
) -> None:
    root = replaced_in(tmp_path, "extra/h100-prod/ec2nodeclass-gpu.yaml", old, new)
    found = replaced(root, capsys, "EC2NodeClass/gpu")
    assert found["severity"] == "disruptive" and said in found["message"]
    assert "in pool l40s-dev;" in found["message"]  # the NodePool whose nodeClassRef is gpu
    assert (found["blastRadius"]["nodes"], found["blastRadius"]["gpus"]) == (8, 32)
    assert found["blastRadius"]["tenants"] == ["team-a"]


def test_a_rendered_aksnodeclass_image_family_change_replaces_its_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    family = "imageFamily: Ubuntu2204"
    root = replaced_in(tmp_path, "clusters/edge-inference.yaml", family, "imageFamily: AzureLinux")
    found = replaced(root, capsys, "AKSNodeClass/gpu")
    assert "AKSNodeClass/gpu changes (imageFamily)" in found["message"]
    assert "every node it launched" in found["message"]
    assert found["blastRadius"]["gpus"]


def test_a_node_class_tag_change_on_aks_replaces_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = replaced_in(
        tmp_path,
        "clusters/edge-inference.yaml",
        "azure: {imageFamily: Ubuntu2204, osDiskSizeGB: 256}",
        "azure: {imageFamily: Ubuntu2204, osDiskSizeGB: 256, tags: {team: edge}}",
    )
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    document = json.loads(out)
    assert [(o["kind"], o["name"]) for o in document["objects"]] == [("AKSNodeClass", "gpu")]
    assert "nodes-replaced" not in {d["code"] for d in document["disruptions"]}


def takes(root: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, _ = call(capsys, root=root, base="HEAD", fmt="json", fail_on=("risk",))
    assert code == 1  # --fail-on risk stops the pull request
    return [d for d in json.loads(out)["disruptions"] if d["code"] == "takes-from-tenants"]


def test_preemption_weight_and_borrowing_that_take_from_the_cohort_are_a_risk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")

    def change(tenant: dict[str, Any]) -> None:
        allocation = tenant["allocations"][0]
        allocation["weight"] = 400
        allocation["kueue"]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}
        allocation["quotas"][0]["borrowingLimit"] = 32

    edit_yaml(root / "tenants/team-a.yaml", change)
    by_subject = {d["subject"]: d for d in takes(root, capsys)}
    found, volcano = by_subject.pop("team-a"), by_subject.pop("Queue/team-a")
    assert not by_subject
    assert found["severity"] == "risk" and found["blastRadius"]["tenants"] == ["team-b"]
    assert volcano["subject"] == "Queue/team-a" and volcano["blastRadius"]["tenants"] == ["team-b"]
    assert "Volcano Queue team-a weight 40 -> 400" in volcano["message"]
    assert found["message"] == (
        "tenant team-a (ClusterQueue/team-a) can take more from the other tenants of cohort shared: "
        "preemption borrowWithinCohort Never -> LowerPriority, fair-sharing weight 40 -> 400, "
        "may borrow nvidia.com/gpu on pool h100-train 16 -> 32"
    )


def test_a_local_queue_weight_raised_names_the_queues_it_takes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")

    def change(tenant: dict[str, Any]) -> None:
        tenant["allocations"][0]["kueue"]["localQueues"][1]["weight"] = 1000

    edit_yaml(root / "tenants/team-a.yaml", change)
    found = {d["subject"]: d for d in takes(root, capsys)}
    assert set(found) == {"team-a/batch", "team-a-batch/batch"}
    message = found["team-a/batch"]["message"]
    assert "fair-sharing weight 3 -> 3000 (1000x)" in message
    assert "over team-a-batch/batch, team-a-batch/default, team-a/default" in message


def test_preempting_its_own_workloads_names_only_the_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")

    def change(tenant: dict[str, Any]) -> None:
        tenant["allocations"][0]["kueue"]["preemption"]["withinClusterQueue"] = (
            "LowerOrNewerEqualPriority"
        )

    edit_yaml(root / "tenants/team-b.yaml", change)
    [found] = takes(root, capsys)
    assert found["blastRadius"]["tenants"] == ["team-b"]
    assert "withinClusterQueue LowerPriority -> LowerOrNewerEqualPriority" in found["message"]


def test_a_raised_priority_names_the_tenants_it_can_preempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = replaced_in(tmp_path, "clusters/h100-prod.yaml", "value: 100}", "value: 900}")
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    raised = {
        d["subject"]: d for d in json.loads(out)["disruptions"] if d["code"] == "priority-raised"
    }
    assert raised["research"]["blastRadius"]["tenants"] == ["team-a", "team-b"]


def test_a_long_value_cut_in_the_comment_keeps_the_part_that_differs(
    relaid: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, markdown, _ = call(capsys, root=relaid, base="HEAD", fmt="markdown")
    lines = [
        line
        for line in markdown.splitlines()
        if line.startswith("data['gpuplan-dashboard-pool-h100-infer.json'].panels")
    ]
    assert len(lines) >= 5
    for line in lines:
        old, new = line.split(": ", 1)[1].split(" -> ")
        assert "gpuplan-7x1g.10gb" in old and NEW_CONFIG in new, line
        assert len(old) <= 160 and len(new) <= 160


def quota_cuts(root: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    return [d for d in json.loads(out)["disruptions"] if d["code"] == "quota-cut"]


INFER_NODES = "    cpu: {}\n    memory: 1900Gi\n    nodes: {{count: 4}}"  # pool h100-infer's


def test_small_cpu_trims_of_untouched_tenants_are_one_finding_with_their_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2 of the node group's 192 cpus fewer: every tenant of the pool gets a little less cpu
    old, new = INFER_NODES.format(192), INFER_NODES.format(190)
    root = replaced_in(tmp_path, "clusters/h100-prod.yaml", old, new)
    [found] = quota_cuts(root, capsys)
    assert found["message"].startswith("5 small cpu or memory quota cuts (each under 5%) in ")
    assert found["message"].endswith(
        ": cause: pool h100-infer's cpu per GPU unit (its GPU quota is the same)"
    )
    assert found["blastRadius"]["tenants"] == ["team-a", "team-b"]


def test_every_quota_cut_says_its_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = committed_example(tmp_path / "repo")

    def change(tenant: dict[str, Any]) -> None:
        tenant["allocations"][0]["quotas"][1]["mig"]["1g.10gb"] = 7  # half the node group's slices

    edit_yaml(root / "tenants/team-a.yaml", change)
    found = quota_cuts(root, capsys)
    assert found and all("(cause: " in d["message"] or ": cause: " in d["message"] for d in found)
    queue = next(d for d in found if d["subject"] == "team-a")
    assert (
        "nvidia.com/mig-1g.10gb on pool h100-infer 14 -> 7 (cause: tenant team-a's own quota)"
        in queue["message"]
    )


def test_a_kueue_values_change_reaches_no_gpu_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = replaced_in(
        tmp_path, "clusters/h100-prod.yaml", "usageHalfLifeTime: 168h", "usageHalfLifeTime: 24h"
    )
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    [found] = [d for d in json.loads(out)["disruptions"] if d["code"] == "chart-upgrade"]
    assert "kueue" in found["subject"]
    assert "no GPU node is touched" in found["message"]
    assert found["blastRadius"]["gpus"] is None and found["blastRadius"]["nodes"] is None


def set_infer_driver(root: Path, version: str) -> None:
    """State the driver version the node group's image ships (preinstalled)."""

    def change(cluster: dict[str, Any]) -> None:
        pool = next(p for p in cluster["nodePools"] if p["name"] == "h100-infer")
        pool["driver"] = {"mode": "preinstalled", "version": version}

    edit_yaml(root / "clusters/h100-prod.yaml", change)


def test_a_preinstalled_driver_change_is_disruptive_on_the_node_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")
    set_infer_driver(root, "580.82.07")
    git(root, "commit", "-qam", "the image's driver stated")
    set_infer_driver(root, "580.95.05")
    code, out, _ = call(capsys, root=root, base="HEAD", fmt="json", fail_on=("driver-upgrade",))
    [found] = [d for d in json.loads(out)["disruptions"] if d["code"] == "driver-upgrade"]
    assert code == 1 and found["subject"] == "h100-infer" and found["severity"] == "disruptive"
    assert found["message"].startswith(
        "pool h100-infer: driver 580.82.07 preinstalled on al2023, its own toolkit -> "
        "driver 580.95.05 preinstalled on al2023, its own toolkit: the node image ships"
    )
    assert (found["blastRadius"]["nodes"], found["blastRadius"]["gpus"]) == (4, 32)


def test_two_rendered_folders_report_the_preinstalled_driver_change_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stack is stated on the pool's ResourceFlavor, so a folder diff finds it without --base."""
    for side, version in (("old", "580.82.07"), ("new", "580.95.05")):
        root = committed_example(tmp_path / f"repo-{side}")
        set_infer_driver(root, version)
        assert run("render", "--root", str(root), "--out", str(tmp_path / side)).code == 0
    code, out, _ = call(
        capsys,
        old_dir=tmp_path / "old",
        new_dir=tmp_path / "new",
        fmt="json",
        fail_on=("disruptive",),
    )
    [found] = [d for d in json.loads(out)["disruptions"] if d["code"] == "driver-upgrade"]
    assert code == 1 and found["subject"] == "h100-infer" and found["severity"] == "disruptive"
    assert found["message"].startswith(
        "pool h100-infer: driver 580.82.07 preinstalled on al2023, its own toolkit -> "
        "driver 580.95.05 preinstalled on al2023, its own toolkit: the node image ships"
    )
    assert found["blastRadius"]["tenants"] == ["team-a", "team-b"]


def test_an_unchanged_preinstalled_stack_is_no_finding_between_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")
    assert run("render", "--root", str(root), "--out", str(tmp_path / "old")).code == 0
    assert run("render", "--root", str(root), "--out", str(tmp_path / "new")).code == 0
    _, out, _ = call(capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="json")
    assert not [d for d in json.loads(out)["disruptions"] if d["code"] == "driver-upgrade"]
