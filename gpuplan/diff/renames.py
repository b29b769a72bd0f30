"""Renames of pools, tenants and networks: objects that differ only in a name and its references.

Kubernetes has no rename: a renamed pool is a ResourceFlavor (and NodePool, node labels...)
deleted and another created, and every ClusterQueue that names it changes. Shown as that, a
rename reads as a pool removed plus quota cut to zero. So both sides' entities are paired
first: a pool (tenant, network) only the old side has and one only the new side has are a
rename when the objects defining them match once the old name is replaced by the new one.
Then the old side is *aligned*: every removed object whose renamed key exists on the new side
is re-keyed, and every value that equals the new one after the substitution takes the new
value. What still differs is a real change, listed as such; the disruption rules compare
the aligned side, so a rename alone is no quota cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.diff.kinds import dig, is_kind, listing, mapping
from gpuplan.diff.objects import Entry, ObjectKey, Side, field_changes
from gpuplan.diff.scheduling import KAI, parents
from gpuplan.plan.pools import POOL_LABEL

KUEUE = "kueue.x-k8s.io"
LIKENESS = 0.25  # at most this share of a defining object's fields may differ beyond the name


@dataclass(frozen=True)
class Rename:
    """One entity renamed in one cluster, and the objects that follow it (old key -> new key)."""

    scope: str
    entity: str  # pool, tenant, network or cohort (a KAI parent Queue)
    old: str
    new: str
    objects: tuple[tuple[ObjectKey, ObjectKey], ...] = ()


@dataclass
class Aligned:
    """The old side with renames applied, and what was paired."""

    side: Side
    renames: list[Rename] = field(default_factory=list)
    rekeyed: dict[ObjectKey, ObjectKey] = field(default_factory=dict)  # new key -> old key


def _defines(key: ObjectKey, obj: dict[str, Any]) -> tuple[str, str] | None:
    """Return (entity, name) when an object defines a pool, a tenant or a network."""
    if is_kind(key, KUEUE, "ResourceFlavor"):
        return "pool", str(mapping(dig(obj, "spec", "nodeLabels")).get(POOL_LABEL) or key.name)
    if is_kind(key, "karpenter.sh", "NodePool"):
        return "pool", str(
            mapping(dig(obj, "spec", "template", "metadata", "labels")).get(POOL_LABEL) or key.name
        )
    if is_kind(key, "nfd.k8s-sigs.io", "NodeFeatureRule"):
        rules = [
            mapping(dig(r, "labels")).get(POOL_LABEL) for r in listing(dig(obj, "spec", "rules"))
        ]
        pools = [str(p) for p in rules if p]
        return ("pool", pools[0]) if len(pools) == 1 else None
    if is_kind(key, KUEUE, "ClusterQueue") or is_kind(key, "scheduling.volcano.sh", "Queue"):
        return "tenant", key.name
    if is_kind(key, "k8s.cni.cncf.io", "NetworkAttachmentDefinition"):
        return "network", key.name
    return None


def _entities(side: Side) -> dict[tuple[str, str, str], list[ObjectKey]]:
    """Return (cluster, entity, name) -> the keys of the objects defining it."""
    out: dict[tuple[str, str, str], list[ObjectKey]] = {}
    for key, entry in side.items():
        found = _defines(key, entry.obj)
        # A KAI Queue other Queues hang under is a cohort's, else a tenant's (emit/kai.py).
        if is_kind(key, KAI, "Queue"):
            found = ("cohort" if key.name in parents(side, key.scope) else "tenant", key.name)
        if found is not None:
            out.setdefault((key.scope, *found), []).append(key)
    return out


def substitute(value: Any, names: dict[str, str]) -> Any:
    """Return a value with every old name replaced by its new one (whole words of strings, keys too)."""
    if isinstance(value, str):
        for old, new in names.items():
            value = (
                new
                if value == old
                else re.sub(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])", new, value)
            )
        return value
    if isinstance(value, dict):
        return {substitute(k, names): substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    return value


def _renamable(old: str, new: str, names: dict[str, str]) -> bool:
    """Tell whether renaming some of the whole-word occurrences of old names in a string gives new.

    `ns/ml-research-sweeps/quota-ml-research.yaml` becomes `.../quota-ml-science.yaml` by renaming
    only its second occurrence: the namespace kept its name, the object took the tenant's.
    """
    for before, after in names.items():
        spots = [
            m.span()
            for m in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(before)}(?![A-Za-z0-9])", old)
        ][:8]
        for chosen in range(1, 2 ** len(spots)):
            text, shift = old, 0
            for index, (start, end) in enumerate(spots):
                if chosen >> index & 1:
                    text = text[: start + shift] + after + text[end + shift :]
                    shift += len(after) - (end - start)
            if text == new:
                return True
    return False


def align(old: Any, new: Any, names: dict[str, str]) -> Any:
    """Return old with each part that becomes equal to new's by the renames replaced by new's."""
    if substitute(old, names) == new or (
        isinstance(old, str) and isinstance(new, str) and _renamable(old, new, names)
    ):
        return new
    if isinstance(old, dict) and isinstance(new, dict):
        out = {}
        for k, v in old.items():
            renamed = substitute(k, names) if isinstance(k, str) else k
            target = renamed if renamed in new else k
            out[target] = align(v, new[target], names) if target in new else v
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [align(a, b, names) for a, b in zip(old, new)]
    return old


def _leaves(value: Any) -> int:
    """Return how many scalar fields a document has."""
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


def _unlikeness(
    old: Side, new: Side, before: list[ObjectKey], after: list[ObjectKey], names: dict[str, str]
) -> float:
    """Return the share of fields that differ between two entities' defining objects, once renamed."""
    pairs = [(a, b) for a in before for b in after if (a.group, a.kind) == (b.group, b.kind)]
    if not pairs:
        return 1.0
    differ = total = 0
    for a, b in pairs:
        aligned = align(old[a].obj, new[b].obj, names)
        fields = field_changes(aligned, new[b].obj)  # embedded documents (a CNI config) expanded
        differ += sum(
            1 for f in fields if not (isinstance(f.old, str) and substitute(f.old, names) == f.new)
        )
        total += _leaves(new[b].obj)
    return differ / total


def find_renames(old: Side, new: Side) -> list[Rename]:
    """Return the entities only the old side has paired with the most alike only the new side has."""
    before, after = _entities(old), _entities(new)
    gone = sorted(k for k in before if k not in after)
    came = [k for k in after if k not in before]
    out = []
    taken: set[tuple[str, str, str]] = set()
    for scope, entity, name in gone:
        options = []
        for candidate in sorted(c for c in came if c[:2] == (scope, entity) and c not in taken):
            score = _unlikeness(
                old, new, before[(scope, entity, name)], after[candidate], {name: candidate[2]}
            )
            if score <= LIKENESS:
                options.append((score, candidate))
        if options:
            best = min(options)[1]
            taken.add(best)
            out.append(Rename(scope, entity, name, best[2]))
    return out


def _variants(key: ObjectKey, names: dict[str, str]) -> list[ObjectKey]:
    """Return the keys an object may have after the renames (name, namespace or both renamed)."""
    name, namespace = substitute(key.name, names), substitute(key.namespace, names)
    options = [
        replace(key, name=name),
        replace(key, namespace=namespace),
        replace(key, name=name, namespace=namespace),
    ]
    return [k for k in dict.fromkeys(options) if k != key]


def aligned_side(old: Side, new: Side) -> Aligned:
    """Return the old side with every rename applied to keys and references."""
    renames = find_renames(old, new)
    if not renames:
        return Aligned(old)
    per_scope: dict[str, dict[str, str]] = {}
    for rename in renames:
        per_scope.setdefault(rename.scope, {})[rename.old] = rename.new
    side: Side = {}
    rekeyed: dict[ObjectKey, ObjectKey] = {}
    for key, entry in old.items():
        names = per_scope.get(key.scope)
        target = key
        if names and key not in new:
            target = next(
                (
                    k
                    for k in _variants(key, names)
                    if k in new and k not in old and k not in rekeyed
                ),
                key,
            )
        if target != key:
            rekeyed[target] = key
        obj = align(entry.obj, new[target].obj, names) if names and target in new else entry.obj
        side[target] = Entry(target, obj, entry.path, entry.sources)
    return Aligned(side, [_with_objects(r, rekeyed) for r in renames], rekeyed)


def _with_objects(rename: Rename, rekeyed: dict[ObjectKey, ObjectKey]) -> Rename:
    """Return a rename with the objects whose key it changed."""
    names = {rename.old: rename.new}
    pairs = tuple(
        sorted(
            (old, new)
            for new, old in rekeyed.items()
            if new.scope == rename.scope and _variants(old, names) and new in _variants(old, names)
        )
    )
    return replace(rename, objects=pairs)
