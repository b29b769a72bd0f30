"""The fleet at a git REF against the working tree, or two folders, as a report.

With --base the inputs at REF are read from git's object store into a temporary folder (the
working tree, the index and HEAD are never touched) and both sides are compiled in memory;
nothing is written.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from gpuplan.diagnostics import Diagnostic, has_errors, ordered, render
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


SideResult = tuple[Side, dict[CapacityKey, str], dict[PoolKey, PoolFacts], list[str], str]
EMPTY: SideResult = ({}, {}, {}, [], "")


def _side(root: Path, crds: Path | None, where: str) -> SideResult:
    """Compile one side; return its objects, capacity, pool facts, notes, and its error report ('' if none)."""
    result = compile_fleet(root, crds=crds, verify_output=False)
    if has_errors(result.diagnostics) or result.fleet is None:
        return {}, {}, {}, [], _errors_text(result.diagnostics, where)
    side, problems = from_manifests(result.manifests)
    if problems:
        return {}, {}, {}, [], _errors_text(problems, where)
    return side, _fleet_capacity(result.fleet), from_fleet(result.fleet), result.notes, ""


def _errors_text(diagnostics: list[Diagnostic], where: str) -> str:
    return f"error: {where} has errors:\n" + render(ordered(diagnostics), "text")


def _base_side(root: Path, commit: str, crds: Path | None, where: str) -> SideResult | None:
    """Export the inputs at a commit and compile them (None when the commit has no clusters/)."""
    with tempfile.TemporaryDirectory(prefix="gpuplan-base-") as folder:
        try:
            exported = export_inputs(root, commit, Path(folder))
        except snapshot.UnsafeTree as exc:
            return {}, {}, {}, [], _errors_text(exc.diagnostics, where)
        if not (exported and (Path(folder) / "clusters").is_dir()):
            return None
        return _side(Path(folder), crds, where)


def in_turn(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """Run two jobs one after the other (the default of from_git's `both`)."""
    return first(), second()


def from_git(root: Path, ref: str, crds: Path | None, both: Both = in_turn) -> DiffResult:
    """Compare the fleet rendered from the inputs at a git REF with the one from the working tree.

    `both` runs the two sides' compiles (each a whole compile): `gpuplan diff` gives it two cores.
    """
    commit = resolve(root, ref)
    label = f"{ref} ({commit[:12]})" if ref != commit else commit[:12]
    old_where, new_where = f"the fleet at {label}", "the fleet in the working tree"
    current, base = both(
        partial(_side, root, crds, new_where), partial(_base_side, root, commit, crds, old_where)
    )
    if base is None:
        sys.stderr.write(f"note: no clusters/ at {label}: comparing with an empty fleet\n")
        base = EMPTY
    old, old_capacity, old_facts, notes, old_errors = base
    new, new_capacity, new_facts, more, new_errors = current
    sys.stderr.write(old_errors + new_errors)
    if old_errors or new_errors:
        raise InputErrors
    for note in dict.fromkeys(notes + more):
        sys.stderr.write(f"note: {note}\n")
    return _result(
        label, WORKING_TREE, (old, old_capacity), (new, new_capacity), merged(old_facts, new_facts)
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
) -> DiffResult:
    """Return the diff of two sides; the old capacity rows follow the renames found."""
    result = analyse(old_label, new_label, old[0], new[0], [], facts)
    names: dict[str, dict[str, str]] = {}
    for rename in result.renames:
        names.setdefault(rename.scope, {})[rename.old] = rename.new
    before = {
        (c, names.get(c, {}).get(p, p), r, names.get(c, {}).get(t, t)): v
        for (c, p, r, t), v in old[1].items()
    }
    result.capacity = _deltas(before, new[1])
    return result
