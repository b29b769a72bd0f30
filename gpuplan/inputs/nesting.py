"""The nesting depth of a YAML document, counted from its parse events without recursion.

Both libyaml (through PyYAML) and ruamel.yaml hand out the same events, one at a time, each with
its start mark, and neither recurses to make them: counting open collections over them refuses a
document at its first node one level too deep after reading only that far. Neither parser's own
limits are relied upon. libyaml 0.2.5 has none (PyYAML 6.0.3 builds its wheels on it: yaml/pyyaml
tag 6.0.3, .github/workflows/ci.yaml, LIBYAML_REF). A limit of 1,000 levels came after it
(yaml/libyaml commit 51843fe, "Limit depth of nesting by default", src/parser.c
MAX_NESTING_LEVEL), and the libyaml 0.2.6 of PyYAML 6.0.4's wheels (`yaml._yaml.get_version_string()`)
stops 200,000 nested brackets at the 1,000th while reading ahead, before any event of the first
levels: load then counts on ruamel's events instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuplan.diagnostics import Position

# Events by class name: the same names in yaml.events and ruamel.yaml.events.
_OPENING = {"MappingStartEvent": "key", "SequenceStartEvent": "seq"}
_CLOSING = frozenset(("MappingEndEvent", "SequenceEndEvent"))
_NODES = frozenset(("ScalarEvent", "AliasEvent", *_OPENING))


def too_deep(events: Iterable[Any], max_depth: int) -> Position | None:
    """Return where (1-based line, column) the first node deeper than max_depth starts, or None.

    A node's depth is the length of its field path: a mapping's keys do not count, its values and
    a list's items do. The events are read only up to that node; the parser's errors propagate.
    """
    # per open collection: "seq", or "key"/"value" (what a mapping expects next)
    open_: list[str] = []
    for event in events:
        name = type(event).__name__
        if name in _CLOSING:
            open_.pop()
            continue
        if name not in _NODES:
            continue
        is_key = bool(open_) and open_[-1] == "key"
        if open_ and open_[-1] != "seq":
            open_[-1] = "value" if is_key else "key"
        if not is_key and len(open_) > max_depth:
            mark = event.start_mark
            return mark.line + 1, mark.column + 1
        if name in _OPENING:
            open_.append(_OPENING[name])
    return None
