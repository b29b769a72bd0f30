"""Admission policies (issue 36): the model, the version gate, the offline proof and each escape refused.

The escape tests run the CEL of the policies gpuplan rendered for the example fleet (h100-prod: Kueue with
Volcano, requireQueue; gb200-train: KAI with DRA) on the objects a tenant would create to get past its quota.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.pipeline import compile_fleet
from gpuplan.validate.admission import (
    cluster_policies,
    evaluate,
    namespace_labels,
    samples,
    verdicts,
)
from tests.conftest import EXAMPLE, copy_example, run, snapshot

OUTPUT = EXAMPLE / "output"


@functools.cache
def policy(cluster: str, name: str) -> dict[str, Any]:
    """A policy as rendered into output/ (what Argo CD applies)."""
    path = OUTPUT / cluster / "admission" / f"validatingadmissionpolicy-{name}.yaml"
    return yaml.safe_load(path.read_text())


def pod(ns: str, labels: dict[str, str], resources: dict[str, Any], **meta: Any) -> dict[str, Any]:
    container = {"name": "train", "image": "train:1", "resources": resources}
    metadata = {"name": "p", "namespace": ns, "labels": labels, **meta}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [container]},
    }


def job(ns: str, labels: dict[str, str], resources: dict[str, Any]) -> dict[str, Any]:
    spec = {"containers": [{"name": "train", "image": "train:1", "resources": resources}]}
    metadata = {"name": "j", "namespace": ns, "labels": labels}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"template": {"spec": spec}},
    }


GPU = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
QUEUED = {"kueue.x-k8s.io/queue-name": "default"}


# --- one test per escape of the issue ----------------------------------------------------------


def test_kai_queue_of_another_tenant_is_refused() -> None:
    queues = policy("gb200-train", "gpuplan-tenant-queues")
    theirs = pod("llm-alignment", {"kai.scheduler/queue": "llm-pretrain"}, GPU)
    assert evaluate(queues, theirs, "llm-alignment") == [
        "kai.scheduler/queue llm-pretrain is not one of the KAI Queues of namespace llm-alignment: "
        "use one of llm-alignment"
    ]
    own = pod("llm-alignment", {"kai.scheduler/queue": "llm-alignment"}, GPU)
    assert evaluate(queues, own, "llm-alignment") == []


def test_kueue_priority_above_the_tenants_ceiling_is_refused() -> None:
    priority = policy("h100-prod", "gpuplan-workload-priority")
    high = job("team-a", {**QUEUED, "kueue.x-k8s.io/priority-class": "production"}, GPU)
    (message,) = evaluate(priority, high, "team-a")
    assert "production" in message and "use one of research" in message
    own = job("team-a", {**QUEUED, "kueue.x-k8s.io/priority-class": "research"}, GPU)
    assert evaluate(priority, own, "team-a") == []


def test_kueue_queue_not_of_the_namespace_is_refused() -> None:
    queues = policy("h100-prod", "gpuplan-tenant-queues")
    other = job("team-b", {"kueue.x-k8s.io/queue-name": "batch"}, GPU)  # team-a's LocalQueue name
    (message,) = evaluate(queues, other, "team-b")
    assert "LocalQueues of namespace team-b: use one of default" in message
    assert (
        evaluate(queues, job("team-a", {"kueue.x-k8s.io/queue-name": "batch"}, GPU), "team-a") == []
    )


def test_volcano_queue_of_another_tenant_is_refused() -> None:
    queues = policy("h100-prod", "gpuplan-tenant-queues")
    annotated = pod(
        "team-a", QUEUED, GPU, annotations={"scheduling.volcano.sh/queue-name": "team-b"}
    )
    (message,) = evaluate(queues, annotated, "team-a")
    assert "scheduling.volcano.sh/queue-name team-b" in message
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "team-a"},
        "spec": {"queue": "team-b", "minMember": 1},
    }
    assert evaluate(queues, group, "team-a") == [
        "spec.queue team-b is not one of the Volcano Queues of namespace team-a: use team-a"
    ]
    labelled = pod("team-a", {**QUEUED, "volcano.sh/queue-name": "team-b"}, GPU)
    (message,) = evaluate(queues, labelled, "team-a")
    assert message == (
        "volcano.sh/queue-name team-b is not one of the Volcano Queues of namespace team-a: use one of team-a"
    )


def test_gpu_pod_without_a_queue_is_refused_where_the_cluster_requires_one() -> None:
    require = policy("h100-prod", "gpuplan-require-queue")
    (message,) = evaluate(require, job("team-a", {}, GPU), "team-a")
    assert "kueue.x-k8s.io/queue-name" in message
    assert evaluate(require, job("team-a", QUEUED, GPU), "team-a") == []
    cpu = {"requests": {"cpu": "1"}}
    assert evaluate(require, job("team-a", {}, cpu), "team-a") == []  # no GPU: no queue needed
    owned = pod("team-a", {}, GPU, ownerReferences=[
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "1", "controller": True}
    ])  # fmt: skip
    assert evaluate(require, owned, "team-a") == []  # its Job carried the queue
    replica = pod("team-a", {}, GPU, ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1", "controller": True}
    ])  # fmt: skip
    assert evaluate(require, replica, "team-a") != []


def test_gpu_requests_below_limits_are_refused() -> None:
    gpus = policy("h100-prod", "gpuplan-gpu-resources")
    below = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}
    (message,) = evaluate(gpus, job("team-a", QUEUED, below), "team-a")
    assert message.startswith("GPU requests must equal limits")
    limits_only = {"limits": {"nvidia.com/gpu": "2"}}
    assert evaluate(gpus, job("team-a", QUEUED, limits_only), "team-a") == []


def test_gpu_resource_without_quota_is_refused() -> None:
    gpus = policy("h100-prod", "gpuplan-gpu-resources")
    mig = {"limits": {"nvidia.com/mig-2g.20gb": "1"}}  # team-b's MIG profile, not team-a's
    (message,) = evaluate(gpus, job("team-a", QUEUED, mig), "team-a")
    assert "container train asks for a GPU resource namespace team-a has no quota for" in message
    assert evaluate(gpus, job("team-b", QUEUED, mig), "team-b") == []


def test_dra_claim_on_the_driver_charts_class_is_refused() -> None:
    classes = policy("gb200-train", "gpuplan-dra-classes")

    def claim(device_class: str, kind: str = "ResourceClaim") -> dict[str, Any]:
        devices = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
        spec = {"devices": devices} if kind == "ResourceClaim" else {"spec": {"devices": devices}}
        metadata = {"name": "c", "namespace": "llm-alignment"}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
        }

    (message,) = evaluate(classes, claim("gpu.nvidia.com"), "llm-alignment")
    assert message == (
        "DeviceClass gpu.nvidia.com is not a DeviceClass namespace llm-alignment has quota for: "
        "use b200.gpuplan.io"
    )
    assert evaluate(classes, claim("gpu.nvidia.com", "ResourceClaimTemplate"), "llm-alignment")
    assert evaluate(classes, claim("b200.gpuplan.io"), "llm-alignment") == []
    assert evaluate(classes, claim("b200.gpuplan.io"), "vision") != []  # vision holds no DRA quota
    assert evaluate(classes, claim("mig.nvidia.com"), "llm-alignment") != []
    # the driver's controller claims IMEX channels for ComputeDomains: no GPUs, admitted
    assert evaluate(classes, claim("compute-domain-default-channel.nvidia.com"), "vision") == []
    # and no claim on the chart's classes fits the namespace quota either
    quota = OUTPUT / "gb200-train" / "namespaces" / "vision" / "resourcequota-vision.yaml"
    hard = yaml.safe_load(quota.read_text())["spec"]["hard"]
    for chart in ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"):
        assert hard[f"{chart}.deviceclass.resource.k8s.io/devices"] == "0"


# --- the offline proof ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Any:
    return compile_fleet(EXAMPLE)


@pytest.mark.parametrize(
    ("cluster", "rules"),
    [
        (
            "h100-prod",
            {
                "gpuplan-tenant-queues",
                "gpuplan-workload-priority",
                "gpuplan-gpu-resources",
                "gpuplan-require-queue",
            },
        ),
        ("gb200-train", {"gpuplan-tenant-queues", "gpuplan-gpu-resources", "gpuplan-dra-classes"}),
    ],
)
def test_proof_admits_and_refuses_samples_per_rule(
    example: Any, cluster: str, rules: set[str]
) -> None:
    policies = cluster_policies(example.manifests, cluster)
    assert {p.name for p in policies} == rules
    labels = namespace_labels(example.manifests, cluster)
    admitted, refused = set(), set()
    kinds = set()
    for sample in samples(example.fleet.clusters[cluster]):
        verdict = verdicts(sample, policies, labels[sample.namespace])
        if sample.refused_by is None:
            assert verdict == {}, sample.what
            kinds.add(sample.obj["apiVersion"].split("/")[0] + "/" + sample.obj["kind"])
            admitted.add(sample.namespace)
        else:
            assert sample.refused_by in verdict, sample.what
            refused.add(sample.refused_by)
    assert refused == rules
    assert admitted == set(labels) - {n for n, v in labels.items() if "gpuplan.io/tenant" not in v}
    workloads = {"v1/Pod", "batch/Job", "jobset.x-k8s.io/JobSet", "batch.volcano.sh/Job"}
    assert kinds - workloads == (
        {"resource.k8s.io/ResourceClaim"} if "gpuplan-dra-classes" in rules else set()
    )
    assert workloads <= kinds


def test_a_policy_patched_open_fails_the_proof_at_the_admission_line(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    (repo / "patches" / "h100-prod").mkdir(parents=True)
    (repo / "patches" / "h100-prod" / "open.yaml").write_text(
        "target: {kind: ValidatingAdmissionPolicy, name: gpuplan-tenant-queues}\n"
        "jsonPatch:\n"
        "- {op: replace, path: /spec/validations/0/expression, value: 'true'}\n"
    )
    out = repo / "output"
    result = run("render", "--root", str(repo), "--out", str(out))
    assert result.code == 1
    assert "Traceback" not in result.stderr
    line = next(
        n
        for n, t in enumerate((repo / "clusters/h100-prod.yaml").read_text().splitlines(), 1)
        if t.startswith("admission:")
    )
    assert (
        f"clusters/h100-prod.yaml:{line}:1: error: admission: admission proof: policy gpuplan-tenant-queues admits "
        "a Pod on LocalQueue batch-team-b, not one of its namespace's in namespace team-a"
    ) in result.stderr
    assert snapshot(out) == {}


# --- the model -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("admission", "message"),
    [
        (
            "admission: {validationActions: [Deny, Warn]}",
            "validationActions may not hold both Deny and Warn",
        ),
        (
            "admission: {validationActions: [Audit, Audit]}",
            "validationActions lists an action twice",
        ),
        ("admission: {validationActions: [Block]}", "Block"),
        ("admission: {validationActions: []}", "validationActions"),
    ],
)
def test_bad_validation_actions_are_errors_at_their_line(
    tmp_path: Path, admission: str, message: str
) -> None:
    repo = copy_example(tmp_path / "repo")
    path = repo / "clusters" / "h100-prod.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("admission:")] + admission + "\n")
    line = len(text[: text.index("admission:")].splitlines()) + 1
    out = repo / "output"
    result = run("render", "--root", str(repo), "--out", str(out))
    assert result.code == 1
    assert "Traceback" not in result.stderr
    assert f"clusters/h100-prod.yaml:{line}:" in result.stderr
    assert message in result.stderr
    assert snapshot(out) == {}


def test_admission_off_by_default_renders_no_policy(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    path = repo / "clusters" / "h100-prod.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("admission:")])
    out = repo / "output"
    assert run("render", "--root", str(repo), "--out", str(out)).code == 0
    assert not (out / "h100-prod" / "admission").exists()
    assert (out / "gb200-train" / "admission").is_dir()


# --- the pull-request comment ---------------------------------------------------------------------


def _admission_diff(
    tmp_path: Path, edits: dict[str, tuple[str, str]]
) -> list[tuple[str, str, str, list[str]]]:
    """Render the example fleet before and after text edits; return (code, cluster, subject, tenants) of admission findings."""
    repo = copy_example(tmp_path / "repo")
    for relative, (old, new) in edits.items():
        path = repo / relative
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new))
    out = repo / "output"
    assert run("render", "--root", str(repo), "--out", str(out)).code == 0
    result = run("diff", str(OUTPUT), str(out), "--format", "json")
    found = json.loads(result.stdout)["disruptions"]
    return [
        (d["code"], d["cluster"], d["subject"], d["blastRadius"]["tenants"])
        for d in found
        if d["code"].startswith("admission-")
    ]


def test_diff_names_admission_tightened_with_the_tenants_it_reaches(tmp_path: Path) -> None:
    found = _admission_diff(tmp_path, {
        "clusters/gb200-train.yaml": ("validationActions: [Warn, Audit]", "validationActions: [Deny]"),
        "tenants/team-a.yaml": ("[{name: default}, {name: batch}]", "[{name: default}]"),
    })  # fmt: skip
    everyone = ["llm-alignment", "llm-pretrain", "ml-research", "vision"]
    assert found == [
        ("admission-tightened", "gb200-train", "gpuplan-dra-classes", everyone),
        ("admission-tightened", "gb200-train", "gpuplan-gpu-resources", everyone),
        ("admission-tightened", "gb200-train", "gpuplan-tenant-queues", everyone),
        ("admission-tightened", "h100-prod", "gpuplan-tenant-queues", ["team-a"]),
    ]


def test_diff_names_admission_loosened_with_the_tenants_it_reaches(tmp_path: Path) -> None:
    found = _admission_diff(tmp_path, {
        "clusters/h100-prod.yaml": ("  requireQueue: true\n", ""),
        "tenants/team-b.yaml": (
            "      preemption: {borrowWithinCohort",
            "      localQueues: [{name: default}, {name: urgent}]\n      preemption: {borrowWithinCohort",
        ),
    })  # fmt: skip
    assert found == [
        ("admission-loosened", "h100-prod", "gpuplan-require-queue", ["team-a", "team-b"]),
        ("admission-loosened", "h100-prod", "gpuplan-tenant-queues", ["team-b"]),
    ]
