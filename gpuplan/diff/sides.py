"""The fleet at a git REF against the working tree, or two folders, as a report.

With --base the inputs at REF are read from git's object store into a temporary folder (the
working tree, the index and HEAD are never touched) and both sides are compiled in memory;
nothing is written.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from gpuplan.components.gpu_operator import CHART_DEPLOY_CR, GpuOperatorRelease
from gpuplan.components.gpu_operator import COMPONENT as GPU_OPERATOR
from gpuplan.diagnostics import Diagnostic, has_errors, ordered, render
from gpuplan.diff import upgrade
from gpuplan.diff.analyse import analyse
from gpuplan.diff.blast import Facts, PoolFacts, PoolKey, from_fleet, merged
from gpuplan.diff.disruptions import KUEUE, nominal_quotas
from gpuplan.diff.markdown import as_markdown
from gpuplan.diff.objects import Side, cluster_folders, from_folder, from_manifests
from gpuplan.diff.result import (
    WORKING_TREE,
    CapacityChange,
    DiffResult,
    as_json,
    as_text,
)
from gpuplan.diff.upgrade import UPSTREAM, Upstream
from gpuplan.inputs import snapshot
from gpuplan.inputs.git import UsageError, export_inputs, resolve
from gpuplan.model.quantity import QuantityError, parse_quantity
from gpuplan.pipeline import compile_fleet
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.headroom import capacity_rows

FORMATS = {"text": as_text, "markdown": as_markdown, "json": as_json}
NOT_GPU = ("cpu", "memory")  # capacity tables are about GPUs; cpu and memory follow from them
CapacityKey = tuple[str, str, str, str]  # cluster, pool, resource, tenant ("" for the pool)
Both = Callable[[Callable[[], Any], Callable[[], Any]], tuple[Any, Any]]


class InputErrors(Exception):
    """An input had errors; they were printed (exit 1)."""


def _print_errors(diagnostics: list[Diagnostic], where: str) -> None:
    """Print the findings of one side, saying which side they come from."""
    sys.stderr.write(f"error: {where} has errors:\n")
    sys.stderr.write(render(ordered(diagnostics), "text"))


# two folders


def from_folders(old_dir: Path, new_dir: Path) -> DiffResult:
    """Compare every object of the YAML files under two folders."""
    for folder in (old_dir, new_dir):
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
    clusters = cluster_folders(old_dir, new_dir)
    sides = []
    for folder in (old_dir, new_dir):
        side, problems = from_folder(folder, clusters)
        if has_errors(problems):
            _print_errors(problems, str(folder))
        sides.append((side, problems))
    if any(has_errors(problems) for _, problems in sides):
        raise InputErrors
    old, new = sides[0][0], sides[1][0]
    return _result(
        str(old_dir), str(new_dir), (old, _queue_quotas(old)), (new, _queue_quotas(new)), None
    )


def _queue_quotas(side: Side) -> dict[CapacityKey, str]:
    """Return each tenant's nominal quota per (cluster, flavor, GPU resource) from its ClusterQueue."""
    out: dict[CapacityKey, str] = {}
    for key, entry in side.items():
        if key.group == KUEUE and key.kind == "ClusterQueue":
            for (flavor, resource), value in nominal_quotas(entry.obj).items():
                if resource not in NOT_GPU:
                    out[(key.scope, flavor, resource, key.name)] = str(value)
    return out


# objects, capacity, pool facts, notes, Kubernetes version per cluster, error report ('' if none)
SideResult = tuple[
    Side, dict[CapacityKey, str], dict[PoolKey, PoolFacts], list[str], dict[str, str], str
]
EMPTY: SideResult = ({}, {}, {}, [], {}, "")
Held = dict[tuple[str, str], str]  # (cluster, component) -> the release the base runs
# A base on a GPU Operator release gpuplan cannot render (its chart always owns cluster-policy):
# its objects are rendered at the first release gpuplan renders, and the plan starts from its own.
HELD_CODE = "chart-cluster-policy"
VERSION = re.compile(r"\bv\d+\.\d+\.\d+\b")


def _side(root: Path, crds: Path | None, where: str) -> SideResult:
    """Compile one side; return its objects, capacity, pool facts, notes, and its error report ('' if none)."""
    return _from_result(compile_fleet(root, crds=crds, verify_output=False), where)


def _from_result(result: Any, where: str) -> SideResult:
    """Return one compiled side's objects, capacity, pool facts, notes, and its error report."""
    if has_errors(result.diagnostics) or result.fleet is None:
        return {}, {}, {}, [], {}, _errors_text(result.diagnostics, where)
    side, problems = from_manifests(result.manifests)
    if problems:
        return {}, {}, {}, [], {}, _errors_text(problems, where)
    kubernetes = {n: str(c.spec.kubernetes_version) for n, c in result.fleet.clusters.items()}
    facts = from_fleet(result.fleet)
    return side, _fleet_capacity(result.fleet), facts, result.notes, kubernetes, ""


def _errors_text(diagnostics: list[Diagnostic], where: str) -> str:
    return f"error: {where} has errors:\n" + render(ordered(diagnostics), "text")


def _base_side(
    root: Path, commit: str, crds: Path | None, where: str
) -> tuple[SideResult, Held] | None:
    """Export the inputs at a commit and compile them (None when the commit has no clusters/);
    a GPU Operator release gpuplan refuses only for its chart's own ClusterPolicy is held (see
    `_hold`), so the upgrade plan can start from it."""
    with tempfile.TemporaryDirectory(prefix="gpuplan-base-") as folder:
        try:
            exported = export_inputs(root, commit, Path(folder))
        except snapshot.UnsafeTree as exc:
            return ({}, {}, {}, [], {}, _errors_text(exc.diagnostics, where)), {}
        if not (exported and (Path(folder) / "clusters").is_dir()):
            return None
        result = compile_fleet(Path(folder), crds=crds, verify_output=False)
        held = _hold(Path(folder), result.diagnostics)
        if held:
            result = compile_fleet(Path(folder), crds=crds, verify_output=False)
        return _from_result(result, where), held


def _hold(folder: Path, diagnostics: list[Diagnostic]) -> Held:
    """Rewrite, in the exported base, each GPU Operator version refused only by `chart-cluster-policy`
    to the oldest release gpuplan renders; return what each cluster ran. Nothing when other errors
    stand (they are reported as they are)."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if not errors or any(d.code != HELD_CODE for d in errors):
        return {}
    target = next(
        r.version
        for r in GPU_OPERATOR.releases
        if isinstance(r, GpuOperatorRelease) and r.has(CHART_DEPLOY_CR)
    )
    held: Held = {}
    for item in errors:
        path = (folder / item.file).resolve()
        if not path.is_relative_to(folder.resolve()) or path.is_symlink():
            return {}  # only the exported files themselves are ever rewritten
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        found = VERSION.search(lines[item.line - 1])
        if found is None:
            return {}
        lines[item.line - 1] = VERSION.sub(target, lines[item.line - 1], count=1)
        path.write_text("".join(lines), encoding="utf-8")
        held[(path.stem, GPU_OPERATOR.name)] = found.group(0)  # a cluster is named by its file
    return held


def in_turn(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """Run two jobs one after the other (the default of from_git's `both`)."""
    return first(), second()


def from_git(
    root: Path,
    ref: str,
    crds: Path | None,
    both: Both = in_turn,
    source: Upstream = UPSTREAM,
) -> DiffResult:
    """Compare the fleet rendered from the inputs at a git REF with the one from the working tree.

    `both` runs the two sides' compiles (each a whole compile): `gpuplan diff` gives it two cores;
    `source` gives upstream's required stops and action notes (gpuplan.components.upgrades).
    """
    commit = resolve(root, ref)
    label = f"{ref} ({commit[:12]})" if ref != commit else commit[:12]
    old_where, new_where = f"the fleet at {label}", "the fleet in the working tree"
    current, base = both(
        partial(_side, root, crds, new_where), partial(_base_side, root, commit, crds, old_where)
    )
    held: Held = {}
    if base is None:
        sys.stderr.write(f"note: no clusters/ at {label}: comparing with an empty fleet\n")
        base = EMPTY
    else:
        base, held = base
    for (cluster, component), version in sorted(held.items()):
        sys.stderr.write(
            f"note: cluster {cluster} at {label} runs {component} {version}, which gpuplan does not render ({HELD_CODE}): its objects are compared as rendered at the first release gpuplan renders, and the upgrade plan starts from {version}\n"
        )
    old, old_capacity, old_facts, notes, old_kubernetes, old_errors = base
    new, new_capacity, new_facts, more, new_kubernetes, new_errors = current
    kubernetes = {
        c: (old_kubernetes[c], new_kubernetes[c])
        for c in sorted(old_kubernetes.keys() & new_kubernetes.keys())
        if old_kubernetes[c] != new_kubernetes[c]
    }
    sys.stderr.write(old_errors + new_errors)
    if old_errors or new_errors:
        raise InputErrors
    for note in dict.fromkeys(notes + more):
        sys.stderr.write(f"note: {note}\n")
    return _result(
        label,
        WORKING_TREE,
        (old, old_capacity),
        (new, new_capacity),
        merged(old_facts, new_facts),
        upgrade.Bumped(held, kubernetes, source),
    )


def _fleet_capacity(fleet: Fleet | None) -> dict[CapacityKey, str]:
    """Return each pool's capacity per resource and each tenant's nominal quota of it."""
    out: dict[CapacityKey, int] = {}
    for row in capacity_rows(fleet) if fleet is not None else []:
        out[(row.cluster, row.pool, row.resource, "")] = row.capacity
        for share in row.tenants:
            key = (row.cluster, row.pool, row.resource, share.tenant)
            out[key] = out.get(key, 0) + share.nominal
    return {key: str(value) for key, value in out.items()}


# both


def _amount(value: str | None) -> Fraction | str | None:
    """Return a quantity's value, so `1000m` equals `1`; other text stays as it is."""
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return value


def _deltas(before: dict[CapacityKey, str], after: dict[CapacityKey, str]) -> list[CapacityChange]:
    """Return the capacity rows that differ between two sides."""
    keys = sorted(before.keys() | after.keys())
    return [
        CapacityChange(*key, before.get(key), after.get(key))
        for key in keys
        if _amount(before.get(key)) != _amount(after.get(key))
    ]


def _result(
    old_label: str,
    new_label: str,
    old: tuple[Side, dict[CapacityKey, str]],
    new: tuple[Side, dict[CapacityKey, str]],
    facts: Facts | None,
    bumped: upgrade.Bumped = upgrade.NONE,
) -> DiffResult:
    """Return the diff of two sides; the old capacity rows follow the renames found."""
    result = analyse(old_label, new_label, old[0], new[0], [], facts, bumped)
    names: dict[str, dict[str, str]] = {}
    for rename in result.renames:
        names.setdefault(rename.scope, {})[rename.old] = rename.new
    before = {
        (c, names.get(c, {}).get(p, p), r, names.get(c, {}).get(t, t)): v
        for (c, p, r, t), v in old[1].items()
    }
    result.capacity = _deltas(before, new[1])
    return result
