"""From two sides to a diff's findings: renames paired, object changes, disruptions, MIG layouts."""

from __future__ import annotations

from gpuplan.diff import upgrade
from gpuplan.diff.blast import Facts, from_objects, merged
from gpuplan.diff.disruptions import find
from gpuplan.diff.kinds import SEVERITIES, Blast, Context, Disruption
from gpuplan.diff.nodes import KARPENTER, mig_changes
from gpuplan.diff.objects import FieldChange, ObjectChange, ObjectKey, Side, compare, field_changes
from gpuplan.diff.renames import Aligned, Rename, aligned_side, substitute
from gpuplan.diff.result import CapacityChange, DiffResult
from gpuplan.emit.meta import SYNC_OPTIONS


def analyse(
    old_label: str,
    new_label: str,
    old: Side,
    new: Side,
    capacity: list[CapacityChange],
    facts: Facts | None = None,
    bumped: upgrade.Bumped = upgrade.NONE,
) -> DiffResult:
    """Return the diff of two sides: renames, object changes, disruptions, MIG layouts, capacity
    and upgrade plans (`bumped`: what the objects cannot tell, and upstream's stops and notes)."""
    facts = facts if facts is not None else merged(from_objects(old), from_objects(new))
    aligned = aligned_side(old, new)
    changes = _changes(old, new, aligned)
    ctx = Context(aligned.side, new, changes, facts)
    plans = upgrade.plans(ctx, bumped)
    disruptions = find(aligned.side, new, changes, facts) + list(
        _rename_disruptions(aligned, facts)
    )
    disruptions += upgrade.findings(plans)
    disruptions.sort(key=lambda d: SEVERITIES.index(d.severity))
    result = DiffResult(
        old_label, new_label, changes, disruptions, capacity, aligned.renames, mig_changes(ctx)
    )
    result.upgrades = plans
    return result


def _changes(old: Side, new: Side, aligned: Aligned) -> list[ObjectChange]:
    """Return the object changes, renamed objects as such and reference-only fields marked."""
    changes = {c.key: c for c in compare(aligned.side, new)}
    for target, source in aligned.rekeyed.items():
        found = changes.get(target) or ObjectChange(
            target, "changed", str(new[target].obj.get("apiVersion", "")), new[target].path
        )
        found.status, found.renamed_from = "renamed", source
        changes[target] = found
    for key, entry in aligned.side.items():
        original = old.get(aligned.rekeyed.get(key, key))
        if original is None or original.obj == entry.obj or key not in new:
            continue
        references = [
            FieldChange(f.path, f.old, f.new, reference=True)
            for f in field_changes(original.obj, entry.obj)
        ]
        found = changes.get(key) or ObjectChange(
            key, "changed", str(new[key].obj.get("apiVersion", "")), new[key].path
        )
        found.fields = references + found.fields
        changes[key] = found
    for key, change in changes.items():  # which inputs to look at: the new side's, else the old's
        behind = new.get(key) or aligned.side.get(key)
        change.sources = behind.sources if behind is not None else ()
    names: dict[str, dict[str, str]] = {}
    for rename in aligned.renames:
        names.setdefault(rename.scope, {})[rename.old] = rename.new
    for change in changes.values():  # fields inside embedded documents (a CNI config) follow too
        if change.key.scope in names:
            change.fields = [_as_reference(f, names[change.key.scope]) for f in change.fields]
    return [
        changes[k]
        for k in sorted(changes, key=lambda k: (k.scope, k.kind, k.namespace, k.name, k.group))
    ]


def _as_reference(item: FieldChange, names: dict[str, str]) -> FieldChange:
    """Return a field change marked as a reference when the rename alone explains it."""
    if (
        item.reference
        or not isinstance(item.old, str)
        or item.old == item.new
        or substitute(item.old, names) != item.new
    ):
        return item
    return FieldChange(item.path, item.old, item.new, reference=True)


def _rename_disruptions(aligned: Aligned, facts: Facts) -> list[Disruption]:
    """Return one `renamed` finding per rename, and `nodes-replaced` for a renamed Karpenter NodePool."""
    out = []
    for rename in aligned.renames:
        out.append(
            Disruption(
                rename.scope,
                "renamed",
                f"{rename.entity} {rename.old}",
                _rename_text(rename),
                _rename_blast(rename, facts),
            )
        )
        for before, after in rename.objects:
            if before.group == "" and before.kind == "Namespace":
                out.append(_namespace_renamed(aligned, rename, before, after))
            if before.group == KARPENTER and before.kind == "NodePool":
                # NodeClaims carry an ownerReference to their NodePool (kubernetes-sigs/karpenter
                # v1.14.1 pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go), so the
                # garbage collector deletes them with it and Karpenter terminates their nodes.
                message = f"pool {rename.old} -> {rename.new}: Karpenter NodePool {before.name} is deleted and {after.name} created; Karpenter deletes the old NodePool's NodeClaims (they are its owned objects), draining and terminating its nodes, and launches new ones"
                out.append(
                    Disruption(
                        rename.scope,
                        "nodes-replaced",
                        rename.new,
                        message,
                        facts.pool(rename.scope, rename.old),
                    )
                )
    return out


def _namespace_renamed(
    aligned: Aligned, rename: Rename, before: ObjectKey, after: ObjectKey
) -> Disruption:
    """Return the finding for a renamed Namespace: Kubernetes deletes the old one (or Argo CD keeps it)."""
    options = str(
        aligned.side[after].obj.get("metadata", {}).get("annotations", {}).get(SYNC_OPTIONS, "")
    )
    inside = sum(1 for old, _ in rename.objects if old.namespace == before.name)
    if "Prune=false" in options:
        fate = f"Argo CD keeps namespace {before.name} and the workloads in it (Prune=false) but deletes its {inside} gpuplan objects (quotas, queues, policies): move the workloads to {after.name}"
    else:
        fate = f"Argo CD prunes namespace {before.name} and everything in it"
    message = f"namespace {before.name} is renamed to {after.name} with {rename.entity} {rename.old}: {fate}"
    tenants = (rename.old,) if rename.entity == "tenant" else ()
    return Disruption(
        rename.scope, "namespace-removed", before.name, message, Blast(tenants=tenants)
    )


def _rename_text(rename: Rename) -> str:
    """Return what a rename does: Kubernetes deletes the old objects and creates the new ones."""
    count = len(rename.objects)
    return f"{rename.entity} {rename.old} is renamed to {rename.new} ({count} object{'' if count == 1 else 's'} renamed): Kubernetes has no rename, Argo CD deletes the old objects and creates the new ones"


def _rename_blast(rename: Rename, facts: Facts) -> Blast:
    """Return who a rename reaches: the pool's nodes, or the tenant."""
    if rename.entity == "pool":
        return facts.pool(rename.scope, rename.old)
    return Blast(tenants=(rename.old,)) if rename.entity == "tenant" else Blast()


__all__ = ["ObjectKey", "analyse"]
