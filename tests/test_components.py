"""The component registry: every component complete, versions explicit, each release rendered for itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpuplan.check import CHECKS
from gpuplan.components import REGISTRY, Component, UnknownVersion
from gpuplan.components.base import load
from gpuplan.components.kueue import KueueRelease
from gpuplan.crds import DATA, index_for
from gpuplan.pipeline import compile_fleet
from gpuplan.validate import Validator
from tests.builders import (
    AWS_NODE_CLASS,
    OPERATOR,
    allocation,
    aws_karpenter,
    cluster,
    fleet,
    pool,
    position,
    tenant,
)
from tests.conftest import run

SOURCE = re.compile(
    r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[0-9A-Za-z][0-9A-Za-z.+-]*:[^:\s]+$"
)  # owner/repo@tag-or-commit:path
COMPONENTS = sorted(REGISTRY.values(), key=lambda c: c.name)
KUEUE = REGISTRY["kueue"]


def _ids(component: Component) -> str:
    return component.name


# --- registry completeness -------------------------------------------------------------------


def test_the_registry_lists_every_component_of_the_issue() -> None:
    assert set(REGISTRY) >= {
        "gpu-operator",
        "kueue",
        "volcano",
        "karpenter",
        "nfd",
        "multus",
        "argo-cd",
    }
    assert all(name == component.name for name, component in REGISTRY.items())
    assert len({c.field for c in REGISTRY.values()}) == len(REGISTRY)


@pytest.mark.parametrize("component", COMPONENTS, ids=_ids)
def test_each_component_has_releases_with_sources(component: Component) -> None:
    assert component.releases
    for release in component.releases:
        assert release.sources, release.version
        bad = [s for s in release.sources if not SOURCE.match(s)]
        assert not bad, (
            f"{component.name} {release.version}: sources must read owner/repo@tag:path: {bad}"
        )
    for line in component.lines:
        versions = component.versions_of(line)
        assert len(set(versions)) == len(versions), (
            f"{component.name} {line}: a version is listed twice"
        )


@pytest.mark.parametrize("component", COMPONENTS, ids=_ids)
def test_each_chart_names_its_release(component: Component) -> None:
    for release in component.releases:
        if release.chart is None:
            continue
        assert release.chart.repo.startswith(("https://", "oci://")), release.chart
        assert release.chart.version.removeprefix("v") == release.version.removeprefix("v"), release


@pytest.mark.parametrize("component", COMPONENTS, ids=_ids)
def test_each_emitter_imports(component: Component) -> None:
    if component.emitter is None:
        pytest.skip(f"{component.name} emits nothing")
    assert callable(load(component.emitter))


@pytest.mark.parametrize("component", COMPONENTS, ids=_ids)
def test_each_check_module_registers_checks(component: Component) -> None:
    registered = {fn.__module__ for fn in CHECKS}
    for module in component.checks:
        assert module in registered, f"{component.name}: {module} registers no check"


@pytest.mark.parametrize("component", COMPONENTS, ids=_ids)
def test_every_release_has_a_shipped_crd_set(component: Component) -> None:
    if component.name == "cluster-autoscaler":
        # Its chart has no CRDs (kubernetes/autoscaler cluster-autoscaler-chart-9.59.0
        # cluster-autoscaler/charts/cluster-autoscaler/templates/) and gpuplan emits no object of its kinds.
        assert all(r.crds is None for r in component.releases)
        return
    if component.name == "dra-driver":
        # gpuplan emits DeviceClasses and ResourceClaimTemplates (resource.k8s.io, a core API) and none of the
        # chart's own ComputeDomain kinds (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 deployments/helm/.../crds).
        assert all(r.crds is None for r in component.releases)
        return
    for release in component.releases:
        crd_set = component.crd_set(release)
        assert crd_set is not None, f"{component.name} {release.version} names no CRD set"
        folder = DATA / crd_set
        assert folder.is_dir() and any(folder.glob("*.json.gz")), (
            f"no shipped CRDs at gpuplan/crds/{crd_set}"
        )


def test_supported_versions_cover_the_issue() -> None:
    minors = {".".join(v.split(".")[:2]) for v in KUEUE.versions}
    assert minors == {f"v0.{n}" for n in range(12, 20)} and "v0.14.4" in KUEUE.versions
    assert {".".join(v.split(".")[:2]) for v in REGISTRY["volcano"].versions} == {
        f"v1.{n}" for n in range(11, 16)
    }
    karpenter = REGISTRY["karpenter"]
    assert {".".join(v.split(".")[:2]) for v in karpenter.versions_of("aws")} == {
        f"v1.{n}" for n in range(15)
    }
    assert karpenter.versions_of("azure")


# Components with one release before issue #15 got an older one each; both are selectable.
OLDER = {
    "cluster-autoscaler": ("9.53.0", "9.59.0", "9.53.1"),
    "kai-scheduler": ("v0.16.8", "v0.17.0", "v0.16.9"),
    "monitoring": ("v0.92.1", "v0.93.0", "v0.92.0"),
    "nfd": ("v0.18.3", "v0.19.0", "v0.18.2"),
    "multus": ("v4.2.4", "v4.3.0", "v4.2.3"),
    "dra-driver": ("v25.12.0", "v0.4.1", "v25.12.1"),
}


@pytest.mark.parametrize("name", sorted(OLDER))
def test_an_older_release_is_selectable_and_a_near_miss_names_it(name: str) -> None:
    old, new, near = OLDER[name]
    component = REGISTRY[name]
    assert component.versions == (old, new)  # oldest first: newest() stays the default
    assert component.release(old).version == old and component.newest().version == new
    with pytest.raises(UnknownVersion, match=rf"\(did you mean {re.escape(repr(old))}\?\)"):
        component.release(near)


def test_unknown_version_names_the_known_ones() -> None:
    with pytest.raises(
        UnknownVersion,
        match=r"kueue v0\.19\.3 is not supported \(did you mean 'v0\.19\.2'\?\); supported versions: v0\.12\.10, ",
    ):
        KUEUE.release("v0.19.3")


# --- versions in a cluster file --------------------------------------------------------------

KUEUE_TENANT = {
    "queueingStrategy": "StrictFIFO",
    "stopPolicy": "Hold",
    "preemption": {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    },
    "localQueues": [{"name": "default"}, {"name": "urgent", "stopPolicy": "HoldAndDrain"}],
}
ALPHA = tenant("alpha", allocation(cohort="research", weight=2, quotas=[
    {"pool": "train", "gpus": 8, "borrowingLimit": 4}], kueue=KUEUE_TENANT))  # fmt: skip


def _cluster(kueue: str, provider: str = "onprem", train: str = "", **components: Any) -> str:
    """Kueue at a version and the components given after it, cohorts org and research, pool train."""
    return cluster(train or pool("train"), provider=provider,
                   components={"kueue": {"version": kueue}} | components,
                   cohorts=[{"name": "org"}, {"name": "research", "parent": "org"}])  # fmt: skip


def _repo(root: Path, text: str) -> Path:
    return fleet(root, {"c1": text}, {"alpha": ALPHA})


def test_an_unknown_version_is_an_error_at_its_line(tmp_path: Path) -> None:
    text = _cluster("v0.14.5")
    result = run("check", "--root", str(_repo(tmp_path, text)))
    assert result.code == 1
    line = next(x for x in result.stderr.splitlines() if "components.kueue.version" in x)
    assert line.startswith(
        f"clusters/c1.yaml:{position(text, 'v0.14.5')}: error: components.kueue.version: kueue v0.14.5 is not supported (did you mean 'v0.14."
    )
    assert "supported versions: v0.12.10, v0.13.10, v0.14.4, v0.14.8, v0.15.8" in line
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("pins", "at", "message"),
    [
        (
            {"nfd": {"version": "v0.18.2"}},
            ("v0.18.2", "components.nfd.version"),
            "nfd v0.18.2 is not supported (did you mean 'v0.18.3'?); supported versions: v0.18.3, v0.19.0",
        ),
        (
            {"gpuOperator": OPERATOR, "nfd": {"version": "v0.18.3"}},
            ("v0.18.3", "components.nfd.version"),
            "the GPU Operator chart installs NFD here (gpuOperator.nfd: bundled)",
        ),
        (
            {"multus": {"version": "v4.2"}},
            ("v4.2", "components.multus.version"),
            "multus v4.2 is not supported (did you mean 'v4.2.4'?); supported versions: v4.2.4, v4.3.0",
        ),
    ],
    ids=["unknown-nfd", "nfd-pinned-but-bundled", "unknown-multus"],
)
def test_a_pin_of_an_unconfigured_component_is_checked_at_its_line(
    tmp_path: Path, pins: dict[str, Any], at: tuple[str, str], message: str
) -> None:
    text = _cluster("v0.19.2", **pins)
    result = run("check", "--root", str(_repo(tmp_path, text)))
    assert result.code == 1 and "Traceback" not in result.stderr
    start = f"clusters/c1.yaml:{position(text, at[0])}: error: {at[1]}: "
    line = next(x for x in result.stderr.splitlines() if x.startswith(start))
    assert message in line


def test_karpenter_versions_are_the_provider_line(tmp_path: Path) -> None:
    aws = _cluster("v0.19.2", "aws", karpenter=aws_karpenter("v1.6.2"))  # an Azure release
    result = run("check", "--root", str(_repo(tmp_path / "aws", aws)))
    assert result.code == 1
    assert (
        f"clusters/c1.yaml:{position(aws, 'v1.6.2')}:" in result.stderr
        and "karpenter (aws) v1.6.2 is not supported (did you mean 'v1.6.8'?)" in result.stderr
    )
    onprem = _cluster("v0.19.2", "onprem", karpenter=aws_karpenter("v1.14.1"))
    result = run("check", "--root", str(_repo(tmp_path / "onprem", onprem)))
    assert (
        result.code == 1
        and "karpenter has no releases for provider onprem; gpuplan knows aws, azure"
        in result.stderr
    )


def test_karpenter_node_class_must_be_the_providers(tmp_path: Path) -> None:
    aks = {"version": "v1.14.2", "nodeClass": AWS_NODE_CLASS}
    result = run(
        "check", "--root", str(_repo(tmp_path, _cluster("v0.19.2", "azure", karpenter=aks)))
    )
    assert result.code == 1
    assert (
        "components.karpenter.nodeClass: Karpenter for azure (v1.14.2) provisions nodes from AKSNodeClass"
        in result.stderr
    )


# --- every Kueue release renders valid objects for itself ------------------------------------


def _kueue_objects(root: Path) -> list[dict]:
    compiled = compile_fleet(root, verify_output=False)
    errors = [d for d in compiled.diagnostics if d.severity.name == "ERROR"]
    assert not errors, errors
    return [m.obj for m in compiled.manifests if m.obj["apiVersion"].startswith("kueue.x-k8s.io/")]


def _problems(version: str, objects: list[dict]) -> list[str]:
    validator = Validator(index_for({"kueue": version}), "1.33", cel=True, webhooks=True)
    return [
        f"{o['kind']}/{o['metadata']['name']} {p.path}: {p.message}"
        for o in objects
        for p in validator.validate(o)
    ]


@pytest.mark.parametrize("version", KUEUE.versions)
def test_one_tenant_renders_valid_for_every_kueue_version(tmp_path: Path, version: str) -> None:
    """Render on each release and validate against that release's shipped CRDs (no GPUPLAN_CRDS)."""
    release = KUEUE.release(version)
    assert isinstance(release, KueueRelease)
    objects = _kueue_objects(_repo(tmp_path, _cluster(version)))
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "ClusterQueue",
        "Cohort",
        "Cohort",
        "LocalQueue",
        "LocalQueue",
        "ResourceFlavor",
    ], kinds
    assert not _problems(version, objects)
    queue = next(o for o in objects if o["kind"] == "ClusterQueue")
    assert queue["apiVersion"] == release.api_version
    assert queue["spec"]["flavorFungibility"]["whenCanBorrow"] in release.when_can_borrow
    assert queue["spec"][release.cohort_field] == "research"
    child = next(
        o for o in objects if o["kind"] == "Cohort" and o["metadata"]["name"] == "research"
    )
    assert child["apiVersion"] == release.cohort_api_version and child["spec"] == {
        release.cohort_parent_field: "org"
    }


def test_the_newest_release_objects_are_rejected_by_an_older_releases_crds(tmp_path: Path) -> None:
    """The per-version check can fail: v0.19.2's ClusterQueue is invalid for v0.14.4, and so is MayStopSearch."""
    newest = _kueue_objects(_repo(tmp_path / "new", _cluster("v0.19.2")))
    assert any("ClusterQueue" in p for p in _problems("v0.14.4", newest))
    old = _kueue_objects(_repo(tmp_path / "old", _cluster("v0.14.4")))
    queue = next(o for o in old if o["kind"] == "ClusterQueue")
    assert queue["spec"]["flavorFungibility"]["whenCanBorrow"] == "Borrow"
    queue["spec"]["flavorFungibility"]["whenCanBorrow"] = "MayStopSearch"
    assert any("whenCanBorrow" in p for p in _problems("v0.14.4", [queue]))


def test_the_example_dgx_onprem_queues_are_valid_for_its_kueue(tmp_path: Path) -> None:
    from tests.conftest import copy_example

    compiled = compile_fleet(copy_example(tmp_path), ("dgx-onprem",), verify_output=False)
    cluster = compiled.fleet.clusters["dgx-onprem"] if compiled.fleet else None
    assert cluster is not None and cluster.spec.components.kueue is not None
    version = cluster.spec.components.kueue.version
    assert version == "v0.14.4"
    queues = [m.obj for m in compiled.manifests if m.kind == "ClusterQueue"]
    assert queues and not _problems(version, queues)


def test_the_schema_offers_the_supported_versions() -> None:
    """Editors complete a component's version from the registry (gpuplan schema cluster)."""
    result = run("schema", "cluster")
    assert result.code == 0
    defs = json.loads(result.stdout)["$defs"]
    for model, component in (
        ("Kueue", "kueue"),
        ("Volcano", "volcano"),
        ("Karpenter", "karpenter"),
        ("GpuOperator", "gpu-operator"),
        ("ClusterAutoscaler", "cluster-autoscaler"),
        ("Kai", "kai-scheduler"),
        ("Monitoring", "monitoring"),
        ("Nfd", "nfd"),
        ("Multus", "multus"),
    ):
        offered = defs[model]["properties"]["version"]["enum"]
        assert offered == list(dict.fromkeys(REGISTRY[component].versions)), model


@pytest.mark.parametrize(
    ("version", "code", "phrase"),
    [
        (
            "v1.2.8",
            1,
            "error: nodePools[0].karpenter.capacityTypes[1]: Karpenter v1.2.8 (core v1.2.5) has no reserved capacity type",
        ),
        (
            "v1.5.8",
            0,
            "warning: nodePools[0].karpenter.capacityTypes[1]: Karpenter v1.5.8 (core v1.5.5) launches reserved capacity only with the ReservedCapacity feature gate on",
        ),
        ("v1.6.8", 0, None),
    ],
)
def test_reserved_capacity_follows_the_karpenter_release(
    tmp_path: Path, version: str, code: int, phrase: str | None
) -> None:
    scaled = {"instanceTypes": ["p5.48xlarge"], "capacityTypes": ["on-demand", "reserved"]}
    train = pool("train", nodes={"min": 0, "max": 2}, karpenter=scaled)
    root = _repo(tmp_path, _cluster("v0.19.2", "aws", train, karpenter=aws_karpenter(version)))
    result = run("check", "--root", str(root))
    assert result.code == code, result.stderr
    reserved = [line for line in result.stderr.splitlines() if "capacityTypes" in line]
    if phrase is None:
        assert not reserved, reserved
    else:
        assert len(reserved) == 1 and phrase in reserved[0], reserved
