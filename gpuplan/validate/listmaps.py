"""x-kubernetes-list-type=map: no two entries of such a list may have the same key values.

jsonschema_rs knows no such keyword, so the strict schemas carry ``LIST_MAP_KEYS`` and the engine
registers ``ListMapKeys`` for it: a Python check jsonschema_rs calls back with each such list,
converted back from Rust. For objects of a kind seen before, the fast path leaves the keyword out
of its schema and checks the same lists itself, found by the paths the schema gives them
(``list_map_paths``), without the round trip: with a function written out once per set of paths
(``compile_unique``).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable
from typing import Any

from gpuplan.validate.core import DEFINITIONS_ID
from gpuplan.validate.messages import show
from gpuplan.validate.strict import LIST_MAP_KEYS

_STRINGS = {str}
ITEMS = 0  # a path step into every item of a list
VALUES = 1  # a path step into every value of a map (additionalProperties)
Step = str | int
Check = tuple[tuple[str, ...], Callable[[Any], Any], bool]  # keys, their getter, one key?
# A trie of paths: the checks of the lists found here, and the steps on.
Trie = tuple[list[Check], dict[Step, "Trie"]]


class ListMapKeys:
    """jsonschema_rs keyword: x-kubernetes-list-type=map entries must have unique keys."""

    def __init__(self, parent_schema: dict, value: list[str], schema_path: Any):
        self.keys = value
        self._getter = operator.itemgetter(*value) if value else None
        self._single = len(value) == 1

    def validate(self, instance: Any) -> None:
        """Raise on the first entry repeating the key tuple of an earlier entry."""
        if (
            not isinstance(instance, list)
            or len(instance) < 2
            or (self._getter is not None and distinct(self._getter, self._single, instance))
        ):
            return
        seen: dict[tuple[Any, ...], int] = {}
        for i, item in enumerate(instance):
            if not isinstance(item, dict):
                continue
            key = tuple(key_part(item.get(k)) for k in self.keys)
            if key in seen:
                shown = ", ".join(f"{k}={show(item.get(k))}" for k in self.keys)
                # "<index>|" lets _translate point the Problem at the entry itself.
                raise ValueError(f"{i}|duplicate entry with {shown} (first at [{seen[key]}])")
            seen[key] = i


def key_part(value: Any) -> Any:
    """One list-map key value, equal to another exactly when their JSON texts are equal."""
    kind = type(value)
    if kind is str or kind is int:  # JSON text of a str or int is one to one with the value
        return (kind, value)
    return json.dumps(value, sort_keys=True)


def distinct(getter: Callable[[Any], Any], single: bool, items: list) -> bool:
    """Whether every entry carries all the keys, as strings, and no two entries have the same ones.

    The common case, decided in C. Anything else (a non-mapping entry, a missing key, a number,
    which Python's equality may merge with a bool or a float, a repeated key) is left to the
    careful walk of ListMapKeys: False is never an error by itself.
    """
    try:
        keys = list(map(getter, items))
        if len(set(keys)) != len(keys):
            return False
    except (KeyError, TypeError, IndexError):  # not a mapping, a missing key, unhashable
        return False
    kinds = set(map(type, keys if single else itertools.chain.from_iterable(keys)))
    return kinds == _STRINGS


def list_map_paths(schema: Any) -> Trie | None:
    """Where the lists with LIST_MAP_KEYS are in an object of ``schema``; None when unsure.

    A keyword reached only through properties, items and additionalProperties (the structural
    schemas of CRDs) has a plain path; one under allOf, anyOf, a $ref or beside both properties
    and additionalProperties does not, and then the keyword stays in the schema.
    """
    trie: Trie = ([], {})
    return trie if _collect(schema, trie) else None


def _collect(node: Any, trie: Trie) -> bool:
    """Add the list-map checks under one schema node; False when one has no plain path."""
    if not isinstance(node, dict):
        return True
    if LIST_MAP_KEYS in node:
        keys = node[LIST_MAP_KEYS]
        if not keys or not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return False  # not a plain list of keys: ListMapKeys decides
        trie[0].append((tuple(keys), operator.itemgetter(*keys), len(keys) == 1))
    steps: list[tuple[Step, Any]] = list((node.get("properties") or {}).items())
    if isinstance(node.get("items"), dict):
        steps.append((ITEMS, node["items"]))
    if isinstance(node.get("additionalProperties"), dict):
        steps.append((VALUES, node["additionalProperties"]))
    for step, sub in steps:
        child: Trie = ([], {})
        if not _collect(sub, child):
            return False
        if child[0] or child[1]:
            if step == VALUES and (node.get("properties") or node.get("patternProperties")):
                return False  # additionalProperties skips the named keys: no plain path
            trie[1][step] = child
    if _foreign_ref(node):
        return False
    elsewhere = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "prefixItems")
    others = ("patternProperties", "dependentSchemas", "contains", "propertyNames")
    return not any(_mentions(node.get(key)) for key in (*elsewhere, *others))


def _foreign_ref(node: dict) -> bool:
    """Whether a node refers to a schema other than the core definitions (never searched)."""
    ref = node.get("$ref")
    return isinstance(ref, str) and not ref.startswith(DEFINITIONS_ID)


def _mentions(node: Any) -> bool:
    """Whether LIST_MAP_KEYS may apply anywhere under a schema value."""
    if isinstance(node, dict):
        if LIST_MAP_KEYS in node or _foreign_ref(node):
            return True
        return any(_mentions(v) for v in node.values())
    if isinstance(node, list):
        return any(_mentions(v) for v in node)
    return False


def unique_lists(value: Any, trie: Trie) -> bool:
    """Whether every list-map list in ``value`` passes distinct(); False is no verdict."""
    checks, steps = trie
    if checks and isinstance(value, list) and len(value) > 1:
        for _, getter, single in checks:
            if not distinct(getter, single, value):
                return False
    for step, sub in steps.items():
        if step == ITEMS:
            if isinstance(value, list) and not all(
                unique_lists(item, sub) for item in value if item is not None
            ):
                return False
        elif step == VALUES:
            if isinstance(value, dict) and not all(
                unique_lists(item, sub) for item in value.values() if item is not None
            ):
                return False
        elif isinstance(value, dict):
            item = value.get(step)
            if item is not None and not unique_lists(item, sub):
                return False
    return True


def without(trie: Trie | None, done: dict[tuple[Step, ...], tuple[str, ...]]) -> Trie | None:
    """``trie`` without the checks of ``done`` (path -> keys: lists known to be distinct)."""
    if trie is None:
        return None

    def prune(node: Trie, path: tuple[Step, ...]) -> Trie | None:
        checks = [check for check in node[0] if done.get(path) != check[0]]
        steps = {}
        for step, sub in node[1].items():
            kept = prune(sub, (*path, step))
            if kept is not None:
                steps[step] = kept
        return (checks, steps) if checks or steps else None

    return prune(trie, ())


def outside(trie: Trie | None, absent: frozenset[tuple[Step, ...]]) -> Trie | None:
    """``trie`` without the lists at or below the paths of ``absent`` (fields known absent)."""
    if trie is None:
        return None

    def prune(node: Trie, path: tuple[Step, ...]) -> Trie | None:
        if path in absent:
            return None
        steps = {}
        for step, sub in node[1].items():
            kept = prune(sub, (*path, step))
            if kept is not None:
                steps[step] = kept
        return (node[0], steps) if node[0] or steps else None

    return prune(trie, ())


def compile_unique(trie: Trie | None) -> Callable[[Any], bool] | None:
    """unique_lists(value, trie) written out as one function of ``value``; None without a trie.

    The generic walk calls itself once per step of the trie, on every object; the written one
    looks the steps up inline, with the keys' getters as constants. Where Python cannot compile
    it (a trie nested too deep), the generic walk stands in.
    """
    if trie is None:
        return None
    constants: dict[str, Any] = {"_distinct": distinct}
    try:
        lines = [
            "def unique(v0):",
            *_indent(_unique_body(trie, "v0", 0, constants)),
            "    return True",
        ]
        namespace = dict(constants)
        # The code is written here: variable names it made, the getters and keys as constants.
        exec("\n".join(lines), namespace)
    except (SyntaxError, RecursionError, MemoryError):
        return lambda value: unique_lists(value, trie)
    written: Callable[[Any], bool] = namespace["unique"]
    return written


def _unique_body(trie: Trie, v: str, depth: int, constants: dict[str, Any]) -> list[str]:
    """The statements returning False where a list under the value in ``v`` fails distinct()."""

    def constant(value: Any) -> str:
        name = f"_c{len(constants)}"
        constants[name] = value
        return name

    checks, steps = trie
    lines = [
        f"if isinstance({v}, list) and len({v}) > 1 and not _distinct("
        f"{constant(getter)}, {single}, {v}): return False"
        for _, getter, single in checks
    ]
    x = f"v{depth + 1}"
    fields: list[str] = []
    for step, sub in steps.items():
        if isinstance(step, str):
            inner = _unique_body(sub, x, depth + 1, constants)
            fields += [f"{x} = {v}.get({constant(step)})", f"if {x} is not None:", *_indent(inner)]
    if VALUES in steps:
        inner = _unique_body(steps[VALUES], x, depth + 1, constants)
        fields += [f"for {x} in {v}.values():", f"    if {x} is not None:", *_indent(inner, 2)]
    if fields:
        lines += [f"if isinstance({v}, dict):", *_indent(fields)]
    if ITEMS in steps:
        inner = _unique_body(steps[ITEMS], x, depth + 1, constants)
        lines += [f"if isinstance({v}, list):", f"    for {x} in {v}:"]
        lines += [f"        if {x} is not None:", *_indent(inner, 3)]
    return lines


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    """``lines`` indented by ``levels`` steps of four spaces."""
    return [" " * (4 * levels) + line for line in lines]
