"""The fleet at a git REF against the working tree, or two folders, as a report.

With --base the inputs at REF are read from git's object store into a temporary folder (the
working tree, the index and HEAD are never touched) and both sides are compiled in memory;
nothing is written.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from gpuplan import twocores
from gpuplan.capacity import capacity_rows
from gpuplan.diagnostics import Diagnostic, has_errors, ordered, render
from gpuplan.diff import snapshot
from gpuplan.diff.analyse import analyse
from gpuplan.diff.blast import Facts, PoolFacts, PoolKey, from_fleet, merged
from gpuplan.diff.disruptions import KUEUE, nominal_quotas
from gpuplan.diff.markdown import as_markdown
from gpuplan.diff.objects import Side, cluster_folders, from_folder, from_manifests
from gpuplan.diff.report import (
    WORKING_TREE,
    CapacityChange,
    DiffResult,
    as_json,
    as_text,
)
from gpuplan.fleet import Fleet
from gpuplan.overlay import FOLDERS as OVERLAY_FOLDERS
from gpuplan.pipeline import compile_fleet
from gpuplan.quantity import QuantityError, parse_quantity

FORMATS = {"text": as_text, "markdown": as_markdown, "json": as_json}
INPUT_FOLDERS = ("clusters", "tenants", *OVERLAY_FOLDERS)  # the overlay: extra/, patches/, values/
NOT_GPU = ("cpu", "memory")  # capacity tables are about GPUs; cpu and memory follow from them
CapacityKey = tuple[str, str, str, str]  # cluster, pool, resource, tenant ("" for the pool)


class UsageError(Exception):
    """The command was called wrongly (exit 2)."""


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


# git


def _git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git in the repository at root."""
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, check=False
        )
    except FileNotFoundError as exc:
        raise UsageError("--base needs git, which is not installed") from exc


def repository_path(folder: Path) -> str:
    """Return a folder's path inside its git repository (`.` at the top or outside any repository)."""
    try:
        found = _git(folder, "rev-parse", "--show-prefix")
    except UsageError:
        return "."
    prefix = (
        found.stdout.decode(errors="replace").strip().rstrip("/") if found.returncode == 0 else ""
    )
    return prefix or "."


def resolve(root: Path, ref: str) -> str:
    """Return the commit a REF names, or raise UsageError."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--base {ref!r}: not a git revision")
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"--base needs a git repository: {root} is not inside one")
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(f"--base {ref}: no such commit in the git repository at {root}")
    return found.stdout.decode().strip()


def _listing(root: Path, commit: str) -> list[snapshot.Entry]:
    """Return every blob under the input folders at a commit (paths relative to root)."""
    found = _git(root, "ls-tree", "-r", "-l", "-z", commit, "--", *INPUT_FOLDERS)
    if found.returncode != 0:
        raise UsageError(f"git ls-tree {commit}: {found.stderr.decode(errors='replace').strip()}")
    out = []
    for record in found.stdout.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, kind, blob, size = meta.decode().split()
            if kind == "blob":
                out.append(snapshot.Entry(mode, blob, int(size), os.fsdecode(path)))
    return out


def _blobs(root: Path, blobs: list[str]) -> list[bytes]:
    """Return the contents of blobs, read in one `git cat-file --batch`."""
    if not blobs:
        return []
    found = _git(root, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
    out, data, position = [], found.stdout, 0
    for _ in blobs:
        end = data.index(b"\n", position)
        size = int(data[position:end].split(b" ")[2])
        out.append(data[end + 1 : end + 1 + size])
        position = end + 1 + size + 1
    return out


def export_inputs(root: Path, commit: str, target: Path) -> int:
    """Write the input files as they are at a commit into target (gpuplan.diff.snapshot: a
    hostile tree raises snapshot.UnsafeTree); return the file count."""
    return snapshot.export(_listing(root, commit), partial(_blobs, root), target)


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


def _in_parallel(base: Callable[[], Any], current: Callable[[], Any]) -> tuple[Any, Any]:
    """Compile the two sides on two cores when fork is available (each side is a whole compile)."""
    mine, theirs = twocores.both(current, base)  # the worker dies with gpuplan (twocores.py)
    return theirs, mine


def from_git(root: Path, ref: str, crds: Path | None) -> DiffResult:
    """Compare the fleet rendered from the inputs at a git REF with the one from the working tree."""
    commit = resolve(root, ref)
    label = f"{ref} ({commit[:12]})" if ref != commit else commit[:12]
    old_where, new_where = f"the fleet at {label}", "the fleet in the working tree"
    base, current = _in_parallel(
        partial(_base_side, root, commit, crds, old_where), partial(_side, root, crds, new_where)
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


def __getattr__(name: str) -> Any:
    """Keep the old import path of the command, which moved to gpuplan.commands.diff."""
    if name == "diff":
        from gpuplan.commands.diff import diff

        return diff
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
