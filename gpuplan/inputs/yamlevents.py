"""Build an input file's data and positions from libyaml's parse events (C), the fast path of load.

ruamel.yaml's round-trip loader is pure Python and was the largest share of reading a fleet
(about 40 ms per tenant file). libyaml's events carry the same start mark (line and column) for
every node, so the same plain data and the same position tables are built from them at a small
fraction of the cost. Scalars are resolved with ruamel's own YAML 1.2 resolver (`yes` stays
text, as it does today), never with libyaml's YAML 1.1 rules.

The fast path only takes documents whose meaning it knows to be the same under both parsers: one
document, a mapping at the top, string keys, no tags, anchors, aliases or directives, and plain
scalars that are text, null, booleans, decimal integers or floats without exponent. It declines
(returns None) everything else, duplicate keys and libyaml syntax errors included, and load.parse
then reads the file with ruamel as before, which gives the diagnostic, or the data, with its own
words and positions. tests/test_load_fast.py checks both paths agree on generated documents.
"""

from __future__ import annotations

import re
from typing import Any

import yaml as libyaml
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from gpuplan.diagnostics import Key, Position

_LOADER: Any = getattr(libyaml, "CSafeLoader", None)  # libyaml, when PyYAML was built with it
_MAPPING_START = libyaml.MappingStartEvent
_SEQUENCE_START = libyaml.SequenceStartEvent
_ENDS = (libyaml.MappingEndEvent, libyaml.SequenceEndEvent)
# Characters libyaml and ruamel may count or fold differently (line breaks YAML 1.1 knows, tabs):
# rare in a fleet's files, so such a file simply takes ruamel's path.
_UNUSUAL = re.compile("[\t\x85\u2028\u2029\ufeff]")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*")  # ruamel's float without exponent or underscore
_TRUE = frozenset(("true", "True", "TRUE"))


class SourceFloat(float):
    """A float that remembers how the YAML source wrote it: `1.30` reads as 1.3, but a field that
    is text (kubernetesVersion) must see 1.30, or refuse it, never take 1.3."""

    text: str

    @classmethod
    def of(cls, node: float) -> SourceFloat:
        """Return a ruamel float with its source text (ruamel keeps the width and the dot's place)."""
        out = cls(node)
        width, dot = getattr(node, "_width", None), getattr(node, "_prec", None)
        plain = getattr(node, "_exp", None) is None and not getattr(node, "_underscore", None)
        digits = (
            width - dot - 1 if plain and isinstance(width, int) and isinstance(dot, int) else -1
        )
        out.text = f"{float(node):.{digits}f}" if digits >= 0 else repr(float(node))
        return out

    @classmethod
    def written(cls, text: str) -> SourceFloat:
        """Return the float of a plain `[-+]digits.digits` scalar, as ruamel reads it."""
        out = cls(text)
        digits = len(text) - text.index(".") - 1  # ruamel: its width less the dot's place, less 1
        out.text = f"{float(out):.{digits}f}"
        return out


class _Decline(Exception):
    """The document is outside what the fast path knows to read exactly as ruamel does."""


_RESOLVER = VersionedResolver()  # version None: YAML 1.2, as YAML(typ="rt") reads a file
_STR, _NULL, _BOOL, _INT, _FLOAT_TAG = (
    f"tag:yaml.org,2002:{name}" for name in ("str", "null", "bool", "int", "float")
)
_DECLINE = object()
_plain_cache: dict[str, Any] = {}


def _resolve(text: str) -> Any:
    """Return the value of a plain scalar as ruamel's YAML 1.2 resolver types it, or _DECLINE."""
    tag = _RESOLVER.resolve(ScalarNode, text, (True, False))
    tag = str(getattr(tag, "value", tag))
    if tag == _STR:
        return text
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return text in _TRUE
    if tag == _INT and _DECIMAL.fullmatch(text):
        return int(text)
    if tag == _FLOAT_TAG and _FLOAT.fullmatch(text):
        return SourceFloat.written(text)
    return _DECLINE  # timestamps, merge keys, octal, hex, exponents, .inf: ruamel's own reading


def _plain(text: str) -> Any:
    value = _plain_cache.get(text, _plain_cache)
    if value is _plain_cache:
        value = _resolve(text)
        if len(text) <= 64 and len(_plain_cache) < 50_000:
            _plain_cache[text] = value
    if value is _DECLINE:
        raise _Decline
    return value


def _scalar(event: Any) -> Any:
    if event.tag is not None:
        raise _Decline
    return _plain(event.value) if event.implicit[0] else event.value


def build(
    text: str, max_nodes: int, max_depth: int
) -> tuple[dict[str, Any], dict[Key, Position], dict[Key, Position]] | None:
    """Return (data, value positions, key positions) of one YAML document, or None to decline.

    Positions are 1-based (line, column) of each node's start, as load's ruamel path records
    them: a key's own, its value's (the key's when the value is empty or null), a list item's.
    """
    if _LOADER is None or _UNUSUAL.search(text):
        return None
    parser = _LOADER(text)
    try:
        return _document(parser, max_nodes, max_depth)
    except (_Decline, libyaml.YAMLError):
        return None
    finally:
        parser.dispose()


def _document(
    parser: Any, max_nodes: int, max_depth: int
) -> tuple[dict[str, Any], dict[Key, Position], dict[Key, Position]]:
    get = parser.get_event
    get()  # StreamStartEvent
    start = get()
    if not isinstance(start, libyaml.DocumentStartEvent) or start.version or start.tags:
        raise _Decline  # an empty stream or a %YAML / %TAG directive
    first = get()
    if type(first) is not _MAPPING_START or first.anchor is not None or first.tag is not None:
        raise _Decline
    root: dict[str, Any] = {}
    values: dict[Key, Position] = {}
    keys: dict[Key, Position] = {}
    _collections(get, root, values, keys, max_nodes, max_depth)
    if not isinstance(get(), libyaml.DocumentEndEvent):
        raise _Decline
    if not isinstance(get(), libyaml.StreamEndEvent):
        raise _Decline  # a second document
    return root, values, keys


def _collections(
    get: Any,
    root: dict[str, Any],
    values: dict[Key, Position],
    keys: dict[Key, Position],
    max_nodes: int,
    max_depth: int,
) -> None:
    """Fill root from the events up to its end, without recursion."""
    # per open collection: the container, its path, the key waiting for its value (mappings)
    # and where that key stands
    containers: list[Any] = [root]
    paths: list[Key] = [()]
    pending: list[str | None] = [None]
    pending_at: list[Position] = [(1, 1)]
    nodes = 1
    while containers:
        event = get()
        kind = type(event)
        if kind in _ENDS:
            containers.pop()
            paths.pop()
            pending.pop()
            pending_at.pop()
            continue
        if kind is libyaml.ScalarEvent:
            value = _scalar(event)
        elif (kind is _MAPPING_START or kind is _SEQUENCE_START) and event.tag is None:
            value = {} if kind is _MAPPING_START else []
        else:
            raise _Decline  # an alias or a tagged collection
        if event.anchor is not None:
            raise _Decline
        mark = event.start_mark
        where = (mark.line + 1, mark.column + 1)
        top = containers[-1]
        if type(top) is dict:
            name = pending[-1]
            if name is None:  # this node is a key
                if type(value) is not str or value in top:
                    raise _Decline  # not text, or a duplicate: ruamel says what and where
                pending[-1], pending_at[-1] = value, where
                keys[paths[-1] + (value,)] = where
                continue
            pending[-1] = None
            here = paths[-1] + (name,)
            top[name] = value
            values[here] = pending_at[-1] if value is None else where
        else:
            here = paths[-1] + (len(top),)
            top.append(value)
            values[here] = keys[here] = where
        nodes += 1
        if nodes > max_nodes or len(here) > max_depth:
            raise _Decline  # ruamel's path refuses it, with its message
        if kind is not libyaml.ScalarEvent:
            containers.append(value)
            paths.append(here)
            pending.append(None)
            pending_at.append(where)
