"""ClusterQueue schemas specialised per shape, so that Rust also checks the webhook's names.

Kueue's webhook wants every flavor to list exactly its group's coveredResources, in order, and
flavor names distinct across the queue (gpuplan.validate.webhooks). JSON Schema cannot say "the
names of this list equal that list", so webhooks.plain_cluster_queue compares them in Python:
some sixty names per queue, about half of what the schema pass costs. But the names of a fleet's
queues repeat: the coveredResources and flavor names of every resource group (the queue's
*shape*) are one of a few. For one shape the rules are plain JSON Schema: ``coveredResources``
is that list (const), the flavors are those names in that order, and the ``resources`` of each
flavor are the covered names in order (prefixItems with a const name each, and no more items);
the names are checked once, when the shape's schema is made. So a shape seen often enough gets
the gated schema (webhooks.cluster_queue_gate) specialised to it, holding also the weight to
usual values and refusing the fields gpuplan never renders (QUEUE_ABSENT), and Rust decides the
queue in the pass it makes anyway.

The shape only picks which schema to try: a specialised schema states its shape itself (the
consts), so whatever object it accepts has that shape, whatever key led to it; after a few
queues of one shape the next is tried on its schema before any key is built. Its acceptance says
what the gated schema's acceptance with plain_cluster_queue(obj, gated=True) says (and that no
admission-check strategy or status is there); anything else takes that route's fallbacks.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Hashable
from itertools import chain
from typing import Any

import jsonschema_rs

from gpuplan.validate.webhooks import (
    GROUP,
    MAX_COVERED_RESOURCES,
    MAX_FLAVOR_RESOURCES,
    MAX_FLAVORS,
    qualified_name_error,
)

# A shape's schema is compiled once the shape has been seen this often: compiling costs ~1 ms,
# what the names cost in Python on some two hundred queues, so a shape of a few queues is left
# to the Python test. At most MAX_SHAPES shapes per kind get a schema.
SIGHTINGS = 16
MAX_SHAPES = 64
_COUNTED = 4096  # shapes whose sightings are counted at most

# What a shape's schema refuses beside the usual queue, so that the quick test need not look:
# the admission-check strategy (its flavors must be the queue's) and a status (list-map lists).
QUEUE_ABSENT: frozenset[tuple[str, ...]] = frozenset(
    {("status",), ("spec", "admissionChecksStrategy")}
)
# Weight texts of 0 or at least 1u (a positive weight of 1n or less collapses to zero in Kueue's
# fair sharing: webhooks.fair_sharing_problems); a subset of Kueue's quantity pattern.
# (No exa suffix: gpuplan.model.quantity cannot read it, so the webhook's rules let it through unread.)
USUAL_WEIGHT = {"pattern": "^(0(\\.0*)?|[1-9][0-9]*(\\.[0-9]*)?([KMGTP]i|[mukMGTP])?)$"}

_STREAK = 3  # queues in a row of one shape before the next is tried on its schema first
_UNSEEN = object()
_COVERED = operator.itemgetter("coveredResources")
_FLAVORS = operator.itemgetter("flavors")
_NAME = operator.itemgetter("name")


class Shapes:
    """The specialised schemas of one ClusterQueue plan, compiled per shape once seen often."""

    __slots__ = (
        "_compile",
        "_compiled",
        "_guess",
        "_last",
        "_schema",
        "_seen",
        "_streak",
        "_verdict",
        "absent",
    )

    def __init__(self, schema: dict[str, Any], compile_schema: Callable[[dict[str, Any]], Any]):
        self._schema = schema  # the kind's gated schema, specialised per shape
        self._compile = compile_schema
        self.absent = QUEUE_ABSENT  # the fields (paths) the shapes' schemas refuse
        self._compiled: dict[Hashable | None, Any] = {None: None}  # shape -> validator, or None
        self._seen: dict[Hashable, int] = {}
        self._last: dict | None = None  # the object remember() saw last, and its verdict
        self._verdict: bool | None = None
        # The schema of the last queue's shape, and how many queues in a row had it: a fleet
        # lists a cluster's queues together, so the next queue is likely of the same shape.
        self._guess: Any = None
        self._streak = 0

    def validator(self, obj: dict) -> Any:
        """The compiled schema of the object's shape; None while it has none."""
        try:
            return self._found(_shape(obj["spec"]["resourceGroups"]))
        except (KeyError, TypeError):  # (TypeError: not mappings, or an unhashable name)
            return None

    def accepts(self, obj: dict) -> bool | None:
        """Whether the schema of the object's shape accepts it; None when its shape has no
        schema (yet).

        True says what the gated schema's acceptance and the quick test's True say. False says
        nothing: the object may still be valid (the gated route decides without the gate).
        Right after remember() of the same object, the verdict remember() found.
        """
        if obj is self._last:
            self._last = None
            return self._verdict
        guess = self._guess if self._streak >= _STREAK else None
        if guess is not None:  # the shape of the queues before it: no key to build
            if guess.is_valid(obj):  # (its schema states its shape: the object has it)
                return True
            self._streak = 0
        try:
            groups = obj["spec"]["resourceGroups"]
            found = self._found(_shape(groups))
        except (KeyError, TypeError):
            return None
        if found is None or found is guess:  # (no schema yet; or it has just refused)
            return None if found is None else False
        self._streak = self._streak + 1 if found is self._guess else 1
        self._guess = found
        return bool(found.is_valid(obj))

    def remember(self, obj: dict) -> bool | None:
        """accepts(obj), kept for the next accepts() of the same object (no second pass)."""
        self._last = None
        verdict = self._verdict = self.accepts(obj)
        self._last = obj
        return verdict

    def _found(self, key: Hashable | None) -> Any:
        """The compiled schema of a shape (None: no shape, or none yet); TypeError if unhashable."""
        found = self._compiled.get(key, _UNSEEN)
        return self._sighted(key) if found is _UNSEEN else found

    def _sighted(self, key: Hashable) -> Any:
        """Count one more sighting of a shape; compile its schema when it is due (else None)."""
        if len(self._compiled) > MAX_SHAPES or (
            key not in self._seen and len(self._seen) > _COUNTED
        ):
            return None  # (enough shapes, or too many to count: the gated schema)
        seen = self._seen[key] = self._seen.get(key, 0) + 1
        if seen < SIGHTINGS:
            return None
        del self._seen[key]
        schema = specialised_queue(self._schema, key)
        try:
            compiled = None if schema is None else self._compile(schema)
        except (ValueError, jsonschema_rs.ReferencingError):  # (then the gated schema is used)
            compiled = None
        self._compiled[key] = compiled
        return compiled


def shapes_for(
    api_version: str,
    kind: str,
    gated: dict[str, Any],
    compile_schema: Callable[[dict[str, Any]], Any],
) -> Shapes | None:
    """The per-shape schemas of one kind, from its gated schema; None for kinds without them."""
    if kind == "ClusterQueue" and api_version.rpartition("/")[0] == GROUP:
        return Shapes(gated, compile_schema)
    return None


def queue_shape(obj: dict) -> tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...] | None:
    """The coveredResources and flavor names of each resource group of a ClusterQueue; None
    without any."""
    try:
        return _shape(obj["spec"]["resourceGroups"])
    except (KeyError, TypeError):
        return None


def _shape(groups: Any) -> tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...] | None:
    """queue_shape of the resource groups (KeyError, TypeError when not of mappings)."""
    if type(groups) is not list or not groups:
        return None
    return tuple(zip(map(tuple, map(_COVERED, groups)), map(_flavor_names, groups), strict=True))


def _flavor_names(group: dict) -> tuple[Any, ...]:
    """The names of a resource group's flavors (KeyError, TypeError when not of mappings)."""
    flavors = group["flavors"]
    if type(flavors) is not list:
        raise TypeError("flavors")
    return tuple(map(_NAME, flavors))


def specialised_queue(gated: dict[str, Any], shape: Any) -> dict[str, Any] | None:
    """The gated ClusterQueue schema accepting only queues of ``shape`` whose flavors list it.

    None when the shape's names are not what plain_cluster_queue takes (distinct qualified
    names within Kueue's limits, none missing), or the schema is not laid out as Kueue's.
    """
    names = list(chain.from_iterable(covered for covered, _ in shape))
    flavors = list(chain.from_iterable(flavors for _, flavors in shape))
    if (
        not all(covered for covered, _ in shape)
        or any(type(name) is not str or qualified_name_error(name) for name in names)
        or len(set(names)) != len(names)
        or len(names) > MAX_COVERED_RESOURCES
        or any(type(name) is not str for name in flavors)
        or len(set(flavors)) != len(flavors)
        or len(flavors) > MAX_FLAVORS
        or any(len(c) * len(f) > MAX_FLAVOR_RESOURCES for c, f in shape)
    ):
        return None
    schema = copy.deepcopy(gated)
    try:
        listed = schema["properties"]["spec"]["properties"]["resourceGroups"]
        groups = [_group(listed["items"], list(c), list(f)) for c, f in shape]
    except (KeyError, TypeError, AttributeError):
        return None
    # As many groups as the shape has, each its own (items after prefixItems: none).
    listed.update(prefixItems=groups, items=False, minItems=len(groups))
    try:
        _usual_weight(schema["properties"]["spec"]["properties"]["fairSharing"])
    except (KeyError, TypeError):
        return None
    for path in QUEUE_ABSENT:  # (fields gpuplan never renders: the usual queue has none)
        *parents, field = path
        node = schema
        for step in parents:
            node = node["properties"][step]
        node.setdefault("properties", {})[field] = False
    return schema


def _usual_weight(fair: dict[str, Any]) -> None:
    """Hold the fair-sharing weight to values the webhook takes: 0, or at least 1u, not below 0."""
    weight = fair["properties"]["weight"]
    fair["properties"]["weight"] = {
        **weight,
        "allOf": [*weight.get("allOf", []), {"minimum": 0, **USUAL_WEIGHT}],
    }


def _group(item: dict[str, Any], covered: list[str], names: list[str]) -> dict[str, Any]:
    """One resource group's schema: its flavors named ``names`` (in order), each listing
    ``covered``, in order. (Kueue's limits on their numbers hold: specialised_queue.)"""
    group = copy.deepcopy(item)
    group["required"] = sorted({*group.get("required", []), "coveredResources", "flavors"})
    fields = group["properties"]
    fields["coveredResources"] = _const(fields["coveredResources"], covered)
    flavors = fields["flavors"]
    flavor = flavors["items"]
    flavor["required"] = sorted({*flavor.get("required", []), "name", "resources"})
    resources = flavor["properties"]["resources"]
    resource = resources["items"]
    required = sorted({*resource.get("required", []), "name"})
    resources["prefixItems"] = [
        {
            **resource,
            "required": required,
            "properties": {
                **resource["properties"],
                "name": _const(resource["properties"]["name"], name),
            },
        }
        for name in covered
    ]
    resources.update(items=False, minItems=len(covered))
    flavors["prefixItems"] = [
        {
            **flavor,
            "properties": {
                **flavor["properties"],
                "name": _const(flavor["properties"]["name"], name),
            },
        }
        for name in names
    ]
    flavors.update(items=False, minItems=len(names))  # (the CRD's maxItems stays)
    return group


def _const(node: dict[str, Any], value: Any) -> dict[str, Any]:
    """A schema node accepting only ``value``, which it must accept (else KeyError: no schema).

    The node's own keywords are left out: a const decides alone, in one comparison.
    """
    if not jsonschema_rs.Draft202012Validator(node).is_valid(value):
        raise KeyError(value)
    return {"const": value}
