"""The nesting depth of a YAML document, counted from its parse events without recursion.

Both libyaml (through PyYAML) and ruamel.yaml hand out the same events, one at a time, each with
its start mark, and neither recurses to make them: counting open collections over them refuses a
document at its first node one level too deep after reading only that far. Neither parser's own
limits are relied upon: libyaml 0.2.5 has none, while the libyaml in PyYAML 6.0.4's wheels (0.2.6)
stops a flow collection at its 1,000th level before handing out the events of the first ones
(yaml/libyaml commit 51843fe, "Limit depth of nesting by default", src/parser.c
MAX_NESTING_LEVEL; PyYAML 6.0.3 built its wheels on libyaml 0.2.5: yaml/pyyaml tag 6.0.3,
.github/workflows/ci.yaml LIBYAML_REF), so load asks ruamel's events whenever libyaml's stop early.
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
