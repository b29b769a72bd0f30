"""Load upstream CustomResourceDefinitions and turn their schemas into strict JSON Schemas.

The API server prunes every field a structural schema does not declare, so an
emitted manifest carrying such a field is silently changed on apply (and Argo CD
then shows it out of sync forever). ``strictify`` therefore turns "would be
pruned" into "is an error" while keeping Kubernetes' own OpenAPI extensions.
"""

from __future__ import annotations

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

from gpuplan.validate.core import OBJECT_META_REF

# The custom jsonschema_rs keyword the engine registers for list-type=map key uniqueness.
LIST_MAP_KEYS = "x-gpuplan-list-map-keys"

# Formats whose JSON Schema meaning matches Kubernetes'. Others (int32, int64, byte,
# duration, quantity, ...) are annotations: the JSON Schema "duration" is ISO 8601
# while Kubernetes means a Go duration, so validating it would reject "1h".
SAFE_FORMATS = frozenset({"date-time"})

# Plain validation keywords copied unchanged (OpenAPI v3.0 and JSON Schema agree on them).
_COPIED = (
    "type",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "multipleOf",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
_INT_OR_STRING_ANYOF = ({"type": "integer"}, {"type": "string"})
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
    pickle: a cache is not trusted to run code) and a changed file simply gets a new key.
    """
    folder = _cache_dir()
    entry = folder / f"{hashlib.sha256(raw).hexdigest()}.json" if folder else None
    if entry is not None and entry.is_file():
        try:
            return json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    text = raw.decode("utf-8")
    docs = (
        [json.loads(text)]
        if path.suffix == ".json"
        else list(yaml.load_all(text, Loader=_YAML_LOADER))
    )
    if entry is not None:
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            temporary = entry.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(docs), encoding="utf-8")
            os.replace(temporary, entry)
        except (OSError, TypeError, ValueError):
            pass  # not cacheable (read-only home, non-JSON values): parse each time
    return docs


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


def root_schema(schema: dict, api_version: str, kind: str) -> dict:
    """Strict JSON Schema for a whole custom resource of one CRD version."""
    out = strictify(schema)
    props = out.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "const": api_version}
    props["kind"] = {"type": "string", "const": kind}
    # Top-level metadata is always ObjectMeta for the API server, whatever the CRD says;
    # a CRD may only add restrictions (name/generateName), which are kept beside it.
    crd_meta = strictify(schema.get("properties", {}).get("metadata") or {}, structural=False)
    crd_meta.pop("type", None)
    crd_meta.pop("additionalProperties", None)
    props["metadata"] = (
        {"allOf": [{"$ref": OBJECT_META_REF}, crd_meta]} if crd_meta else {"$ref": OBJECT_META_REF}
    )
    out.pop("type", None)  # the engine only ever passes mappings
    # The engine reports missing apiVersion/kind/metadata itself, once, for every kind.
    required = [r for r in out.pop("required", []) if r not in ("apiVersion", "kind", "metadata")]
    if required:
        out["required"] = required
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return out


def strictify(node: Any, structural: bool = True) -> Any:
    """Translate one OpenAPI v3 structural schema node to strict JSON Schema.

    ``structural`` is False inside allOf/anyOf/oneOf/not, which may only add value
    validations: closing objects there would reject fields declared by the parent.
    """
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {k: node[k] for k in _COPIED if k in node}
    if "properties" in node:
        out["properties"] = {k: strictify(v, structural) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = strictify(node["items"], structural)
    if "additionalProperties" in node:
        out["additionalProperties"] = strictify(node["additionalProperties"], structural)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = [strictify(s, structural=False) for s in node[key]]
    if "not" in node:
        out["not"] = strictify(node["not"], structural=False)
    if node.get("format") in SAFE_FORMATS:
        out["format"] = node["format"]
    _exclusive_bounds(node, out)
    _required(node, out)
    _int_or_string(node, out)
    _list_type(node, out)
    if structural and node.get("x-kubernetes-embedded-resource"):
        _embedded_resource(out)
    if structural and _closes(node):
        out["additionalProperties"] = False
        # Without "properties" jsonschema_rs reports a nameless FalseSchema error;
        # with it, an AdditionalProperties error naming the unknown fields.
        out.setdefault("properties", {})
    if node.get("nullable"):
        _nullable(out)
    return out


def _closes(node: dict) -> bool:
    """Whether the API server would prune unknown fields of this object node."""
    if node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node:
        return False
    return "properties" in node or node.get("type") == "object"


def _exclusive_bounds(node: dict, out: dict) -> None:
    """OpenAPI 3.0 exclusiveMinimum/Maximum are booleans modifying minimum/maximum."""
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = node.get(flag)
        if value is True and bound in out:
            out[flag] = out.pop(bound)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[flag] = value


def _required(node: dict, out: dict) -> None:
    """Copy required, minus fields with a default: the API server defaults them first."""
    if "required" not in node:
        return
    props = node.get("properties") or {}
    required = [r for r in node["required"] if "default" not in (props.get(r) or {})]
    if required:
        out["required"] = required


def _int_or_string(node: dict, out: dict) -> None:
    """x-kubernetes-int-or-string: a plain type list gives a clean 'integer or string' error."""
    if not node.get("x-kubernetes-int-or-string"):
        return
    out["type"] = ["integer", "string"]
    any_of = node.get("anyOf")
    if any_of is not None and sorted(any_of, key=str) == sorted(_INT_OR_STRING_ANYOF, key=str):
        out.pop("anyOf", None)


def _list_type(node: dict, out: dict) -> None:
    """list-type set means unique items; list-type map means unique key tuples."""
    list_type = node.get("x-kubernetes-list-type")
    if list_type == "set":
        out["uniqueItems"] = True
    elif list_type == "map" and node.get("x-kubernetes-list-map-keys"):
        out[LIST_MAP_KEYS] = list(node["x-kubernetes-list-map-keys"])


def _embedded_resource(out: dict) -> None:
    """An embedded resource implicitly has apiVersion, kind (both required) and ObjectMeta."""
    props = out.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string", "minLength": 1})
    props.setdefault("kind", {"type": "string", "minLength": 1})
    props["metadata"] = {"$ref": OBJECT_META_REF}
    out["required"] = sorted(set(out.get("required", [])) | {"apiVersion", "kind"})


def _nullable(out: dict) -> None:
    """nullable: true also accepts JSON null."""
    types = out.get("type")
    if isinstance(types, str):
        out["type"] = [types, "null"]
    elif isinstance(types, list) and "null" not in types:
        out["type"] = [*types, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    for key in ("anyOf", "oneOf"):
        if key in out:
            out[key] = [*out[key], {"type": "null"}]


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
