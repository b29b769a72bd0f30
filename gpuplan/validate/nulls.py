"""Nulls the API server drops before it validates an object.

A custom resource's null value of a field that is neither nullable nor defaulted is pruned, and
a defaulted one gets its default (kubernetes/kubernetes PR 95423, k8s.io/apiextensions-apiserver
pkg/apiserver/schema/defaulting/prunenulls.go). Built-in kinds decode into Go structs, where a
null leaves the field at its zero value, i.e. unset.
"""

from __future__ import annotations

import json
from typing import Any


def has_nulls(value: Any) -> bool:
    """Tell whether a null may be anywhere in value (json's C encoder looks ~10x faster than a walk).

    A "null" inside a string is a false alarm that only costs the slow path; a value json cannot
    encode takes the slow path too.
    """
    try:
        return "null" in json.dumps(value, check_circular=False)
    except (TypeError, ValueError):
        return True


def prune_nulls(obj: dict, schema: Any) -> dict:
    """Return a custom resource without the nulls the API server drops for its CRD schema."""
    if not has_nulls(obj):
        return obj
    out = _prune(obj, schema)
    if isinstance(out, dict) and "metadata" in out:
        out["metadata"] = drop_nulls(
            out["metadata"]
        )  # ObjectMeta is a Go struct whatever the CRD says
    return out


def _prune(value: Any, schema: Any) -> Any:
    """Prune nulls below one schema node."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props: dict[str, Any] = (
            schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        )
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key)
            if item is None and isinstance(sub, dict) and not sub.get("nullable"):
                continue  # pruned, or replaced by the default the schema already allows
            child = sub if sub is not None else (extra if isinstance(extra, dict) else None)
            out[key] = _prune(item, child)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_prune(item, schema["items"]) for item in value]
    return value


def drop_nulls(value: Any) -> Any:
    """Return ``value`` with every null mapping entry removed, at any depth (built-in kinds)."""
    if not has_nulls(value):
        return value
    return _drop(value)


def _drop(value: Any) -> Any:
    """Drop null mapping entries below one node."""
    if isinstance(value, dict):
        return {k: _drop(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop(v) for v in value]
    return value
