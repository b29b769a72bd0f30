"""Each release's facts agree with the upstream CRDs shipped for it, and each release renders valid objects."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gpuplan.components import REGISTRY
from gpuplan.components.karpenter import KarpenterRelease
from gpuplan.components.kueue import KueueRelease
from gpuplan.components.multus import MultusRelease
from gpuplan.components.nfd import NfdRelease
from gpuplan.components.volcano import API_VERSION as VOLCANO_API
from gpuplan.components.volcano import VolcanoRelease
from gpuplan.crds import DATA, index_for
from gpuplan.pipeline import compile_fleet
from gpuplan.validate import Validator
from tests.builders import AWS_NODE_CLASS, allocation, cluster, fleet, pool, tenant


def crd(component: str, release: Any, name: str) -> dict[str, Any]:
    """Return one shipped CRD of a release (e.g. "clusterqueues.kueue.x-k8s.io")."""
    folder = DATA / (REGISTRY[component].crd_set(release) or "")
    return dict(json.loads(gzip.decompress((folder / f"{name}.json.gz").read_bytes())))


def served(doc: dict[str, Any]) -> tuple[str, ...]:
    return tuple(v["name"] for v in doc["spec"]["versions"] if v["served"])


def schema(doc: dict[str, Any], version: str, path: str) -> dict[str, Any] | None:
    """Return the schema at a dotted path ("spec.weight"; "[]" steps into array items), None when absent."""
    node = next(v for v in doc["spec"]["versions"] if v["name"] == version)["schema"][
        "openAPIV3Schema"
    ]
    for part in path.split("."):
        node = node.get("items", {}) if part == "[]" else node.get("properties", {}).get(part)
        if node is None:
            return None
    return dict(node)


def _releases(component: str) -> list[Any]:
    return list(REGISTRY[component].releases)


def _id(release: Any) -> str:
    return f"{release.line}-{release.version}" if release.line else str(release.version)


@pytest.mark.parametrize("release", _releases("kueue"), ids=_id)
def test_kueue_facts_match_the_crds(release: KueueRelease) -> None:
    queues = crd("kueue", release, "clusterqueues.kueue.x-k8s.io")
    assert served(queues) == release.served
    fungibility = schema(queues, release.api, "spec.flavorFungibility")
    assert fungibility is not None
    assert tuple(fungibility["properties"]["whenCanBorrow"]["enum"]) == release.when_can_borrow
    assert tuple(fungibility["properties"]["whenCanPreempt"]["enum"]) == release.when_can_preempt
    assert schema(queues, release.api, f"spec.{release.cohort_field}") is not None
    group = "spec.resourceGroups.[]"
    assert (schema(queues, release.api, f"{group}.flavors") or {})[
        "maxItems"
    ] == release.max_flavors
    assert (schema(queues, release.api, f"{group}.coveredResources") or {})[
        "maxItems"
    ] == release.max_covered_resources
    mode = schema(queues, release.api, "spec.admissionScope.admissionMode") or {}
    assert tuple(mode.get("enum", ())) == release.admission_modes
    cohorts = crd("kueue", release, "cohorts.kueue.x-k8s.io")
    assert release.cohort_version in served(cohorts)
    assert (
        schema(cohorts, release.cohort_version, f"spec.{release.cohort_parent_field}") is not None
    )
    topologies = crd("kueue", release, "topologies.kueue.x-k8s.io")
    assert release.topology_version == served(topologies)[-1]
    levels = schema(topologies, release.topology_version, "spec.levels") or {}
    assert levels["maxItems"] == release.max_topology_levels
    flavors = crd("kueue", release, "resourceflavors.kueue.x-k8s.io")
    assert schema(flavors, release.api, "spec.topologyName") is not None


@pytest.mark.parametrize("release", _releases("volcano"), ids=_id)
def test_volcano_facts_match_the_crds(release: VolcanoRelease) -> None:
    queues = crd("volcano", release, "queues.scheduling.volcano.sh")
    assert served(queues) == (VOLCANO_API.split("/")[1],)
    assert (
        schema(queues, "v1beta1", "spec.dequeueStrategy") is not None
    ) == release.dequeue_strategy
    assert (schema(queues, "v1beta1", "spec.weight") or {}).get("maximum") == release.max_weight


@pytest.mark.parametrize("release", _releases("karpenter"), ids=_id)
def test_karpenter_facts_match_the_crds(release: KarpenterRelease) -> None:
    pools = crd("karpenter", release, "nodepools.karpenter.sh")
    assert "v1" in served(pools)
    assert (schema(pools, "v1", "spec.replicas") is not None) == release.static_node_pools
    policy = schema(pools, "v1", "spec.disruption.consolidationPolicy") or {}
    assert tuple(policy["enum"]) == release.consolidation_policies
    node_class = release.node_class
    plural = {"EC2NodeClass": "ec2nodeclasses", "AKSNodeClass": "aksnodeclasses"}[node_class.kind]
    classes = crd("karpenter", release, f"{plural}.{node_class.group}")
    storage = next(v["name"] for v in classes["spec"]["versions"] if v["storage"])
    assert storage == node_class.version
    assert set((schema(classes, storage, "spec") or {})["properties"]) == release.node_class_fields


@pytest.mark.parametrize("nfd", _releases("nfd"), ids=_id)
def test_nfd_facts_match_the_crds(nfd: Any) -> None:
    assert isinstance(nfd, NfdRelease)
    rules = crd("nfd", nfd, "nodefeaturerules.nfd.k8s-sigs.io")
    assert nfd.rule_api_version == f"{rules['spec']['group']}/{served(rules)[0]}"


@pytest.mark.parametrize("multus", _releases("multus"), ids=_id)
def test_multus_facts_match_the_crds(multus: Any) -> None:
    assert isinstance(multus, MultusRelease)
    nads = crd("multus", multus, "network-attachment-definitions.k8s.cni.cncf.io")
    assert multus.nad_api_version == f"{nads['spec']['group']}/{served(nads)[0]}"


# --- each release renders valid objects for itself -------------------------------------------

NODE_CLASS = {
    "aws": AWS_NODE_CLASS,
    "azure": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "gpu"},
}


def _objects(
    root: Path, provider: str, components: dict[str, Any], group: str
) -> list[dict[str, Any]]:
    train = pool("train", nodes={"min": 1, "max": 4}, karpenter={"instanceTypes": ["p5.48xlarge"]})
    alpha = tenant("alpha", allocation(quotas=[{"pool": "train", "gpus": 8}]))
    fleet(root, {"c1": cluster(train, provider=provider, components=components)}, {"alpha": alpha})
    compiled = compile_fleet(root, verify_output=False)
    errors = [d for d in compiled.diagnostics if d.severity.name == "ERROR"]
    assert not errors, errors
    return [m.obj for m in compiled.manifests if m.obj["apiVersion"].startswith(group)]


def _problems(sets: dict[str, str], objects: list[dict[str, Any]]) -> list[str]:
    validator = Validator(index_for(sets), "1.33", cel=True)
    return [
        f"{o['kind']}/{o['metadata']['name']} {p.path}: {p.message}"
        for o in objects
        for p in validator.validate(o)
    ]


@pytest.mark.parametrize("release", _releases("volcano"), ids=_id)
def test_a_queue_renders_valid_for_every_volcano_release(
    tmp_path: Path, release: VolcanoRelease
) -> None:
    karpenter = {"version": "v1.14.1", "nodeClass": NODE_CLASS["aws"]}
    components = {"volcano": {"version": release.version}, "karpenter": karpenter}
    (queue,) = _objects(tmp_path, "aws", components, "scheduling.volcano.sh/")
    assert ("dequeueStrategy" in queue["spec"]) == release.dequeue_strategy
    assert not _problems({"volcano": release.version}, [queue])


@pytest.mark.parametrize("release", _releases("karpenter"), ids=_id)
def test_a_node_pool_renders_valid_for_every_karpenter_release(
    tmp_path: Path, release: KarpenterRelease
) -> None:
    components = {"karpenter": {"version": release.version, "nodeClass": NODE_CLASS[release.line]}}
    (pool,) = _objects(tmp_path, release.line, components, "karpenter.sh/")
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == release.node_class.kind
    folder, _, version = (REGISTRY["karpenter"].crd_set(release) or "").partition("/")
    assert not _problems({folder: version}, [pool])
