"""Diagnostic codes (stable, unique, shown in every format) and warnings accepted where they stand."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpuplan.check import CHECKS, EXTRA_CODES, STAGE_CODES, code_of, known_codes
from gpuplan.diagnostics import Diagnostic, Severity, has_errors, render, summary
from tests.builders import allocation, fleet, position, static_cluster, tenant
from tests.conftest import copy_example, run

# The codes users write into `ignore:` entries. Renaming a check renames its code: that breaks
# every repository that silences it, so this list changes only on purpose.
STABLE = {
    "attached-networks", "borrowing-within-cohort", "container-defaults-fit", "cpu-memory-within-pools",
    "cpu-only-work", "cpu-pool-capacity", "cpu-pool-names", "cpu-quota-pools", "lending-within-nominal",
    "limits-need-cohort", "local-queues", "max-gpus-per-pod", "namespace-shares", "pool-capacity",
    "pool-capacity-autoscaled", "pool-cpu-memory", "range-size", "rdma-pod-security", "scheduler-present",
    "overlapping-ranges", "range-allocatable", "gateway", "exclude", "host-local-spans-nodes",
    "host-device-target", "resource-group-size", "flavor-size",
    *STAGE_CODES,
}  # fmt: skip


def test_codes_are_unique() -> None:
    derived = [code_of(fn) for fn in CHECKS]
    assert len(derived) == len(set(derived))
    assert not set(EXTRA_CODES) & set(derived)
    assert not set(STAGE_CODES) & (set(derived) | set(EXTRA_CODES))


def test_codes_are_stable() -> None:
    missing = STABLE - known_codes()
    assert not missing, f"codes users may have in ignore entries are gone: {sorted(missing)}"


def test_code_derives_from_the_check_name() -> None:
    def check_pool_capacity() -> None: ...

    assert code_of(check_pool_capacity) == "pool-capacity"  # type: ignore[arg-type]


def _finding(**changes: object) -> Diagnostic:
    base = Diagnostic(
        "tenants/a.yaml",
        3,
        5,
        Severity.WARNING,
        "allocations[0].quotas",
        "message",
        "cpu-only-work",
    )
    return Diagnostic(**(base.__dict__ | changes))  # type: ignore[arg-type]


def test_every_format_shows_the_code() -> None:
    found = [_finding()]
    assert (
        render(found, "text").splitlines()[0]
        == "tenants/a.yaml:3:5: warning: allocations[0].quotas: message [cpu-only-work]"
    )
    assert (
        render(found, "github")
        == "::warning file=tenants/a.yaml,line=3,col=5::allocations[0].quotas: message [cpu-only-work]\n"
    )
    assert json.loads(render(found, "json"))[0]["code"] == "cpu-only-work"


def test_a_github_annotation_of_a_whole_file_names_no_line_and_escapes_its_file_name() -> None:
    whole = _finding(line=0, col=0, file="output/a,b:c.yaml")
    assert render([whole], "github") == (
        "::warning file=output/a%2Cb%3Ac.yaml::allocations[0].quotas: message [cpu-only-work]\n"
    )


def test_an_accepted_warning_is_listed_in_json_counted_in_the_summary_and_passes_strict() -> None:
    found = [_finding(accepted="planned"), _finding(line=4)]
    assert json.loads(render(found, "json"))[0]["accepted"] == "planned"
    assert "line=3" not in render(found, "github")
    assert summary(found) == "0 errors, 1 warning in 1 file (1 warning accepted)"
    assert has_errors(found, strict=True)
    assert not has_errors(found[:1], strict=True)
    assert summary(found[:1]) == "no problems found (1 warning accepted)"


def _repo(tmp_path: Path, tenant_extra: Fields = {}, cluster_extra: Fields = {}) -> Path:  # noqa: B006
    """A tenant without CPU pool quota (a cpu-only-work warning at its allocation) and a /30 network
    for 32 GPUs (a range-size warning on the cluster)."""
    ipam = {"type": "whereabouts", "range": "10.0.0.0/30"}
    network = {"name": "n", "type": "macvlan", "master": "eth1", "ipam": ipam, "pools": ["train"]}
    cluster = static_cluster(networks=[network], **cluster_extra)
    return fleet(tmp_path, {"c1": cluster}, {"a": tenant("a", _quota(16, **tenant_extra))})


def _quota(gpus: int, **fields: Any) -> str:
    return allocation(quotas=[{"pool": "train", "gpus": gpus}], **fields)


def test_the_example_fleet_warns_without_its_ignores_and_every_finding_has_a_code(
    tmp_path: Path,
) -> None:
    root = copy_example(tmp_path)
    for path in [*root.glob("clusters/*.yaml"), *root.glob("tenants/*.yaml")]:
        lines = path.read_text().splitlines(keepends=True)
        kept, skipping = [], False
        for line in lines:  # drop every ignore block
            indent = len(line) - len(line.lstrip())
            if line.strip() == "ignore:":
                skipping, depth = True, indent
                continue
            if skipping and (
                indent > depth
                or line.lstrip().startswith("- code:")
                or line.lstrip().startswith("reason:")
            ):
                continue
            skipping = False
            kept.append(line)
        path.write_text("".join(kept))
    result = run("check", "--root", str(root), "--format", "json")
    rows = json.loads(result.stdout)
    assert rows and all(r["code"] in known_codes() and not r["accepted"] for r in rows)
    assert {"rdma-pod-security", "pool-capacity-autoscaled"} <= {r["code"] for r in rows}


def _json(root: Path) -> list[dict[str, object]]:
    return json.loads(run("check", "--root", str(root), "--format", "json").stdout)


Fields = dict[str, Any]
NO_CPU_WORK = {"ignore": [{"code": "cpu-only-work", "reason": "the team runs no CPU-only work"}]}
TWO_PODS = {"ignore": [{"code": "range-size", "reason": "only two pods attach at once"}]}
WHERE: dict[str, tuple[Fields, Fields, str]] = {
    "allocation": ({}, NO_CPU_WORK, "cpu-only-work"),
    "tenant": ({}, {}, "cpu-only-work"),
    "cluster": (TWO_PODS, {}, "range-size"),
}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_a_warning_is_silenced_where_it_stands_with_its_reason(tmp_path: Path, where: str) -> None:
    cluster_extra, tenant_extra, code = WHERE[where]
    root = _repo(tmp_path, tenant_extra, cluster_extra)
    if where == "tenant":
        (root / "tenants/a.yaml").write_text(tenant("a", _quota(16), **NO_CPU_WORK))
    text = run("check", "--root", str(root)).stderr
    assert f"[{code}]" not in text and "(1 warning accepted)" in text, text
    accepted = [(r["code"], r["accepted"]) for r in _json(root) if r["accepted"]]
    assert len(accepted) == 1 and accepted[0][0] == code


def test_strict_passes_when_every_warning_is_accepted(tmp_path: Path) -> None:
    root = _repo(tmp_path, WHERE["allocation"][1], WHERE["cluster"][0])
    assert run("check", "--root", str(root), "--strict").code == 0
    assert run("check", "--root", str(_repo(tmp_path / "b", WHERE["allocation"][1]))).code == 0
    assert (
        run("check", "--root", str(_repo(tmp_path / "c", WHERE["allocation"][1])), "--strict").code
        == 1
    )


def test_an_ignore_elsewhere_does_not_silence(tmp_path: Path) -> None:
    root = _repo(
        tmp_path, cluster_extra={"ignore": [{"code": "cpu-only-work", "reason": "wrong place"}]}
    )
    result = run("check", "--root", str(root), "--strict")
    assert result.code == 1
    assert "[cpu-only-work]" in result.stderr and "accepted" not in result.stderr
    assert (
        "warning: ignore[0].code: no cpu-only-work warning is reported here any more: remove this ignore entry [unused-ignore]"
        in result.stderr
    )


def test_an_unknown_code_is_an_error(tmp_path: Path) -> None:
    root = _repo(tmp_path, tenant_extra={"ignore": [{"code": "pool-capacty", "reason": "typo"}]})
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert (
        "allocations[0].ignore[0].code: 'pool-capacty' is not a diagnostic code of gpuplan"
        in result.stderr
    )


def test_errors_are_never_silenced(tmp_path: Path) -> None:
    quota = _quota(40, ignore=[{"code": "pool-capacity", "reason": "no"}])
    root = fleet(tmp_path, {"c1": static_cluster()}, {"a": tenant("a", quota)})
    result = run("check", "--root", str(root))
    assert result.code == 1 and "[pool-capacity]" in result.stderr


def test_strict_passes_on_the_example_fleet_with_every_accepted_warning_giving_its_reason(
    example_repo: Path,
) -> None:
    result = run("check", "--root", str(example_repo), "--strict")
    assert result.code == 0, result.stderr
    rows = json.loads(run("check", "--root", str(example_repo), "--format", "json").stdout)
    assert rows and all(r["severity"] == "warning" and r["accepted"] for r in rows)


# capacity overrun: at every contributing tenant, or at the quota that changed since --base


def _two_tenants(tmp_path: Path, a: int, b: int) -> Path:
    tenants = {"a": tenant("a", _quota(a)), "b": tenant("b", _quota(b))}
    return fleet(tmp_path, {"c1": static_cluster()}, tenants)


# Where the capacity errors stand: each tenant's gpus, and the nodes of pool train.
GPUS = position(tenant("a", _quota(16)), "16")
TRAIN_NODES = position(static_cluster(), "{count: 4}")


def test_an_overrun_without_base_stands_at_every_tenant_with_its_own_share(tmp_path: Path) -> None:
    result = run("check", "--root", str(_two_tenants(tmp_path, 16, 17)))
    assert result.code == 1
    head = "error: allocations[0].quotas[0].gpus: tenants ask 33 GPUs of pool train, which has at most 32 (4 nodes x 8); "
    assert (
        f"tenants/a.yaml:{GPUS}: {head}tenant a asks 16, with b 17 [pool-capacity]" in result.stderr
    )
    assert (
        f"tenants/b.yaml:{GPUS}: {head}tenant b asks 17, with a 16 [pool-capacity]" in result.stderr
    )


def _git(root: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(root),
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def test_an_overrun_with_base_stands_at_the_quota_that_changed(tmp_path: Path) -> None:
    root = _two_tenants(tmp_path, 16, 16)
    _git(root, "init", "-q")
    _git(root, "add", "clusters", "tenants")
    _git(root, "commit", "-q", "-m", "fits")
    (root / "tenants/b.yaml").write_text(
        (root / "tenants/b.yaml").read_text().replace("gpus: 16", "gpus: 17")
    )
    result = run("check", "--root", str(root), "--base", "HEAD")
    assert result.code == 1
    assert (
        f"tenants/b.yaml:{GPUS}: error: allocations[0].quotas[0].gpus: tenants ask 33 GPUs of pool train, which has at most 32 (4 nodes x 8); tenant b asks 17, with a 16 [pool-capacity]"
        in result.stderr
    )
    assert f"tenants/a.yaml:{GPUS}" not in result.stderr


def test_an_overrun_from_a_shrunk_pool_stands_at_the_pool(tmp_path: Path) -> None:
    root = _two_tenants(tmp_path, 16, 16)
    _git(root, "init", "-q")
    _git(root, "add", "clusters", "tenants")
    _git(root, "commit", "-q", "-m", "fits")
    cluster = root / "clusters/c1.yaml"
    cluster.write_text(cluster.read_text().replace("nodes: {count: 4}", "nodes: {count: 3}"))
    result = run("check", "--root", str(root), "--base", "HEAD")
    assert result.code == 1
    assert (
        f"clusters/c1.yaml:{TRAIN_NODES}: error: nodePools[0].nodes: tenants ask 32 GPUs of pool train, which has at most 24 (3 nodes x 8): the pool shrank below its quotas [pool-capacity]"
        in result.stderr
    )
    assert "error: allocations" not in result.stderr


def test_an_overrun_already_at_the_base_stands_at_every_tenant(tmp_path: Path) -> None:
    root = _two_tenants(tmp_path, 16, 17)
    _git(root, "init", "-q")
    _git(root, "add", "clusters", "tenants")
    _git(root, "commit", "-q", "-m", "over already")
    result = run("check", "--root", str(root), "--base", "HEAD")
    assert result.code == 1
    assert (
        f"tenants/a.yaml:{GPUS}: error:" in result.stderr
        and f"tenants/b.yaml:{GPUS}: error:" in result.stderr
    )


def test_base_that_is_no_commit_is_a_usage_error(tmp_path: Path) -> None:
    root = _two_tenants(tmp_path, 16, 16)
    _git(root, "init", "-q")
    result = run("check", "--root", str(root), "--base", "no-such-ref")
    assert result.code == 2 and "no-such-ref" in result.stderr


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_check_prints_codes_in_every_format(tmp_path: Path, fmt: str) -> None:
    result = run("check", "--root", str(_two_tenants(tmp_path, 16, 17)), "--format", fmt)
    assert "pool-capacity" in (result.stdout if fmt == "json" else result.stderr)


def test_a_pool_entry_silences_only_inside_its_pool() -> None:
    from gpuplan.check.ignores import Rule
    from gpuplan.inputs.load import SourceFile
    from gpuplan.model.common import Ignore

    rule = Rule(
        SourceFile("clusters/c1.yaml", {}),
        "nodePools[1]",
        ("nodePools", 1, "ignore", 0),
        Ignore(code="range-size", reason="r"),
    )
    at = {"file": "clusters/c1.yaml", "code": "range-size", "severity": Severity.WARNING}
    assert rule.matches(_finding(**at, path="nodePools[1].nodes.min"))
    assert rule.matches(_finding(**at, path="nodePools[1]"))
    assert not rule.matches(_finding(**at, path="nodePools[10].nodes"))
    assert not rule.matches(_finding(**at, path="nodePools[0].nodes"))
    assert not rule.matches(
        _finding(**(at | {"file": "clusters/c2.yaml"}), path="nodePools[1].nodes")
    )
    assert not rule.matches(
        _finding(**(at | {"severity": Severity.ERROR}), path="nodePools[1].nodes")
    )
