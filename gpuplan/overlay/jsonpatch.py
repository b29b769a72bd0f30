"""JSON Patch (RFC 6902) over plain dicts and lists, with JSON Pointers (RFC 6901); pure.

Operations: add, remove, replace, move, copy, test. A failing operation raises PatchError
naming the operation's index, so the caller can point at it in the patch file.

Only `copy` can make an object larger than the patch file that changes it: a few hundred
operations that each copy a value into itself double it every time (3 KB of patch, gigabytes of
object). So what a patch copies is counted, and bounded by what a patch file may hold.
"""

from __future__ import annotations

import copy
from typing import Any

OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")
# What one patch may copy, in bytes of YAML: as much as a patch file may hold (gpuplan.inputs.load's
# MAX_FILE_BYTES), a node counted as NODE_BYTES (so at most ~200,000 nodes: the loader's MAX_NODES).
COPY_BUDGET = 4 * 1024 * 1024
NODE_BYTES = 20


class PatchError(ValueError):
    """An operation that cannot apply; `index` is the operation, `field` the key at fault."""

    def __init__(self, index: int, field: str, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.field = field


def parse_pointer(pointer: str) -> list[str]:
    """Split a JSON Pointer into unescaped reference tokens (RFC 6901 section 4)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"a JSON Pointer starts with '/' (got {pointer!r})")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise ValueError(f"{token!r} is not an array index")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise ValueError(f"index {index} is out of range (the array has {len(container)} items)")
    return index


def _parent(document: Any, tokens: list[str]) -> Any:
    """Return the container the last token of a pointer lives in."""
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise ValueError(f"{token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise ValueError(f"cannot descend into a {type(node).__name__} at {token!r}")
    return node


def get(document: Any, pointer: str) -> Any:
    """Return the value a pointer names, or raise ValueError."""
    tokens = parse_pointer(pointer)
    if not tokens:
        return document
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"{last!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise ValueError(f"cannot descend into a {type(parent).__name__} at {last!r}")


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], allow_end=True), value)
    else:
        raise ValueError(f"cannot add into a {type(parent).__name__}")
    return document


def _remove(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise ValueError("cannot remove the whole object")
    parent = _parent(document, tokens)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise ValueError(f"{tokens[-1]!r} does not exist")
        del parent[tokens[-1]]
    elif isinstance(parent, list):
        del parent[_index(parent, tokens[-1], allow_end=False)]
    else:
        raise ValueError(f"cannot remove from a {type(parent).__name__}")
    return document


def _size(value: Any, limit: int) -> int:
    """Return about how many bytes of YAML a value holds, counting no further than past limit."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        total += NODE_BYTES + (len(item) if isinstance(item, str) else 0)
        if isinstance(item, dict):
            total += sum(len(str(key)) for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _operation(document: Any, op: dict[str, Any], index: int, budget: list[int]) -> Any:
    """Apply one operation (RFC 6902 section 4) and return the new document."""
    name = op.get("op")
    if name not in OPERATIONS:
        raise PatchError(index, "op", f"op must be one of: {', '.join(OPERATIONS)} (got {name!r})")
    needed = (
        ["path"]
        + (["value"] if name in ("add", "replace", "test") else [])
        + (["from"] if name in ("move", "copy") else [])
    )
    for key in needed:
        if key not in op:
            raise PatchError(index, "", f"a {name} operation needs {key!r}")
        if key in ("path", "from") and not isinstance(op[key], str):
            raise PatchError(index, key, f"{key} must be a JSON Pointer string")
    unknown = sorted(set(op) - {"op", *needed})
    if unknown:
        raise PatchError(index, unknown[0], f"unknown field {unknown[0]!r} in a {name} operation")
    try:
        tokens = parse_pointer(op["path"])
        if name == "add":
            return _add(document, tokens, copy.deepcopy(op["value"]))
        if name == "remove":
            return _remove(document, tokens)
        if name == "replace":
            get(document, op["path"])  # the target must exist (section 4.3)
            if not tokens:
                return copy.deepcopy(op["value"])
            return _add(_remove(document, tokens), tokens, copy.deepcopy(op["value"]))
        if name == "test":
            if get(document, op["path"]) != op["value"]:
                raise ValueError("test failed: the value differs")
            return document
        source = parse_pointer(op["from"])
        if name == "move" and tokens[: len(source)] == source and tokens != source:
            raise PatchError(index, "from", "cannot move a value into one of its own children")
        value = get(document, op["from"])
        if name == "move":  # (the value leaves its place: nothing to copy)
            return _add(_remove(document, source), tokens, value)
        budget[0] -= _size(value, budget[0])
        if budget[0] < 0:
            raise PatchError(
                index,
                "from",
                f"the patch copies more than a patch file may hold ({COPY_BUDGET >> 20} MiB of YAML): copy less, or write the value out",
            )
        return _add(document, tokens, copy.deepcopy(value))
    except PatchError:
        raise
    except ValueError as exc:
        raise PatchError(index, "path", f"{op.get('path')}: {exc}") from None


def apply_json_patch(document: Any, operations: list[Any]) -> Any:
    """Return a patched copy of the document; raise PatchError on the first failing operation."""
    result, budget = copy.deepcopy(document), [COPY_BUDGET]
    for index, op in enumerate(operations):
        if not isinstance(op, dict):
            raise PatchError(index, "", "each operation is a mapping with op and path")
        result = _operation(result, op, index, budget)
    return result
