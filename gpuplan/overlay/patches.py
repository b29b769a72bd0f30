"""Patches to generated objects: patches/<cluster>/*.yaml, applied in file-name order before validation.

Two forms, one patch per file:
- strategic merge: a partial object; `kind`, `metadata.name` (and `metadata.namespace` for a
  namespaced object) name the target, every other field is merged (gpuplan.overlay.strategic);
- JSON6902 (RFC 6902): `target: {kind, name, namespace}` and `jsonPatch:` a list of operations.

A patch whose target does not exist, that fails to apply, or that changes a field gpuplan owns
(gpuplan.overlay.owned) is an error at its file:line:col.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuplan.diagnostics import Diagnostic, Key, SourceFile, error, warning
from gpuplan.emit.meta import Manifest
from gpuplan.inputs.load import folder_entries, parse_file
from gpuplan.overlay.extras import identity
from gpuplan.overlay.jsonpatch import PatchError, apply_json_patch, parse_pointer
from gpuplan.overlay.owned import owned_changes
from gpuplan.overlay.strategic import MergeError, strategic_merge

FOLDER = "patches"
JSON_KEYS = ("target", "jsonPatch")


@dataclass(frozen=True)
class Patch:
    """One patch file: its cluster, target and what it changes."""

    cluster: str
    source: SourceFile
    kind: str
    namespace: str | None  # None: any namespace, when only one object matches
    name: str

    @property
    def json(self) -> bool:
        """Tell whether this is a JSON6902 patch (else a strategic merge)."""
        return "target" in self.source.data

    def name_key(self) -> Key:
        """Return where the target's name is written in the file."""
        return ("target", "name") if self.json else ("metadata", "name")

    def body(self) -> Any:
        """Return the operations, or the partial object without what identifies it."""
        if self.json:
            return self.source.data["jsonPatch"]
        body = {k: v for k, v in self.source.data.items() if k not in ("apiVersion", "kind")}
        meta = {
            k: v for k, v in (body.get("metadata") or {}).items() if k not in ("name", "namespace")
        }
        return (
            {**body, "metadata": meta}
            if meta
            else {k: v for k, v in body.items() if k != "metadata"}
        )


def read_patches(root: Path, clusters: Iterable[str]) -> tuple[list[Patch], list[Diagnostic]]:
    """Read every patch of the named clusters, in file-name order."""
    known = set(clusters)
    patches: list[Patch] = []
    folders, problems = folder_entries(root, FOLDER)
    for folder in folders:
        shown = f"{FOLDER}/{folder.name}"
        if not folder.is_dir():
            continue
        if folder.name not in known:
            problems.append(
                error(
                    shown,
                    0,
                    0,
                    "",
                    f"no cluster named {folder.name!r}: {FOLDER}/ holds one folder per cluster",
                )
            )
            continue
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.suffix not in (".yaml", ".yml") or path.name.startswith("."):
                continue
            patch, found = _read_one(path, f"{shown}/{path.name}", folder.name)
            problems += found
            if patch is not None:
                patches.append(patch)
    return patches, problems


def _read_one(path: Path, shown: str, cluster: str) -> tuple[Patch | None, list[Diagnostic]]:
    source, problems = parse_file(path, shown)
    if source is None:
        return None, problems
    data = source.data
    if "target" in data or "jsonPatch" in data:
        return _json_form(source, cluster)
    meta = data.get("metadata")
    kind, name = data.get("kind"), meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(kind, str) or not isinstance(name, str):
        message = "a patch is a partial object with kind and metadata.name (strategic merge), or target and jsonPatch (RFC 6902)"
        return None, [
            source.diagnostic(
                ("kind",) if not isinstance(kind, str) else ("metadata", "name"), message
            )
        ]
    namespace = meta.get("namespace")
    return Patch(cluster, source, kind, namespace if isinstance(namespace, str) else None, name), []


def _json_form(source: SourceFile, cluster: str) -> tuple[Patch | None, list[Diagnostic]]:
    data = source.data
    extra = [k for k in data if k not in JSON_KEYS]
    if extra:
        return None, [
            source.diagnostic(
                (extra[0],),
                f"unknown field {extra[0]!r}: a JSON6902 patch has target and jsonPatch",
                at_key=True,
            )
        ]
    target = data.get("target")
    if (
        not isinstance(target, dict)
        or not isinstance(target.get("kind"), str)
        or not isinstance(target.get("name"), str)
    ):
        return None, [
            source.diagnostic(
                ("target",), "target needs kind and name (and namespace for a namespaced object)"
            )
        ]
    unknown = [k for k in target if k not in ("kind", "name", "namespace")]
    if unknown:
        return None, [
            source.diagnostic(
                ("target", unknown[0]),
                f"unknown field {unknown[0]!r}: target has kind, name and namespace",
                at_key=True,
            )
        ]
    if not isinstance(data.get("jsonPatch"), list) or not data["jsonPatch"]:
        return None, [
            source.diagnostic(
                ("jsonPatch",), "jsonPatch must be a non-empty list of operations (RFC 6902)"
            )
        ]
    namespace = target.get("namespace")
    return Patch(
        cluster,
        source,
        target["kind"],
        namespace if isinstance(namespace, str) else None,
        target["name"],
    ), []


def _target(patch: Patch, manifests: list[Manifest]) -> tuple[int | None, Diagnostic | None]:
    """Return the index of the patch's target among the manifests, or the error why none."""
    same = [
        i
        for i, m in enumerate(manifests)
        if m.cluster == patch.cluster
        and identity(m.obj)[0] == patch.kind
        and identity(m.obj)[2] == patch.name
    ]
    exact = [
        i
        for i in same
        if patch.namespace is None or identity(manifests[i].obj)[1] == patch.namespace
    ]
    if len(exact) == 1:
        return exact[0], None
    if len(exact) > 1:
        spaces = ", ".join(sorted(identity(manifests[i].obj)[1] for i in exact))
        return None, patch.source.diagnostic(
            patch.name_key(),
            f"{patch.kind} {patch.name!r} is in several namespaces ({spaces}): say which with namespace",
        )
    names = sorted(
        {
            identity(m.obj)[2]
            for m in manifests
            if m.cluster == patch.cluster and identity(m.obj)[0] == patch.kind
        }
    )
    where = f" in namespace {patch.namespace!r}" if patch.namespace and same else ""
    has = f" (it has: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names else ""
    message = f"no generated {patch.kind} named {patch.name!r}{where} in cluster {patch.cluster!r}{has}: a patch changes an object gpuplan renders; your own objects go in extra/{patch.cluster}/"
    return None, patch.source.diagnostic(patch.name_key(), message)


def _apply(patch: Patch, obj: dict[str, Any]) -> tuple[dict[str, Any] | None, Diagnostic | None]:
    try:
        if patch.json:
            return apply_json_patch(obj, patch.body()), None
        return strategic_merge(obj, patch.body()), None
    except PatchError as exc:
        where: Key = ("jsonPatch", exc.index) + ((exc.field,) if exc.field else ())
        return None, patch.source.diagnostic(where, f"cannot apply: {exc}")
    except MergeError as exc:
        return None, patch.source.diagnostic(exc.path, f"cannot apply: {exc}")


def patch_position(patch: Patch, path: tuple[str | int, ...]) -> Key:
    """Return where in the patch file a field path of the target object is changed."""
    if not patch.json:
        return path
    for index, op in enumerate(patch.source.data["jsonPatch"]):
        try:
            tokens = tuple(parse_pointer(op.get("path", ""))) if isinstance(op, dict) else None
        except ValueError:
            continue
        shown = tuple(str(p) for p in path)
        if tokens is not None and (shown[: len(tokens)] == tokens or tokens[: len(shown)] == shown):
            rest = tuple(path[len(tokens) :]) if len(shown) > len(tokens) else ()
            return (
                ("jsonPatch", index, "value", *rest)
                if "value" in op
                else ("jsonPatch", index, "path")
            )
    return ("jsonPatch",)


def apply_patches(
    patches: list[Patch], manifests: list[Manifest]
) -> tuple[list[Manifest], dict[str, list[Patch]], list[Diagnostic]]:
    """Return the manifests with the patches applied, which patches touched each file, and errors."""
    result = list(manifests)
    applied: dict[str, list[Patch]] = {}
    problems: list[Diagnostic] = []
    for patch in patches:
        index, problem = _target(patch, result)
        if problem is not None or index is None:
            problems += [problem] if problem else []
            continue
        before = result[index]
        after, problem = _apply(patch, before.obj)
        if problem is not None or after is None:
            problems += [problem] if problem else []
            continue
        owned = owned_changes(before.obj, after)
        for path, why in owned:
            shown = ".".join(str(p) for p in path)
            problems.append(
                patch.source.diagnostic(
                    patch_position(patch, path),
                    f"the patch changes {shown} of {before.kind} {before.name!r}, which gpuplan owns: {why}",
                )
            )
        if owned:
            continue
        if after == before.obj:
            line, col = patch.source.position(patch.name_key())
            problems.append(
                warning(
                    patch.source.path,
                    line,
                    col,
                    "",
                    f"the patch changes nothing in {before.kind} {before.name!r}",
                )
            )
        sources = tuple(sorted(set(before.sources) | {patch.source.path}))
        result[index] = replace(before, obj=after, sources=sources)
        applied.setdefault(before.path, []).append(patch)
    return result, applied, problems
