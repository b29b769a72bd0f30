"""Turn a CRD version's OpenAPI v3 structural schema into a strict JSON Schema.

The API server prunes every field a structural schema does not declare, so an emitted manifest
carrying such a field is silently changed on apply (and Argo CD then shows it out of sync
forever). ``strictify`` therefore turns "would be pruned" into "is an error" while keeping
Kubernetes' own OpenAPI extensions.
"""

from __future__ import annotations

from typing import Any

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
