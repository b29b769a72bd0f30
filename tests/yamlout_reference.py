"""gpuplan's canonical YAML writer as it was before it was made faster: the bytes it must keep.

gpuplan.yamlout writes the same text with fewer calls and memoised scalars; tests/test_yamlout.py
holds the two to identical bytes on generated objects and on every rendered file.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOP_ORDER = ("apiVersion", "kind", "metadata")
_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./@+=-]*( [A-Za-z0-9_./@+=()-]+)*$")
_RESERVED = {
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~",
}  # fmt: skip
# Characters YAML may not hold unescaped (or reads as line breaks): escape them in quoted text.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_BLOCK_LINE = re.compile(r"^[^\x00-\x08\x0b-\x1f\x7f\u0085\u2028\u2029\ufeff]*$")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED and len(text) < 200:
        return text
    return _UNPRINTABLE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False)
    )


def _literal(text: str, indent: str) -> list[str] | None:
    """Return a string as a literal block, or None when a block cannot hold it exactly."""
    if "\n" not in text or "\r" in text or not _BLOCK_LINE.match(text):
        return None
    body = text[:-1] if text.endswith("\n") else text
    if not body or body.endswith("\n") or body.startswith((" ", "\n")) or _UNPRINTABLE.search(text):
        return None
    lines = body.split("\n")
    if any(line != line.rstrip(" \t") for line in lines):
        return None
    head = "|" if text.endswith("\n") else "|-"
    return [head] + [f"{indent}{line}" if line else "" for line in lines]


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
