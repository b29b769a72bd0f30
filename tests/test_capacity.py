"""`gpuplan capacity`: its numbers, recomputed here independently from the input files."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import yaml

from gpuplan.plan.headroom import QUEUE_HEAD
from tests.conftest import PROJECT, copy_example, run


def _mig_name(profile: str, strategy: str, shared: bool) -> str:
    base = "nvidia.com/gpu" if strategy == "single" else f"nvidia.com/mig-{profile}"
    return base + (".shared" if shared else "")


def _expected_capacity() -> dict[tuple[str, str, str], int]:
    """Recompute capacity per (cluster, pool, resource) straight from clusters/*.yaml."""
    out: dict[tuple[str, str, str], int] = defaultdict(int)
    for path in sorted((PROJECT / "clusters").glob("*.yaml")):
        cluster = yaml.safe_load(path.read_text())
        strategy = cluster.get("components", {}).get("gpuOperator", {}).get("migStrategy", "mixed")
        if cluster["provider"] == "gcp" and "gpuOperator" not in cluster.get("components", {}):
            strategy = "single"  # GKE advertises MIG partitions as nvidia.com/gpu
        for pool in cluster["nodePools"]:
            nodes = pool["nodes"].get("count", pool["nodes"].get("max"))
            gpus = pool["gpusPerNode"]
            sharing = pool.get("sharing", "exclusive")
            sharing = {} if sharing == "exclusive" else sharing
            sharer = sharing.get("timeSlicing") or sharing.get("mps") or {}
            replicas = sharer.get("replicas", 1)
            if (
                "dra" in pool
            ):  # DRA: devices of one DeviceClass per model (and MIG profile), never shares
                _dra_capacity(out, cluster["name"], pool, nodes, gpus, sharing)
                continue
            shared = replicas > 1 and sharer.get("renameByDefault", True)
            if "mig" in sharing:
                for count, layout in _mig_blocks(sharing["mig"], gpus):
                    for profile, per_gpu in layout.items():
                        key = (cluster["name"], pool["name"], _mig_name(profile, strategy, shared))
                        out[key] += nodes * count * per_gpu * replicas
            else:
                resource = "nvidia.com/gpu.shared" if shared else "nvidia.com/gpu"
                out[(cluster["name"], pool["name"], resource)] += nodes * gpus * replicas
    return dict(out)


def _mig_blocks(mig: dict, gpus: int) -> list[tuple[int, dict]]:
    """Return (GPUs, layout) of each block of a pool's MIG section: per device group, or all GPUs."""
    if "devices" in mig:
        return [(len(d["gpus"]), d["layout"]) for d in mig["devices"]]
    return [(gpus, mig["layout"])]


def _dra_capacity(
    out: dict, cluster: str, pool: dict, nodes: int, gpus: int, sharing: dict
) -> None:
    """Add a DRA pool's devices per DeviceClass quota key (gpuplan's default class names)."""
    stated = (pool["dra"] or {}).get("deviceClass")
    prefix = "time-slicing." if "timeSlicing" in sharing else "mps." if "mps" in sharing else ""
    base = stated or f"{pool['gpu'].lower()}.gpuplan.io"
    suffix = ".deviceclass.resource.k8s.io/devices"
    if "mig" not in sharing:
        out[(cluster, pool["name"], (base if stated else prefix + base) + suffix)] += nodes * gpus
        return
    for count, layout in _mig_blocks(sharing["mig"], gpus):
        for profile, per_gpu in layout.items():
            name = f"{profile}.{base}" if stated else f"{prefix}{profile}.{base}"
            out[(cluster, pool["name"], name + suffix)] += nodes * count * per_gpu


def _expected_grants() -> dict[tuple[str, str, str], int]:
    capacity = _expected_capacity()
    out: dict[tuple[str, str, str], int] = defaultdict(int)
    for path in sorted((PROJECT / "tenants").glob("*.yaml")):
        tenant = yaml.safe_load(path.read_text())
        for alloc in tenant.get("allocations", []):
            for quota in alloc["quotas"]:
                matches = [
                    k for k in capacity if k[0] == alloc["cluster"] and k[1] == quota["pool"]
                ]
                if "gpus" in quota:
                    (key,) = matches
                    out[key] += quota["gpus"]
                else:
                    for profile, count in quota["mig"].items():
                        (key,) = [
                            k
                            for k in matches
                            if k[2].startswith(f"nvidia.com/mig-{profile}")
                            or f"{profile}."
                            in k[2].removesuffix(".deviceclass.resource.k8s.io/devices")
                            or len(matches) == 1
                        ]
                        out[key] += count
    return dict(out)


def test_capacity_json_matches_an_independent_computation() -> None:
    result = run("capacity", "--root", str(PROJECT), "--format", "json")
    assert result.code == 0, result.stderr
    rows = json.loads(result.stdout)["pools"]
    got = {(r["cluster"], r["pool"], r["resource"]): r for r in rows}
    expected = _expected_capacity()
    assert {k: r["capacity"] for k, r in got.items()} == expected
    grants = _expected_grants()
    assert {k: r["granted"] for k, r in got.items()} == {k: grants.get(k, 0) for k in expected}
    for row in rows:
        assert row["headroom"] == max(row["capacity"] - row["granted"], 0)
        assert row["overcommit"] == max(row["granted"] - row["capacity"], 0)


def test_capacity_text_is_aligned_per_cluster_with_bars() -> None:
    result = run("capacity", "--root", str(PROJECT), "--cluster", "h100-prod")
    assert result.code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "cluster h100-prod" and lines[1].split() == [
        "resource",
        "/",
        "tenant",
        "capacity",
        "granted",
        "headroom",
        "over",
        "use",
        "may",
        "borrow",
        "lends",
    ]
    assert re.fullmatch(
        r"  h100-train: H100-SXM5-80GB, exclusive, \d+-16 nodes, 128 GPUs", lines[2]
    )
    assert lines[3].split() == ["nvidia.com/gpu", "128", "48", "80", "0", "[####......]", "38%"]
    resources = [line for line in lines if line.startswith("    nvidia.com/")]
    assert len({line.index("]") for line in resources}) == 1  # aligned columns


def test_capacity_says_unlimited_borrowing_in_words() -> None:
    lines = run("capacity", "--root", str(PROJECT), "--cluster", "h100-prod").stdout.splitlines()
    train = next(i for i, line in enumerate(lines) if line.startswith("  h100-train: "))
    team_a, team_b = lines[train + 2].split(), lines[train + 3].split()
    assert team_a == [
        "team-a",
        "16",
        "up",
        "to",
        "16",
        "up",
        "to",
        "8",
    ]  # tenants/team-a.yaml: borrowingLimit 16
    assert team_b == [
        "team-b",
        "32",
        "unlimited",
        "up",
        "to",
        "16",
    ]  # no borrowingLimit: Kueue lets it borrow all the cohort lends
    rows = json.loads(run("capacity", "--root", str(PROJECT), "--format", "json").stdout)["pools"]
    shares = {(r["pool"], t["tenant"]): t for r in rows for t in r["tenants"]}
    assert (
        shares[("h100-train", "team-b")]["borrowing"] == "unlimited"
        and shares[("h100-train", "team-b")]["borrowing_limit"] is None
    )
    assert shares[("h100-train", "team-a")]["borrowing"] == "up to 16"


def test_capacity_text_fits_in_120_columns(tmp_path: Path) -> None:
    assert (
        max(len(line) for line in run("capacity", "--root", str(PROJECT)).stdout.splitlines())
        <= 120
    )
    root = copy_example(tmp_path)
    long = "a-pool-with-a-long-name-that-keeps-going-and-going-to-63-chars"
    for path in (root / "clusters/h100-prod.yaml", *root.glob("tenants/*.yaml")):
        path.write_text(path.read_text().replace("h100-train", long))
    result = run("capacity", "--root", str(root))
    assert result.code == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 120
    assert f"  {long}: H100-SXM5-80GB" in result.stdout


def test_capacity_markdown() -> None:
    result = run("capacity", "--root", str(PROJECT), "--format", "markdown")
    assert result.code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| cluster |") and lines[1].startswith("|---|")
    pools = lines[: lines.index("")]  # then the KAI Queues' table
    assert len(pools) == 2 + len(_expected_capacity())


def _expected_kai_queues() -> dict[tuple[str, str], tuple[str | None, int, int]]:
    """Recompute (cluster, queue) -> (parent, GPU quota, overQuotaWeight) from the input files.

    Every KAI cluster of the example fleet enforces its quotas (quotaAuthority kai) on whole GPUs.
    """
    out: dict[tuple[str, str], tuple[str | None, int, int]] = {}
    kai = {}
    for path in sorted((PROJECT / "clusters").glob("*.yaml")):
        cluster = yaml.safe_load(path.read_text())
        if "kai" in cluster.get("components", {}):
            kai[cluster["name"]] = cluster["components"]["kai"].get("parents", {})
    for path in sorted((PROJECT / "tenants").glob("*.yaml")):
        tenant = yaml.safe_load(path.read_text())
        for alloc in tenant.get("allocations", []):
            if alloc["cluster"] in kai:
                gpus = sum(q["gpus"] for q in alloc["quotas"])
                out[(alloc["cluster"], tenant["name"])] = (
                    alloc.get("cohort"),
                    gpus,
                    alloc.get("weight", 1),
                )
    for cluster, parents in kai.items():
        for cohort, quota in parents.items():
            out[(cluster, cohort)] = (None, quota["gpu"], 1)
    return out


def gpus(value: int) -> str:
    """Return a KAI figure as the tables show it (-1: unlimited)."""
    return "unlimited" if value == -1 else str(value)


def test_capacity_json_and_markdown_carry_the_kai_queue_trees() -> None:
    document = json.loads(run("capacity", "--root", str(PROJECT), "--format", "json").stdout)
    queues = document["kai_queues"]
    assert {
        (q["cluster"], q["queue"]): (q["parent"], q["quota"]["gpu"], q["over_quota_weight"])
        for q in queues
    } == _expected_kai_queues()
    parents = [q["queue"] for q in queues if q["parent"] is None]
    assert parents == ["llm", "research"]  # tree order: each parent before its leaves
    for leaf in (q for q in queues if q["parent"]):
        assert [q["queue"] for q in queues].index(leaf["parent"]) < queues.index(leaf)
        assert leaf["limit"]["gpu"] >= leaf["quota"]["gpu"] and leaf["enforced"]
    lines = run("capacity", "--root", str(PROJECT), "--format", "markdown").stdout.splitlines()
    table = lines[lines.index("| " + " | ".join(QUEUE_HEAD) + " |") + 2 :]
    assert [row.split(" | ")[1:4] for row in table] == [
        [q["queue"], q["parent"] or "-", f"{q['quota']['gpu']} / {gpus(q['limit']['gpu'])}"]
        for q in queues
    ]
    llm = next(q for q in queues if q["queue"] == "llm-alignment")
    cpu, memory = llm["quota"]["cpu"], llm["quota"]["memory"]  # KAI's millicores and MB
    row = next(r for r in table if r.split(" | ")[1] == "llm-alignment").split(" | ")
    assert row[4].startswith(f"{cpu // 1000} / ") and row[5].startswith(f"{memory / 1e6:.1f} TB / ")
    text = run("capacity", "--root", str(PROJECT), "--cluster", "gb200-train").stdout
    assert "millicores" not in text and f"cpu {cpu // 1000}/" in text
    one = json.loads(
        run("capacity", "--root", str(PROJECT), "--cluster", "h100-prod", "--format", "json").stdout
    )
    assert one["kai_queues"] == [] and one["pools"]  # no KAI Scheduler on h100-prod
