"""What changes between two shipped CRD sets, and which live or own objects it reaches.

Kubernetes facts (kubernetes/apiextensions-apiserver@v0.34.0):
- an object stays in etcd at the version it was written in; `status.storedVersions` lists every
  version objects may still be stored at, and a CRD whose `spec.versions` drops one of them is
  refused (pkg/apis/apiextensions/validation/validation.go ValidateCustomResourceDefinitionStoredVersions);
- a field the structural schema does not declare is pruned when an object is written or read back
  (pkg/apiserver/schema/pruning/algorithm.go), unless `x-kubernetes-preserve-unknown-fields` keeps it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from gpuplan.crds import DATA
from gpuplan.diff.kinds import dig, listing, mapping
from gpuplan.diff.objects import Side

APIEXT = "kubernetes/apiextensions-apiserver@v0.34.0"
STORED = f"{APIEXT}:pkg/apis/apiextensions/validation/validation.go"
PRUNING = f"{APIEXT}:pkg/apiserver/schema/pruning/algorithm.go"
SKIPPED = ("apiVersion", "kind", "metadata", "status")


@cache
def crd_documents(crd_set: str) -> dict[str, dict[str, Any]]:
    """Return name -> CRD document of a shipped set ("kueue/v0.19.2")."""
    out = {}
    for path in sorted((DATA / crd_set).glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        out[str(dig(doc, "metadata", "name"))] = doc
    return out


def _versions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(v.get("name")): v for v in listing(dig(doc, "spec", "versions"))}


def served(doc: dict[str, Any]) -> list[str]:
    """Return the versions a CRD serves."""
    return [n for n, v in _versions(doc).items() if v.get("served")]


def storage(doc: dict[str, Any]) -> str:
    """Return the storage version of a CRD."""
    return next((n for n, v in _versions(doc).items() if v.get("storage")), "")


def schema(doc: dict[str, Any], version: str) -> dict[str, Any]:
    """Return the openAPIV3Schema of one version of a CRD."""
    return mapping(dig(_versions(doc).get(version), "schema", "openAPIV3Schema"))


def _keeps_unknown(node: dict[str, Any]) -> bool:
    return bool(node.get("x-kubernetes-preserve-unknown-fields")) or isinstance(
        node.get("additionalProperties"), dict
    )


def field_paths(node: dict[str, Any], prefix: str = "") -> dict[str, bool]:
    """Return every declared field path of a schema -> whether its parent requires it."""
    out: dict[str, bool] = {}
    required = set(listing(node.get("required")))
    for name, child in mapping(node.get("properties")).items():
        if not prefix and name in SKIPPED:
            continue
        path = f"{prefix}.{name}" if prefix else name
        out[path] = name in required
        out |= field_paths(mapping(child), path)
    items = mapping(node.get("items"))
    if items:
        out |= field_paths(items, f"{prefix}[]")
    return out


def unknown_fields(obj: Any, node: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Yield the paths of an object the schema does not declare (what the API server prunes)."""
    if isinstance(obj, dict):
        if _keeps_unknown(node) or "properties" not in node:
            return
        properties = mapping(node.get("properties"))
        for key, value in obj.items():
            if not prefix and key in SKIPPED:
                continue
            path = f"{prefix}.{key}" if prefix else key
            if key not in properties:
                yield path
            else:
                yield from unknown_fields(value, mapping(properties[key]), path)
    elif isinstance(obj, list):
        for item in obj:
            yield from unknown_fields(item, mapping(node.get("items")), f"{prefix}[]")


@dataclass(frozen=True)
class CrdChange:
    """A change of one or more CRDs between two releases, in words, and whether it needs a hand."""

    crd: str  # the CRDs it is about, comma-separated (short names: "clusterqueues, cohorts")
    text: str
    action: bool = False
    source: str = ""

    @property
    def line(self) -> str:
        """Return `crds: what changes`."""
        return f"{self.crd}: {self.text}" if self.crd else self.text

    @property
    def short(self) -> str:
        """Return the line naming at most three CRDs."""
        names = self.crd.split(", ")
        if len(names) <= 3:
            return self.line
        return f"{', '.join(names[:3])} and {len(names) - 3} more CRDs: {self.text}"


def merged(changes: list[CrdChange]) -> list[CrdChange]:
    """Return the changes with one line per distinct text, naming every CRD it applies to."""
    groups: dict[tuple[str, bool, str], list[str]] = {}
    for change in changes:
        groups.setdefault((change.text, change.action, change.source), []).append(change.crd)
    return [
        CrdChange(", ".join(crds), text, action, source)
        for (text, action, source), crds in groups.items()
    ]


def _kind(doc: dict[str, Any]) -> tuple[str, str]:
    return str(dig(doc, "spec", "group")), str(dig(doc, "spec", "names", "kind"))


def _objects(sides: tuple[Side, ...], scope: str, doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """Return (label, object) of every object of a CRD's kind in a cluster, on either side, once each."""
    group, kind = _kind(doc)
    seen: dict[str, Any] = {}
    for side in sides:
        for key, entry in side.items():
            if key.scope == scope and key.group == group and key.kind == kind:
                seen.setdefault(f"{key.label()} ({entry.obj.get('apiVersion', '')})", entry.obj)
    return sorted(seen.items())


def _one(name: str, was: dict[str, Any], now: dict[str, Any]) -> list[CrdChange]:
    """Return the version and schema changes of one CRD present in both sets."""
    out = []
    old_served, new_served = served(was), served(now)
    gone = [v for v in old_served if v not in new_served]
    came = [v for v in new_served if v not in old_served]
    if came:
        out.append(CrdChange(name, f"serves {', '.join(came)} too"))
    old_store, new_store = storage(was), storage(now)
    if gone:
        action = old_store in gone
        text = f"stops serving {', '.join(gone)}"
        if action:
            text += f"; objects stored at {old_store} must be rewritten at {new_store} and {old_store} dropped from the CRD's status.storedVersions before this sync, or the API server refuses the new CRD"
        out.append(CrdChange(name, text, action, STORED if action else ""))
    if old_store != new_store and old_store not in gone:
        text = f"storage version {old_store} -> {new_store}: objects already stored stay at {old_store} until rewritten; after this sync, migrate them (rewrite each object, then drop {old_store} from status.storedVersions) before a later release stops serving {old_store}"
        out.append(CrdChange(name, text, True, STORED))
    for version in new_served:
        if version not in old_served:
            continue
        before, after = field_paths(schema(was, version)), field_paths(schema(now, version))
        required = sorted(p for p, r in after.items() if r and not before.get(p) and p in before)
        required += sorted(
            p for p, r in after.items() if r and p not in before and _parent_in(p, before)
        )
        removed = sorted(p for p in before if p not in after and _parent_in(p, after))
        if required:
            text = f"{version} newly requires {', '.join(required)}: an object without it is refused on its next write"
            out.append(CrdChange(name, text, True))
        if removed:
            out.append(CrdChange(name, f"{version} drops the fields {', '.join(removed)}"))
    return out


def _parent_in(path: str, paths: dict[str, bool]) -> bool:
    """Tell whether a field's parent is in a schema (a new required field of an existing object)."""
    parent = path.rsplit(".", 1)[0].removesuffix("[]") if "." in path else ""
    return parent == "" or parent in paths


def crd_changes(old_set: str, new_set: str) -> list[CrdChange]:
    """Return every CRD change between two shipped sets, by CRD name."""
    before, after = crd_documents(old_set), crd_documents(new_set)
    out = []
    for name in sorted(before.keys() | after.keys()):
        if name not in after:
            out.append(
                CrdChange(
                    name,
                    "no longer shipped: Argo CD prunes a CRD the chart drops, and every object of it with it",
                    True,
                )
            )
        elif name not in before:
            out.append(CrdChange(name, "new CRD"))
        else:
            out += _one(name, before[name], after[name])
    return merged([CrdChange(c.crd.split(".", 1)[0], c.text, c.action, c.source) for c in out])


def pruned_fields(new_set: str, scope: str, sides: tuple[Side, ...]) -> list[CrdChange]:
    """Return the objects of a cluster (the live ones of the base, the fleet's and own ones after)
    that use fields the new CRDs do not declare: the API server prunes them."""
    out = []
    for _, doc in sorted(crd_documents(new_set).items()):
        for label, obj in _objects(sides, scope, doc):
            version = str(obj.get("apiVersion", "")).rpartition("/")[2]
            if version not in served(doc):
                out.append(
                    CrdChange(
                        "",
                        f"{label}: {version} is no longer served: it must be rewritten at {storage(doc)}",
                        True,
                    )
                )
                continue
            unknown = list(dict.fromkeys(unknown_fields(obj, schema(doc, version))))
            if unknown:
                text = f"{label} uses {', '.join(unknown[:5])}, which the new CRD does not declare: the API server prunes {'it' if len(unknown) == 1 else 'them'}"
                out.append(CrdChange("", text, True, PRUNING))
    return out


def same_set(old_set: str | None, new_set: str | None) -> bool:
    """Tell whether two shipped CRD sets are identical."""
    if old_set is None or new_set is None:
        return old_set == new_set
    return crd_documents(old_set) == crd_documents(new_set)
