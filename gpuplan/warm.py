"""What a long-running render (`render --watch`) keeps between its runs, and the work it puts off
until the run's result is printed.

Outside `kept()` nothing is kept and nothing is put off: a one-shot command behaves as before.

Kept, each by the complete input it was computed from (never by a file's name or stat alone):
- an input file as libyaml's events read it, by its shown path and bytes (gpuplan.load.screen);
- the model validated from such a read, by the same key and the model class (gpuplan.sources).
Both are pure functions of that key, and the models are frozen (gpuplan.model.common), so a kept
result is the one a cold run would compute. Entries the last run that read anything did not use
are dropped at `settle()`: memory follows the repository, not the number of edits.

Put off until `settle()`: removing the old output tree after the swap and recording the render in
the cache (whose file signatures must be taken after that removal: unlinking the old tree's names
changes the ctime of the files it shared with the new one). The output on disk is complete and
swapped in before anything is put off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_state: dict[str, Any] = {"on": False}
_kept: dict[str, dict[Hashable, Any]] = {}
_used: dict[str, dict[Hashable, Any]] = {}
_later: list[Callable[[], None]] = []


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Keep results across the runs inside the block; settle what is put off when it ends."""
    _state["on"] = True
    try:
        yield
    finally:
        try:
            settle()
        finally:
            _state["on"] = False
            _kept.clear()
            _used.clear()
            gc.unfreeze()


def active() -> bool:
    """Tell whether results are kept across runs (inside `kept()`)."""
    return bool(_state["on"])


def remember(kind: str, key: Hashable, compute: Callable[..., T], *args: Any) -> T:
    """Return compute(*args), or inside `kept()` the value an earlier run computed for the same key.

    The key must determine the value whole: every input of compute that can differ between runs.
    """
    if not _state["on"]:
        return compute(*args)
    used = _used.setdefault(kind, {})
    if key in used:
        return used[key]
    table = _kept.get(kind, {})
    value = table[key] if key in table else compute(*args)
    used[key] = value
    return value


def later(work: Callable[[], None]) -> bool:
    """Put work off until `settle()` inside `kept()`; False (nothing done) outside it."""
    if not _state["on"]:
        return False
    _later.append(work)
    return True


def settle() -> None:
    """Do the work put off, in order; keep only what the runs since the last settle used."""
    while _later:
        _later.pop(0)()
    if _used:  # a run answered from the render cache's record used nothing: keep everything
        _kept.clear()
        _kept.update(_used)
        _used.clear()
    _collect()


def _collect() -> None:
    """Free the last run's garbage now, while the process waits, and set the survivors aside.

    A run leaves cycles behind that only a full collection frees, and the CLI's thresholds
    (gpuplan.cli.GC_THRESHOLDS) make those rare: without this, each run adds ~180k objects at
    18k manifests until a full collection of them all stalls a run for a second or more.
    Frozen, what the process keeps is not walked again by the collections of the next run.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
