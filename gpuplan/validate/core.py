"""Core Kubernetes kinds, validated with kubernetes_validate's bundled strict schemas.

kubernetes_validate ships, per Kubernetes version, a folder ``vX.Y.0-local-strict``
with one file per kind that only ``$ref``s into a shared ``_definitions.json``. We
register that file once in a jsonschema_rs Registry and compile, per
(apiVersion, kind), a one-line schema pointing at the kind's definition: the
definitions are the same content the per-kind files carry (apiVersion/kind enums
included) and the Rust validator resolves the refs itself.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
OBJECT_META_REF = f"{DEFINITIONS_ID}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Found without importing kubernetes_validate (it pulls in jsonschema: ~0.1 s of start-up).
_SPEC = importlib.util.find_spec("kubernetes_validate")
SCHEMA_ROOT = (
    Path(_SPEC.origin).parent / "kubernetes-json-schema"
    if _SPEC and _SPEC.origin
    else Path("kubernetes-json-schema")
)
_FOLDER = re.compile(r"v(\d+)\.(\d+)\.0-local-strict")
# A JSON value without null anywhere: added to a kind's schema, one pass in Rust says "valid and
# nothing for the API server to drop", where a walk in Python (or json.dumps) costs more than the
# validation itself.
_NO_NULLS = "x-gpuplan-no-nulls"
NO_NULLS: dict[str, Any] = {
    "type": ["object", "array", "string", "number", "boolean"],
    "additionalProperties": {"$ref": f"#/$defs/{_NO_NULLS}"},
    "items": {"$ref": f"#/$defs/{_NO_NULLS}"},
}


class UnknownKubernetesVersion(ValueError):
    """No bundled schemas for the requested Kubernetes version."""


def available_versions() -> list[str]:
    """Kubernetes minor versions with bundled strict schemas, oldest first ("1.28", ...)."""
    found = []
    for entry in SCHEMA_ROOT.iterdir() if SCHEMA_ROOT.is_dir() else []:
        m = _FOLDER.fullmatch(entry.name)
        if m and (entry / "_definitions.json").is_file():
            found.append((int(m.group(1)), int(m.group(2))))
    return [f"{a}.{b}" for a, b in sorted(found)]


def newest() -> str:
    """The newest Kubernetes minor version with bundled schemas."""
    versions = available_versions()
    if not versions:
        raise UnknownKubernetesVersion(f"kubernetes_validate ships no schemas under {SCHEMA_ROOT}")
    return versions[-1]


def minor_version(kubernetes_version: str) -> str:
    """Normalise "v1.33", "1.33" or "1.33.4" to "1.33"."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", str(kubernetes_version).strip())
    if not m:
        raise UnknownKubernetesVersion(
            f'{kubernetes_version!r} is not a Kubernetes version (expected e.g. "1.33")'
        )
    return f"{int(m.group(1))}.{int(m.group(2))}"


def split_api_version(api_version: str) -> tuple[str, str]:
    """Split "apps/v1" into ("apps", "v1") and "v1" into ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


class CoreSchemas:
    """The strict OpenAPI schemas of one Kubernetes minor version."""

    def __init__(self, kubernetes_version: str):
        self.version = minor_version(kubernetes_version)
        self.folder = SCHEMA_ROOT / f"v{self.version}.0-local-strict"
        if not (self.folder / "_definitions.json").is_file():
            raise UnknownKubernetesVersion(
                f"no bundled schemas for Kubernetes {self.version} "
                f"(available: {', '.join(available_versions())})"
            )
        self.definitions: dict[str, Any] = _read_json(self.folder / "_definitions.json")
        self.registry = jsonschema_rs.Registry([(DEFINITIONS_ID, self.definitions)])
        self._by_gvk = _index_kinds(self.definitions["$defs"])
        self._versions: dict[tuple[str, str], list[str]] = {}
        for group, version, kind in self._by_gvk:
            self._versions.setdefault((group, kind), []).append(version)
        self.groups = frozenset(g for g, _ in self._versions)
        self._compiled: dict[tuple[str, ...], Any] = {}
        self._null_free_defs: dict[str, Any] = {}  # definitions refusing nulls, made when asked

    @staticmethod
    def available() -> list[str]:
        """Kubernetes minor versions with bundled strict schemas."""
        return available_versions()

    @staticmethod
    def newest() -> str:
        """The newest bundled Kubernetes minor version."""
        return newest()

    def has_kind(self, group: str, kind: str) -> bool:
        """Whether any version of group/kind exists in this Kubernetes version."""
        return (group, kind) in self._versions

    def api_versions(self, group: str, kind: str) -> list[str]:
        """The apiVersions serving group/kind ("apps/v1", "v1", ...), sorted."""
        return sorted(f"{group}/{v}" if group else v for v in self._versions.get((group, kind), []))

    def definition_name(self, group: str, version: str, kind: str) -> str | None:
        """Name of the definition in _definitions.json describing group/version/kind."""
        return self._by_gvk.get((group, version, kind))

    def schema(self, group: str, version: str, kind: str) -> dict[str, Any] | None:
        """A self-contained (via the registry) JSON Schema for group/version/kind."""
        name = self.definition_name(group, version, kind)
        if name is None:
            return None
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": f"{DEFINITIONS_ID}#/$defs/{name}",
        }

    def validator(self, group: str, version: str, kind: str) -> Any | None:
        """The compiled jsonschema_rs validator for group/version/kind (compiled once)."""
        key = (group, version, kind)
        compiled = self._compiled.get(key)
        if compiled is None:
            schema = self.schema(group, version, kind)
            if schema is None:
                return None
            # Like kubernetes_validate (jsonschema without a format checker): formats are
            # annotations, so both tools agree on every core object.
            compiled = jsonschema_rs.Draft202012Validator(
                schema, registry=self.registry, validate_formats=False
            )
            self._compiled[key] = compiled
        return compiled

    def fast_validator(self, group: str, version: str, kind: str) -> Any | None:
        """The validator of group/version/kind that also refuses nulls and unnamed objects (compiled once)."""
        key = ("no-nulls", group, version, kind)
        compiled = self._compiled.get(key)
        schema = self.schema(group, version, kind) if compiled is None else None
        if schema is not None:
            api_version = f"{group}/{version}" if group else version
            compiled = jsonschema_rs.Draft202012Validator(
                named(self.without_nulls(schema), api_version=api_version),
                registry=self.registry,
                validate_formats=False,
            )
            self._compiled[key] = compiled
        return compiled

    def without_nulls(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` (which may refer to the definitions) refusing null anywhere in the value.

        It accepts exactly what ``schema`` accepts that holds no null: null is taken out of
        every type and enum, and whatever no type constrains (a free-form object's extra
        fields, an untyped node) must be free of nulls all the way down. The definitions it
        refers to are copied in, changed the same way. One pass in Rust then costs what the
        plain schema costs, where "and no null" as a second schema walked every value twice.
        """
        out = _null_free(schema)
        names = _local_refs(out)
        defs: dict[str, Any] = {_NO_NULLS: NO_NULLS}
        while names:
            name = names.pop()
            if name in defs or name not in self.definitions["$defs"]:
                continue  # (an unknown name stays unresolved: compiling it fails, no plan)
            found = self._null_free_defs.get(name)
            if found is None:
                found = self._null_free_defs[name] = _null_free(self.definitions["$defs"][name])
            defs[name] = found
            names |= _local_refs(found)
        return {**out, "$defs": {**out.get("$defs", {}), **defs}}


def named(
    schema: dict[str, Any], cluster: bool = False, api_version: str | None = None
) -> dict[str, Any]:
    """``schema`` also requiring a non-empty metadata.name (and no namespace when ``cluster``).

    What the API server asks of every object's metadata beside its schema, for a fast schema to
    decide alone; an object it refuses for that (one with generateName) takes the full path.
    With ``api_version``, the object's apiVersion must be that text (a CRD's schema says so
    itself): a fast schema's acceptance then says the object is of its version.

    A null-free schema (without_nulls: ObjectMeta among its own definitions) gets the rule in
    place: metadata refers to a copy of ObjectMeta requiring the name, in the one pass over the
    object (a rule beside the schema, in allOf, costs Rust a second look at every object).
    """
    out = _kind_at_root(schema)
    fields, defs = out.get("properties"), out.get("$defs")
    if not isinstance(defs, dict):
        return _named_beside(schema, cluster, api_version)
    meta = defs.get(_OBJECT_META)
    if not (isinstance(fields, dict) and isinstance(meta, dict) and "metadata" in fields):
        return _named_beside(schema, cluster, api_version)
    own = f"{_OBJECT_META}.named{'.cluster' if cluster else ''}"
    metadata = _retargeted(fields["metadata"], f"#/$defs/{own}")
    if metadata is None or not isinstance(meta.get("properties"), dict):
        return _named_beside(schema, cluster, api_version)
    fields = {**fields, "metadata": metadata}
    required = {*out.get("required", []), "metadata"}
    if api_version is not None:
        fields["apiVersion"] = {**fields.get("apiVersion", {}), "const": api_version}
        required.add("apiVersion")
    return {
        **out,
        "properties": fields,
        "required": sorted(required),
        "$defs": {**defs, own: _named_meta(meta, cluster)},
    }


_OBJECT_META = OBJECT_META_REF.rpartition("/")[2]


def _kind_at_root(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema that only refers to a definition of its own, with that definition at its root."""
    ref, defs = schema.get("$ref"), schema.get("$defs")
    if "properties" in schema or not isinstance(ref, str) or not isinstance(defs, dict):
        return schema
    found = defs.get(ref.removeprefix("#/$defs/")) if ref.startswith("#/$defs/") else None
    if not isinstance(found, dict) or "$defs" in found or "$ref" in found:
        return schema
    return {**{key: value for key, value in schema.items() if key != "$ref"}, **found}


def _retargeted(node: Any, target: str) -> dict[str, Any] | None:
    """A metadata schema referring to ObjectMeta, referring to ``target`` instead (else None)."""
    meta = f"#/$defs/{_OBJECT_META}"
    if isinstance(node, dict) and node.get("$ref") == meta:
        return {**node, "$ref": target}
    parts = node.get("allOf") if isinstance(node, dict) else None
    if isinstance(parts, list) and {"$ref": meta} in parts:
        return {**node, "allOf": [{"$ref": target} if p == {"$ref": meta} else p for p in parts]}
    return None


def _named_meta(meta: dict[str, Any], cluster: bool) -> dict[str, Any]:
    """ObjectMeta requiring a non-empty name, and no namespace but "" when ``cluster``."""
    fields = meta["properties"]
    out = {
        **meta,
        "required": sorted({*meta.get("required", []), "name"}),
        "properties": {
            **fields,
            "name": {**fields.get("name", {}), "type": "string", "minLength": 1},
        },
    }
    if cluster:  # metadata.namespace would be dropped silently: absent or ""
        out["properties"]["namespace"] = {
            **fields.get("namespace", {}),
            "type": "string",
            "maxLength": 0,
        }
    return out


def _named_beside(schema: dict[str, Any], cluster: bool, api_version: str | None) -> dict[str, Any]:
    """named() as a rule beside the schema (allOf), for a schema not laid out for it."""
    meta: dict[str, Any] = {
        "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": 1}},
    }
    if cluster:  # metadata.namespace would be dropped silently: absent or ""
        meta["not"] = {
            "required": ["namespace"],
            "properties": {"namespace": {"type": "string", "minLength": 1}},
        }
    rule: dict[str, Any] = {
        "type": "object",
        "required": ["metadata"],
        "properties": {"metadata": meta},
    }
    if api_version is not None:
        rule["required"] = ["apiVersion", "metadata"]
        rule["properties"]["apiVersion"] = {"const": api_version}
    return {**schema, "allOf": [*schema.get("allOf", []), rule]}


_NO_NULLS_REF = {"$ref": f"#/$defs/{_NO_NULLS}"}
_LOCAL_REF = re.compile(r"#/\$defs/([^/]+)")


def _null_free(node: Any) -> Any:
    """One schema node accepting what it accepted, minus every value with a null in it."""
    if node is True:
        return _NO_NULLS_REF
    if not isinstance(node, dict):
        return node
    out = dict(node)
    types = out.get("type")
    if isinstance(types, list) and "null" in types:
        types = out["type"] = [t for t in types if t != "null"]
    if types == "null" or types == [] or ("const" in out and _has_null(out["const"])):
        return False
    if isinstance(out.get("enum"), list):
        out["enum"] = [value for value in out["enum"] if not _has_null(value)]
        if not out["enum"]:
            return False
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(DEFINITIONS_ID):
        out["$ref"] = ref[len(DEFINITIONS_ID) :]  # the definitions are copied in
    for key in ("properties", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _null_free(sub) for name, sub in out[key].items()}
    for key in ("additionalProperties", "items"):
        if key in out:
            out[key] = _null_free(out[key])
    for key in ("prefixItems", "allOf", "anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [_null_free(sub) for sub in out[key]]
    # "not", "if", "contains" and the like keep their meaning: the keywords above decide nulls.
    if "type" not in out:
        # Each subschema above now accepts only values without a null, so a value one of them
        # must accept has none either: the int-or-string quantities (anyOf integer, string).
        decided = ("enum", "const", "$ref")
        if not any(key in out for key in decided) and not any(
            isinstance(out.get(key), list) and out[key] for key in ("anyOf", "oneOf", "allOf")
        ):
            out["allOf"] = [*out.get("allOf", []), _NO_NULLS_REF]
        return out
    kinds: list[Any] = (
        [types] if isinstance(types, str) else types if isinstance(types, list) else []
    )
    if "object" in kinds and "additionalProperties" not in out:
        out["additionalProperties"] = _NO_NULLS_REF
    if "array" in kinds and "items" not in out:
        out["items"] = _NO_NULLS_REF
    return out


def _has_null(value: Any) -> bool:
    """Whether a JSON value is or holds a null."""
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return value is None


def _local_refs(node: Any) -> set[str]:
    """The names of the definitions a schema refers to ("#/$defs/<name>")."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                m = _LOCAL_REF.fullmatch(ref)
                if m and m.group(1) != _NO_NULLS:
                    found.add(m.group(1))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@cache
def core_schemas(kubernetes_version: str) -> CoreSchemas:
    """A shared CoreSchemas per minor version: loading 1.4 MB of definitions costs ~20 ms."""
    return CoreSchemas(minor_version(kubernetes_version))


def _read_json(path: Path) -> Any:
    """Parse one JSON file."""
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _index_kinds(defs: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """Map (group, version, kind) to the name of the definition that declares it."""
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in sorted(defs.items()):
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            # meta/v1 DeleteOptions, WatchEvent etc. are listed under many groups; the
            # first definition (sorted by name) wins, which is deterministic.
            index.setdefault(key, name)
    return index
