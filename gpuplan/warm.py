"""What a long-running render (`render --watch`) keeps between its runs, and the work it puts off
until the run's result is printed.

Outside `kept()` nothing is kept and nothing is put off: a one-shot command behaves as before.

Kept, each by the complete input it was computed from (never by a file's name or stat alone):
- an input file as libyaml's events read it, by its shown path and bytes (gpuplan.load.screen);
- the model validated from such a read, by the same key and the model class (gpuplan.sources).
Both are pure functions of that key, and the models are frozen (gpuplan.model.common), so a kept
result is the one a cold run would compute. The model of an unchanged file is therefore the very
same object from run to run, and what is derived from models alone is kept by their identity
(`remember_same`): a cluster's pools and an allocation's grants (gpuplan.resolve),
an allocation's entitlements and findings (gpuplan.entitlements.kept), and the objects of an
allocation or of a cluster (gpuplan.emit), each keyed by every model and derived value it reads.
The kept grants of an allocation are its token (gpuplan.fleet.AllocationPlan.token): the same
object exactly while its tenant's and cluster's models and its index are, so what reads those
alone is kept by the token in one lookup (`remember_one`, `map_tokens`); a tenant's findings of
the allocation checks are kept by its allocations' tokens (gpuplan.check.run_checks).
Entries the last run that read anything did not use are dropped at `settle()`: memory follows the
repository, not the number of edits.

Put off until `settle()`: removing the old output tree after the swap and recording the render in
the cache (whose file signatures must be taken after that removal: unlinking the old tree's names
changes the ctime of the files it shared with the new one). The output on disk is complete and
swapped in before anything is put off.
"""

from __future__ import annotations

import contextlib
import gc
import operator
import os
from collections.abc import Callable, Hashable, Iterator
from itertools import repeat
from typing import Any, TypeVar

T = TypeVar("T")

_state: dict[str, Any] = {"on": False}
_kept: dict[str, dict[Hashable, Any]] = {}
_used: dict[str, dict[Hashable, Any]] = {}
_first: list[Callable[[], None]] = []  # work put off with first=True, done before _later
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
            _gc.update(since=FULL_EVERY, added=0, after_full=0)


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


def remember_same(
    kind: str, held: tuple[object, ...], key: Hashable, compute: Callable[..., T], *args: Any
) -> T:
    """Return compute(*args), or inside `kept()` the value an earlier run computed from the very
    same objects `held` (by identity, kept alive with the value) and an equal `key`.

    `held` and `key` together must determine the value whole, as for `remember`; the objects are
    frozen or never changed once made (an identity stands for the content it had then).
    """
    if not _state["on"]:
        return compute(*args)
    ident = (tuple(map(id, held)), key)
    used = _used.setdefault(kind, {})
    found = used.get(ident)
    if found is None:
        table = _kept.get(kind, {})
        found = table.get(ident)
        if found is None or not all(map(operator.is_, found[0], held)):
            found = (held, compute(*args))
        used[ident] = found
    return found[1]


def remember_one(kind: str, token: object, compute: Callable[..., T], *args: Any) -> T:
    """Return compute(*args), or inside `kept()` the value an earlier run computed for the very
    same `token` (by identity, kept alive with the value).

    The token must determine the value whole: an object made once for given inputs and handed out
    again, the same object, for as long as they stay the same (gpuplan.resolve: an allocation's
    token). One lookup, where remember_same builds and compares a key of several objects.
    """
    if not _state["on"]:
        return compute(*args)
    used = _used.get(kind)
    if used is None:
        used = _used[kind] = {}
    ident = id(token)
    found = used.get(ident)
    if found is None:
        table = _kept.get(kind)
        found = None if table is None else table.get(ident)
        if found is None or found[0] is not token:
            found = (token, compute(*args))
        used[ident] = found
    return found[1]


def map_tokens(
    kind: str, tokens: list[object], compute: Callable[[Any], T], items: list[Any]
) -> list[T]:
    """Return [compute(item) for item in items], inside `kept()` each kept by its token (the
    token at the same place in `tokens`) as remember_one does: one call for a whole list."""
    if not _state["on"]:
        return [compute(item) for item in items]
    used = _used.get(kind)
    if used is None:
        used = _used[kind] = {}
    table = _kept.get(kind) or {}
    out = []
    for token, item in zip(tokens, items, strict=True):
        ident = id(token)
        found = used.get(ident)
        if found is None:
            found = table.get(ident)
            if found is None or found[0] is not token:
                found = (token, compute(item))
            used[ident] = found
        out.append(found[1])
    return out


def later(work: Callable[[], None], first: bool = False) -> bool:
    """Put work off until `settle()` inside `kept()`; False (nothing done) outside it.

    `first`: before the work put off without it (in order among such work): what a one-shot
    render waiting for the watch needs (gpuplan.cache.watching) goes before what only the next
    run of the watch does.
    """
    if not _state["on"]:
        return False
    (_first if first else _later).append(work)
    return True


def settle() -> None:
    """Do the work put off, in order; keep only what the runs since the last settle used."""
    while _first or _later:
        (_first or _later).pop(0)()
    if _used:  # a run answered from the render cache's record used nothing: keep everything
        _kept.clear()
        _kept.update(_used)
        _used.clear()
    _collect()


def _collect() -> None:
    """Free the last run's garbage now, while the process waits, and set the survivors aside.

    A run leaves cycles behind that only a full collection frees, and the CLI's thresholds
    (gpuplan.process.GC_THRESHOLDS) make those rare: without this, each run adds ~180k objects at
    18k manifests until a full collection of them all stalls a run for a second or more.
    Frozen, what the process keeps is not walked again by the collections of the next run.

    A collection of the objects made since the last settle is enough for most runs (a one-tenant
    edit's, in milliseconds); walking everything kept takes ~0.35 s at 18k manifests, and the
    next edit's run waits behind it. Cycles among objects frozen before (a replaced tenant's) are
    freed by the full collection, every FULL_EVERY settles or as soon as the objects set aside
    since the last one number a quarter of those it left: what waits to be freed stays a
    small, bounded share. (gc.get_freeze_count walks every frozen object: it is asked once per
    full collection; the survivors of a young one are counted from its own generation.)
    """
    if _gc["since"] >= FULL_EVERY or _gc["added"] > _gc["after_full"] // 4:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _gc.update(since=0, added=0, after_full=gc.get_freeze_count())
        return
    gc.collect()  # the frozen objects are not walked (gc.freeze: the permanent generation)
    _gc["added"] += len(gc.get_objects(2))  # the survivors, all in the oldest generation now
    gc.freeze()
    _gc["since"] += 1


FULL_EVERY = 16  # settles between full collections
# settles since the last full collection (the first settle makes one), objects set aside
# since, objects frozen after it
_gc = {"since": FULL_EVERY, "added": 0, "after_full": 0}


CHECK_ENV = "GPUPLAN_WARM_CHECK"  # "1": recompute what is kept by identity and compare (tests)


def checking() -> bool:
    """Tell whether values kept by an object's identity are recomputed and compared (tests only)."""
    return os.environ.get(CHECK_ENV) == "1"


class ChangedAfterKept(AssertionError):
    """An object taken by its identity changed after a value was computed from it."""


def same_content(
    what: str, items: list[Any], values: list[Any], compute: Callable[[Any], Any]
) -> None:
    """Raise ChangedAfterKept when compute(item) no longer gives the value kept for an item."""
    for item, value in zip(items, values, strict=True):
        if compute(item) != value:
            raise ChangedAfterKept(f"{what} of {item!r:.200} changed after it was kept")


def map_kept(kind: str, key: Hashable, items: list[Any], compute: Callable[[Any], T]) -> list[T]:
    """Return [compute(item) for item in items], reusing inside `kept()` the value the last run's
    list under (kind, key) had for the very same object (by identity, the old list kept alive).

    For objects never changed once made, as remember_same; quicker for long lists that are mostly the
    same objects: the lists are compared and looked up in C, and only new objects are computed.
    """
    if not _state["on"]:
        return [compute(item) for item in items]
    slot: dict[str, Any] = remember(f"{kind}\0list", key, dict)
    held, values = slot.get("held", []), slot.get("values", [])
    if len(held) == len(items):
        out: list[T] = values
        places = changed_places(items, held)
        if places:
            out = list(values)
            for i in places:
                out[i] = compute(items[i])
    else:
        by_id = dict(zip(map(id, held), values))  # held alive: an id there is that very object
        out = list(map(by_id.get, map(id, items), repeat(_NONE)))
        i = -1
        with contextlib.suppress(ValueError):
            while True:
                i = out.index(_NONE, i + 1)  # type: ignore[arg-type]
                out[i] = compute(items[i])
    if out is not values:
        slot.update(held=list(items), values=out)
    if checking():
        same_content(kind, items, out, compute)
    return out


def changed_places(now: list[Any], then: list[Any]) -> list[int]:
    """Return the places of two lists of one length that do not hold the very same object."""
    same = list(map(operator.is_, now, then))
    places, i = [], -1
    with contextlib.suppress(ValueError):
        while True:
            i = same.index(False, i + 1)
            places.append(i)
    return places


_NONE = object()  # no value kept
