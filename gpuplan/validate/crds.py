"""Load upstream CustomResourceDefinitions and index them by group and kind.

Each CRD version's schema becomes a strict JSON Schema (gpuplan.validate.strict) and a list of
its CEL rules, both computed once, when first asked for.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from gpuplan.validate.strict import LIST_MAP_KEYS, SAFE_FORMATS, root_schema, strictify
from gpuplan.writer import safefs

__all__ = [  # the strict translation moved to gpuplan.validate.strict; kept importable from here
    "LIST_MAP_KEYS",
    "SAFE_FORMATS",
    "CelRule",
    "Crd",
    "CrdIndex",
    "CrdLoadError",
    "CrdVersion",
    "crds_from_documents",
    "root_schema",
    "strictify",
]

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CrdLoadError(Exception):
    """A CRD file could not be read or parsed."""


@dataclass(frozen=True)
class CelRule:
    """One x-kubernetes-validations rule and where in the object it applies."""

    path_pattern: str  # e.g. "spec.resourceGroups[*].flavors[*]"; "" is the object itself
    rule: str
    message: str | None = None
    message_expression: str | None = None
    field_path: str | None = None
    reason: str | None = None


@dataclass(eq=False)
class CrdVersion:
    """One entry of spec.versions of a CRD."""

    crd: Crd = field(repr=False)
    name: str
    served: bool
    storage: bool
    deprecated: bool
    schema: dict[str, Any]  # the raw openAPIV3Schema

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """The strict JSON Schema (draft 2020-12) the engine compiles."""
        return root_schema(self.schema, self.crd.api_group_version(self.name), self.crd.kind)

    @cached_property
    def cel_rules(self) -> list[CelRule]:
        """All CEL rules of this version, with the path pattern of their schema node."""
        return list(_collect_cel(self.schema, ""))


@dataclass(eq=False)
class Crd:
    """One CustomResourceDefinition document and the file it came from."""

    source: Path
    group: str
    kind: str
    plural: str
    scope: str  # "Namespaced" or "Cluster"
    versions: dict[str, CrdVersion] = field(default_factory=dict)

    def api_group_version(self, version: str) -> str:
        """The apiVersion string for one version of this CRD."""
        return f"{self.group}/{version}"

    def served_versions(self) -> list[str]:
        """Names of the served versions."""
        return [v.name for v in self.versions.values() if v.served]


class CrdIndex:
    """All CRDs of a folder, indexed by (group, kind).

    Several CRDs may define the same group/kind (karpenter/ and
    karpenter-provider-aws/ both ship karpenter.sh NodePool). They are all kept,
    sorted by their path relative to the folder, and an object is valid when it
    validates against at least one of them: the clusters gpuplan targets install
    exactly one of them, and refusing what one upstream accepts would be wrong
    for the clusters that install that one. Errors are reported from the first.
    """

    def __init__(self, crds: list[Crd] | None = None):
        self._by_kind: dict[tuple[str, str], list[Crd]] = {}
        for crd in crds or []:
            self._by_kind.setdefault((crd.group, crd.kind), []).append(crd)

    @classmethod
    def load(cls, directory: Path | str) -> CrdIndex:
        """Read every *.yaml, *.yml and *.json file under ``directory`` (recursively)."""
        root = Path(directory)
        if not root.is_dir():
            raise CrdLoadError(f"{root}: not a directory")
        files = sorted(
            (p for p in root.rglob("*") if _is_crd_file(p) and p.is_file()),
            key=lambda p: p.relative_to(root).parts,
        )
        crds = [crd for path in files for crd in _crds_in_file(path)]
        return cls(crds)

    def overlay(self, other: CrdIndex) -> CrdIndex:
        """Return this index with every kind ``other`` defines replaced by other's CRDs."""
        mine = [
            crd for key, crds in self._by_kind.items() if key not in other._by_kind for crd in crds
        ]
        return CrdIndex(mine + [crd for crds in other._by_kind.values() for crd in crds])

    def __contains__(self, group_kind: tuple[str, str]) -> bool:
        return group_kind in self._by_kind

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_kind.values())

    def kinds(self) -> list[tuple[str, str]]:
        """All (group, kind) pairs, sorted."""
        return sorted(self._by_kind)

    def lookup(self, group: str, kind: str) -> list[Crd]:
        """The CRDs defining group/kind, in deterministic (path) order."""
        return self._by_kind.get((group, kind), [])

    def scope(self, group: str, kind: str) -> str | None:
        """Namespaced or Cluster (from the first CRD), None when unknown."""
        crds = self.lookup(group, kind)
        return crds[0].scope if crds else None

    def served_versions(self, group: str, kind: str) -> list[str]:
        """Versions served by any CRD for group/kind, oldest API level first."""
        names = {v for crd in self.lookup(group, kind) for v in crd.served_versions()}
        return sorted(names, key=version_priority)

    def versions(self, group: str, version: str, kind: str) -> list[CrdVersion]:
        """The served CrdVersion of each CRD defining group/version/kind."""
        found = []
        for crd in self.lookup(group, kind):
            v = crd.versions.get(version)
            if v is not None and v.served:
                found.append(v)
        return found

    def cel_rules(
        self, group: str, version: str, kind: str, source: Path | None = None
    ) -> list[CelRule]:
        """CEL rules of group/version/kind from the first CRD (or the one read from ``source``)."""
        for v in self.versions(group, version, kind):
            if source is None or v.crd.source == Path(source):
                return v.cel_rules
        return []


def version_priority(name: str) -> tuple:
    """Sort key for Kubernetes version names: v1alpha1 < v1beta1 < v1 < v2."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if not m:
        return (1, 0, 0, 0, name)  # non-Kubernetes names sort after, alphabetically
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (0, int(m.group(1)), stage, int(m.group(3) or 0), name)


def _cache_dir() -> Path | None:
    """Return where parsed CRD files are cached (GPUPLAN_CACHE_DIR, else ~/.cache/gpuplan)."""
    if os.environ.get("GPUPLAN_CACHE_DIR") == "off":
        return None
    base = os.environ.get("GPUPLAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpuplan"
    )
    return Path(base) / "crd-json"


def _parsed(path: Path, raw: bytes) -> list[Any]:
    """Return a CRD file's documents, from a JSON cache keyed by the file's bytes when possible.

    Parsing megabytes of CRD YAML costs most of a small run; the cache holds plain JSON (never
    pickle: a cache is not trusted to run code) and a changed file simply gets a new key. What
    the cache holds decides what is proved, so it must be the user's own private folder, never a
    link, as the render cache (gpuplan.writer.safefs.open_home): another user's planted schema is
    never read, and a folder that fails the rule is neither read nor written.
    """
    name, folder, fd = f"{hashlib.sha256(raw).hexdigest()}.json", _cache_dir(), None
    if folder is not None:
        with contextlib.suppress(OSError):
            fd = safefs.open_home(folder, create=True)
    try:
        if fd is not None:
            with contextlib.suppress(OSError, ValueError):
                return json.loads(safefs.read_all(fd, name))
        text = raw.decode("utf-8")
        docs = (
            [json.loads(text)]
            if path.suffix == ".json"
            else list(yaml.load_all(text, Loader=_YAML_LOADER))
        )
        if fd is not None:  # (values JSON cannot hold are parsed each time)
            with contextlib.suppress(OSError, TypeError, ValueError):
                safefs.replace(fd, json.dumps(docs).encode(), name)
        return docs
    finally:
        if fd is not None:
            os.close(fd)


_CRD_SUFFIXES = (".yaml", ".yml", ".json")


def _is_crd_file(path: Path) -> bool:
    """Whether a file may hold CRDs: YAML or JSON, plain or gzip-compressed."""
    name = path.name.removesuffix(".gz")
    return name.endswith(_CRD_SUFFIXES)


def _crds_in_file(path: Path) -> Iterator[Crd]:
    """Yield every CRD document of one file (lists and multi-document YAML included)."""
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
            path_for_parse = path.with_suffix("")
        else:
            path_for_parse = path
        docs = _parsed(path_for_parse, raw)
    except (OSError, ValueError, EOFError, gzip.BadGzipFile, yaml.YAMLError) as exc:
        raise CrdLoadError(f"{path}: {exc}") from exc
    yield from crds_from_documents(docs, path)


def crds_from_documents(docs: list[Any], source: Path) -> list[Crd]:
    """Return the CRDs among parsed documents read from ``source``."""
    return [
        _parse_crd(doc, source)
        for doc in _flatten(docs)
        if doc.get("kind") == "CustomResourceDefinition"
    ]


def _flatten(docs: list[Any]) -> Iterator[dict]:
    """Expand kind: List documents; drop empty and non-mapping documents."""
    for doc in docs:
        if isinstance(doc, dict) and str(doc.get("kind") or "").endswith("List") and "items" in doc:
            yield from _flatten(doc["items"] or [])
        elif isinstance(doc, dict):
            yield doc


def _parse_crd(doc: dict, path: Path) -> Crd:
    """Build a Crd from one CustomResourceDefinition document."""
    spec = doc.get("spec") or {}
    names = spec.get("names") or {}
    if not spec.get("group") or not names.get("kind"):
        raise CrdLoadError(f"{path}: CustomResourceDefinition without spec.group or names.kind")
    crd = Crd(
        path, spec["group"], names["kind"], names.get("plural", ""), spec.get("scope", "Namespaced")
    )
    # apiextensions/v1beta1 CRDs keep one schema in spec.validation for all versions.
    shared = (spec.get("validation") or {}).get("openAPIV3Schema")
    versions = spec.get("versions") or [
        {"name": spec.get("version"), "served": True, "storage": True}
    ]
    for v in versions:
        schema = (
            (v.get("schema") or {}).get("openAPIV3Schema")
            or shared
            or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
        crd.versions[v["name"]] = CrdVersion(
            crd,
            v["name"],
            bool(v.get("served", True)),
            bool(v.get("storage", False)),
            bool(v.get("deprecated", False)),
            schema,
        )
    return crd


def _collect_cel(node: Any, path: str) -> Iterator[CelRule]:
    """Walk the structural part of a schema and yield its x-kubernetes-validations."""
    if not isinstance(node, dict):
        return
    for rule in node.get("x-kubernetes-validations") or []:
        yield CelRule(
            path,
            rule.get("rule", ""),
            rule.get("message"),
            rule.get("messageExpression"),
            rule.get("fieldPath"),
            rule.get("reason"),
        )
    for name, sub in (node.get("properties") or {}).items():
        yield from _collect_cel(sub, f"{path}.{name}" if path else name)
    if isinstance(node.get("items"), dict):
        yield from _collect_cel(node["items"], f"{path}[*]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _collect_cel(node["additionalProperties"], f"{path}[*]")
