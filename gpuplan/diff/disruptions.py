"""Changes that hurt running work or loosen isolation, found from the objects alone (so both diff
modes see them), each with a code, a severity and its blast radius (gpuplan/diff/kinds.py).

This module holds the registry and the rules about pools, tenants, namespaces, quotas and
priorities; nodes.py has the rules that reach GPU nodes, security.py those that loosen
isolation. A rule is a function of the diff's Context yielding Disruptions.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from gpuplan.diff import admission, nodes, scheduling, security
from gpuplan.diff.blast import Facts
from gpuplan.diff.kinds import Blast, Context, Disruption, Rule, dig, is_kind, listing, mapping
from gpuplan.diff.objects import ObjectChange, ObjectKey, Side
from gpuplan.emit.meta import SYNC_OPTIONS
from gpuplan.model.quantity import QuantityError, parse_quantity
from gpuplan.plan.pools import POOL_LABEL

KUEUE = "kueue.x-k8s.io"
VOLCANO = "scheduling.volcano.sh"
RESET = nodes.RESET
NOT_GPU = ("cpu", "memory")


# Pools, tenants and namespaces removed


def _pool_of(key: ObjectKey, obj: dict[str, Any]) -> str | None:
    """Return the pool a ResourceFlavor or a Karpenter NodePool stands for."""
    if is_kind(key, KUEUE, "ResourceFlavor"):
        return str(mapping(dig(obj, "spec", "nodeLabels")).get(POOL_LABEL) or key.name)
    labelled = nodes.pool_labels(key, obj) if is_kind(key, nodes.KARPENTER, "NodePool") else []
    return labelled[0][0] if labelled else None


def pools_removed(ctx: Context) -> Iterator[Disruption]:
    """Yield every pool whose ResourceFlavor or Karpenter NodePool is deleted."""
    gone: dict[tuple[str, str], list[ObjectKey]] = {}
    for key in ctx.removed():
        pool = _pool_of(key, ctx.old[key].obj)
        if pool is not None:
            gone.setdefault((key.scope, pool), []).append(key)
    for (scope, pool), keys in sorted(gone.items()):
        what = f"pool {pool} is removed ({', '.join(k.label() for k in keys)} deleted): Kueue admits no more workloads to it"
        if any(k.kind == "NodePool" for k in keys):
            what += "; Karpenter drains and deletes the nodes of its NodePool"
        yield Disruption(scope, "pool-removed", pool, what, ctx.facts.pool(scope, pool))


def tenants_removed(ctx: Context) -> Iterator[Disruption]:
    """Yield every tenant whose ClusterQueue (or Volcano Queue, or KAI leaf Queue) is deleted."""
    gone: dict[tuple[str, str], list[ObjectKey]] = {}
    for key in ctx.removed():
        if (
            is_kind(key, KUEUE, "ClusterQueue")
            or is_kind(key, VOLCANO, "Queue")
            or (
                is_kind(key, scheduling.KAI, "Queue")
                and key.name not in scheduling.parents(ctx.old, key.scope)
            )
        ):
            gone.setdefault((key.scope, key.name), []).append(key)
    for (scope, tenant), keys in sorted(gone.items()):
        what = f"tenant {tenant} is removed from the cluster ({', '.join(k.label() for k in keys)} deleted): its queued workloads are no longer admitted"
        gpus = (
            _gpu_total(nominal_quotas(ctx.old[keys[0]].obj))
            if keys[0].kind == "ClusterQueue"
            else None
        )
        text = f"{gpus} GPU units of quota" if gpus else ""
        yield Disruption(scope, "tenant-removed", tenant, what, Blast(None, None, (tenant,), text))


def _gpu_total(quotas: dict[tuple[str, str], Any]) -> int:
    """Return the sum of a queue's GPU-resource quotas (whole units)."""
    return int(
        sum(_value(v) or 0 for (_, resource), v in quotas.items() if resource not in NOT_GPU)
    )


def namespaces_removed(ctx: Context) -> Iterator[Disruption]:
    """Yield every Namespace removed, saying whether Argo CD keeps it."""
    removed = list(ctx.removed())
    for key in removed:
        if not is_kind(key, "", "Namespace"):
            continue
        inside = sum(1 for k in removed if k.scope == key.scope and k.namespace == key.name)
        options = str(
            mapping(dig(ctx.old[key].obj, "metadata", "annotations")).get(SYNC_OPTIONS, "")
        )
        if "Prune=false" in options:
            fate = f"Argo CD keeps the namespace and its data (Prune=false), but deletes the {inside} gpuplan objects in it (quotas, queues, policies)"
        else:
            fate = "Argo CD prunes the namespace and everything in it"
        tenant = security.tenant_of(key.scope, key.name, ctx.old)
        message = f"{security.namespace_text(key.scope, key.name, ctx.old)} is removed: {fate}"
        yield Disruption(
            key.scope,
            "namespace-removed",
            key.name,
            message,
            Blast(tenants=(tenant,) if tenant else ()),
        )


# Quotas


def nominal_quotas(obj: dict[str, Any], field: str = "nominalQuota") -> dict[tuple[str, str], Any]:
    """Return a ClusterQueue's nominalQuota (or borrowingLimit, lendingLimit) per (flavor, resource)."""
    out: dict[tuple[str, str], Any] = {}
    for group in listing(dig(obj, "spec", "resourceGroups")):
        for flavor in listing(dig(group, "flavors")):
            for resource in listing(dig(flavor, "resources")):
                value = dig(resource, field)
                if value is not None:
                    out[(str(dig(flavor, "name")), str(dig(resource, "name")))] = value
    return out


def _value(value: Any) -> Any:
    """Return a quantity's amount, or None."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _lower(old: Any, new: Any) -> bool:
    """Tell whether a quantity decreased (values that are not quantities never count)."""
    was, now = _value(old), _value(new)
    return was is not None and now is not None and now < was


def _cuts(
    before: dict[Any, Any], after: dict[Any, Any], missing: Any
) -> list[tuple[Any, Any, Any]]:
    """Return (what, old, new) for every value that decreased; `missing` stands for a value gone."""
    out = []
    for what, was in before.items():
        now = after.get(what, missing)
        if now is not None and _lower(was, now):
            out.append((what, was, now))
    return out


def _cohort(obj: dict[str, Any]) -> str | None:
    """Return a ClusterQueue's cohort (cohortName in v1beta2, cohort in v1beta1)."""
    spec = mapping(obj.get("spec"))
    found = spec.get("cohortName") or spec.get("cohort")
    return str(found) if found else None


def _lent(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """Return what a queue lends per (flavor, resource): its lendingLimit, else all its nominal quota."""
    return nominal_quotas(obj) | nominal_quotas(obj, "lendingLimit")


# Per (cluster, cohort), per (flavor, resource): the queues that lend less of it than before, with
# what they lent and lend (made once per diff by _lending: a cut's cause is looked up, not searched).
Lending = dict[tuple[str, str | None], dict[tuple[str, str], list[tuple[ObjectKey, Any, Any]]]]


def _lending(ctx: Context) -> Lending:
    """Return every lending cut of the diff, by cluster and cohort (a queue gone, or moved to
    another cohort, lends nothing to its old one)."""
    out: Lending = {}
    for key, entry in ctx.old.items():
        if not is_kind(key, KUEUE, "ClusterQueue"):
            continue
        cohort = _cohort(entry.obj)
        after = ctx.new.get(key)
        now = _lent(after.obj) if after and _cohort(after.obj) == cohort else {}
        drops = out.setdefault((key.scope, cohort), {})
        for what, was in _lent(entry.obj).items():
            if _lower(was, now.get(what, "0")):
                drops.setdefault(what, []).append((key, was, now.get(what, "0")))
    return out


def _lenders(
    lending: Lending, ctx: Context, key: ObjectKey, flavor: str, resource: str
) -> list[str]:
    """Return the other queues of key's cohort that lend less of (flavor, resource) than before."""
    cohort = _cohort(ctx.old[key].obj)
    drops = lending.get((key.scope, cohort), {}).get((flavor, resource), [])
    return [f"{other.name} lends {was} -> {now}" for other, was, now in drops if other != key]


def _capacity_cut(ctx: Context, scope: str, pool: str) -> str | None:
    """Return `pool P's capacity N -> M` when the pool's Karpenter GPU limit shrank."""
    key = ObjectKey(scope, nodes.KARPENTER, "NodePool", "", pool)
    if key in ctx.old and key in ctx.new:
        was = mapping(dig(ctx.old[key].obj, "spec", "limits")).get("nvidia.com/gpu")
        now = mapping(dig(ctx.new[key].obj, "spec", "limits")).get("nvidia.com/gpu")
        if _lower(was, now):
            return f"pool {pool}'s capacity {was} -> {now} GPUs"
    return None


def _cause(
    lending: Lending, ctx: Context, key: ObjectKey, flavor: str, resource: str, own: bool
) -> str:
    """Return why a queue's quota of (flavor, resource) shrinks: its own, a lender's or capacity."""
    capacity = _capacity_cut(ctx, key.scope, flavor)
    if own and resource in NOT_GPU and _gpus_same(ctx, key, flavor):
        # gpuplan gives a queue the node cpu and memory that go with its GPU units (plan/pools.py
        # cpu_per_unit): with the GPU quota unchanged, the pool's share per unit moved
        return f"cause: pool {flavor}'s {resource} per GPU unit (its GPU quota is the same)"
    if own:
        return f"cause: tenant {key.name}'s own quota" + (f" (with {capacity})" if capacity else "")
    lenders = _lenders(lending, ctx, key, flavor, resource)
    if lenders:
        return f"cause: a lender's change ({'; '.join(lenders)})"
    if capacity:
        return f"cause: a capacity change ({capacity})"
    return f"cause: tenant {key.name}'s own borrowing limit"


def _gpus_same(ctx: Context, key: ObjectKey, flavor: str) -> bool:
    """Tell whether a queue's GPU quotas on a flavor are unchanged (and it has some)."""
    old, new = nominal_quotas(ctx.old[key].obj), nominal_quotas(ctx.new[key].obj)
    gpus = {r for f, r in old.keys() | new.keys() if f == flavor and r not in NOT_GPU}
    return bool(gpus) and all(old.get((flavor, r)) == new.get((flavor, r)) for r in gpus)


Cut = tuple[Disruption, bool, set[str]]  # the finding, whether it is small, its causes
SMALL = Fraction(1, 20)  # a cpu or memory cut under 5% of the value is a trim


def _small(cuts: list[tuple[Any, Any, Any]]) -> bool:
    """Tell whether every cut is of cpu or memory and under SMALL of its old value."""
    for what, was, now in cuts:
        resource = str(what[1] if isinstance(what, tuple) else what).split(".")[-1]
        old, new = _value(was), _value(now)
        if resource not in NOT_GPU or not old or (old - new) / old >= SMALL:
            return False
    return True


def _queue_cuts(lending: Lending, ctx: Context, key: ObjectKey) -> Iterator[Cut]:
    """Yield the quota cut of a ClusterQueue: nominal quota (a flavor gone counts as 0) or borrowing."""
    old, new = ctx.old[key].obj, ctx.new[key].obj
    parts, causes = [], set()
    nominal = _cuts(nominal_quotas(old), nominal_quotas(new), "0")
    for (flavor, resource), was, now in nominal:
        causes.add(cause := _cause(lending, ctx, key, flavor, resource, own=True))
        parts.append(f"{resource} on pool {flavor} {was} -> {now} ({cause})")
    borrowing = _cuts(
        nominal_quotas(old, "borrowingLimit"), nominal_quotas(new, "borrowingLimit"), None
    )
    borrowing = [c for c in borrowing if c[0][1] not in NOT_GPU]
    for (flavor, resource), was, now in borrowing:
        causes.add(cause := _cause(lending, ctx, key, flavor, resource, own=False))
        parts.append(f"may borrow {resource} on pool {flavor} {was} -> {now} ({cause})")
    if parts:
        message = f"quota cut for tenant {key.name} ({key.label()}): {', '.join(parts)}"
        found = Disruption(key.scope, "quota-cut", key.name, message, Blast(tenants=(key.name,)))
        yield found, _small(nominal + borrowing), causes


def _namespace_cause(lending: Lending, ctx: Context, scope: str, tenant: str | None) -> str:
    """Return why a namespace's ResourceQuota shrinks, from its tenant's ClusterQueue."""
    key = ObjectKey(scope, KUEUE, "ClusterQueue", "", tenant or "")
    if tenant is None:
        return "cause: the namespace belongs to no tenant's queue"
    if key not in ctx.old or key not in ctx.new:
        return f"cause: tenant {tenant}'s own quota (in its scheduler's queue)"
    old, new = ctx.old[key].obj, ctx.new[key].obj
    own = _cuts(nominal_quotas(old), nominal_quotas(new), "0")
    if own:
        return "; ".join(
            sorted({_cause(lending, ctx, key, f, r, own=True) for (f, r), _, _ in own})
        )
    for (flavor, resource), _, _ in _cuts(
        nominal_quotas(old, "borrowingLimit"), nominal_quotas(new, "borrowingLimit"), None
    ):
        return _cause(lending, ctx, key, flavor, resource, own=False)
    lenders: list[str] = []
    for flavor, resource in nominal_quotas(old):
        if resource not in NOT_GPU:
            lenders += [
                f"{text} on pool {flavor}" for text in _lenders(lending, ctx, key, flavor, resource)
            ]
    if lenders and _cohort(old):
        return f"cause: a lender's change ({'; '.join(lenders)})"
    return (
        f"cause: a capacity change ({capacity})"
        if (capacity := _any_capacity_cut(ctx, scope, old))
        else f"cause: tenant {tenant}'s queue is unchanged: its namespaces' share of its quota moved"
    )


def _any_capacity_cut(ctx: Context, scope: str, queue: dict[str, Any]) -> str | None:
    """Return the first capacity cut of a pool the queue has quota on."""
    return next(
        (
            c
            for flavor in sorted({f for f, _ in nominal_quotas(queue)})
            if (c := _capacity_cut(ctx, scope, flavor))
        ),
        None,
    )


def _hard_cuts(lending: Lending, ctx: Context, key: ObjectKey) -> Iterator[Cut]:
    """Yield the cut of a ResourceQuota's hard limits (a limit gone lifts it: not a cut)."""
    before = mapping(dig(ctx.old[key].obj, "spec", "hard"))
    cuts = _cuts(before, mapping(dig(ctx.new[key].obj, "spec", "hard")), None)
    if not cuts:
        return
    tenant = security.tenant_of(key.scope, key.namespace, ctx.new, ctx.old)
    cause = _namespace_cause(lending, ctx, key.scope, tenant)
    parts = [f"{resource} {was} -> {now}" for resource, was, now in cuts]
    where = security.namespace_text(key.scope, key.namespace, ctx.new, ctx.old)
    message = f"quota cut in {where} ({key.label()}): {', '.join(parts)} ({cause})"
    blast = Blast(tenants=(tenant,) if tenant else ())
    yield Disruption(key.scope, "quota-cut", key.label(), message, blast), _small(cuts), {cause}


def quota_cuts(ctx: Context) -> Iterator[Disruption]:
    """Yield every ClusterQueue or ResourceQuota whose quota decreases, with its cause; the small
    cpu and memory trims of a cluster in one finding."""
    small: dict[str, list[Cut]] = {}
    lending = _lending(ctx)
    for key in ctx.changed():
        found: Iterator[Cut] = iter(())
        if is_kind(key, KUEUE, "ClusterQueue"):
            found = _queue_cuts(lending, ctx, key)
        elif is_kind(key, "", "ResourceQuota"):
            found = _hard_cuts(lending, ctx, key)
        for cut in found:
            if cut[1]:
                small.setdefault(cut[0].scope, []).append(cut)
            else:
                yield cut[0]
    for scope, cuts in small.items():
        if len(cuts) == 1:
            yield cuts[0][0]
            continue
        objects = sorted(
            c[0].subject if "/" in c[0].subject else f"ClusterQueue/{c[0].subject}" for c in cuts
        )
        causes = sorted({part for c in cuts for cause in c[2] for part in cause.split("; ")})
        tenants = tuple(sorted({t for c in cuts for t in c[0].blast.tenants}))
        message = f"{len(cuts)} small cpu or memory quota cuts (each under {float(SMALL):.0%}) in {', '.join(objects)}: {'; '.join(causes)}"
        yield Disruption(
            scope, "quota-cut", "cpu and memory trims", message, Blast(tenants=tenants)
        )


# Changes that let a tenant take from others (kubernetes-sigs/kueue v0.19.2
# apis/kueue/v1beta2/clusterqueue_types.go ClusterQueuePreemption, BorrowWithinCohort and
# borrowingLimit; fairsharing_types.go FairSharing.weight): each policy from the most to the
# least restrained, the default first.
PREEMPTION = {
    "reclaimWithinCohort": ("Never", "LowerPriority", "Any"),
    "borrowWithinCohort": ("Never", "LowerPriority"),
    "withinClusterQueue": ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
}


def _policy(obj: dict[str, Any], name: str) -> str:
    """Return a ClusterQueue's preemption policy (borrowWithinCohort's `policy`), or its default."""
    value = dig(obj, "spec", "preemption", name)
    value = dig(value, "policy") if name == "borrowWithinCohort" else value
    return str(value or "Never")


def _weight(obj: dict[str, Any]) -> str:
    """Return a queue's fair-sharing weight (Kueue's fairSharing, Volcano's weight; 1 when unset)."""
    spec = mapping(obj.get("spec"))
    return str(dig(spec, "fairSharing", "weight") or spec.get("weight") or "1")


def _raised(old: Any, new: Any) -> bool:
    """Tell whether a quantity grew."""
    was, now = _value(old), _value(new)
    return was is not None and now is not None and now > was


def _cohort_others(ctx: Context, key: ObjectKey, cohort: str | None) -> tuple[str, ...]:
    """Return the other ClusterQueues (tenants) of a cohort, as they are."""
    return tuple(
        sorted(
            k.name
            for k, e in ctx.new.items()
            if k.scope == key.scope
            and k != key
            and is_kind(k, KUEUE, "ClusterQueue")
            and cohort
            and _cohort(e.obj) == cohort
        )
    )


def _queue_takes(ctx: Context, key: ObjectKey) -> Iterator[Disruption]:
    """Yield what a ClusterQueue change lets its tenant take from the cohort's other tenants."""
    old, new = ctx.old[key].obj, ctx.new[key].obj
    cohort = _cohort(new)
    others = _cohort_others(ctx, key, cohort)
    parts: list[str] = []
    own: list[str] = []
    for name, order in PREEMPTION.items():
        was, now = _policy(old, name), _policy(new, name)
        if was in order and now in order and order.index(now) > order.index(was):
            (own if name == "withinClusterQueue" else parts).append(
                f"preemption {name} {was} -> {now}"
            )
    if _raised(_weight(old), _weight(new)):
        parts.append(f"fair-sharing weight {_weight(old)} -> {_weight(new)}")
    limits_old = nominal_quotas(old, "borrowingLimit")
    limits_new = nominal_quotas(new, "borrowingLimit")
    for (flavor, resource), was in sorted(limits_old.items()):
        limit = limits_new.get((flavor, resource))
        if (flavor, resource) not in nominal_quotas(new):
            continue  # the quota is gone: a cut, not more borrowing
        if resource not in NOT_GPU and (limit is None or _raised(was, limit)):
            parts.append(f"may borrow {resource} on pool {flavor} {was} -> {limit or 'unlimited'}")
    if parts and others:
        message = f"tenant {key.name} ({key.label()}) can take more from the other tenants of cohort {cohort}: {', '.join(parts)}"
        yield Disruption(key.scope, "takes-from-tenants", key.name, message, Blast(tenants=others))
    if own:
        message = f"tenant {key.name} ({key.label()}) preempts more of its own workloads: {', '.join(own)}"
        yield Disruption(
            key.scope, "takes-from-tenants", key.name, message, Blast(tenants=(key.name,))
        )


def _local_takes(ctx: Context, key: ObjectKey) -> Iterator[Disruption]:
    """Yield a LocalQueue whose fair-sharing weight grows: it takes from the other LocalQueues of its ClusterQueue."""
    old, new = ctx.old[key].obj, ctx.new[key].obj
    if not _raised(_weight(old), _weight(new)):
        return
    queue = dig(new, "spec", "clusterQueue")
    others = sorted(
        f"{k.namespace}/{k.name}"
        for k, e in ctx.new.items()
        if k.scope == key.scope
        and k != key
        and is_kind(k, KUEUE, "LocalQueue")
        and dig(e.obj, "spec", "clusterQueue") == queue
    )
    if not others:
        return
    was, now = _value(_weight(old)), _value(_weight(new))
    times = f" ({float(now / was):g}x)" if was else ""
    message = f"LocalQueue {key.namespace}/{key.name} of tenant {queue}: fair-sharing weight {_weight(old)} -> {_weight(new)}{times}: admission fair sharing now favours it over {', '.join(others)}"
    yield Disruption(
        key.scope,
        "takes-from-tenants",
        f"{key.namespace}/{key.name}",
        message,
        Blast(tenants=(str(queue),)),
    )


def takes_from_tenants(ctx: Context) -> Iterator[Disruption]:
    """Yield every queue change that lets a tenant take from others: preemption, weights, borrowing."""
    for key in ctx.changed():
        if is_kind(key, KUEUE, "ClusterQueue"):
            yield from _queue_takes(ctx, key)
        elif is_kind(key, KUEUE, "LocalQueue"):
            yield from _local_takes(ctx, key)
        elif is_kind(key, VOLCANO, "Queue"):
            yield from _volcano_takes(ctx, key)


def _volcano_takes(ctx: Context, key: ObjectKey) -> Iterator[Disruption]:
    """Yield a Volcano Queue whose weight grows: the proportion plugin gives it more of the cluster
    and reclaims from the other Queues over their share (volcano-sh/volcano v1.15.1
    pkg/scheduler/plugins/proportion/proportion.go: deserved = remaining * weight / total weight)."""
    was, now = _weight(ctx.old[key].obj), _weight(ctx.new[key].obj)
    if not _raised(was, now):
        return
    others = tuple(
        sorted(
            k.name
            for k in ctx.new
            if k.scope == key.scope
            and k != key
            and is_kind(k, VOLCANO, "Queue")
            and k.name not in ("default", "root")
        )
    )
    if others:
        message = f"Volcano Queue {key.name} weight {was} -> {now}: its deserved share of the cluster grows at the expense of the other Queues"
        yield Disruption(
            key.scope, "takes-from-tenants", key.label(), message, Blast(tenants=others)
        )


# Priorities


def priority_changes(ctx: Context) -> Iterator[Disruption]:
    """Yield every PriorityClass or WorkloadPriorityClass whose value changes."""
    for key in ctx.changed():
        if not (
            is_kind(key, "scheduling.k8s.io", "PriorityClass")
            or is_kind(key, KUEUE, "WorkloadPriorityClass")
        ):
            continue
        was, now = ctx.old[key].obj.get("value"), ctx.new[key].obj.get("value")
        if not (isinstance(was, int) and isinstance(now, int)) or was == now:
            continue
        if now < was:
            message = f"priority {key.name} is lowered ({key.label()}: {was} -> {now}): its workloads may be preempted by others"
            yield Disruption(key.scope, "priority-lowered", key.name, message)
        else:
            tenants = tuple(
                sorted(
                    k.name
                    for k in ctx.new
                    if k.scope == key.scope and is_kind(k, KUEUE, "ClusterQueue")
                )
            )
            message = f"priority {key.name} is raised ({key.label()}: {was} -> {now}): its workloads may preempt lower-priority workloads of the tenants of the cluster's queues"
            yield Disruption(
                key.scope, "priority-raised", key.name, message, Blast(tenants=tenants)
            )


RULES: tuple[Rule, ...] = (
    nodes.mig_relayouts,
    nodes.driver_upgrades,
    nodes.nvidia_driver_upgrades,
    nodes.preinstalled_stacks,
    nodes.nodes_replaced,
    nodes.node_classes_changed,
    pools_removed,
    tenants_removed,
    namespaces_removed,
    quota_cuts,
    takes_from_tenants,
    scheduling.kai_queues,
    scheduling.topologies,
    priority_changes,
    nodes.operators_removed,
    nodes.gpu_operator_upgrades,
    nodes.chart_upgrades,
    nodes.crd_changes,
    security.psa_loosened,
    security.rbac_widened,
    security.isolation_off,
    security.ceilings_raised,
    scheduling.dra_objects,
    admission.admission_changes,
)


def find(
    old: Side, new: Side, changes: list[ObjectChange], facts: Facts | None = None
) -> list[Disruption]:
    """Return every disruption, disruptive codes first, then by rule, cluster and subject."""
    ctx = Context(old, new, changes, facts if facts is not None else Facts({}))
    found = [d for rule in RULES for d in sorted(set(rule(ctx)))]
    return sorted(found, key=lambda d: d.severity != "disruptive")  # stable: rule order kept
