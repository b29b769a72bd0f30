"""The whole rendered example fleet validates strictly: CRDs for custom resources, and the
Kubernetes schema of each cluster's kubernetesVersion for core kinds (checked independently
with kubernetes-validate, strict)."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gpuplan.crds import newest_index
from gpuplan.validate import CrdIndex, Validator
from tests.conftest import PROJECT, run

CORE = (
    "v1", "apps/v1", "rbac.authorization.k8s.io/v1", "networking.k8s.io/v1", "scheduling.k8s.io/v1",
    "resource.k8s.io/v1",
)  # fmt: skip


def _objects(out: Path) -> list[tuple[str, dict]]:
    found = []
    for path in sorted(out.rglob("*.yaml")):
        obj = yaml.safe_load(path.read_text())
        if obj["kind"] != "Kustomization":
            found.append((path.relative_to(out).as_posix(), obj))
    return found


def _k8s_version(cluster: str) -> str:
    """Return a cluster's kubernetesVersion; for argocd/ (Argo CD's cluster), the fleet's oldest."""
    if cluster == "argocd":
        versions = [
            yaml.safe_load(p.read_text())["kubernetesVersion"]
            for p in (PROJECT / "clusters").glob("*.yaml")
        ]
        return min(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
    text = (PROJECT / "clusters" / f"{cluster}.yaml").read_text()
    return yaml.safe_load(text)["kubernetesVersion"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    result = run("render", "--root", str(PROJECT), "--out", str(out))
    assert result.code == 0, result.stderr
    return out


def test_custom_resources_validate_against_the_crds(rendered: Path, crds_dir: Path) -> None:
    # The upstream CRDs first, gpuplan's shipped sets for kinds they lack (Karpenter's Azure provider).
    index = newest_index(CrdIndex.load(crds_dir))
    validator = Validator(index, "1.33")
    custom = [(p, o) for p, o in _objects(rendered) if o["apiVersion"] not in CORE]
    assert {o["kind"] for _, o in custom} >= {
        "ClusterQueue",
        "ResourceFlavor",
        "LocalQueue",
        "ClusterPolicy",
        "Application",
    }
    problems = {p: validator.validate(o) for p, o in custom}
    assert {p: v for p, v in problems.items() if v} == {}
    assert not validator.skipped_kinds


def test_core_kinds_validate_with_kubernetes_validate_strict(rendered: Path) -> None:
    checked = 0
    for path, obj in _objects(rendered):
        if obj["apiVersion"] not in CORE:
            continue
        version = _k8s_version(path.split("/")[0])
        kubernetes_validate.validate(obj, f"{version}.0", strict=True)  # raises on any problem
        checked += 1
    assert checked > 10


def test_strict_validation_catches_an_unknown_field(crds_dir: Path) -> None:
    validator = Validator(CrdIndex.load(crds_dir), "1.33")
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "x"},
        "spec": {"nodeLabel": {}},
    }
    assert [p.path for p in validator.validate(flavor)] == ["spec"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spce": {}},
            "1.33.0",
            strict=True,
        )


def test_an_invalid_emitted_object_is_reported_at_its_line_and_nothing_is_written(
    example_repo: Path, crds_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplan.emit import kueue

    original = kueue.resource_flavor

    def broken(api: str, pool: object) -> dict:
        obj = original(api, pool)  # type: ignore[arg-type]
        obj["spec"]["nodeLabelz"] = {"a": "b"}
        return obj

    monkeypatch.setattr(kueue, "resource_flavor", broken)
    result = run("render", "--root", str(example_repo), "--crds", str(crds_dir))
    assert result.code == 1
    line = next(x for x in result.stderr.splitlines() if "resourceflavor-h100-train.yaml" in x)
    assert line.startswith("output/h100-prod/kueue/resourceflavor-h100-train.yaml:")
    assert 'unknown field "nodeLabelz"' in line and "ResourceFlavor/h100-train spec" in line
    assert not (example_repo / "output").exists()


def test_a_mig_config_label_naming_no_config_can_never_be_written(
    example_repo: Path, crds_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplan.emit import gpu_operator

    original = gpu_operator.mig_configs

    def typo(cluster: object) -> dict:
        return {name + "-typo": entries for name, entries in original(cluster).items()}  # type: ignore[arg-type]

    monkeypatch.setattr(gpu_operator, "mig_configs", typo)
    result = run("render", "--root", str(example_repo), "--crds", str(crds_dir))
    assert result.code == 1
    assert "nvidia.com/mig.config" in result.stderr and "gpuplan-7x1g.10gb" in result.stderr
    assert not (example_repo / "output").exists()


def test_a_local_queue_pointing_nowhere_is_caught(
    example_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplan.emit import kueue

    original = kueue.local_queues

    def dangling(api: str, alloc: object, namespace: str) -> list[dict]:
        objs = original(api, alloc, namespace)  # type: ignore[arg-type]
        for obj in objs:
            obj["spec"]["clusterQueue"] = "nobody"
        return objs

    monkeypatch.setattr(kueue, "local_queues", dangling)
    result = run("render", "--root", str(example_repo))
    assert result.code == 1
    assert "output/h100-prod/namespaces/team-a/localqueue-default.yaml" in result.stderr
    assert 'ClusterQueue "nobody" does not exist' in result.stderr
