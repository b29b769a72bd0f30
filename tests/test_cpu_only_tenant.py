"""A CPU-only tenant: cpuQuotas and no GPU quota (issue 37), and an allocation with neither refused."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import copy_example, run, snapshot

ETL = "name: etl\nallocations:\n  - cluster: h100-prod\n    cpuQuotas: [{pool: general, cpu: 16, memory: 64Gi}]\n"


def test_a_cpu_only_tenant_renders_a_queue_on_its_cpu_pool_only(tmp_path: Path) -> None:
    root = copy_example(tmp_path / "repo")
    (root / "tenants/etl.yaml").write_text(ETL)
    result = run("render", "--root", str(root))
    assert result.code == 0, result.stderr
    queue = yaml.safe_load((root / "output/h100-prod/kueue/clusterqueue-etl.yaml").read_text())
    [group] = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory"]
    assert [f["name"] for f in group["flavors"]] == ["general"]
    quota = root / "output/h100-prod/namespaces/etl/resourcequota-etl.yaml"
    hard = yaml.safe_load(quota.read_text())["spec"]["hard"]
    assert hard["requests.cpu"] == "16" and hard["requests.nvidia.com/gpu"] == "0"
    capacity = run("capacity", "--root", str(root))
    assert capacity.code == 0 and "etl" not in capacity.stdout  # in no GPU pool's figures
    assert "etl" not in result.stderr  # nor in any capacity message


def test_an_allocation_with_no_quota_at_all_is_an_input_error(tmp_path: Path) -> None:
    root = copy_example(tmp_path / "repo")
    (root / "tenants/etl.yaml").write_text("name: etl\nallocations:\n  - cluster: h100-prod\n")
    before = snapshot(root / "output")
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert (
        "tenants/etl.yaml:3:5: error: allocations[0]: an allocation grants quotas on GPU pools "
        "or cpuQuotas on CPU pools (a CPU-only tenant): it has neither [input]" in result.stderr
    )
    assert "Traceback" not in result.stderr and snapshot(root / "output") == before
