"""gpuplan's canonical YAML writer as it was before it was made faster: the bytes it must keep.

gpuplan.writer.yamlout writes the same text with fewer calls and memoised scalars; tests/test_yamlout.py
holds the two to identical bytes on generated objects and on every rendered file. How one scalar
is quoted did not change and is shared; the layout of mappings and lists is the old code.
"""

from __future__ import annotations

from typing import Any

from gpuplan.writer.yamlout import (  # unchanged: how one scalar is written
    TOP_ORDER,
    _literal,
    _scalar,
)


def _key(key: Any) -> str:
    return _scalar(str(key))


def _ordered_items(mapping: dict[str, Any], top: bool) -> list[tuple[str, Any]]:
    if not top:  # sorted, but `name` first: list items read by their name
        return sorted(mapping.items(), key=lambda kv: (kv[0] != "name", str(kv[0])))
    first = [(k, mapping[k]) for k in TOP_ORDER if k in mapping]
    rest = sorted(
        (kv for kv in mapping.items() if kv[0] not in TOP_ORDER), key=lambda kv: str(kv[0])
    )
    return first + rest


def _mapping(mapping: dict[str, Any], indent: str, top: bool = False) -> list[str]:
    lines: list[str] = []
    for key, value in _ordered_items(mapping, top):
        lines.extend(_entry(f"{indent}{_key(key)}:", value, indent))
    return lines


def _entry(prefix: str, value: Any, indent: str) -> list[str]:
    """Return `prefix` followed by a value, nested one level below `indent`."""
    if isinstance(value, dict):
        if not value:
            return [f"{prefix} {{}}"]
        return [prefix] + _mapping(value, indent + "  ")
    if isinstance(value, list):
        if not value:
            return [f"{prefix} []"]
        return [prefix] + _sequence(value, indent)  # kubectl style: items at the key's indent
    if isinstance(value, str):
        block = _literal(value, indent + "  ")
        if block is not None:
            return [f"{prefix} {block[0]}"] + block[1:]
    return [f"{prefix} {_scalar(value)}"]


def _sequence(items: list[Any], indent: str) -> list[str]:
    lines: list[str] = []
    for item in items:
        if isinstance(item, dict) and item:
            nested = _mapping(item, indent + "  ")
            lines.append(f"{indent}- {nested[0].lstrip()}")
            lines.extend(nested[1:])
        elif isinstance(item, list) and item:
            nested = _sequence(item, indent + "  ")
            lines.append(f"{indent}- {nested[0].lstrip()}")
            lines.extend(nested[1:])
        else:
            lines.extend(_entry(f"{indent}-", item, indent))
    return lines


def dump(obj: dict[str, Any], header: str = "") -> str:
    """Return one manifest as canonical YAML text, after an optional comment header."""
    return header + "\n".join(_mapping(obj, "", top=True)) + "\n"
