"""Find the line and column of a field path inside a rendered manifest's text."""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

_TOKEN = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def split_path(path: str) -> list[str]:
    """Split `spec.resourceGroups[0].flavors[1]` or `metadata.labels[a.b/c]` into parts."""
    return [m.group(1) if m.group(1) is not None else m.group(2) for m in _TOKEN.finditer(path)]


def _step(node: Any, part: str) -> tuple[Any, tuple[int, int] | None]:
    if isinstance(node, CommentedSeq) and part.isdigit() and int(part) < len(node):
        line, col = node.lc.item(int(part))
        return node[int(part)], (line, col)
    if isinstance(node, CommentedMap) and part in node:
        line, col = node.lc.key(part)
        return node[part], (line, col)
    return None, None


def locate(text: str, path: str) -> tuple[int, int]:
    """Return the 1-based (line, column) of the deepest existing part of `path` in `text`."""
    try:
        node = YAML(typ="rt").load(text)
    except Exception:  # noqa: BLE001 - the text is gpuplan's own output; a position is a courtesy, not a must
        return 1, 1
    best = (0, 0)
    for part in split_path(path):
        node, where = _step(node, part)
        if where is None:
            break
        best = where
    if best == (0, 0):
        for number, line in enumerate(text.splitlines()):
            if line.startswith("apiVersion:"):
                return number + 1, 1
    return best[0] + 1, best[1] + 1


_UNKNOWN = re.compile(r'^unknown fields? "([^"]+)"')


def problem_path(path: str, message: str) -> str:
    """Return the path to point at: the unknown field itself rather than its parent."""
    match = _UNKNOWN.match(message)
    if match is None:
        return path
    return f"{path}[{match.group(1)}]" if path else match.group(1)
