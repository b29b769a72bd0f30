"""Patches (patches/) and Helm values overrides (values/), driven through the real CLI: what is
written, what `gpuplan diff` shows, and every bad input at its file:line:col with exit 1."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuplan.inputs.sources import read_inputs
from gpuplan.model.manifest import Manifest
from gpuplan.overlay.values import ValuesOverride, apply_values, read_overrides, values_for
from gpuplan.plan.resolve import build_fleet
from tests.conftest import run, snapshot, write_repo
from tests.test_overlay import CLUSTER, NODE_CLASS, errors, one_cluster_repo, render


@pytest.fixture
def repo(tmp_path: Path, crds_dir: Path) -> Path:
    return one_cluster_repo(tmp_path)


# --- patches -------------------------------------------------------------------------------------

CONSOLIDATE = "target: {kind: NodePool, name: p5}\njsonPatch:\n  - op: replace\n    path: /spec/disruption/consolidateAfter\n    value: 30m\n"
DCGM = 'kind: ClusterPolicy\nmetadata:\n  name: cluster-policy\nspec:\n  dcgmExporter:\n    env:\n      - {name: DCGM_EXPORTER_INTERVAL, value: "10000"}\n'


def test_patches_are_applied_before_validation_and_named_as_sources(repo: Path) -> None:
    write_repo(
        repo,
        {
            f"extra/{CLUSTER}/gpu.yaml": NODE_CLASS.format(name="gpu"),
            f"patches/{CLUSTER}/p5.yaml": CONSOLIDATE,
            f"patches/{CLUSTER}/dcgm.yaml": DCGM,
        },
    )
    code, stderr, out = render(repo)
    assert code == 0, stderr
    pool = (out / CLUSTER / "karpenter/nodepool-p5.yaml").read_text()
    assert 'consolidateAfter: "30m"' in pool
    assert f"# Source: patches/{CLUSTER}/p5.yaml" in pool
    policy = (out / CLUSTER / "gpu-operator/clusterpolicy-cluster-policy.yaml").read_text()
    assert "DCGM_EXPORTER_INTERVAL" in policy
    first = snapshot(out)
    assert render(repo)[0] == 0 and snapshot(out) == first  # byte-deterministic


def git(root: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def test_diff_shows_what_a_patch_changes(repo: Path) -> None:
    write_repo(repo, {f"extra/{CLUSTER}/gpu.yaml": NODE_CLASS.format(name="gpu")})
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    write_repo(
        repo,
        {
            f"patches/{CLUSTER}/p5.yaml": CONSOLIDATE,
            f"extra/{CLUSTER}/gpu.yaml": NODE_CLASS.format(name="gpu").replace(
                "bottlerocket", "al2023"
            ),
        },
    )
    result = run("diff", "--root", str(repo), "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.stderr
    assert "spec.disruption.consolidateAfter" in result.stdout and "30m" in result.stdout
    assert "al2023@latest" in result.stdout  # own manifests are part of the diff too


@pytest.mark.parametrize(
    ("patch", "where", "words"),
    [
        (
            "kind: ClusterQueue\nmetadata:\n  name: llm\nspec:\n  namespaceSelector: {}\n  cohortName: other\n",
            "6:15",
            "spec.cohortName of ClusterQueue 'llm', which gpuplan owns: borrowing and lending",
        ),
        (
            'target: {kind: ResourceQuota, name: llm, namespace: llm}\njsonPatch:\n  - op: replace\n    path: /spec/hard/requests.nvidia.com~1gpu\n    value: "64"\n',
            "5:12",
            "which gpuplan owns: a namespace's ResourceQuota is proved",
        ),
        (
            "target: {kind: ClusterQueue, name: llm}\njsonPatch:\n  - op: remove\n    path: /spec/namespaceSelector\n",
            "4:11",
            "namespaceSelectors keep a tenant's queues",
        ),
        (
            "kind: NodePool\nmetadata:\n  name: p5\nspec:\n  template:\n    metadata:\n      labels:\n        gpuplan.io/pool: other\n",
            "8:26",
            "the label wires nodes to their pool",
        ),
        (
            "kind: ResourceFlavor\nmetadata:\n  name: p5\nspec:\n  nodeLabels: {fabric: ib}\n",
            "5:15",
            "a flavor's node labels pin workloads",
        ),
        (
            'kind: NodePool\nmetadata:\n  name: p5\nspec:\n  limits: {nodes: "40"}\n',
            "5:11",
            "the pool capacity (nodes.max)",
        ),
    ],
)
def test_patches_to_owned_fields_are_refused_saying_why(
    repo: Path, patch: str, where: str, words: str
) -> None:
    write_repo(repo, {f"patches/{CLUSTER}/owned.yaml": patch})
    code, stderr, out = render(repo)
    assert code == 1
    found = errors(stderr)
    assert len(found) == 1 and found[0].startswith(
        f"patches/{CLUSTER}/owned.yaml:{where}: error: "
    ), found
    assert ": the patch changes " in found[0]
    assert words in found[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            "kind: NodePool\nmetadata:\n  name: p6\nspec: {}\n",
            "3:9: error: metadata.name: no generated NodePool named 'p6' in cluster 'aws-train' (it has: p5): a patch changes an object gpuplan renders; your own objects go in extra/aws-train/",
        ),
        (
            "target: {kind: Widget, name: w}\njsonPatch: [{op: remove, path: /spec}]\n",
            "1:30: error: target.name: no generated Widget named 'w' in cluster 'aws-train': a patch changes",
        ),
        (
            "target: {kind: NodePool, name: p5}\njsonPatch:\n  - {op: replace, path: /spec/nothing, value: 1}\n",
            "3:25: error: jsonPatch[0].path: cannot apply: /spec/nothing: 'nothing' does not exist",
        ),
        (
            "target: {kind: NodePool, name: p5}\npatch: []\n",
            "2:1: error: patch: unknown field 'patch': a JSON6902 patch has target and jsonPatch",
        ),
        (
            "metadata: {name: p5}\nspec: {}\n",
            "1:1: error: kind: a patch is a partial object with kind and metadata.name",
        ),
    ],
)
def test_a_patch_without_a_target_or_that_cannot_apply_is_an_error(
    repo: Path, patch: str, message: str
) -> None:
    write_repo(repo, {f"patches/{CLUSTER}/bad.yaml": patch})
    code, stderr, out = render(repo)
    assert code == 1
    assert any(
        line.startswith(f"patches/{CLUSTER}/bad.yaml:{message}") for line in errors(stderr)
    ), stderr
    assert not out.exists()


def test_a_patch_that_breaks_the_schema_is_reported_at_the_patch(repo: Path) -> None:
    write_repo(
        repo,
        {
            f"extra/{CLUSTER}/gpu.yaml": NODE_CLASS.format(name="gpu"),
            f"patches/{CLUSTER}/p5.yaml": CONSOLIDATE.replace("value: 30m", "value: soon"),
        },
    )
    code, stderr, _ = render(repo)
    assert code == 1
    found = errors(stderr)
    assert len(found) == 1 and found[0].startswith(
        f"patches/{CLUSTER}/p5.yaml:5:12: error: NodePool/p5 spec.disruption.consolidateAfter: "
    ), found
    assert "(with this patch applied)" in found[0] and "report this bug" not in found[0]


# --- values overrides ----------------------------------------------------------------------------


def _fleet(root: Path):  # type: ignore[no-untyped-def]
    inputs, _ = read_inputs(root)
    fleet, _ = build_fleet(inputs)
    return fleet


def test_values_overrides_merge_over_the_derived_values(repo: Path) -> None:
    write_repo(
        repo,
        {
            f"values/{CLUSTER}/gpu-operator.yaml": "dcgmExporter:\n  serviceMonitor: {enabled: true}\ndriver: {enabled: false}\n",
            f"extra/{CLUSTER}/gpu.yaml": NODE_CLASS.format(name="gpu"),  # the NodePools' node class
        },
    )
    overrides, problems = read_overrides(repo, _fleet(repo).clusters)
    assert problems == []
    override = overrides[(CLUSTER, "gpu-operator")]
    derived = {
        "clusterPolicy": {"deployCR": False},
        "driver": {"enabled": True, "version": "580.82.07"},
    }
    assert values_for("gpu-operator", derived, override) == {
        "clusterPolicy": {"deployCR": False},
        "driver": {"enabled": False, "version": "580.82.07"},
        "dcgmExporter": {"serviceMonitor": {"enabled": True}},
    }
    assert values_for("gpu-operator", derived, None) == derived
    assert render(repo)[0] == 0  # render reads and accepts it


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "gpu-operator",
            "clusterPolicy:\n  deployCR: true\n",
            "2:3: error: clusterPolicy.deployCR: clusterPolicy.deployCR is owned by gpuplan: gpuplan renders and proves the ClusterPolicy itself",
        ),
        (
            "gpu-operator",
            "gpuCluster: true\n",
            "1:1: error: gpuCluster: gpuCluster.deployCR is owned by gpuplan",
        ),
        (
            "sriov-operator",
            "a: 1\n",
            "1:1: error: 'sriov-operator' is not a component: name the file after one of gpu-operator, karpenter, kueue, nfd, volcano",
        ),
        (
            "multus",
            "a: 1\n",
            "1:1: error: 'multus' is not installed with a Helm chart on cluster 'aws-train'",
        ),
    ],
)
def test_values_overrides_of_owned_values_or_unknown_components_are_errors(
    repo: Path, name: str, text: str, message: str
) -> None:
    write_repo(repo, {f"values/{CLUSTER}/{name}.yaml": text})
    code, stderr, out = render(repo)
    assert code == 1
    assert next(line.rsplit(" [", 1)[0] for line in errors(stderr)).startswith(
        f"values/{CLUSTER}/{name}.yaml:{message}"
    ), stderr
    assert not out.exists()


def test_an_owned_value_never_reaches_the_merged_values(repo: Path) -> None:
    write_repo(repo, {f"values/{CLUSTER}/gpu-operator.yaml": "clusterPolicy: {deployCR: true}\n"})
    overrides, problems = read_overrides(repo, _fleet(repo).clusters)
    assert len(problems) == 1
    override: ValuesOverride = overrides[(CLUSTER, "gpu-operator")]
    assert values_for("gpu-operator", {"clusterPolicy": {"deployCR": False}}, override) == {
        "clusterPolicy": {"deployCR": False}
    }


def test_values_overrides_reach_the_application_that_installs_the_chart(repo: Path) -> None:
    """Wired generically: any Argo CD Application of the cluster whose Helm source is the chart."""
    write_repo(repo, {f"values/{CLUSTER}/gpu-operator.yaml": "driver: {enabled: false}\n"})
    overrides, _ = read_overrides(repo, _fleet(repo).clusters)
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "gpu-operator", "namespace": "argocd"},
        "spec": {
            "source": {
                "chart": "gpu-operator",
                "helm": {
                    "valuesObject": {
                        "clusterPolicy": {"deployCR": False},
                        "driver": {"enabled": True},
                    }
                },
            }
        },
    }
    other = {**app, "spec": {"source": {"chart": "kueue"}}}
    manifests = [
        Manifest(f"{CLUSTER}/apps/a.yaml", app, ("clusters/aws-train.yaml",), CLUSTER),
        Manifest(f"{CLUSTER}/apps/b.yaml", other, (), CLUSTER),
    ]
    result, unused = apply_values(manifests, overrides)
    assert result[0].obj["spec"]["source"]["helm"]["valuesObject"] == {
        "clusterPolicy": {"deployCR": False},
        "driver": {"enabled": False},
    }
    assert result[0].sources == ("clusters/aws-train.yaml", f"values/{CLUSTER}/gpu-operator.yaml")
    assert result[1] is manifests[1] and unused == []
    _, unused = apply_values(manifests[1:], overrides)
    assert [d.message.split(",")[0] for d in unused] == [
        "no Argo CD Application of cluster 'aws-train' installs the gpu-operator chart"
    ]
