"""A diff's result and its three forms: text (terminals, CI logs), json (tools), markdown (PR comments).

Text and json are complete. The markdown (markdown.py) is a pull-request comment: bounded, and
it says what it left out, never a disruption.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuplan.diff.kinds import DISRUPTIVE, ERROR, RISK, Disruption
from gpuplan.diff.objects import ABSENT, FLEET, FieldChange, ObjectChange

if TYPE_CHECKING:
    from gpuplan.diff.nodes import MigChange
    from gpuplan.diff.renames import Rename
    from gpuplan.diff.upgrade import Plan

WORKING_TREE = "the working tree"
ARROW = " -> "
SIGNS = {"added": "+", "removed": "-", "changed": "~", "renamed": ">"}
STATUSES = ("changed", "added", "removed", "renamed")


@dataclass(frozen=True, order=True)
class CapacityChange:
    """A pool's capacity of one resource (tenant "") or a tenant's nominal quota, before and after."""

    scope: str
    pool: str
    resource: str
    tenant: str
    old: str | None
    new: str | None


@dataclass
class DiffResult:
    """Everything a diff found."""

    old_label: str
    new_label: str
    changes: list[ObjectChange] = field(default_factory=list)
    disruptions: list[Disruption] = field(default_factory=list)
    capacity: list[CapacityChange] = field(default_factory=list)
    renames: list[Rename] = field(default_factory=list)
    mig: list[MigChange] = field(default_factory=list)
    upgrades: list[Plan] = field(default_factory=list)
    marker: str = ""  # the sticky-comment marker (markdown only)

    def count(self, status: str) -> int:
        """Return how many objects have this status."""
        return sum(1 for c in self.changes if c.status == status)

    def scopes(self) -> list[str]:
        """Return the clusters (and fleet-level folder) with changes, sorted."""
        return sorted({c.key.scope for c in self.changes})

    def severe(self, severity: str) -> list[Disruption]:
        """Return the findings of one severity."""
        return [d for d in self.disruptions if d.severity == severity]

    def counts(self) -> list[tuple[str, str, Counter[str]]]:
        """Return (cluster, kind, how many objects per status), by cluster and kind."""
        table: dict[tuple[str, str], Counter[str]] = {}
        for change in self.changes:
            table.setdefault((change.key.scope, change.key.kind), Counter())[change.status] += 1
        return [(scope, kind, counter) for (scope, kind), counter in sorted(table.items())]


def summary(result: DiffResult) -> str:
    """Return `3 objects changed, 1 added, 0 removed in 2 clusters; 2 disruptive, 1 risk`."""
    if not result.changes and not result.disruptions:
        return "no changes"
    changed = result.count("changed")
    text = f"{changed} {'object' if changed == 1 else 'objects'} changed, {result.count('added')} added, {result.count('removed')} removed"
    if result.count("renamed"):
        text += f", {result.count('renamed')} renamed"
    clusters = [s for s in result.scopes() if s not in ("", FLEET)]
    if clusters:
        text += f" in {len(clusters)} {'cluster' if len(clusters) == 1 else 'clusters'}"
    if FLEET in result.scopes():
        text += f" {'and' if clusters else 'in'} {FLEET}"
    severe, risks = len(result.severe(DISRUPTIVE)), len(result.severe(RISK))
    errors = len(result.severe(ERROR))
    if errors:
        text += f"; {errors} {'error' if errors == 1 else 'errors'}"
    if severe or risks:
        text += f"{',' if errors else ';'} {severe} disruptive, {risks} {'risk' if risks == 1 else 'risks'}"
    return text


def show(value: Any, limit: int = 0, start: int = 0) -> str:
    """Return a value on one line as JSON (strings quoted), cut to `limit` characters if set,
    from `start` on (an elided head shown as `…`)."""
    text = "(absent)" if value is ABSENT else json.dumps(value, ensure_ascii=False, default=str)
    if not limit or len(text) <= limit:
        return text
    start = min(start, max(len(text) - limit + 1, 0))
    head = "…" if start else ""
    room = limit - len(head)
    tail = "…" if start + room < len(text) else ""
    return head + text[start : start + room - len(tail)] + tail


def _first_difference(old: str, new: str) -> int:
    """Return where two texts first differ, with some context before it."""
    same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    if same is None:
        same = min(len(old), len(new))
    return max(same - 20, 0)


def field_line(change: FieldChange, limit: int = 0) -> str:
    """Return `path: old -> new` (with `(rename)` for a reference that only follows a rename);
    values cut to `limit` keep the part where they differ."""
    start = _first_difference(show(change.old), show(change.new)) if limit else 0
    old, new = show(change.old, limit, start), show(change.new, limit, start)
    return f"{change.path}: {old}{ARROW}{new}" + (" (rename)" if change.reference else "")


def who(change: ObjectChange) -> str:
    """Return `cluster Kind/name` (the cluster left out when unknown)."""
    return f"{change.key.scope} {change.key.label()}" if change.key.scope else change.key.label()


def finding_line(item: Disruption) -> str:
    """Return one finding on one line: `[code] cluster: message (blast radius)`."""
    where = f"{item.scope}: " if item.scope else ""
    reach = item.blast.describe()
    return f"[{item.code}] {where}{item.message}" + (f" (reaches {reach})" if reach else "")


# text


def plan_lines(plan: Plan) -> list[str]:
    """Return an upgrade plan as text: `= cluster component old -> new`, then one line per step in order."""
    lines = [
        f"= {plan.scope}: upgrade {plan.title}"
        + (f" (reaches {plan.blast.describe()})" if plan.blast.describe() else "")
    ]
    if plan.identical:
        lines[0] += ": CRDs and chart defaults identical"
    steps = [f"stop at {s.version} first: {s.why} [{s.source}]" for s in plan.stops]
    for hop in plan.hops:
        where = f"{hop.old} -> {hop.new}: " if len(plan.hops) > 1 else ""
        for step in hop.steps:
            mark = "(act) " if step.action else ""
            steps.append(
                f"{mark}{where}{step.kind}: {step.text}"
                + (f" [{step.source}]" if step.source else "")
            )
    return lines + [f"  {n}. {s}" for n, s in enumerate(steps, 1)]


def as_text(result: DiffResult) -> str:
    """Return one line per changed field, added, removed or renamed object, then findings and the summary."""
    lines = []
    for change in result.changes:
        if change.status == "renamed":
            assert change.renamed_from is not None
            lines.append(f"> {who(change)} (renamed from {change.renamed_from.label()})")
            lines.extend(f"~ {who(change)} {field_line(f)}" for f in change.real_fields)
        elif change.status != "changed" or not change.fields:
            lines.append(f"{SIGNS[change.status]} {who(change)}")
        else:
            lines.extend(f"~ {who(change)} {field_line(f)}" for f in change.fields)
    lines += [f"! {finding_line(d)}" for d in result.disruptions]
    lines += [line for plan in result.upgrades for line in plan_lines(plan)]
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


# json


def _change_json(change: ObjectChange) -> dict[str, Any]:
    """Return one object's change as JSON (a missing value is left out, not null)."""
    key = change.key
    fields = []
    for item in change.fields:
        row: dict[str, Any] = {"path": item.path}
        row |= {} if item.old is ABSENT else {"old": item.old}
        row |= {} if item.new is ABSENT else {"new": item.new}
        row |= {"reference": True} if item.reference else {}
        fields.append(row)
    out: dict[str, Any] = {
        "cluster": key.scope,
        "apiVersion": change.api_version,
        "kind": key.kind,
        "namespace": key.namespace or None,
        "name": key.name,
    }
    out |= {"file": change.path, "change": change.status, "fields": fields}
    out["sources"] = list(change.sources)
    if change.renamed_from is not None:
        out["renamedFrom"] = {
            "namespace": change.renamed_from.namespace or None,
            "name": change.renamed_from.name,
        }
    return out


def disruption_json(item: Disruption) -> dict[str, Any]:
    """Return one finding as JSON: its code and severity first, for tools to gate on."""
    blast = {
        "nodes": item.blast.nodes,
        "gpus": item.blast.gpus,
        "tenants": list(item.blast.tenants),
        "text": item.blast.describe(),
    }
    return {
        "code": item.code,
        "severity": item.severity,
        "cluster": item.scope,
        "kind": item.code,
        "subject": item.subject,
        "message": item.message,
        "blastRadius": blast,
    }


def _layout_json(config: Any, name: str | None) -> dict[str, Any] | None:
    """Return one side of a MIG change: the config name and its groups."""
    if name is None:
        return None
    groups = [
        {"gpus": list(g.gpus) if g.gpus is not None else None, "profiles": dict(g.layout)}
        for g in config or ()
    ]
    return {"config": name, "layout": groups if config is not None else None}


def _blast_json(blast: Any) -> dict[str, Any]:
    return {
        "nodes": blast.nodes,
        "gpus": blast.gpus,
        "tenants": list(blast.tenants),
        "text": blast.describe(),
    }


def _plan_json(plan: Plan) -> dict[str, Any]:
    """Return one upgrade plan as JSON: the stops, then each hop's steps in order."""
    stops = [{"version": s.version, "why": s.why, "source": s.source} for s in plan.stops]
    hops = [
        {
            "old": hop.old,
            "new": hop.new,
            "steps": [
                {"kind": s.kind, "text": s.text, "action": s.action, "source": s.source}
                | {"details": list(s.details), "blastRadius": _blast_json(s.blast)}
                for s in hop.steps
            ],
        }
        for hop in plan.hops
    ]
    head = {"cluster": plan.scope, "component": plan.component, "line": plan.line or None}
    head |= {"old": plan.old, "new": plan.new, "application": plan.application}
    head |= {"note": plan.note} if plan.note else {}
    return head | {
        "identical": plan.identical,
        "blastRadius": _blast_json(plan.blast),
        "stops": stops,
        "hops": hops,
    }


def as_json(result: DiffResult) -> str:
    """Return the whole diff as one JSON document."""
    counts = [
        {"cluster": s, "kind": k} | {status: c[status] for status in STATUSES}
        for s, k, c in result.counts()
    ]
    head = {
        "text": summary(result),
        "changed": result.count("changed"),
        "added": result.count("added"),
        "removed": result.count("removed"),
        "renamed": result.count("renamed"),
    }
    head |= {
        "clusters": result.scopes(),
        "error": len(result.severe(ERROR)),
        "disruptive": len(result.severe(DISRUPTIVE)),
        "risk": len(result.severe(RISK)),
        "counts": counts,
    }
    document = {
        "old": result.old_label,
        "new": result.new_label,
        "summary": head,
        "disruptions": [disruption_json(d) for d in result.disruptions],
        "renames": [
            {
                "cluster": r.scope,
                "entity": r.entity,
                "old": r.old,
                "new": r.new,
                "objects": len(r.objects),
            }
            for r in result.renames
        ],
        "upgrades": [_plan_json(p) for p in result.upgrades],
        "migLayouts": [
            {
                "cluster": m.scope,
                "pool": m.pool,
                "old": _layout_json(m.old, m.old_name),
                "new": _layout_json(m.new, m.new_name),
            }
            for m in result.mig
        ],
        "objects": [_change_json(c) for c in result.changes],
        "capacity": [
            {
                "cluster": c.scope,
                "pool": c.pool,
                "resource": c.resource,
                "tenant": c.tenant or None,
                "old": c.old,
                "new": c.new,
            }
            for c in result.capacity
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
