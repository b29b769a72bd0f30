"""Canonical YAML for manifests: block style, sorted keys, quoted when in doubt, LF only.

gpuplan writes its own YAML because the output must be byte-stable across library versions and
fast at fleet scale; the text is plain block YAML that any YAML 1.1 or 1.2 parser reads back
to the same data (tests round-trip it through ruamel.yaml and PyYAML).
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


_TEXTS: dict[str, str] = {}  # memo of _scalar for strings: keys and values repeat across a fleet
_TEXTS_MAX = 200_000


def _text(value: str) -> str:
    """Return _scalar(value) for a str, memoised (it is the writer's hottest call)."""
    out = _TEXTS.get(value)
    if out is None:
        out = _scalar(value)
        if len(_TEXTS) < _TEXTS_MAX:
            _TEXTS[value] = out
    return out


def _key(key: Any) -> str:
    return _text(key) if type(key) is str else _scalar(str(key))


# memo of _ordered_keys for text keys: each kind's keys recur in every object of it
_ORDERS: dict[tuple[str, ...], list[str]] = {}
_ORDERS_MAX = 100_000


def _ordered_keys(mapping: dict[Any, Any], top: bool) -> list[Any]:
    if top:
        first = [k for k in TOP_ORDER if k in mapping]
        return first + sorted((k for k in mapping if k not in TOP_ORDER), key=str)
    keys = tuple(mapping)
    order = _ORDERS.get(keys)  # only text keys are kept: a hit is the same texts in the same order
    if order is not None:
        return order
    if all(type(k) is str for k in keys):  # unique text: sorted, `name` first
        order = sorted(keys)
        if "name" in mapping:
            order.remove("name")
            order.insert(0, "name")
        if len(_ORDERS) < _ORDERS_MAX:
            _ORDERS[keys] = order
        return order
    # sorted by text, `name` first: list items read by their name (stable for equal texts)
    return sorted(mapping, key=lambda k: (k != "name", str(k)))


def _mapping(out: list[str], mapping: dict[Any, Any], indent: str, top: bool = False) -> None:
    for key in _ordered_keys(mapping, top):
        value = mapping[key]
        # _key and _text, their memo read here: this loop writes nearly every line of a fleet
        known = _TEXTS.get(key) if type(key) is str else None
        prefix = f"{indent}{_key(key) if known is None else known}:"
        if type(value) is str and "\n" not in value:  # most lines: `key: text`
            known = _TEXTS.get(value)
            out.append(f"{prefix} {_text(value) if known is None else known}")
        elif type(value) is int:
            out.append(f"{prefix} {value}")
        else:
            _entry(out, prefix, value, indent)


def _entry(out: list[str], prefix: str, value: Any, indent: str) -> None:
    """Append `prefix` followed by a value, nested one level below `indent`."""
    if isinstance(value, str):
        if "\n" in value:
            block = _literal(value, indent + "  ")
            if block is not None:
                out.append(f"{prefix} {block[0]}")
                out.extend(block[1:])
                return
        out.append(f"{prefix} {_text(value) if type(value) is str else _scalar(value)}")
    elif isinstance(value, dict):
        if not value:
            out.append(f"{prefix} {{}}")
            return
        out.append(prefix)
        _mapping(out, value, indent + "  ")
    elif isinstance(value, list):
        if not value:
            out.append(f"{prefix} []")
            return
        out.append(prefix)
        _sequence(out, value, indent)  # kubectl style: items at the key's indent
    else:
        out.append(f"{prefix} {_scalar(value)}")


def _sequence(out: list[str], items: list[Any], indent: str) -> None:
    for item in items:
        if item and isinstance(item, (dict, list)):
            start = len(out)  # the item's first line takes the dash in place of its indent
            if isinstance(item, dict):
                _mapping(out, item, indent + "  ")
            else:
                _sequence(out, item, indent + "  ")
            out[start] = f"{indent}- {out[start].lstrip()}"
        else:
            _entry(out, f"{indent}-", item, indent)


def dump(obj: dict[str, Any], header: str = "") -> str:
    """Return one manifest as canonical YAML text, after an optional comment header."""
    out: list[str] = []
    _mapping(out, obj, "", top=True)
    return header + "\n".join(out) + "\n"
