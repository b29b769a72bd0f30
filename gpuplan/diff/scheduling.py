"""Changes to how GPUs are handed out beyond Kueue's queues: KAI Scheduler's Queue trees,
topology-aware scheduling's Topologies, and Dynamic Resource Allocation's classes and templates.

- A KAI Queue (scheduling.run.ai, emit/kai.py) holds spec.parentQueue and spec.resources.{gpu,cpu,
  memory}.{quota, limit, overQuotaWeight}, numbers where -1 is unlimited (kai-scheduler/KAI-Scheduler
  v0.17.0 deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml). A lower quota or limit is a
  `quota-cut`: KAI reclaims what runs over it. Everything else that moves (a raise, a weight, a new
  parent) is `kai-queue-changed`, named per queue, since it shifts who gets the idle GPUs.
- A Topology's levels cannot change in place, nor can the spec of a ResourceFlavor that names one:
  Kueue's CRDs have `self == oldSelf` on spec.levels (kubernetes-sigs/kueue config/components/crd/
  bases/kueue.x-k8s.io_topologies.yaml at every supported tag; the flavor's rules are cited at
  _flavors_pinned) and KAI's "nodeLabel structure is immutable" (kai.scheduler_topologies.yaml at
  v0.17.0). So a change or a removal is `topology-changed`: Argo CD's apply is refused until the
  object is deleted and created again, and meanwhile workloads asking for topology-aware placement
  on the pool stay pending.
- DeviceClasses and ResourceClaimTemplates (resource.k8s.io, any version) are named by kind as
  `dra-changed`. A ResourceClaimTemplate's spec is immutable (kubernetes/kubernetes
  pkg/apis/resource/validation/validation.go, ValidateResourceClaimTemplateUpdate), so it too has to
  be deleted and created again; a DeviceClass changes in place and applies to claims allocated later.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpuplan.diff.kinds import Blast, Context, Disruption, dig, is_kind, listing, mapping
from gpuplan.diff.objects import ObjectChange, ObjectKey, Side
from gpuplan.diff.security import tenant_of

KAI = "scheduling.run.ai"
KAI_TOPOLOGY = "kai.scheduler"
KUEUE = "kueue.x-k8s.io"
DRA = "resource.k8s.io"
DRA_KINDS = ("DeviceClass", "ResourceClaimTemplate")
RESOURCES = ("gpu", "cpu", "memory")
FIELDS = ("quota", "limit", "overQuotaWeight")
UNLIMITED = -1


def _figure(value: Any) -> float | None:
    """Return a KAI figure as a number, unlimited (-1) as infinity; None when not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float("inf") if value == UNLIMITED else float(value)


def _shown(value: Any) -> str:
    """Return a KAI figure in words: `unlimited` for -1, else the number."""
    return "unlimited" if value == UNLIMITED else "none" if value is None else str(value)


def _figures(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """Return a KAI Queue's figures per (resource, field)."""
    resources = mapping(dig(obj, "spec", "resources"))
    return {
        (r, f): dig(resources, r, f)
        for r in RESOURCES
        for f in FIELDS
        if dig(resources, r, f) is not None
    }


def parents(side: Side, scope: str) -> set[str]:
    """Return the KAI Queues of a cluster that other Queues hang under."""
    return {
        str(dig(e.obj, "spec", "parentQueue"))
        for k, e in side.items()
        if k.scope == scope and is_kind(k, KAI, "Queue") and dig(e.obj, "spec", "parentQueue")
    }


def _queue_blast(ctx: Context, key: ObjectKey) -> Blast:
    """Return who a Queue change reaches: the tenant of a leaf, the tenants under a parent."""
    children = sorted(
        k.name
        for side in (ctx.old, ctx.new)
        for k, e in side.items()
        if k.scope == key.scope
        and is_kind(k, KAI, "Queue")
        and dig(e.obj, "spec", "parentQueue") == key.name
    )
    return Blast(tenants=tuple(dict.fromkeys(children)) or (key.name,))


def _queue_changes(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Return (cuts, other changes) of one KAI Queue, each as `gpu quota 8 -> 4`.

    A weight that moves alike for every resource is said once (`overQuotaWeight 3 -> 4`).
    """
    cuts, others = [], []
    was, now = _figures(old), _figures(new)
    moved = sorted(
        (k for k in set(was) | set(now) if was.get(k) != now.get(k)),
        key=lambda k: (RESOURCES.index(k[0]), FIELDS.index(k[1])),
    )
    weights = {(was.get(k), now.get(k)) for k in moved if k[1] == "overQuotaWeight"}
    alike = len(weights) == 1 and all((r, "overQuotaWeight") in moved for r in RESOURCES)
    for resource, field in moved:
        before, after = was.get((resource, field)), now.get((resource, field))
        if field == "overQuotaWeight" and alike:
            continue
        text = f"{resource} {field} {_shown(before)} -> {_shown(after)}"
        was_n, now_n = _figure(before), _figure(after)
        if field != "overQuotaWeight" and was_n is not None and now_n is not None and now_n < was_n:
            cuts.append(text)
        else:
            others.append(text)
    if alike:
        before, after = weights.pop()
        others.append(f"overQuotaWeight {_shown(before)} -> {_shown(after)}")
    parent = dig(old, "spec", "parentQueue"), dig(new, "spec", "parentQueue")
    if parent[0] != parent[1]:
        others.insert(0, f"parent {parent[0] or '(none)'} -> {parent[1] or '(none)'}")
    return cuts, others


def kai_queues(ctx: Context) -> Iterator[Disruption]:
    """Yield the cut and the other changes of every KAI Queue, and parent Queues removed."""
    for key in ctx.changed():
        if not is_kind(key, KAI, "Queue"):
            continue
        cuts, others = _queue_changes(ctx.old[key].obj, ctx.new[key].obj)
        role = "parent Queue" if key.name in parents(ctx.new, key.scope) else "Queue"
        blast = _queue_blast(ctx, key)
        if cuts:
            message = f"quota cut for KAI {role} {key.name}: {', '.join(cuts)}: KAI may reclaim what its workloads use beyond the new figures, preempting them"
            yield Disruption(key.scope, "quota-cut", key.name, message, blast)
        if others:
            message = f"KAI {role} {key.name}: {', '.join(others)}: the share of idle GPUs each queue gets changes"
            yield Disruption(key.scope, "kai-queue-changed", key.name, message, blast)
    for key in ctx.removed():
        if is_kind(key, KAI, "Queue") and key.name in parents(ctx.old, key.scope):
            message = f"KAI parent Queue {key.name} is removed: KAI refuses to delete a Queue that still has children, so its leaves must go or move first"
            yield Disruption(
                key.scope, "kai-queue-changed", key.name, message, _queue_blast(ctx, key)
            )


def _is_topology(key: ObjectKey) -> bool:
    return is_kind(key, KUEUE, "Topology") or is_kind(key, KAI_TOPOLOGY, "Topology")


def _levels(obj: dict[str, Any]) -> str:
    """Return a Topology's levels as `a > b > c`, coarsest first."""
    labels = [str(dig(level, "nodeLabel")) for level in listing(dig(obj, "spec", "levels"))]
    return " > ".join(labels) or "(none)"


def topologies(ctx: Context) -> Iterator[Disruption]:
    """Yield every Topology whose levels change in place (immutable) or that is removed."""
    owner = {KUEUE: "Kueue", KAI_TOPOLOGY: "KAI"}
    for key in ctx.changed():
        if not _is_topology(key):
            continue
        was, now = _levels(ctx.old[key].obj), _levels(ctx.new[key].obj)
        if was == now:
            continue
        message = (
            f"{owner[key.group]} Topology {key.name} levels {was} -> {now}: the levels are immutable, so Argo CD's sync "
            "fails until the Topology is deleted and created again (delete it, or sync with Replace=true); "
            "meanwhile workloads asking for topology-aware placement on the pool stay pending"
        )
        yield _on_pool(ctx, key, message)
    yield from _flavors_pinned(ctx)
    for key in ctx.removed():
        if _is_topology(key):
            message = (
                f"{owner[key.group]} Topology {key.name} ({_levels(ctx.old[key].obj)}) is removed: "
                "workloads that ask for topology-aware placement on the pool can no longer be placed"
            )
            yield _on_pool(ctx, key, message)


def _flavors_pinned(ctx: Context) -> Iterator[Disruption]:
    """Yield every ResourceFlavor with a topologyName whose spec changes: Kueue keeps it immutable.

    kubernetes-sigs/kueue kueue.x-k8s.io_resourceflavors.yaml: "resourceFlavorSpec are immutable when
    topologyName is set" up to v0.18; nodeLabels, tolerations and topologyName each immutable on
    v0.19.2 (gpuplan's flavors hold only those three fields, emit/kueue.py).
    """
    for key in ctx.changed():
        if not is_kind(key, KUEUE, "ResourceFlavor"):
            continue
        old, new = mapping(ctx.old[key].obj.get("spec")), mapping(ctx.new[key].obj.get("spec"))
        if "topologyName" not in old or old == new:
            continue
        fields = ", ".join(f for f in sorted(set(old) | set(new)) if old.get(f) != new.get(f))
        message = (
            f"ResourceFlavor {key.name} names Topology {old['topologyName']}, which makes its spec immutable, and {fields} "
            "changes: Argo CD's sync fails until the flavor is deleted and created again, and meanwhile the ClusterQueues "
            "that use it admit nothing new on the pool"
        )
        yield _on_pool(ctx, key, message)


def _on_pool(ctx: Context, key: ObjectKey, message: str) -> Disruption:
    """Return a topology-changed finding about an object named after its pool, reaching the pool's nodes."""
    return Disruption(
        key.scope, "topology-changed", key.name, message, ctx.facts.pool(key.scope, key.name)
    )


def _dra_fate(key: ObjectKey, status: str) -> str:
    """Return what a change to a DeviceClass or a ResourceClaimTemplate does."""
    if key.kind == "DeviceClass":
        if status == "removed":
            return "claims that name it can no longer be allocated: their pods stay pending"
        return "claims allocated from now on follow the new class; claims already allocated keep their devices"
    if status == "removed":
        return "pods that refer to it can no longer be created"
    return (
        "its spec is immutable, so Argo CD's sync fails until it is deleted and created again "
        "(or synced with Replace=true); pods created before keep the claims they got"
    )


def _fields(change: ObjectChange) -> str:
    """Return the top fields that really change (`spec.selectors, spec.config`), renamed references left out."""
    tops = (".".join(re.split(r"[.\[]", f.path)[:2]) for f in change.fields if not f.reference)
    return ", ".join(dict.fromkeys(tops))


def dra_objects(ctx: Context) -> Iterator[Disruption]:
    """Yield every DeviceClass and ResourceClaimTemplate that changes or is removed."""
    for change in ctx.changes:
        key = change.key
        if key.group != DRA or key.kind not in DRA_KINDS or change.status == "added":
            continue
        status = "removed" if change.status == "removed" else "changed"
        fields = _fields(change) if status == "changed" else ""
        if status == "changed" and not fields:
            continue  # a rename alone (named under `renamed`)
        what = f"{key.label()} is {status}" + (f" ({fields})" if fields else "")
        tenant = tenant_of(key.scope, key.namespace, ctx.new, ctx.old) if key.namespace else None
        blast = Blast(tenants=(tenant,) if tenant else ())
        yield Disruption(
            key.scope, "dra-changed", key.label(), f"{what}: {_dra_fate(key, status)}", blast
        )
