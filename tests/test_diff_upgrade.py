"""The upgrade plan of a version bump, as the PR comment and `gpuplan diff --format json` show it.

Each case commits the example fleet with some component versions changed (the base), puts the
example (or another edit) in the working tree and compares the two as `gpuplan diff --base HEAD`
does. The comments are golden files under tests/upgrades/ (`pytest --update-golden` rewrites them).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplan.components import REGISTRY
from gpuplan.components import upgrades as upstream
from gpuplan.diff.markdown import as_markdown, marker
from gpuplan.diff.objects import Entry, Side, key_of
from gpuplan.diff.result import DiffResult, as_json, as_text
from gpuplan.diff.sides import from_git
from gpuplan.diff.upgrade import UPSTREAM, Upstream
from gpuplan.diff.upgrade_crds import pruned_fields
from gpuplan.diff.upgrade_reach import readers
from gpuplan.pipeline import compile_fleet
from tests.conftest import copy_example, edit

GOLDEN = Path(__file__).parent / "upgrades"
Edit = tuple[str, str, str]  # file, old text, new text


pytestmark = pytest.mark.usefixtures("git_identity")  # tests/conftest.py: a git author


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def bump(root: Path, base: list[Edit], work: list[Edit], fleet: Path | None = None) -> Path:
    """Commit the example fleet (or the inputs of another `fleet`) with the `base` edits, then
    apply the `work` edits instead."""
    if fleet is None:
        copy_example(root)
    else:
        shutil.copytree(fleet, root)
    for file, old, new in base:
        edit(root, file, old, new)
    git(root, "init", "-q")
    git(root, "add", "--", *(p.name for p in root.iterdir() if p.name != ".git"))
    git(root, "commit", "-q", "-m", "base")
    for file, old, new in base:
        edit(root, file, new, old)
    for file, old, new in work:
        edit(root, file, old, new)
    return root


def diff(root: Path, source: Upstream = UPSTREAM) -> DiffResult:
    """Compare HEAD with the working tree (upstream facts given by the test: public construction)."""
    result = from_git(root, "HEAD", None, source=source)
    result.marker = marker(".")
    return result


def comment(result: DiffResult) -> str:
    # the base's commit differs per run: its hash is not part of what the golden checks
    return re.sub(r"`HEAD \([0-9a-f]{12}\)`", "`HEAD`", as_markdown(result))


def check_golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN / f"{name}.md"
    if update:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"no {path.name}: run pytest --update-golden"
    assert text == path.read_text(), f"{path.name} differs: run pytest --update-golden and review"


DGX, GB200, H100 = (f"clusters/{c}.yaml" for c in ("dgx-onprem", "gb200-train", "h100-prod"))
# The example's AKS cluster runs Karpenter as AKS Node Auto Provisioning (nothing installed, no plan):
# a self-hosted one is in a golden case's fleet.
AKS_FLEET = Path(__file__).parent / "cases" / "bootstrap-older-releases" / "input"
AKS = "clusters/aks-self.yaml"
CASES: dict[str, tuple[list[Edit], list[Edit]]] = {
    # v26.3.1 renders no ClusterPolicy of gpuplan's (chart-cluster-policy): held at the base
    "gpu-operator": (
        [
            (GB200, "version: v26.7.0", "version: v26.3.1"),
            (GB200, 'driverVersion: "580.82.07"', 'driverVersion: "580.65.06"'),
        ],
        [],
    ),
    "kueue": ([], [(DGX, "version: v0.14.4", "version: v0.19.2")]),
    "volcano": ([(H100, "version: v1.15.1", "version: v1.14.4")], []),
    "kai-scheduler": ([(GB200, "version: v0.17.0", "version: v0.16.8")], []),
    "karpenter-aws": ([(H100, "version: v1.14.1", "version: v1.13.1")], []),
    "karpenter-azure": ([], [(AKS, "version: v1.12.2", "version: v1.13.1")]),
    "dra-driver": ([(GB200, "version: v0.4.1", "version: v25.12.0")], []),
    "monitoring": ([(H100, "version: v0.93.0", "version: v0.92.1")], []),
    # two minors at once: the control plane moves one at a time, so the skip is refused
    "kubernetes": ([], [(DGX, 'kubernetesVersion: "1.32"', 'kubernetesVersion: "1.34"')]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bump_gives_its_upgrade_plan(name: str, tmp_path: Path, update_golden: bool) -> None:
    base, work = CASES[name]
    fleet = AKS_FLEET if name == "karpenter-azure" else None
    result = diff(bump(tmp_path / "repo", base, work, fleet))
    text = comment(result)
    check_golden(name, text, update_golden)
    assert "### Upgrade plan" in text
    assert not any(d.code == "chart-upgrade" for d in result.disruptions)  # the plan replaces it


def test_the_gpu_operator_plan_restarts_the_driver_under_its_upgrade_policy(tmp_path: Path) -> None:
    base, work = CASES["gpu-operator"]
    result = diff(bump(tmp_path / "repo", base, work))
    (plan,) = result.upgrades
    assert (plan.component, plan.old, plan.new) == ("gpu-operator", "v26.3.1", "v26.7.0")
    texts = [s.text for h in plan.hops for s in h.steps]
    driver = next(t for t in texts if t.startswith("GPU driver 580.65.06 -> 580.82.07"))
    assert "autoUpgrade" in driver and "1 at a time" in driver
    assert any("ClusterPolicy cluster-policy changes owner" in t for t in texts)
    assert plan.blast.gpus and plan.blast.nodes  # every GPU node of the cluster


def _section(result: DiffResult) -> str:
    return comment(result).split("### Upgrade plan\n\n", 1)[1].split("\n\n", 1)[0]


def test_a_patch_bump_with_identical_crds_and_values_is_one_line(tmp_path: Path) -> None:
    root = bump(tmp_path / "repo", [], [(DGX, "version: v0.14.4", "version: v0.14.8")])
    silent = Upstream(notes=lambda *bump: [], stops=lambda *bump: [])
    result = diff(root, silent)
    (plan,) = result.upgrades
    assert plan.identical
    section = _section(result)
    assert section.count("\n") == 0 and "CRDs and chart defaults identical" in section


def test_a_patch_bump_with_identical_crds_and_values_still_names_upstreams_notes(
    tmp_path: Path,
) -> None:
    root = bump(tmp_path / "repo", [], [(DGX, "version: v0.14.4", "version: v0.14.8")])
    notes = upstream.notes_between(REGISTRY["kueue"], "", "v0.14.4", "v0.14.8")
    assert notes, "Kueue v0.14.5 brings a note: this case needs one"
    result = diff(root)
    (plan,) = result.upgrades
    assert plan.identical and plan.notes == len(notes)
    assert "CRDs and chart defaults identical" in _section(result)
    plan_text = comment(result).split("### Upgrade plan\n\n", 1)[1].split("<details>", 1)[0]
    steps = [line for line in plan_text.splitlines() if re.match(r"\d+\. ", line)]
    assert len(steps) == len(notes)  # the notes, and nothing else
    text = comment(result).replace("\\", "")
    assert all(n.action in text for n in notes)


def test_the_json_and_the_text_have_each_plan_with_its_steps_in_order(tmp_path: Path) -> None:
    base, work = CASES["kueue"]
    result = diff(bump(tmp_path / "repo", base, work))
    lines = as_text(result).splitlines()
    start = lines.index(
        "= dgx-onprem: upgrade kueue v0.14.4 -> v0.19.2 (reaches its own pods only: no GPU node is touched)"
    )
    steps = lines[start + 1 :]
    notes = upstream.notes_between(REGISTRY["kueue"], "", "v0.14.4", "v0.19.2")
    first = steps[: len(notes)]  # upstream's notes first
    assert all(re.match(r"  \d+\. (\(act\) )?action: ", step) for step in first), first
    assert steps[len(notes)].startswith(
        f"  {len(notes) + 1}. (act) crds: kueue/v0.14.4 -> kueue/v0.19.2"
    )
    assert steps[len(notes) + 1].startswith(f"  {len(notes) + 2}. crd-install: ")
    document = json.loads(as_json(result))
    (plan,) = document["upgrades"]
    assert (plan["cluster"], plan["component"], plan["old"], plan["new"]) == (
        "dgx-onprem", "kueue", "v0.14.4", "v0.19.2",
    )  # fmt: skip
    kinds = [s["kind"] for h in plan["hops"] for s in h["steps"]]
    assert kinds[: len(notes) + 2] == ["action"] * len(notes) + ["crds", "crd-install"]
    storage = next(s for s in plan["hops"][0]["steps"] if s["kind"] == "crds")
    assert storage["action"] and any(
        "storage version v1beta1 -> v1beta2" in d for d in storage["details"]
    )


@pytest.mark.parametrize(
    ("component", "line", "file", "newest", "oldest"),
    [
        ("kueue", "", DGX, "v0.14.4", "v0.12.10"),
        ("karpenter", "aws", H100, "v1.14.1", "v1.0.14"),
        ("karpenter", "azure", AKS, "v1.12.2", "v1.6.2"),
    ],
)
def test_every_upstream_action_note_is_named_by_a_bump_across_it(
    component: str, line: str, file: str, newest: str, oldest: str, tmp_path: Path
) -> None:
    notes = [n for n in upstream.NOTES if n.component == component and n.line == line]
    assert notes, f"no upstream notes shipped for {component} {line}"
    target = REGISTRY[component].versions_of(line)[-1]
    source = Upstream(stops=lambda *_: [])  # the shipped notes; every one on a single hop
    root = bump(
        tmp_path / "repo",
        [(file, f"version: {newest}", f"version: {oldest}")],
        [(file, f"version: {newest}", f"version: {target}")],
        AKS_FLEET if file == AKS else None,
    )
    text = html.unescape(comment(diff(root, source)).replace("\\", ""))
    crossed = [n for n in notes if upstream.version_key(oldest) < upstream.version_key(n.version)]
    assert crossed
    for note in crossed:
        assert note.action in text, f"{note.version}: {note.action}"
        assert note.source in text


def test_a_skip_upstream_forbids_is_an_error_finding(tmp_path: Path) -> None:
    stop = upstream.RequiredStop(
        "kueue", "v0.16.9", "test: v0.16 migrates the stored objects", "test source"
    )
    source = Upstream(stops=lambda c, line, old, new: [stop])
    root = bump(tmp_path / "repo", [], [(DGX, "version: v0.14.4", "version: v0.19.2")])
    result = diff(root, source)
    (skip,) = [d for d in result.disruptions if d.code == "upgrade-skip"]
    assert skip.severity == "error" and "v0.16.9" in skip.message
    (plan,) = result.upgrades
    assert [(h.old, h.new) for h in plan.hops] == [("v0.14.4", "v0.16.9"), ("v0.16.9", "v0.19.2")]
    text = comment(result)
    assert "### ⛔ Refused by upstream (1)" in text and "⛔ **Stop at v0.16.9 first**" in text


def test_check_base_refuses_a_skip_upstream_forbids_at_the_version_line(tmp_path: Path) -> None:
    root = bump(tmp_path / "repo", [], [(DGX, "version: v0.14.4", "version: v0.19.2")])
    assert not [d for d in compile_fleet(root, base="HEAD").diagnostics if d.code == "upgrade-skip"]
    stop = upstream.RequiredStop(
        "kueue", "v0.16.9", "test: v0.16 migrates stored objects", "test source"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(upstream, "STOPS", (*upstream.STOPS, stop))
        found = [
            d for d in compile_fleet(root, base="HEAD").diagnostics if d.code == "upgrade-skip"
        ]
    (skip,) = found
    line = (root / DGX).read_text().splitlines().index("    version: v0.19.2") + 1
    assert (skip.file, skip.line, skip.severity) == (DGX, line, "error")
    assert "v0.14.4 -> v0.19.2" in skip.message and "v0.16.9" in skip.message


def test_check_base_refuses_a_kubernetes_minor_skipped(tmp_path: Path) -> None:
    base, work = CASES["kubernetes"]
    root = bump(tmp_path / "repo", base, work)
    (skip,) = [d for d in compile_fleet(root, base="HEAD").diagnostics if d.code == "upgrade-skip"]
    assert (skip.file, skip.line) == (DGX, 4) and "skips 1.33" in skip.message
    edit(root, DGX, 'kubernetesVersion: "1.34"', 'kubernetesVersion: "1.33"')
    assert not [d for d in compile_fleet(root, base="HEAD").diagnostics if d.code == "upgrade-skip"]


def _side(*objects: dict[str, Any]) -> Side:
    return {
        key_of(o, "c1", "f.yaml"): Entry(key_of(o, "c1", "f.yaml"), o, "f.yaml") for o in objects
    }


def test_fields_the_new_crds_drop_are_named_with_the_objects_that_use_them() -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "own"},
        "spec": {"nodeLabels": {"a": "b"}, "retiredField": 1},
    }
    (found,) = pruned_fields("kueue/v0.19.2", "c1", (_side(flavor),))
    assert found.action and "ResourceFlavor/own" in found.text and "spec.retiredField" in found.text
    flavor["spec"].pop("retiredField")
    assert pruned_fields("kueue/v0.19.2", "c1", (_side(flavor),)) == []
    old = flavor | {"apiVersion": "kueue.x-k8s.io/v1alpha9"}
    (unserved,) = pruned_fields("kueue/v0.19.2", "c1", (_side(old),))
    assert "v1alpha9 is no longer served" in unserved.text


def test_a_metric_the_fleet_reads_is_found_in_its_rules_and_dashboards() -> None:
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gpu", "namespace": "monitoring"},
        "spec": {"groups": [{"rules": [{"expr": "avg(DCGM_FI_DEV_GPU_TEMP) > 80"}]}]},
    }
    assert readers(_side(rule), "c1", {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED"}) == {
        "DCGM_FI_DEV_GPU_TEMP": ["PrometheusRule/monitoring/gpu"]
    }
    assert readers(_side(rule), "c1", {"DCGM_FI_DEV_GPU"}) == {}  # whole names only


def test_the_shipped_chart_values_match_their_sources() -> None:
    script = Path(__file__).parent.parent / "scripts" / "fetch_chart_values.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_chart_whose_defaults_gpuplan_does_not_ship_says_so(tmp_path: Path) -> None:
    root = bump(
        tmp_path / "repo", [("clusters/eks-batch.yaml", "version: 9.59.0", "version: 9.53.0")], []
    )
    (plan,) = diff(root).upgrades
    assert (plan.component, plan.old, plan.new) == ("cluster-autoscaler", "9.53.0", "9.59.0")
    (step,) = [s for h in plan.hops for s in h.steps]
    assert step.kind == "defaults" and "does not compare this chart's defaults" in step.text


def test_a_karpenter_bump_whose_release_drifts_the_nodes_reaches_its_node_pools(
    tmp_path: Path,
) -> None:
    """Karpenter v1.12.0 hashes the CA bundle into drift: every node it made is replaced."""
    root = bump(tmp_path / "repo", [(H100, "version: v1.14.1", "version: v1.11.3")], [])
    result = diff(root)
    (plan,) = result.upgrades
    drift = next(s for h in plan.hops for s in h.steps if "CA bundle" in s.text)
    # h100-prod's Karpenter pools, h100-train (16 nodes of 8 H100) and l40s-dev (8 nodes of 4 L40S):
    # not its static pools
    assert (drift.blast.nodes, drift.blast.gpus) == (24, 160)
    assert drift.blast.text.endswith("in 2 pools")
    assert plan.blast == drift.blast  # the plan reaches those nodes, not only the controller's pods
    (finding,) = [d for d in result.disruptions if d.code == "upgrade"]
    assert finding.blast.nodes == 24
