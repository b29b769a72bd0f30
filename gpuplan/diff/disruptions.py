"""Changes that hurt running work, found from the objects alone (so both diff modes see them).

- a MIG layout change: a pool's `nvidia.com/mig.config` node label (on its Karpenter NodePool
  template or NFD NodeFeatureRule) changes, or the mig-parted configuration it names does;
  the GPU Operator's MIG manager then drains the GPUs of every node of the pool and re-partitions
  them, stopping whatever ran there;
- a pool removed (its Kueue ResourceFlavor or its Karpenter NodePool deleted);
- a quota cut (a ClusterQueue nominalQuota or a ResourceQuota hard value decreases);
- a tenant removed (its ClusterQueue deleted) or a namespace removed;
- a priority lowered (a PriorityClass or WorkloadPriorityClass value decreases).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from gpuplan.diff.objects import ObjectChange, ObjectKey, Side
from gpuplan.emit.meta import SYNC_OPTIONS
from gpuplan.emit.tenants import TENANT_LABEL
from gpuplan.pools import MIG_CONFIG_LABEL, POOL_LABEL
from gpuplan.quantity import QuantityError, parse_quantity

KUEUE = "kueue.x-k8s.io"
KARPENTER = "karpenter.sh"
NFD = "nfd.k8s-sigs.io"
VOLCANO = "scheduling.volcano.sh"
RESET = "MIG manager will reset the GPUs of pool {pool}'s nodes (workloads running on them are stopped)"


@dataclass(frozen=True, order=True)
class Disruption:
    """One disruptive change: where, what kind, about what, and what happens."""

    scope: str
    kind: str  # mig-layout, pool-removed, quota-cut, tenant-removed, namespace-removed, priority-lowered
    subject: str
    message: str


Rule = Callable[[Side, Side, list[ObjectChange]], Iterator[Disruption]]


def _dig(node: Any, *path: str) -> Any:
    """Return a nested field, or None when any step is missing."""
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _mapping(node: Any) -> dict[str, Any]:
    """Return a mapping, or an empty one for anything else."""
    return node if isinstance(node, dict) else {}


def _is(key: ObjectKey, group: str, kind: str) -> bool:
    """Tell whether a key is of this API group and kind."""
    return key.group == group and key.kind == kind


def _with(changes: list[ObjectChange], status: str) -> Iterator[ObjectKey]:
    """Yield the keys of the objects with this status."""
    return (c.key for c in changes if c.status == status)


# MIG layouts


def pool_labels(key: ObjectKey, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return (pool, node labels) for a Karpenter NodePool or each rule of an NFD NodeFeatureRule."""
    if _is(key, KARPENTER, "NodePool"):
        labels = _mapping(_dig(obj, "spec", "template", "metadata", "labels"))
        return [(str(labels.get(POOL_LABEL) or key.name), labels)]
    if _is(key, NFD, "NodeFeatureRule"):
        rules = _dig(obj, "spec", "rules")
        out = []
        for rule in rules if isinstance(rules, list) else []:
            labels = _mapping(_dig(rule, "labels"))
            if POOL_LABEL in labels or MIG_CONFIG_LABEL in labels:
                out.append((str(labels.get(POOL_LABEL) or key.name), labels))
        return out
    return []


def _mig_labels(side: Side) -> dict[tuple[str, str], str | None]:
    """Return the mig.config label value per (cluster, pool), for pools whose labels gpuplan sets."""
    out: dict[tuple[str, str], str | None] = {}
    for key, entry in side.items():
        for pool, labels in pool_labels(key, entry.obj):
            value = labels.get(MIG_CONFIG_LABEL)
            out[(key.scope, pool)] = None if value is None else str(value)
    return out


def _mig_configs(side: Side) -> dict[tuple[str, str], str]:
    """Return the canonical content of every mig-parted configuration per (cluster, name)."""
    out: dict[tuple[str, str], str] = {}
    for key, entry in side.items():
        if not _is(key, "", "ConfigMap"):
            continue
        for text in _mapping(entry.obj.get("data")).values():
            for name, body in _parted(text).items():
                out[(key.scope, str(name))] = json.dumps(body, sort_keys=True, default=str)
    return out


def _parted(text: Any) -> dict[str, Any]:
    """Return the mig-configs of a mig-parted config.yaml, or nothing."""
    if not isinstance(text, str) or "mig-configs" not in text:
        return {}
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return _mapping(_dig(document, "mig-configs"))


def _changed(name: tuple[str, str], before: dict[tuple[str, str], str], after: dict[tuple[str, str], str]) -> bool:
    """Tell whether a mig-parted configuration present on both sides changed."""
    was, now = before.get(name), after.get(name)
    return was is not None and now is not None and was != now


def mig_layouts(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every pool whose nodes the MIG manager will re-partition."""
    before, after = _mig_labels(old), _mig_labels(new)
    configs_before, configs_after = _mig_configs(old), _mig_configs(new)
    for scope, pool in sorted(before.keys() & after.keys()):
        was, now = before[(scope, pool)], after[(scope, pool)]
        if was != now:
            why = f"its MIG layout changes ({MIG_CONFIG_LABEL}: {was or 'none'} -> {now or 'none'})"
        elif now is not None and _changed((scope, now), configs_before, configs_after):
            why = f"the MIG configuration {now} it uses changes in the mig-parted ConfigMap"
        else:
            continue
        yield Disruption(scope, "mig-layout", pool, f"pool {pool}: {why}: " + RESET.format(pool=pool))


# Pools, tenants and namespaces removed


def _pool_of(key: ObjectKey, obj: dict[str, Any]) -> str | None:
    """Return the pool a ResourceFlavor or a Karpenter NodePool stands for."""
    if _is(key, KUEUE, "ResourceFlavor"):
        return str(_mapping(_dig(obj, "spec", "nodeLabels")).get(POOL_LABEL) or key.name)
    labelled = pool_labels(key, obj) if _is(key, KARPENTER, "NodePool") else []
    return labelled[0][0] if labelled else None


def pools_removed(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every pool whose ResourceFlavor or Karpenter NodePool is deleted."""
    gone: dict[tuple[str, str], list[ObjectKey]] = {}
    for key in _with(changes, "removed"):
        pool = _pool_of(key, old[key].obj)
        if pool is not None:
            gone.setdefault((key.scope, pool), []).append(key)
    for (scope, pool), keys in sorted(gone.items()):
        what = f"pool {pool} is removed ({', '.join(k.label() for k in keys)} deleted): Kueue admits no more workloads to it"
        if any(k.kind == "NodePool" for k in keys):
            what += "; Karpenter drains and deletes the nodes of its NodePool"
        yield Disruption(scope, "pool-removed", pool, what)


def tenants_removed(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every tenant whose ClusterQueue (or Volcano Queue) is deleted."""
    gone: dict[tuple[str, str], list[ObjectKey]] = {}
    for key in _with(changes, "removed"):
        if _is(key, KUEUE, "ClusterQueue") or _is(key, VOLCANO, "Queue"):
            gone.setdefault((key.scope, key.name), []).append(key)
    for (scope, tenant), keys in sorted(gone.items()):
        what = f"tenant {tenant} is removed from the cluster ({', '.join(k.label() for k in keys)} deleted): its queued workloads are no longer admitted"
        yield Disruption(scope, "tenant-removed", tenant, what)


def _tenant_of(scope: str, namespace: str, *sides: Side) -> str | None:
    """Return the tenant a namespace belongs to, from its Namespace's gpuplan.io/tenant label."""
    for side in sides:
        entry = side.get(ObjectKey(scope, "", "Namespace", "", namespace))
        if entry is not None:
            tenant = _mapping(_dig(entry.obj, "metadata", "labels")).get(TENANT_LABEL)
            if tenant:
                return str(tenant)
    return None


def _namespace_text(scope: str, namespace: str, *sides: Side) -> str:
    """Return `namespace N of tenant T`, or without the tenant when it is not known."""
    tenant = _tenant_of(scope, namespace, *sides)
    return f"namespace {namespace}" + (f" of tenant {tenant}" if tenant else "")


def namespaces_removed(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every Namespace removed, saying whether Argo CD keeps it."""
    removed = [c.key for c in changes if c.status == "removed"]
    for key in removed:
        if not _is(key, "", "Namespace"):
            continue
        inside = sum(1 for k in removed if k.scope == key.scope and k.namespace == key.name)
        options = str(_mapping(_dig(old[key].obj, "metadata", "annotations")).get(SYNC_OPTIONS, ""))
        if "Prune=false" in options:
            fate = f"Argo CD keeps the namespace and its data (Prune=false), but deletes the {inside} gpuplan objects in it (quotas, queues, policies)"
        else:
            fate = "Argo CD prunes the namespace and everything in it"
        yield Disruption(key.scope, "namespace-removed", key.name, f"{_namespace_text(key.scope, key.name, old)} is removed: {fate}")


# Quotas and priorities


def nominal_quotas(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """Return a ClusterQueue's nominalQuota per (flavor, resource)."""
    out: dict[tuple[str, str], Any] = {}
    groups = _dig(obj, "spec", "resourceGroups")
    for group in groups if isinstance(groups, list) else []:
        flavors = _dig(group, "flavors")
        for flavor in flavors if isinstance(flavors, list) else []:
            resources = _dig(flavor, "resources")
            for resource in resources if isinstance(resources, list) else []:
                out[(str(_dig(flavor, "name")), str(_dig(resource, "name")))] = _dig(resource, "nominalQuota")
    return out


def _lower(old: Any, new: Any) -> bool:
    """Tell whether a quantity decreased (values that are not quantities never count)."""
    try:
        return parse_quantity(new) < parse_quantity(old)
    except QuantityError:
        return False


def _cuts(before: dict[Any, Any], after: dict[Any, Any], missing: Any) -> list[tuple[Any, Any, Any]]:
    """Return (what, old, new) for every value that decreased; `missing` stands for a value gone."""
    out = []
    for what, was in before.items():
        now = after.get(what, missing)
        if now is not None and _lower(was, now):
            out.append((what, was, now))
    return out


def _queue_cut(key: ObjectKey, old: dict[str, Any], new: dict[str, Any]) -> Disruption | None:
    """Return the quota cut of a ClusterQueue (a flavor entry gone counts as 0)."""
    cuts = _cuts(nominal_quotas(old), nominal_quotas(new), "0")
    if not cuts:
        return None
    parts = [f"{resource} on pool {flavor} {was} -> {now}" for (flavor, resource), was, now in cuts]
    return Disruption(key.scope, "quota-cut", key.name, f"quota cut for tenant {key.name} ({key.label()}): {', '.join(parts)}")


def _hard_cut(key: ObjectKey, old: Side, new: Side) -> Disruption | None:
    """Return the cut of a ResourceQuota's hard limits (a limit gone lifts it: not a cut)."""
    before = _mapping(_dig(old[key].obj, "spec", "hard"))
    cuts = _cuts(before, _mapping(_dig(new[key].obj, "spec", "hard")), None)
    if not cuts:
        return None
    parts = [f"{resource} {was} -> {now}" for resource, was, now in cuts]
    where = _namespace_text(key.scope, key.namespace, new, old)
    return Disruption(key.scope, "quota-cut", key.label(), f"quota cut in {where} ({key.label()}): {', '.join(parts)}")


def quota_cuts(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every ClusterQueue or ResourceQuota whose quota decreases."""
    for key in _with(changes, "changed"):
        found = None
        if _is(key, KUEUE, "ClusterQueue"):
            found = _queue_cut(key, old[key].obj, new[key].obj)
        elif _is(key, "", "ResourceQuota"):
            found = _hard_cut(key, old, new)
        if found is not None:
            yield found


def priorities_lowered(old: Side, new: Side, changes: list[ObjectChange]) -> Iterator[Disruption]:
    """Yield every PriorityClass or WorkloadPriorityClass whose value decreases."""
    for key in _with(changes, "changed"):
        if not (_is(key, "scheduling.k8s.io", "PriorityClass") or _is(key, KUEUE, "WorkloadPriorityClass")):
            continue
        was, now = old[key].obj.get("value"), new[key].obj.get("value")
        if isinstance(was, int) and isinstance(now, int) and now < was:
            message = f"priority {key.name} is lowered ({key.label()}: {was} -> {now}): its workloads may be preempted by others"
            yield Disruption(key.scope, "priority-lowered", key.name, message)


RULES: tuple[Rule, ...] = (mig_layouts, pools_removed, tenants_removed, namespaces_removed, quota_cuts, priorities_lowered)


def find(old: Side, new: Side, changes: list[ObjectChange]) -> list[Disruption]:
    """Return every disruption, the worst kinds first, then by cluster and subject."""
    return [d for rule in RULES for d in sorted(set(rule(old, new, changes)))]
