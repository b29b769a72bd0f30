"""Each check of the catalogue: one case that trips it and one that just passes it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.builders import (
    KUEUE,
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

OPERATOR_MIXED = OPERATOR | {"migStrategy": "mixed"}
COMPONENTS = {"gpuOperator": OPERATOR_MIXED, "kueue": KUEUE,
              "karpenter": aws_karpenter()}  # fmt: skip
MIG = {"mig": {"layout": {"1g.10gb": 7}}}
SINGLE = COMPONENTS | {"gpuOperator": OPERATOR_MIXED | {"migStrategy": "single"}}


def c1(components: Mapping[str, Any] = COMPONENTS, sharing: Any = MIG, **infer: Any) -> str:
    """An autoscaled pool train (1 to 4 nodes) and a static shared pool infer (2 nodes)."""
    train = pool("train", nodes={"min": 1, "max": 4}, karpenter={"instanceTypes": ["p5.48xlarge"]})
    return cluster(train, pool("infer", sharing=sharing, **infer), provider="aws",
                   components=components, priority_classes=[{"name": "research", "value": 100}],
                   cohorts=[{"name": "shared"}])  # fmt: skip


def check(tmp_path: Path, tenants: dict[str, str], **kwargs: Any) -> tuple[int, str]:
    """Check c1(**kwargs) with one tenant per name, each with the allocation given."""
    root = fleet(tmp_path, {"c1": c1(**kwargs)}, {n: tenant(n, a) for n, a in tenants.items()})
    result = run("check", "--root", str(root))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr


def quota(gpus: int, limits: Mapping[str, int] = {}, cohort: bool = False, **fields: Any) -> str:
    """An allocation of gpus on pool train, with the quota's limits and the allocation's fields."""
    entry = {"pool": "train", "gpus": gpus, **limits}
    return allocation(cohort="shared" if cohort else None, quotas=[entry], **fields)


def quotas(*entries: Mapping[str, Any]) -> str:
    return allocation(quotas=list(entries))


def test_capacity_exactly_at_nodes_max_passes(tmp_path: Path) -> None:
    code, err = check(tmp_path, {"a": quota(16), "b": quota(16)})
    assert code == 0, err
    assert "all depend on autoscaling: Karpenter keeps no minimum" in err  # a warning only


def test_capacity_one_over_nodes_max_fails(tmp_path: Path) -> None:
    code, err = check(tmp_path, {"a": quota(16), "b": quota(17)})
    assert code == 1
    b, a = position(tenant("b", quota(17)), "17"), position(tenant("a", quota(16)), "16")
    assert (
        f"tenants/b.yaml:{b}: error: allocations[0].quotas[0].gpus: tenants ask 33 GPUs of pool train, which has at most 32 (4 nodes x 8); tenant b asks 17, with a 16"
        in err
    )
    assert (
        f"tenants/a.yaml:{a}: error: allocations[0].quotas[0].gpus: tenants ask 33 GPUs of pool train, which has at most 32 (4 nodes x 8); tenant a asks 16, with b 17"
        in err
    )


def test_a_crowded_pool_names_eight_tenants_and_counts_the_rest(tmp_path: Path) -> None:
    # Eleven tenants of 3 GPUs (33 of 32): each error names 8 of the other ten and sums 2 of them.
    code, err = check(tmp_path, {f"t{i:02d}": quota(3) for i in range(11)})
    assert code == 1
    others = " + ".join(f"t{i:02d} 3" for i in range(1, 9))
    assert f"tenant t00 asks 3, with {others} + 2 other tenants 6 [pool-capacity]" in err, err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 11 and all(line.count(" 3 + ") == 8 for line in lines), lines


def test_capacity_within_nodes_min_still_depends_on_autoscaling(tmp_path: Path) -> None:
    # 8 GPUs fit nodes.min 1 x 8, but Karpenter keeps no minimum: nothing of the pool is always there.
    code, err = check(tmp_path, {"a": quota(8)})
    assert code == 0 and "[pool-capacity-autoscaled]" in err, err
    assert "nodes.min 1 is not kept" in err


def test_mig_capacity_counts_instances(tmp_path: Path) -> None:
    def mig(n: int) -> str:
        return quotas({"pool": "infer", "mig": {"1g.10gb": n}})

    assert check(tmp_path / "ok", {"a": mig(112)})[0] == 0  # 2 nodes x 8 GPUs x 7
    code, err = check(tmp_path / "over", {"a": mig(113)})
    assert (
        code == 1
        and "tenants ask 113 1g.10gb instances of pool infer, which has at most 112 (2 nodes x 56)"
        in err
    )


def test_shares_capacity_counts_replicas(tmp_path: Path) -> None:
    sharing = {"timeSlicing": {"replicas": 4}}
    ok, over = quotas({"pool": "infer", "gpus": 64}), quotas({"pool": "infer", "gpus": 65})
    assert check(tmp_path / "ok", {"a": ok}, sharing=sharing)[0] == 0
    code, err = check(tmp_path / "over", {"a": over}, sharing=sharing)
    assert code == 1 and "65 shares of pool infer, which has at most 64" in err


def test_lending_limit_equal_to_quota_passes_above_fails(tmp_path: Path) -> None:
    assert check(tmp_path / "ok", {"a": quota(8, {"lendingLimit": 8}, cohort=True)})[0] == 0
    code, err = check(tmp_path / "bad", {"a": quota(8, {"lendingLimit": 9}, cohort=True)})
    assert (
        code == 1
        and "allocations[0].quotas[0].lendingLimit: lendingLimit 9 is above the quota 8" in err
    )


@pytest.mark.parametrize("field", ["borrowingLimit", "lendingLimit"])
def test_limits_need_a_cohort(tmp_path: Path, field: str) -> None:
    assert (
        check(
            tmp_path / "ok",
            {"a": quota(8, {field: 4}, cohort=True), "b": quota(8, cohort=True)},
        )[0]
        == 0
    )
    code, err = check(tmp_path / "bad", {"a": quota(8, {field: 4})})
    assert code == 1 and f"{field} needs a cohort" in err


def test_borrowing_beyond_what_the_cohort_lends_warns(tmp_path: Path) -> None:
    lender = quota(8, {"lendingLimit": 4}, cohort=True)
    code, err = check(
        tmp_path / "ok", {"a": quota(8, {"borrowingLimit": 4}, cohort=True), "b": lender}
    )
    assert code == 0 and "can lend" not in err
    code, err = check(
        tmp_path / "warn", {"a": quota(8, {"borrowingLimit": 5}, cohort=True), "b": lender}
    )
    assert (
        code == 0
        and "warning: allocations[0].quotas[0].borrowingLimit: borrowingLimit 5 is more than the rest of cohort shared can lend"
        in err
    )
    strict = run("check", "--root", str(tmp_path / "warn"), "--strict")
    assert strict.code == 1


def test_max_gpus_per_pod_at_gpus_per_node_passes_above_fails(tmp_path: Path) -> None:
    assert check(tmp_path / "ok", {"a": quota(8, maxGpusPerPod=8)})[0] == 0
    code, err = check(tmp_path / "bad", {"a": quota(8, maxGpusPerPod=9)})
    assert code == 1 and "maxGpusPerPod 9 is above the largest gpusPerNode 8" in err


def test_quota_without_scheduler_warns(tmp_path: Path) -> None:
    components = {k: v for k, v in COMPONENTS.items() if k != "kueue"}
    static = quotas({"pool": "infer", "mig": {"1g.10gb": 7}})
    code, err = check(tmp_path, {"a": static}, components=components)
    assert (
        code == 0 and "warning: allocations[0].cluster: cluster c1 has no Kueue or Volcano" in err
    )


def test_cpu_above_the_pools_fails_exactly_at_passes(tmp_path: Path) -> None:
    assert check(tmp_path / "ok", {"a": quota(8, cpu=768)})[0] == 0  # 4 nodes x 192
    code, err = check(tmp_path / "bad", {"a": quota(8, cpu="768001m")})
    assert code == 1 and "allocations[0].cpu: cpu" in err


def test_tenants_cpu_on_one_pool_above_its_nodes_fails_exactly_at_passes(tmp_path: Path) -> None:
    derived = quota(8)  # 8 x 24 cores of a 192-core, 8-GPU node: 192
    ok = {"a": quota(8, cpu=576), "b": derived}  # 576 + 192 = 4 nodes x 192
    assert check(tmp_path / "ok", ok)[0] == 0
    code, err = check(tmp_path / "bad", {"a": quota(8, cpu="576001m"), "b": derived})
    assert code == 1
    at = position(tenant("b", derived), "- {pool")
    assert (
        f"tenants/b.yaml:{at}: error: allocations[0].quotas: tenants' cpu quotas on pool train add up to 768001m, "
        "more than its nodes have (768 = 4 x 192)" in err
    ), err


def test_memory_above_the_pools_fails(tmp_path: Path) -> None:
    assert check(tmp_path / "ok", {"a": quota(8, memory="7600Gi")})[0] == 0
    code, err = check(tmp_path / "bad", {"a": quota(8, memory="7601Gi")})
    assert code == 1 and "allocations[0].memory" in err


def test_unknown_operator_version_fails(tmp_path: Path) -> None:
    components = COMPONENTS | {"gpuOperator": OPERATOR_MIXED | {"version": "v19.1.0"}}
    code, err = check(tmp_path, {"a": quota(8)}, components=components)
    assert code == 1 and "gpu-operator v19.1.0 is not supported" in err


def test_mps_with_mixed_strategy_fails_single_passes(tmp_path: Path) -> None:
    mps = {"mps": {"replicas": 4}}
    shares = quotas({"pool": "infer", "gpus": 8})
    code, err = check(tmp_path / "bad", {"a": shares}, sharing=mps)
    assert (
        code == 1
        and "nodePools[1].sharing.mps: the NVIDIA device plugin does not run MPS with migStrategy mixed"
        in err
    )
    assert check(tmp_path / "ok", {"a": shares}, components=SINGLE, sharing=mps)[0] == 0


def test_single_strategy_with_two_profiles_fails(tmp_path: Path) -> None:
    two = {"mig": {"layout": {"1g.10gb": 3, "2g.20gb": 2}}}
    code, err = check(tmp_path, {"a": quota(8)}, components=SINGLE, sharing=two)
    assert (
        code == 1
        and "migStrategy single allows one MIG profile type per node, this pool has 2" in err
    )


@pytest.mark.parametrize(("sharing", "phrase"), [
    ({"timeSlicing": {"replicas": 1}}, "greater than or equal to 2"),
    ({"mps": {"replicas": 49}}, "less than or equal to 48"),
])  # fmt: skip
def test_replica_bounds(tmp_path: Path, sharing: dict[str, Any], phrase: str) -> None:
    code, err = check(tmp_path, {"a": quota(8)}, sharing=sharing)
    assert code == 1 and phrase in err


def test_flavor_labels_at_most_eight(tmp_path: Path) -> None:
    # the MIG pool's flavor selects nvidia.com/mig.config too: 7 labels of the user's and it are 8
    for count, code in ((7, 0), (8, 1)):
        labels = {f"example.com/l{i}": "v" for i in range(count)}
        result = run("check", "--root", str(write(tmp_path / str(count), labels=labels)))
        assert result.code == code, result.stderr
        if code:
            assert (
                "9 labels select this pool's nodes: a Kueue ResourceFlavor takes at most 8"
                in result.stderr
            )


def test_taints_at_most_eight(tmp_path: Path) -> None:
    for count, code in ((8, 0), (9, 1)):
        taints = [{"key": f"example.com/t{i}", "value": "x", "effect": "NoSchedule"} for i in range(count)]  # fmt: skip
        result = run("check", "--root", str(write(tmp_path / str(count), taints=taints)))
        assert result.code == code, result.stderr
        if code:
            assert "9 taints: a Kueue ResourceFlavor takes at most 8 tolerations" in result.stderr


def write(root: Path, **infer: Any) -> Path:
    """c1 with pool infer's extra fields, and tenant a with 8 GPUs of train."""
    return fleet(root, {"c1": c1(**infer)}, {"a": tenant("a", quota(8))})


@pytest.mark.parametrize(("limit", "value", "phrase"), [
    ("max_flavors", 1, "quota on 2 pools: a Kueue v0.19.2 resource group holds at most 1 flavors"),
    ("max_covered_resources", 3, "4 resources (cpu, memory and 2 GPU resources): a Kueue v0.19.2 resource group covers at most 3"),
    ("max_group_entries", 7, "2 pools x 4 resources = 8 quota entries: Kueue v0.19.2 allows at most 7"),
])  # fmt: skip
def test_resource_group_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: int, phrase: str
) -> None:
    """Kueue's 64 flavors / 64 resources / 512 entries (the release's facts), scaled down to reach them with two pools."""
    from dataclasses import replace

    from gpuplan import components

    kueue = components.REGISTRY["kueue"]

    def limit_to(most: int) -> None:
        releases = tuple(replace(r, **{limit: most}) for r in kueue.releases)
        monkeypatch.setitem(components.REGISTRY, "kueue", replace(kueue, releases=releases))

    limit_to(value)
    two_pools = quotas({"pool": "train", "gpus": 8}, {"pool": "infer", "mig": {"1g.10gb": 7}})
    code, err = check(tmp_path / "over", {"a": two_pools})
    assert code == 1 and phrase in err
    limit_to(value + 1)
    assert check(tmp_path / "at", {"a": two_pools})[0] == 0


def test_kueue_topology_on_a_pool_karpenter_scales_is_a_warning(tmp_path: Path) -> None:
    # TAS counts only nodes that exist; Karpenter keeps no minimum, so even min 1 starts from 0.
    root = tmp_path / "scaled"
    code, err = check(root, {"a": quota(8)}, topology=["block", "host"])
    assert code == 0 and "topology-autoscaled" not in err, (
        err
    )  # the static pool: every node stays up
    text = (root / "clusters/c1.yaml").read_text()
    moved = text.replace("    topology: [block, host]\n", "").replace(
        "    karpenter: {instanceTypes: [p5.48xlarge]}\n",
        "    karpenter: {instanceTypes: [p5.48xlarge]}\n    topology: [block, host]\n",
    )
    (root / "clusters/c1.yaml").write_text(moved)
    result = run("check", "--root", str(root))
    assert result.code == 0 and (
        f"clusters/c1.yaml:{position(moved, 'topology')}: warning: nodePools[0].topology: Kueue's topology-aware scheduling places "
        "workloads only on nodes that exist, and pool train scales from 0 to 4 nodes"
        in result.stderr
    ), result.stderr
