"""Parsed input files, kept by content: a file unchanged since the last run is not parsed again.

Parsing YAML with positions in ruamel.yaml (pure Python) is slow; load.parse_items keeps here
only the files ruamel parses, since reading an entry back costs more than libyaml's events
(gpuplan.yamlevents). A file's
parse depends only on its bytes, its shown path and gpuplan's code (gpuplan.cache.key.code_key),
which together name its entry: $GPUPLAN_CACHE_DIR/parsed/<key>.json. Only files that parsed
without a finding are kept; an entry that does not read back whole is parsed again. Floats keep
the text they were written with (gpuplan.load.SourceFloat).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

from gpuplan import safefs
from gpuplan.cache import store
from gpuplan.cache.key import code_key
from gpuplan.diagnostics import Diagnostic, SourceFile

KIND = "parsed"
KEEP = 20_000  # entries; the least recently written go first
FLOAT = (
    "\x00float"  # a float's tag; a file whose data holds a mapping with this key is never cached
)

Parsed = list[tuple[SourceFile | None, list[Diagnostic]]]


class _Unkept(Exception):
    """This file's data cannot be told apart from its encoding: parse it every time."""


def remembered(
    items: list[tuple[str, bytes]], parse: Callable[[list[tuple[str, bytes]]], Parsed]
) -> Parsed:
    """Return parse(items), parsing only the files whose entry is not in the cache."""
    home = store.cache_home(KIND)
    if home is None or not items:
        return parse(items)
    try:
        fd = store.open_home(home, create=True)
    except OSError:
        return parse(items)
    try:
        return _through(fd, items, parse)
    finally:
        os.close(fd)


def _through(
    fd: int, items: list[tuple[str, bytes]], parse: Callable[[list[tuple[str, bytes]]], Parsed]
) -> Parsed:
    code = code_key()
    names = [_name(code, shown, raw) for shown, raw in items]
    found: dict[int, tuple[SourceFile | None, list[Diagnostic]]] = {}
    for index, name in enumerate(names):
        source = _load(fd, name, items[index][0])
        if source is not None:
            found[index] = (source, [])
    missing = [i for i in range(len(items)) if i not in found]
    if missing:
        for index, result in zip(missing, parse([items[i] for i in missing])):
            found[index] = result
            if result[0] is not None and not result[1]:
                _keep(fd, names[index], result[0])
        _prune(fd)
    return [found[i] for i in range(len(items))]


def _name(code: str, shown: str, raw: bytes) -> str:
    digest = hashlib.sha256(f"{code}\0{shown}\0".encode("utf-8", "surrogateescape"))
    digest.update(raw)
    return f"{digest.hexdigest()[:40]}.json"


def _load(fd: int, name: str, shown: str) -> SourceFile | None:
    try:
        data = json.loads(safefs.read_all(fd, name), object_hook=_float)
        path, body, values, keys = data
        if path != shown or not isinstance(body, dict):
            return None
        return SourceFile(path, body, _positions(values), _positions(keys))
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None  # missing, truncated or damaged: parse the file again


def _positions(table: list[Any]) -> dict[tuple[str | int, ...], tuple[int, int]]:
    keys, places = table
    if len(keys) != len(places):
        raise ValueError("a position table with missing rows")
    return dict(zip(map(tuple, keys), map(tuple, places), strict=True))


def _float(pair: dict[str, Any]) -> Any:
    """Turn an encoded float back into the SourceFloat it was (json's object_hook)."""
    from gpuplan.load import SourceFloat

    if FLOAT not in pair:
        return pair
    value, text = pair[FLOAT]
    out = SourceFloat(float(value))
    out.text = str(text)
    return out


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        if FLOAT in value:
            raise _Unkept
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, float):
        return {FLOAT: [float(value), getattr(value, "text", repr(float(value)))]}
    if value is None or isinstance(value, (str, int)):
        return value
    raise _Unkept


def _keep(fd: int, name: str, source: SourceFile) -> None:
    try:
        body = _encode(source.data)
    except _Unkept:
        return
    values, keys = ([list(table), list(table.values())] for table in (source.values, source.keys))
    data = json.dumps([source.path, body, values, keys], separators=(",", ":"))
    with contextlib.suppress(OSError, ValueError):
        store.replace(fd, data.encode(), name)


def _prune(fd: int) -> None:
    """Remove the oldest entries beyond KEEP."""
    with contextlib.suppress(OSError):
        with os.scandir(fd) as listing:
            entries = [
                e for e in listing if e.name.endswith(".json") and e.is_file(follow_symlinks=False)
            ]
        if len(entries) <= KEEP:
            return
        entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
        for entry in entries[: len(entries) - KEEP]:
            with contextlib.suppress(OSError):
                os.unlink(entry.name, dir_fd=fd)
