"""What the cross-object checks found, kept from the last run of `render --watch` while what they
read is the same (gpuplan.warm); outside `render --watch` everything is computed.

The checks read a cluster's objects kind by kind (a "bucket": the objects of one kind, in order).
- `canonical`: a bucket's objects equal in content (marshal's bytes) to the last run's at the same
  place are replaced by the last run's objects, and a bucket whose objects all are is the last
  run's very list: a tenant edit re-makes a few objects alike, and the checks then see the same
  objects as before;
- `kept_check`: a check's answer is reused when every bucket it read is the same list of the same
  objects and every other input (`given`) is equal;
- `kept_objects`: a per-object pass over a bucket computes only the objects not at the same place
  in the last run's bucket;
- `regroup`: a grouping of a list (by cluster, by kind) patched where the list holds new objects.

Identity stands for content because no emitted object is changed once made (gpuplan.emit.meta.
finalize, the overlay's patches and values copy before they change anything; the checks only
read). GPUPLAN_WARM_CHECK=1 (gpuplan.warm.checking) computes everything again and fails when a
kept answer differs or a kept object changed (the tests).
"""

from __future__ import annotations

import marshal
import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from gpuplan import warm

T = TypeVar("T")
R = TypeVar("R")
H = TypeVar("H", bound=Hashable)
G = TypeVar("G", bound=Hashable)
V = TypeVar("V")
Buckets = Mapping[str, list[Any]]
ALL = "*"  # the check read every bucket
OTHER = "\0"  # the bucket of objects without a text kind


def objects_by_kind(objects: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """Return the objects (mappings) by kind, in input order; those without a text kind under OTHER."""
    found: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if isinstance(obj, dict):
            found.setdefault(bucket_of(obj), []).append(obj)
    return found


def bucket_of(obj: Mapping[str, Any]) -> str:
    """Return the bucket of an object: its kind, or OTHER when it has no text kind."""
    kind = obj.get("kind")
    return kind if isinstance(kind, str) else OTHER


def regroup(
    kind: str,
    key: Hashable,
    items: list[Any],
    group: Callable[[Any], G],
    value: Callable[[Any], V],
) -> dict[G, list[V]]:
    """Return value(item) of the items by group(item), in order (groups in order of appearance).

    Inside `render --watch` the last run's groups under (kind, key) are reused when the items
    are the same but at a few places, and each new item there is of the old one's group (its
    value then takes the old one's place). The lists returned are shared: never change them.
    """
    if not warm.active():
        return _grouped(items, group, value)[0]
    slot: dict[str, Any] = warm.remember(kind, key, dict)
    held: list[Any] | None = slot.get("held")
    if held is not None and len(held) == len(items):
        groups: dict[G, list[V]] = slot["groups"]
        places = warm.changed_places(items, held)
        if not places:
            return groups
        where: list[tuple[G, int]] = slot["where"]
        patched, copied = dict(groups), set()
        for i in places:
            name, j = where[i]
            if group(items[i]) != name:
                break
            if name not in copied:
                patched[name] = list(patched[name])
                copied.add(name)
            patched[name][j] = value(items[i])
        else:
            slot.update(held=list(items), groups=patched)
            return patched
    groups, where = _grouped(items, group, value)
    slot.update(held=list(items), groups=groups, where=where)
    return groups


def _grouped(
    items: list[Any], group: Callable[[Any], G], value: Callable[[Any], V]
) -> tuple[dict[G, list[V]], list[tuple[G, int]]]:
    """Return the values by group, and each item's group and place in it."""
    groups: dict[G, list[V]] = {}
    where = []
    for item in items:
        name = group(item)
        found = groups.setdefault(name, [])
        where.append((name, len(found)))
        found.append(value(item))
    return groups, where


def same_objects(now: Sequence[Any], then: Sequence[Any]) -> bool:
    """Tell whether two lists hold the very same objects in the same order."""
    return now is then or (len(now) == len(then) and all(map(operator.is_, now, then)))


def _code(obj: Any) -> bytes | None:
    """Return bytes equal only for objects of equal content and types (marshal's), or None."""
    try:
        return marshal.dumps(obj, 2)
    except ValueError:  # a subclass of a plain type: not compared, taken as changed
        return None


def canonical(key: Hashable, buckets: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Return the buckets with each object alike the last run's object at its place replaced by
    that object, and each bucket whose objects all are by the last run's list (`key` names the
    cluster). Alike: equal (compared in C; most changed objects differ early) and of equal
    marshal bytes (1 == True == 1.0, but a message prints them apart).

    An object the last run was given at the same place stands for what the last run returned
    there: it was compared then. Else an object found alike once (its maker keeps it, while the
    checks see the older one) would be compared again in every later run, and the runs would
    grow slower with each tenant edited.
    """
    if not warm.active():
        return buckets
    slot: dict[str, list[Any]] = warm.remember("canonical", key, dict)
    given: dict[str, list[Any]] = warm.remember("canonical-given", key, dict)
    codes: dict[str, list[bytes | None]] = warm.remember("canonical-codes", key, dict)
    checking = warm.checking()
    if checking:  # every object kept: unchanged since (its bytes were taken when it was kept)
        for name, code in codes.items():
            if [_code(obj) for obj in slot[name]] != code:
                raise warm.ChangedAfterKept(f"a {name} of {key!r} changed after it was kept")
    out: dict[str, list[Any]] = {}
    for name, bucket in buckets.items():
        old = slot.get(name, [])
        if same_objects(bucket, old) or len(old) != len(bucket):
            out[name] = old if len(old) == len(bucket) else bucket
            continue
        merged, changed = list(old), False
        last = given.get(name)
        places = warm.changed_places(bucket, old)
        if last is not None and len(last) == len(bucket):
            places = [i for i in places if bucket[i] is not last[i]]
        for i in places:
            now, then = bucket[i], old[i]
            if now != then or (mine := _code(now)) is None or mine != _code(then):
                merged[i], changed = now, True
        out[name] = merged if changed else old
    slot.clear()
    slot.update(out)
    given.clear()
    given.update({name: list(bucket) for name, bucket in buckets.items()})
    codes.clear()
    if checking:
        codes.update({name: [_code(obj) for obj in bucket] for name, bucket in out.items()})
    return out


class Reading:
    """The buckets one check asked for while it ran."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()


def kept_check(
    kind: str,
    key: Hashable,
    given: Hashable,
    buckets: Buckets,
    run: Callable[[Reading], T],
) -> T:
    """Return run(reading), or the answer kept from an earlier run of `render --watch` whose
    buckets read are the same lists and whose `given` is equal (`key` names the check and cluster).

    `run` must note in the Reading every bucket it reads (ALL: every bucket), and read nothing
    else but `given`.
    """
    if not warm.active():
        return run(Reading())
    slot: dict[str, Any] = warm.remember(kind, key, dict)
    if slot and slot["given"] == given and _same_buckets(slot["held"], slot["every"], buckets):
        if warm.checking() and run(Reading()) != slot["value"]:
            raise warm.ChangedAfterKept(f"{kind} {key!r} changed after it was kept")
        value: T = slot["value"]
        return value
    reading = Reading()
    value = run(reading)
    read = set(buckets) if ALL in reading.kinds else reading.kinds - {ALL}
    held = {k: buckets.get(k, []) for k in read}
    every = sorted(buckets) if ALL in reading.kinds else None  # then no bucket more, none less
    slot.clear()
    slot.update(given=given, held=held, every=every, value=value)
    return value


def _same_buckets(held: dict[str, list[Any]], every: list[str] | None, buckets: Buckets) -> bool:
    if every is not None and sorted(buckets) != every:
        return False
    return all(same_objects(buckets.get(name, []), then) for name, then in held.items())


def kept_objects(
    kind: str,
    key: Hashable,
    name: str,
    bucket: Sequence[Any],
    one: Callable[[Any], R],
    combine: Callable[[Sequence[Any], list[R]], T],
    given: Hashable = None,
) -> T:
    """Return combine(bucket, [one(obj) for obj in bucket]), computing one(obj) only for objects
    not at the same place in the bucket the last run kept under this key; kept while `given`
    (all `one` reads besides the object) is equal (intern it to compare it quickly)."""
    if not warm.active():
        return combine(bucket, [one(obj) for obj in bucket])
    slot: dict[str, Any] = warm.remember(kind, (key, name), dict)
    if slot and slot["given"] == given:
        held, results = slot["held"], slot["results"]
        if warm.checking() and [one(obj) for obj in held] != results:
            raise warm.ChangedAfterKept(f"{kind} {key!r} {name} changed after it was kept")
        if same_objects(bucket, held):
            value: T = slot["value"]
            return value
        if len(held) == len(bucket):
            results = list(results)
            for i in warm.changed_places(list(bucket), list(held)):
                results[i] = one(bucket[i])
        else:
            results = [one(obj) for obj in bucket]
    else:
        results = [one(obj) for obj in bucket]
    value = combine(bucket, results)
    slot.update(held=bucket, given=given, results=results, value=value)
    return value


def flatten(_bucket: Sequence[Any], results: list[list[R]]) -> list[R]:
    """Return the per-object lists as one (a `combine` of kept_objects)."""
    return [x for found in results for x in found]


def interned(kind: str, key: Hashable, value: H) -> H:
    """Return the value an earlier run of `render --watch` kept under this key if equal, else value."""
    slot: dict[str, Any] = warm.remember(kind, key, dict)
    if "value" in slot and slot["value"] == value:
        kept: H = slot["value"]
        return kept
    slot["value"] = value
    return value
