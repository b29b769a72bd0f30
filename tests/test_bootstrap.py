"""From a bare cluster to a working platform (issue 15): the example fleet's deployment graph, and the
graph check failing where a first sync would fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.components import namespaces_of
from gpuplan.components.kai import authority
from gpuplan.emit.bootstrap.installs import installs
from gpuplan.model.manifest import Manifest
from gpuplan.pipeline import compile_fleet
from gpuplan.validate.graph import check_cluster, check_projects, expand_application_sets, group_of
from tests.conftest import copy_example, run

CLUSTER_LABEL = "gpuplan.io/cluster"
WAVE = "argocd.argoproj.io/sync-wave"


def _wave(obj: dict[str, Any]) -> int:
    return int(obj["metadata"].get("annotations", {}).get(WAVE, "0"))


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, crds_dir: Path) -> tuple[Any, list[Manifest]]:
    root = copy_example(tmp_path_factory.mktemp("bootstrap") / "repo")
    compiled = compile_fleet(root)
    errors = [d for d in compiled.diagnostics if d.severity.value == "error"]
    assert not errors, "\n".join(map(str, errors))
    return compiled.fleet, compiled.manifests


def test_the_example_renders_root_projects_operators_and_node_classes(
    example: tuple[Any, list[Manifest]],
) -> None:
    _, manifests = example
    paths = {m.path for m in manifests}
    assert {
        "argocd/bootstrap/root.yaml",
        "argocd/bootstrap/kustomization.yaml",
        "argocd/appproject-gpu-platform.yaml",
    } <= paths
    assert {
        "argocd/h100-prod/gpu-operator.yaml",
        "argocd/h100-prod/kueue.yaml",
        "argocd/h100-prod/volcano.yaml",
        "argocd/h100-prod/karpenter-crd.yaml",
        "argocd/h100-prod/karpenter.yaml",
    } <= paths
    # AKS runs Karpenter as Node Auto Provisioning: nothing installed, the AKSNodeClass rendered.
    assert not any(p.startswith("argocd/edge-inference/karpenter") for p in paths)
    assert "edge-inference/karpenter/aksnodeclass-gpu.yaml" in paths
    root = next(m for m in manifests if m.path == "argocd/bootstrap/root.yaml").obj
    assert (
        root["spec"]["source"]["path"] == "output/argocd" and root["spec"]["project"] == "default"
    )


def test_operators_sync_before_the_objects_that_need_their_crds(
    example: tuple[Any, list[Manifest]],
) -> None:
    fleet, manifests = example
    apps = [m.obj for m in manifests if m.kind == "Application" and m.cluster is None]
    installed = installs(fleet)
    for name in fleet.clusters:
        mine = [a for a in apps if a["metadata"]["labels"].get(CLUSTER_LABEL) == name]
        own = next(a for a in mine if a["metadata"]["name"] == name)
        before = {
            k
            for a in mine
            if _wave(a) < _wave(own)
            for k in installed.get(a["metadata"]["name"], ())
        }
        objects = [m.obj for m in manifests if m.cluster == name and m.kind != "Kustomization"]
        # Every custom resource of a component gpuplan installs (the Prometheus Operator's are the user's).
        known = {k for kinds in installed.values() for k in kinds}
        custom = {(group_of(o), o["kind"]) for o in objects if (group_of(o), o["kind"]) in known}
        # Each cluster's quota authority has its queues (gb200-train runs KAI Scheduler alone).
        queue = {"kueue": ("kueue.x-k8s.io", "ClusterQueue"), "kai": ("scheduling.run.ai", "Queue")}
        assert queue[authority(fleet.clusters[name].spec.components) or "kueue"] in custom
        # GKE's own GPU stack (gke-serving) runs no GPU Operator, so it has no ClusterPolicy.
        if fleet.clusters[name].spec.components.gpu_operator is not None:
            assert ("nvidia.com", "ClusterPolicy") in custom
        aks_nap = name == "edge-inference"
        missing = {
            k
            for k in custom
            if k not in before and not (aks_nap and k[0] in ("karpenter.sh", "karpenter.azure.com"))
        }
        assert not missing, (
            f"{name}: no operator installs {sorted(missing)} before wave {_wave(own)}"
        )
        nap = (
            {("karpenter.sh", "NodePool"), ("karpenter.azure.com", "AKSNodeClass")}
            if aks_nap
            else set()
        )
        assert (
            check_cluster(
                name, objects, apps, installed, nap, namespaces_of(fleet.clusters[name].spec)
            )
            == []
        )


def test_every_automated_application_retries(example: tuple[Any, list[Manifest]]) -> None:
    _, manifests = example
    apps = [m.obj for m in manifests if m.kind == "Application"]
    assert len(apps) > 3
    for app in apps:
        policy = app["spec"]["syncPolicy"]
        assert (
            "automated" in policy
            and policy["retry"]["limit"] == -1
            and policy["retry"]["backoff"]["factor"] == 2
        ), app["metadata"]["name"]


def test_the_project_allows_exactly_what_its_applications_sync(
    example: tuple[Any, list[Manifest]],
) -> None:
    _, manifests = example
    apps = [m.obj for m in manifests if m.kind == "Application" and m.cluster is None]
    project = next(m.obj for m in manifests if m.kind == "AppProject")
    objects: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        if m.cluster is not None and m.kind != "Kustomization":
            objects.setdefault(m.cluster, []).append(m.obj)
    assert check_projects(apps, [project], objects) == []
    listed = {(e["group"], e["kind"]) for e in project["spec"]["clusterResourceWhitelist"]}
    emitted = {
        (group_of(o), o["kind"])
        for objs in objects.values()
        for o in objs
        if "namespace" not in o["metadata"]
    }
    assert (
        emitted <= listed and ("karpenter.k8s.aws", "EC2NodeClass") in listed
    )  # the user's own node class too
    assert {
        a["spec"]["source"]["repoURL"] for a in apps if a["spec"]["project"] == "gpu-platform"
    } == set(project["spec"]["sourceRepos"])


def _app(name: str, cluster: str, wave: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": "argocd",
            "labels": {CLUSTER_LABEL: cluster},
            "annotations": {WAVE: str(wave)},
        },
        "spec": {
            "project": "p",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "x"},
            **spec,
        },
    }


def test_the_graph_check_finds_a_crd_too_late_a_missing_namespace_and_node_class() -> None:
    own = _app("c", "c", 0, source={"repoURL": "g", "path": "output/c"})
    late = _app("c-kueue", "c", 1, source={"repoURL": "r", "chart": "kueue"})
    objects = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "team"},
        },
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "p"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "gpu",
                        }
                    }
                }
            },
        },
    ]
    found = check_cluster(
        "c",
        objects,
        [own, late],
        {"c-kueue": {("kueue.x-k8s.io", "LocalQueue")}},
        {("karpenter.sh", "NodePool")},
    )
    messages = [p.message for p in found]
    assert any("installs the CRD of LocalQueue" in m for m in messages)
    assert any('Namespace "team" is created by no object' in m for m in messages)
    assert any(
        "EC2NodeClass 'gpu' is neither rendered nor among your own manifests" in m for m in messages
    )
    assert (
        check_projects([own], [], {})[0].message
        == 'AppProject "p" does not exist: Argo CD refuses to sync the Application'
    )


def test_a_node_pool_without_its_users_node_class_is_refused(
    tmp_path: Path, crds_dir: Path
) -> None:
    root = copy_example(tmp_path / "repo")
    (root / "extra/h100-prod/ec2nodeclass-gpu.yaml").unlink()
    result = run("render", "--root", str(root))
    assert result.code == 1
    # The p5 pool's own node class is still there: the other NodePools name one that is not.
    assert 'nodeClassRef.name: EC2NodeClass "gpu" does not exist (has: gpu-efa)' in result.stderr
    (root / "extra/h100-prod/ec2nodeclass-gpu-efa.yaml").unlink()
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert (
        "EC2NodeClass 'gpu' is neither rendered nor among your own manifests (extra/h100-prod/)"
        in result.stderr
    )
    assert not (root / "output").exists()


def test_values_override_lands_in_the_operator_application(tmp_path: Path, crds_dir: Path) -> None:
    root = copy_example(tmp_path / "repo")
    (root / "values/h100-prod").mkdir(parents=True)
    (root / "values/h100-prod/kueue.yaml").write_text("enableVisibilityAPF: true\n")
    result = run("render", "--root", str(root))
    assert result.code == 0, result.stderr
    written = (root / "output/argocd/h100-prod/kueue.yaml").read_text()
    assert "enableVisibilityAPF: true" in written and "controllerManagerConfigYaml" in written
    assert "have no effect" not in result.stderr


def test_an_application_set_expands_to_the_applications_the_graph_check_walks() -> None:
    appset = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "s", "annotations": {WAVE: "0"}},
        "spec": {
            "generators": [
                {
                    "list": {
                        "elements": [
                            {"cluster": "a", "path": "output/a"},
                            {"cluster": "b", "path": "output/b"},
                        ]
                    }
                }
            ],
            "template": {
                "metadata": {"name": "{{.cluster}}", "labels": {CLUSTER_LABEL: "{{.cluster}}"}},
                "spec": {"project": "p", "source": {"repoURL": "g", "path": "{{.path}}"}},
            },
        },
    }
    apps = expand_application_sets([appset])
    assert [(a["metadata"]["name"], a["spec"]["source"]["path"], _wave(a)) for a in apps] == [
        ("a", "output/a", 0),
        ("b", "output/b", 0),
    ]
    assert check_cluster("b", [], apps, {}) == []


def test_rendering_one_cluster_keeps_the_project_whitelist_of_the_others(
    tmp_path: Path, crds_dir: Path
) -> None:
    root = copy_example(tmp_path / "repo")
    out = tmp_path / "out"
    out.mkdir()
    assert run("render", "--root", str(root), "--out", str(out)).code == 0
    project = (out / "argocd/appproject-gpu-platform.yaml").read_text()
    assert "kind: EC2NodeClass" in project  # h100-prod's own node class
    result = run("render", "--root", str(root), "--out", str(out), "--cluster", "edge-inference")
    assert result.code == 0, result.stderr
    assert (out / "argocd/appproject-gpu-platform.yaml").read_text() == project


def test_an_override_of_kueues_configuration_is_refused_at_its_line(
    tmp_path: Path, crds_dir: Path
) -> None:
    root = copy_example(tmp_path / "repo")
    (root / "values/h100-prod").mkdir(parents=True)
    (root / "values/h100-prod/kueue.yaml").write_text(
        "managerConfig:\n  controllerManagerConfigYaml: |\n    kind: Configuration\n"
    )
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert (
        "values/h100-prod/kueue.yaml:2:3: error: managerConfig.controllerManagerConfigYaml: managerConfig.controllerManagerConfigYaml is owned by gpuplan"
        in result.stderr
    )
    assert not (root / "output").exists()


def test_a_cluster_in_another_repository_than_the_roots_is_warned(
    tmp_path: Path, crds_dir: Path
) -> None:
    root = copy_example(tmp_path / "repo")
    path = root / "clusters/h100-prod.yaml"
    path.write_text(path.read_text().replace("targetRevision: main", "targetRevision: release"))
    result = run("check", "--root", str(root))
    assert (
        "clusters/h100-prod.yaml:5:1: warning: gitops: the root Application syncs output/argocd/ from https://git.example.com/platform/gpu-fleet.git at main"
        in result.stderr
    )
