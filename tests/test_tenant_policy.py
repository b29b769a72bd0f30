"""Tenants whose ordinary workloads run: request defaults, CPU-only jobs, several namespaces,
RDMA under Pod Security, and Kueue settings per tenant."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.model.quantity import parse_quantity
from gpuplan.plan.entitlements import apportion
from tests.builders import MIXED, Raw, allocation, fleet, position, static_cluster, tenant
from tests.conftest import PROJECT, run

CPU_POOL = {"name": "general", "cpu": 16, "memory": "64Gi", "nodes": {"count": 2}, "labels": {"pool": "general"}}  # fmt: skip
CPU_POOLS = {"cpuPools": [CPU_POOL]}


def quota(
    gpus: int = 8, mig: int = 7, cpu: int = 8, cpu_pool: str = "general", **fields: Any
) -> str:
    """Tenant a's allocation: GPUs of train, 1g.10gb instances of infer, cores of a CPU pool."""
    quotas = [{"pool": "train", "gpus": gpus}, {"pool": "infer", "mig": {"1g.10gb": mig}}]
    cpu_quotas = [{"pool": cpu_pool, "cpu": cpu, "memory": "32Gi"}]
    return allocation(quotas=quotas, cpuQuotas=cpu_quotas, **fields)


def _render(
    tmp_path: Path,
    tenant: str,
    cluster_extra: dict[str, Any] = CPU_POOLS,
    name: str = "a",
    components: dict[str, Any] = MIXED,
) -> tuple[int, str, Path]:
    cluster = static_cluster(components, **cluster_extra)
    root = fleet(tmp_path / "repo", {"c1": cluster}, {name: tenant})
    out = tmp_path / "out"
    result = run("render", "--root", str(root), "--out", str(out))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr, out


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


# --- Kueue's flavor assignment, simulated from the emitted objects -------------------------------


def _tolerated(taint: dict[str, str], tolerations: list[dict[str, str]]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint["effect"]:
            continue
        if tol.get("operator") == "Exists" and (not tol.get("key") or tol["key"] == taint["key"]):
            return True
        if tol.get("key") == taint["key"] and tol.get("value") == taint.get("value"):
            return True
    return False


def assign_flavor(
    queue: dict[str, Any],
    flavors: dict[str, dict[str, Any]],
    requests: dict[str, str],
    tolerations: list[dict[str, str]] | None = None,
) -> str | None:
    """Return the flavor Kueue assigns an empty ClusterQueue's workload, or None (kubernetes-sigs/kueue
    v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go: flavors in order, untolerated NoSchedule
    nodeTaints skip a flavor (the flavor's own tolerations count), the first whose quota holds every
    request of the group is taken)."""
    wanted = {k: parse_quantity(v) for k, v in requests.items()}
    for group in queue["spec"]["resourceGroups"]:
        if not set(wanted) & set(group["coveredResources"]):
            continue
        for flavor in group["flavors"]:
            spec = flavors[flavor["name"]]["spec"]
            taints = [
                t for t in spec.get("nodeTaints", []) if t["effect"] in ("NoSchedule", "NoExecute")
            ]
            if any(
                not _tolerated(t, (tolerations or []) + spec.get("tolerations", [])) for t in taints
            ):
                continue
            quota = {r["name"]: parse_quantity(r["nominalQuota"]) for r in flavor["resources"]}
            if all(
                wanted[r] <= quota.get(r, Fraction(0))
                for r in wanted
                if r in group["coveredResources"]
            ):
                return flavor["name"]
        return None
    return None


def _kueue(out: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    folder = out / "c1" / "kueue"
    flavors = {o["metadata"]["name"]: o for o in map(_load, folder.glob("resourceflavor-*.yaml"))}
    return _load(folder / "clusterqueue-a.yaml"), flavors


def test_a_cpu_only_job_is_admitted_on_the_cpu_pool_and_a_gpu_job_on_a_gpu_pool(
    tmp_path: Path,
) -> None:
    code, err, out = _render(tmp_path, tenant("a", quota()))
    assert code == 0, err
    queue, flavors = _kueue(out)
    cpu_job = assign_flavor(queue, flavors, {"cpu": "2", "memory": "4Gi"})
    assert cpu_job == "general"
    assert flavors["general"]["spec"] == {
        "nodeLabels": {"pool": "general"},
        "tolerations": [],
    }  # no GPU toleration
    assert (
        assign_flavor(queue, flavors, {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"})
        == "train"
    )
    assert (
        assign_flavor(queue, flavors, {"cpu": "1", "memory": "1Gi", "nvidia.com/mig-1g.10gb": "1"})
        == "infer"
    )
    first = queue["spec"]["resourceGroups"][0]["flavors"][0]
    assert first["name"] == "general" and {r["name"]: r["nominalQuota"] for r in first["resources"]} == {
        "cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "0"}  # fmt: skip


def test_without_a_cpu_pool_a_cpu_only_job_takes_the_first_gpu_flavor_and_gpuplan_warns(
    tmp_path: Path,
) -> None:
    only_gpus = allocation(quotas=[{"pool": "train", "gpus": 8}])
    code, err, out = _render(tmp_path, tenant("a", only_gpus), cluster_extra={})
    assert code == 0, err
    queue, flavors = _kueue(out)
    assert assign_flavor(queue, flavors, {"cpu": "2", "memory": "4Gi"}) == "train"
    assert (
        "allocations[0].quotas: Kueue admits the CPU-only workloads of tenant a on the first flavor that has cpu, GPU pool train: they take GPU nodes; add cpuPools to the cluster and give the tenant cpuQuotas there [cpu-only-work]"
        in err
    )


def test_a_cpu_pool_quota_above_its_nodes_fails_at_every_tenant_and_passes_exactly_at(
    tmp_path: Path,
) -> None:
    ok = {"cpuPools": [CPU_POOL | {"cpu": 4}]}  # 2 nodes x 4 = 8 cores: exactly the quota
    assert _render(tmp_path / "ok", tenant("a", quota()), cluster_extra=ok)[0] == 0
    code, err, _ = _render(tmp_path / "over", tenant("a", quota(cpu=9)), cluster_extra=ok)
    assert code == 1
    assert (
        "allocations[0].cpuQuotas[0].cpu: tenants ask 9 cpu of CPU pool general, which has 8 (2 x 4); tenant a asks 9 (a 9) [cpu-pool-capacity]"
        in err
    )


def test_a_cpu_quota_on_an_unknown_pool_fails(tmp_path: Path) -> None:
    code, err, _ = _render(tmp_path, tenant("a", quota(cpu_pool="genral")))
    assert (
        code == 1
        and "cluster c1 has no CPU pool 'genral' (its cpuPools: general) [cpu-quota-pools]" in err
    )


# --- LimitRange defaults and a pod without requests --------------------------------------------


def test_the_limit_range_gives_cpu_and_memory_defaults_from_the_tenant_or_the_cluster(
    tmp_path: Path,
) -> None:
    code, err, out = _render(
        tmp_path / "cluster",
        tenant("a", quota()),
        cluster_extra=CPU_POOLS
        | {"containerDefaults": {"requests": {"cpu": "250m"}, "limits": {"memory": "2Gi"}}},
    )
    assert code == 0, err
    limits = _load(out / "c1/namespaces/a/limitrange-container-defaults.yaml")["spec"]["limits"]
    assert limits[0] == {
        "type": "Container",
        "defaultRequest": {"cpu": "250m", "memory": "256Mi", "nvidia.com/gpu": "0"},
        "default": {"memory": "2Gi", "nvidia.com/gpu": "0"},
    }
    defaults = {"requests": {"cpu": 1, "memory": "1Gi"}}
    code, err, out = _render(tmp_path / "tenant", tenant("a", quota(), containerDefaults=defaults))
    assert code == 0, err
    limits = _load(out / "c1/namespaces/a/limitrange-container-defaults.yaml")["spec"]["limits"]
    assert limits[0]["defaultRequest"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "0"}
    assert limits[1] == {"type": "Pod", "max": {"nvidia.com/gpu": "8"}}


def test_a_default_request_above_the_limit_is_an_input_error(tmp_path: Path) -> None:
    defaults = {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}
    text = tenant("a", quota(), containerDefaults=defaults)
    code, err, _ = _render(tmp_path, text)
    line = position(text, "containerDefaults").split(":")[0]
    assert (
        code == 1
        and f"tenants/a.yaml:{line}:" in err
        and "the default memory request 2147483648 is above the default memory limit 1073741824"
        in err
    )


def test_a_default_request_above_a_namespace_quota_fails(tmp_path: Path) -> None:
    text = tenant("a", quota(gpus=0, mig=0), containerDefaults={"requests": {"cpu": 9}})
    code, err, _ = _render(tmp_path, text)
    assert (
        code == 1
        and "containerDefaults.requests.cpu: the default cpu request 9 is above the cpu quota 8 of namespace a (tenant a)"
        in err
    )


@pytest.mark.parametrize(("request_", "fails"), [("8", False), ("8001m", True)])
def test_a_default_request_fits_a_namespace_quota_exactly(
    tmp_path: Path, request_: str, fails: bool
) -> None:
    """A default request equal to the namespace's cpu quota passes; one millicore more fails."""
    defaults = {"requests": {"cpu": Raw(request_)}}
    code, err, _ = _render(tmp_path, tenant("a", quota(gpus=0, mig=0), containerDefaults=defaults))
    assert ("is above the cpu quota 8 of namespace a" in err) == fails
    assert code == (1 if fails else 0), err


def _limit_ranges(folder: Path) -> list[dict[str, Any]]:
    return list(map(_load, folder.glob("limitrange-*.yaml")))


def _admit_pod_without_requests(folder: Path) -> list[str]:
    """Return why the API server would reject a one-container pod stating no resources (empty: admitted).

    LimitRanger (kubernetes plugin/pkg/admission/limitranger): Container `default` fills missing
    limits and `defaultRequest` missing requests; a Pod `max` needs every resource it names limited.
    ResourceQuota (pkg/quota/v1/evaluator/core/pods.go): a quota constraining requests.cpu or
    requests.memory needs every container to request them; usage must stay within `hard`. Quotas
    scoped to PriorityClass In [...] do not match a pod without a priorityClassName.
    """
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    problems = []
    for item in _limit_ranges(folder):
        for limit in item["spec"]["limits"]:
            if limit["type"] == "Container":
                limits |= {
                    k: parse_quantity(v)
                    for k, v in limit.get("default", {}).items()
                    if k not in limits
                }
                requests |= {
                    k: parse_quantity(v)
                    for k, v in limit.get("defaultRequest", {}).items()
                    if k not in requests
                }
    for item in _limit_ranges(folder):
        for limit in item["spec"]["limits"]:
            for resource, most in (limit.get("max", {}) if limit["type"] == "Pod" else {}).items():
                if resource not in limits or limits[resource] > parse_quantity(most):
                    problems.append(
                        f"LimitRange {item['metadata']['name']}: no {resource} limit or above max"
                    )
    for resource in requests:
        if resource in limits and requests[resource] > limits[resource]:
            problems.append(f"{resource} request above its limit")
    for quota in map(_load, folder.glob("resourcequota-*.yaml")):
        if "scopeSelector" in quota["spec"] or quota["spec"].get("scopes"):
            continue
        for key, hard in quota["spec"]["hard"].items():
            resource = key.removeprefix("requests.")
            if key in ("requests.cpu", "requests.memory") and resource not in requests:
                problems.append(
                    f"ResourceQuota {quota['metadata']['name']}: must specify {resource}"
                )
            elif key == "pods" and parse_quantity(hard) < 1:
                problems.append(f"ResourceQuota {quota['metadata']['name']}: no pods allowed")
            elif key.startswith("requests.") and requests.get(
                resource, Fraction(0)
            ) > parse_quantity(hard):
                problems.append(
                    f"ResourceQuota {quota['metadata']['name']}: {resource} over {hard}"
                )
    return problems


NAMESPACES = sorted(p for p in (PROJECT / "output").glob("*/namespaces/*") if p.is_dir())


def test_the_example_fleet_has_tenant_namespaces() -> None:
    assert len(NAMESPACES) >= 8


@pytest.mark.parametrize("folder", NAMESPACES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_example_namespace_admits_a_pod_without_requests(folder: Path) -> None:
    assert _limit_ranges(folder), "no LimitRange"
    assert _admit_pod_without_requests(folder) == []


def test_the_simulation_rejects_a_namespace_without_defaults(tmp_path: Path) -> None:
    folder = NAMESPACES[0]
    for path in folder.glob("resourcequota-*.yaml"):
        (tmp_path / path.name).write_text(path.read_text())
    assert any("must specify cpu" in p for p in _admit_pod_without_requests(tmp_path))


# --- several namespaces ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "weights", "parts"),
    [
        (32, [1, 1], [16, 16]),
        (3, [1, 1], [2, 1]),
        (7, [3, 1], [5, 2]),
        (1, [1, 1, 1], [1, 0, 0]),
        (0, [1, 2], [0, 0]),
    ],
)
def test_apportion_adds_up_to_the_total(total: int, weights: list[int], parts: list[int]) -> None:
    assert apportion(total, weights) == parts


def _hard(out: Path, namespace: str) -> dict[str, str]:
    return _load(out / f"c1/namespaces/{namespace}/resourcequota-a.yaml")["spec"]["hard"]


NO_SCHEDULER = {"gpuOperator": MIXED["gpuOperator"]}  # the GPU Operator alone: no scheduler admits
THREE = ["a", "a-batch", "a-dev"]


def test_where_kueue_admits_each_namespace_gets_the_tenants_total(tmp_path: Path) -> None:
    # one ClusterQueue admits up to the whole total in any one namespace (issue 35 point 9)
    shares = {"a": 3, "a-batch": 1, "a-dev": 1}
    code, err, out = _render(tmp_path, tenant("a", quota(namespaceShares=shares), namespaces=THREE))
    assert code == 0, err
    for namespace in ("a", "a-batch", "a-dev"):
        hard = _hard(out, namespace)
        assert (hard["requests.nvidia.com/gpu"], hard["requests.nvidia.com/mig-1g.10gb"]) == (
            "8",
            "7",
        )
        assert parse_quantity(hard["requests.cpu"]) == 8 + 192 + 24


def test_several_namespaces_split_the_quota_evenly_by_default_never_adding_up_to_more(
    tmp_path: Path,
) -> None:
    text = tenant("a", quota(), namespaces=THREE)
    code, err, out = _render(tmp_path, text, components=NO_SCHEDULER)
    assert code == 0, err
    hards = [_hard(out, n) for n in ("a", "a-batch", "a-dev")]
    assert [h["requests.nvidia.com/gpu"] for h in hards] == ["3", "3", "2"]
    assert [h["requests.nvidia.com/mig-1g.10gb"] for h in hards] == ["3", "2", "2"]
    for key in hards[0]:
        assert sum(parse_quantity(h[key]) for h in hards) <= {
            "requests.nvidia.com/gpu": 8,
            "requests.nvidia.com/mig-1g.10gb": 7,
        }.get(key, 10**15)
    total_cpu = sum(parse_quantity(h["requests.cpu"]) for h in hards)
    assert total_cpu == 8 + 192 + 24  # CPU pool 8 + train 8 GPUs x 24 + infer 7 x 1/7 GPU x 24


def test_an_explicit_split_follows_the_weights_and_must_list_every_namespace(
    tmp_path: Path,
) -> None:
    def split(**shares: int) -> str:
        return tenant("a", quota(namespaceShares=shares), namespaces=["a", "a-batch"])

    code, err, out = _render(
        tmp_path / "ok", split(**{"a": 3, "a-batch": 1}), components=NO_SCHEDULER
    )
    assert code == 0, err
    assert (
        _hard(out, "a")["requests.nvidia.com/gpu"],
        _hard(out, "a-batch")["requests.nvidia.com/gpu"],
    ) == ("6", "2")
    code, err, _ = _render(tmp_path / "bad", split(**{"a": 3, "a-btach": 1}))
    assert code == 1
    assert (
        "allocations[0].namespaceShares.a-btach: a-btach is not a namespace of tenant a (a, a-batch) [namespace-shares]"
        in err
    )
    assert (
        "namespace a-batch has no share: list every namespace of the tenant [namespace-shares]"
        in err
    )


# --- RDMA networks under Pod Security ------------------------------------------------------------


def _network(kind: str, **fields: str) -> dict[str, Any]:
    """CPU pool general and a network ib of that kind on pool train."""
    ipam = {"type": "whereabouts", "range": "10.0.0.0/20"}
    network = {"name": "ib", "type": kind} | fields | {"ipam": ipam, "pools": ["train"]}
    return CPU_POOLS | {"networks": [network]}


@pytest.mark.parametrize(
    ("security", "warns"), [("restricted", True), ("baseline", True), ("privileged", False)]
)
def test_an_rdma_network_under_baseline_or_restricted_warns_naming_the_fix(
    tmp_path: Path, security: str, warns: bool
) -> None:
    network = _network("ipoib", master="ib0", resourceName="rdma/hca_shared_devices_a")
    text = tenant("a", quota(networks=["ib"]), podSecurity=security)
    code, err, _ = _render(tmp_path, text, cluster_extra=network)
    assert code == 0, err
    assert ("[rdma-pod-security]" in err) is warns
    if warns:
        assert (
            f"allocations[0].networks[0]: network ib is RDMA, and RDMA pods add the IPC_LOCK capability to pin memory, which PSA {security} refuses: set podSecurity: privileged"
            in err
        )


def test_a_network_without_rdma_does_not_warn(tmp_path: Path) -> None:
    network = _network("macvlan", master="eth1")
    code, err, _ = _render(tmp_path, tenant("a", quota(networks=["ib"])), cluster_extra=network)
    assert code == 0 and "rdma-pod-security" not in err, err


# --- Kueue settings per tenant ---------------------------------------------------------------------

KUEUE = {
    "preemption": {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    },
    "queueingStrategy": "StrictFIFO",
    "stopPolicy": "Hold",
    "localQueues": [{"name": "default"}, {"name": "batch", "stopPolicy": "HoldAndDrain"}],
}
SETTLED = tenant("a", quota(cohort="shared", kueue=KUEUE), namespaces=["a", "a-batch"])


def test_kueue_settings_per_tenant_reach_the_cluster_queue_and_local_queues(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path, SETTLED)
    assert code == 0, err
    spec = _load(out / "c1/kueue/clusterqueue-a.yaml")["spec"]
    assert spec["preemption"] == {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    }
    assert (spec["queueingStrategy"], spec["stopPolicy"]) == ("StrictFIFO", "Hold")
    for namespace in ("a", "a-batch"):
        queues = {
            o["metadata"]["name"]: o["spec"]
            for o in map(_load, (out / f"c1/namespaces/{namespace}").glob("localqueue-*.yaml"))
        }
        assert queues == {
            "default": {"clusterQueue": "a", "stopPolicy": "None"},
            "batch": {"clusterQueue": "a", "stopPolicy": "HoldAndDrain"},
        }


AFS = {"admissionFairSharing": {"usageHalfLifeTime": "168h"}}
WEIGHTED = {
    "namespaceShares": {"a": 3, "a-batch": 1},
    "kueue": {"localQueues": [{"name": "default"}, {"name": "urgent", "weight": 2}]},
}


def _render_kueue(
    tmp_path: Path, version: str, afs: dict[str, Any], fields: dict[str, Any]
) -> tuple[int, str, Path]:
    """Render with Kueue at a version (admission fair sharing when afs) and tenant a's fields."""
    components = MIXED | {"kueue": {"version": version} | afs}
    text = tenant("a", quota(**fields), namespaces=["a", "a-batch"])
    return _render(tmp_path, text, components=components)


def _queue_weights(out: Path) -> dict[tuple[str, str], Any]:
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"].get("fairSharing")
        for o in map(_load, (out / "c1/namespaces").glob("*/localqueue-*.yaml"))
    }


def test_local_queue_weights_are_the_namespace_share_times_the_queue_weight(tmp_path: Path) -> None:
    code, err, out = _render_kueue(tmp_path, "v0.19.2", AFS, WEIGHTED)
    assert code == 0, err
    assert _queue_weights(out) == {
        ("a", "default"): {"weight": "3"},
        ("a", "urgent"): {"weight": "6"},
        ("a-batch", "default"): {"weight": "1"},
        ("a-batch", "urgent"): {"weight": "2"},
    }


def test_without_admission_fair_sharing_a_queue_weight_is_refused(tmp_path: Path) -> None:
    # Kueue reads the weight only under admission fair sharing (pkg/cache/queue/cluster_queue.go v0.15.8).
    code, err, _ = _render_kueue(tmp_path, "v0.19.2", {}, WEIGHTED)
    assert code == 1
    text = tenant("a", quota(**WEIGHTED), namespaces=["a", "a-batch"])
    assert (
        f"tenants/a.yaml:{position(text, '2', after='urgent, weight: ')}: error: allocations[0].kueue.localQueues[1].weight: LocalQueue urgent has a weight, "
        "which Kueue only reads under admission fair sharing" in err
    ), err


def test_local_queue_weights_wait_for_the_release_with_admission_fair_sharing(
    tmp_path: Path,
) -> None:
    # v0.14 serves LocalQueue spec.fairSharing but its AdmissionFairSharing gate is alpha and off:
    # the Configuration's admissionFairSharing is refused there, and with it the queues' weights.
    code, err, _ = _render_kueue(tmp_path / "old", "v0.14.8", AFS, WEIGHTED)
    assert code == 1 and "admission fair sharing needs Kueue v0.15 or later" in err, err
    code, err, out = _render_kueue(tmp_path / "new", "v0.15.8", AFS, WEIGHTED)
    assert code == 0, err
    assert _queue_weights(out)[("a", "urgent")] == {"weight": "6"}
    code, err, out = _render_kueue(tmp_path / "plain", "v0.15.8", {}, {})
    assert code == 0, err
    assert set(_queue_weights(out).values()) == {None}  # no admission fair sharing, no weights


def test_kueue_defaults_are_unchanged(tmp_path: Path) -> None:
    code, err, out = _render(tmp_path, tenant("a", quota(cohort="shared")))
    assert code == 0, err
    spec = _load(out / "c1/kueue/clusterqueue-a.yaml")["spec"]
    assert spec["preemption"] == {
        "borrowWithinCohort": {"policy": "Never"},
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
    }
    assert (spec["queueingStrategy"], spec["stopPolicy"]) == ("BestEffortFIFO", "None")


def test_reclaim_never_with_borrow_preemption_is_refused_as_kueue_does(tmp_path: Path) -> None:
    bad = {"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}}  # fmt: skip
    code, err, _ = _render(tmp_path, tenant("a", quota(cohort="shared", kueue=bad)))
    assert (
        code == 1
        and "reclaimWithinCohort Never cannot be combined with borrowWithinCohort.policy other than Never"
        in err
    )


def test_borrow_preemption_without_a_cohort_and_repeated_local_queues_fail(tmp_path: Path) -> None:
    bad = {"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
           "localQueues": [{"name": "q"}, {"name": "q"}]}  # fmt: skip
    code, err, _ = _render(tmp_path, tenant("a", quota(kueue=bad)))
    assert code == 1
    assert (
        "allocations[0].kueue.preemption.borrowWithinCohort.policy: borrowWithinCohort needs a cohort to borrow from: set the allocation's cohort [local-queues]"
        in err
    )
    assert (
        "allocations[0].kueue.localQueues[1].name: LocalQueue q is listed already [local-queues]"
        in err
    )


@pytest.mark.parametrize("version", ["v0.12.10", "v0.14.8", "v0.19.2"])
def test_kueue_settings_validate_against_the_crds_of_every_supported_line(
    tmp_path: Path, version: str
) -> None:
    cluster = static_cluster(MIXED | {"kueue": {"version": version}}, **CPU_POOLS)
    root = fleet(tmp_path / "repo", {"c1": cluster}, {"a": SETTLED})
    result = run("render", "--root", str(root), "--out", str(tmp_path / "out"))
    assert result.code == 0, result.stderr
    queue = _load(tmp_path / "out/c1/kueue/clusterqueue-a.yaml")
    assert (
        queue["spec"]["queueingStrategy"] == "StrictFIFO" and queue["spec"]["stopPolicy"] == "Hold"
    )
