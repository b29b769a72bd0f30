"""Where the render cache lives and how a record is read and written (JSON, never through a link).

A record is plain JSON (never pickle: a cache is not trusted to run code). It is written to a
temporary file and renamed over the old one, so a killed render leaves the old record or the new
one; a record that does not parse, or lacks a field, is ignored as if there were none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuplan.writer import safefs
from gpuplan.writer.safefs import open_home as open_home  # the rule for a private folder

FORMAT = 3  # bumped when the record's shape changes: an older record is then ignored
KEEP = 32  # repositories whose records are kept; the least recently used ones go first
RECORD = "render.json"


_off: list[bool] = [False]  # render --no-cache, for the rest of the command


@contextlib.contextmanager
def disabled(off: bool = True) -> Iterator[None]:
    """Neither read nor write any cache of this module inside the block (render --no-cache)."""
    before = _off[0]
    _off[0] = off or before
    try:
        yield
    finally:
        _off[0] = before


def cache_home(kind: str = "render") -> Path | None:
    """Return a cache folder ($GPUPLAN_CACHE_DIR/<kind>, else $XDG_CACHE_HOME/gpuplan/<kind>), or None when off."""
    value = os.environ.get("GPUPLAN_CACHE_DIR")
    if value == "off" or _off[0]:
        return None
    base = value or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpuplan"
    )
    return Path(base) / kind


def slot(root: Path, out: Path) -> str:
    """Return the folder name of one repository and output folder in the cache."""
    where = f"{os.path.realpath(root)}\0{os.path.realpath(out)}"
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def read(home: Path, name: str) -> bytes | None:
    """Return a slot's record as stored, or None when there is none or it cannot be read."""
    try:
        fd = open_home(home, create=False)
    except OSError:
        return None
    try:
        slot_fd = os.open(name, safefs.DIR_FLAGS, dir_fd=fd)
        try:
            os.utime(slot_fd)  # least recently used goes first when pruning
            return safefs.read_all(slot_fd, RECORD)
        finally:
            os.close(slot_fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def parse(data: bytes) -> dict[str, Any] | None:
    """Return the record stored as these bytes, or None when it is not a whole record of this format."""
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    return record


def save(home: Path, name: str, record: dict[str, Any]) -> bytes | None:
    """Replace a slot's record (best effort: a cache that cannot be written is no error); return
    the bytes written, None when nothing was."""
    data = json.dumps({"format": FORMAT, **record}, separators=(",", ":")).encode()
    try:
        fd = open_home(home, create=True)
    except OSError:
        return None
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=fd)
        slot_fd = os.open(name, safefs.DIR_FLAGS, dir_fd=fd)
        try:
            replace(slot_fd, data)
        finally:
            os.close(slot_fd)
        with contextlib.suppress(OSError):
            _prune(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data


def _prune(home_fd: int) -> None:
    """Remove the least recently used slots beyond KEEP (each a folder made by save)."""
    slots = []
    for entry in os.scandir(home_fd):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode) and len(entry.name) == 32:
            slots.append((st.st_mtime_ns, entry.name))
    for _, name in sorted(slots, reverse=True)[KEEP:]:
        safefs.remove_tree(home_fd, name)


def replace(dir_fd: int, data: bytes, name: str = RECORD) -> None:
    """Write a file of the cache in one step (gpuplan.writer.safefs.replace)."""
    safefs.replace(dir_fd, data, name)
