"""Own manifests: extra/<cluster>/**/*.yaml, one object per file, added to that cluster's output.

They are written as output/<cluster>/extra/[<namespace>/]<kind>-<name>.yaml (named like
gpuplan's own files, by kind and name only), listed in the cluster's kustomization, and proved
with the generated objects: schemas, CEL and webhook rules, references both ways.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.diagnostics import Diagnostic, Located, SourceFile, error
from gpuplan.emit.meta import SYNC_WAVE, WAVES, Manifest
from gpuplan.inputs.load import folder_entries, parse_file
from gpuplan.model.tenant import Tenant

FOLDER = "extra"  # in the input repository: extra/<cluster>/
OUTPUT_FOLDER = "extra"  # in the output: output/<cluster>/extra/
# Node classes apply before the NodePools (wave -1) that name them. Argo CD applies lower
# waves first; an object without the annotation is wave 0 (argo-cd docs, sync-waves).
NODE_CLASS_WAVE = -2
NODE_CLASS_KINDS = frozenset({"EC2NodeClass", "AKSNodeClass", "GCENodeClass"})
NOT_OBJECTS = frozenset({"Kustomization", "List"})


@dataclass(frozen=True)
class Extra:
    """One own manifest: the file it came from and the manifest it becomes."""

    source: SourceFile
    manifest: Manifest


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """Return (kind, namespace, name): what must be unique in a cluster."""
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


def _files(folder: Path) -> Iterable[Path]:
    """Yield the YAML files under a folder in a stable order, and symlinked folders (not entered)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        found += [base / d for d in dirnames if (base / d).is_symlink()]
        found += [
            base / f for f in filenames if f.endswith((".yaml", ".yml")) and not f.startswith(".")
        ]
    return sorted(found, key=lambda p: p.as_posix())


def read_extras(root: Path, clusters: Iterable[str]) -> tuple[list[Extra], list[Diagnostic]]:
    """Read every own manifest of the named clusters; a folder for no cluster is an error."""
    known = set(clusters)
    extras: list[Extra] = []
    entries, problems = folder_entries(root, FOLDER)
    for entry in entries:
        shown = f"{FOLDER}/{entry.name}"
        if not entry.is_dir():
            if entry.suffix in (".yaml", ".yml"):
                problems.append(
                    error(
                        shown,
                        1,
                        1,
                        "",
                        f"own manifests go in {FOLDER}/<cluster>/: move this file into the folder of its cluster",
                    )
                )
            continue
        if entry.name not in known:
            problems.append(
                error(
                    shown,
                    0,
                    0,
                    "",
                    f"no cluster named {entry.name!r}: {FOLDER}/ holds one folder per cluster ({', '.join(sorted(known))})",
                )
            )
            continue
        for path in _files(entry):
            extra, found = _read_one(
                path, f"{shown}/{path.relative_to(entry).as_posix()}", entry.name
            )
            problems += found
            if extra is not None:
                extras.append(extra)
    return extras, problems


def _read_one(path: Path, shown: str, cluster: str) -> tuple[Extra | None, list[Diagnostic]]:
    source, problems = parse_file(path, shown)
    if source is None:
        return None, problems
    problem = _head_problem(source)
    if problem is not None:
        return None, [problem]
    obj = _with_defaults(source.data)
    return Extra(source, Manifest(output_path(cluster, obj), obj, (shown,), cluster)), []


def _head_problem(source: SourceFile) -> Diagnostic | None:
    """Return why a file is not one Kubernetes object gpuplan can file, or None."""
    data = source.data
    for key in ("apiVersion", "kind"):
        if not isinstance(data.get(key), str) or not data[key]:
            return source.diagnostic((key,), f"an own manifest needs {key} (a non-empty string)")
    if data["kind"] in NOT_OBJECTS:
        return source.diagnostic(
            ("kind",),
            f"kind {data['kind']} is not an object: put one Kubernetes object per file (gpuplan writes the kustomization)",
        )
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return source.diagnostic(
            ("metadata", "name"),
            "an own manifest needs metadata.name (generateName cannot be synced by Argo CD)",
        )
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    for field, value in (("name", name), ("namespace", namespace)):
        if isinstance(value, str) and ("/" in value or value in (".", "..") or "\\" in value):
            return source.diagnostic(
                ("metadata", field), f"metadata.{field} {value!r} is not a Kubernetes name"
            )
    if namespace is not None and not isinstance(namespace, str):
        return source.diagnostic(("metadata", "namespace"), "metadata.namespace must be a string")
    return None


def output_path(cluster: str, obj: Mapping[str, Any]) -> str:
    """Return where an own manifest is written: <cluster>/extra/[<namespace>/]<kind>-<name>.yaml."""
    kind, namespace, name = identity(obj)
    folder = f"{cluster}/{OUTPUT_FOLDER}" + (f"/{namespace}" if namespace else "")
    return f"{folder}/{kind.lower()}-{name}.yaml"


def _with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """Return the object with a sync wave where it has none (gpuplan's waves, node classes first)."""
    obj = copy.deepcopy(data)
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        return obj  # the schema check reports it
    if annotations is None or SYNC_WAVE not in annotations:
        wave = NODE_CLASS_WAVE if obj["kind"] in NODE_CLASS_KINDS else WAVES.get(obj["kind"], 0)
        metadata["annotations"] = {**(annotations or {}), SYNC_WAVE: str(wave)}
    return obj


def collisions(
    extras: list[Extra],
    generated: list[Manifest],
    out: str = "output",
    tenants: Mapping[str, Located[Tenant]] | None = None,
) -> list[Diagnostic]:
    """Return an error for each own manifest that has the identity of another object of its cluster.

    A tenant namespace that is also an own Namespace is blamed on the tenant file (by its path in
    `tenants`): the platform's file did not change, the tenant's claim made the clash.
    """
    if not extras:
        return []  # (no index of the generated objects to build)
    seen: dict[tuple[str | None, str, str, str], str] = {
        (m.cluster, *identity(m.obj)): f"{out}/{m.path}" for m in generated
    }
    claims = _namespace_claims(generated, tenants or {})
    problems = []
    for extra in extras:
        key = (extra.manifest.cluster, *identity(extra.manifest.obj))
        kind, namespace, name = key[1:]
        shown = f"{namespace}/{name}" if namespace else name
        if key in claims:
            tenant = claims[key]
            at = tenant.model.namespace_names.index(name)
            loc: tuple[str | int, ...] = (
                ("namespaces", at) if tenant.model.namespaces else ("name",)
            )
            message = f"namespace {name!r} is the platform's own ({extra.source.path}): give the tenant another namespace"
            problems.append(tenant.at(*loc, message=message))
        elif key in seen:
            other = seen[key]
            hint = (
                f"gpuplan generates it; change it with a patch in patches/{key[0]}/ instead"
                if not other.startswith(f"{FOLDER}/")
                else "one object, one file"
            )
            problems.append(
                extra.source.diagnostic(
                    ("metadata", "name"), f"{kind} {shown} is also in {other}: {hint}"
                )
            )
        else:
            seen[key] = extra.source.path
    return problems


def _namespace_claims(
    generated: list[Manifest], tenants: Mapping[str, Located[Tenant]]
) -> dict[tuple[str | None, str, str, str], Located[Tenant]]:
    """Return the tenant that claims each generated Namespace, by the Namespace's identity."""
    return {
        (m.cluster, *identity(m.obj)): tenants[source]
        for m in generated
        if m.kind == "Namespace"
        for source in m.sources
        if source in tenants
    }
