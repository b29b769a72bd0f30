"""A cluster's objects grouped by kind (a "bucket": the objects of one kind, in order)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

OTHER = "\0"  # the bucket of objects without a text kind


def objects_by_kind(objects: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """Return the objects (mappings) by kind, in input order; those without a text kind under OTHER."""
    found: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if isinstance(obj, dict):
            found.setdefault(bucket_of(obj), []).append(obj)
    return found


def bucket_of(obj: Mapping[str, Any]) -> str:
    """Return the bucket of an object: its kind, or OTHER when it has no text kind."""
    kind = obj.get("kind")
    return kind if isinstance(kind, str) else OTHER
