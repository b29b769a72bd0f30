"""The diff as a pull-request comment: counts, then every disruption and risk, then the details.

A comment is bounded (GitHub refuses bodies over 65,536 characters), so the details shrink
first: object rows, field lines, capacity rows, MIG drawings. The findings come before any
detail and are never dropped: at worst each is shortened to its code, cluster, subject and
blast radius. The last line says what was cut.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import jinja2

from gpuplan.diff import migview
from gpuplan.diff.kinds import DISRUPTIVE, ERROR, RISK, Disruption
from gpuplan.diff.objects import FLEET, ObjectChange
from gpuplan.diff.result import WORKING_TREE, DiffResult, field_line, summary

MAX_COMMENT = 60_000  # GitHub refuses comments over 65,536 characters
MARKER = "<!-- gpuplan-diff: {path} -->"  # the sticky comment's first line, one per repository path


@dataclass(frozen=True)
class Limits:
    """How much of a diff the markdown shows."""

    objects: int = 50  # objects listed (table rows and details), all clusters together
    fields: int = 20  # field-change lines per object
    value: int = 160  # characters per value
    capacity: int = 100  # capacity rows
    counts: int = 60  # rows of the counts table (then one row per cluster)
    drawings: bool = True  # MIG layouts drawn as slice tables
    plan_details: bool = True  # the folded details and sources of each upgrade plan
    findings: str = "full"  # full, short (no message) or grouped (subjects per cluster and code)


LIMITS = Limits()
# What each step of shrinking gives up, in order.
STEPS: tuple[tuple[str, Callable[[Limits], Limits]], ...] = (
    ("object tables", lambda lim: replace(lim, objects=0, capacity=0)),
    ("MIG slice drawings", lambda lim: replace(lim, drawings=False)),
    ("upgrade plan details", lambda lim: replace(lim, plan_details=False)),
    ("counts per kind", lambda lim: replace(lim, counts=0)),
    ("finding messages", lambda lim: replace(lim, findings="short")),
    ("one line per cluster and code", lambda lim: replace(lim, findings="grouped")),
)


def marker(path: str) -> str:
    """Return the hidden line that marks gpuplan's comment for one repository path.

    The path is percent-encoded but for letters, digits, `_.-~/`, and a `-` before another `-`
    too, so the line is always one HTML comment on one line, whatever the folder is named
    (`fleet--->x` would end the comment early; a newline would cut the marker the workflow reads).
    """
    return MARKER.format(path=re.sub("-(?=-)", "%2D", quote(path, safe="/")) or ".")


def _html(text: str) -> str:
    """Return text with the characters that start HTML neutralised (`>` stays: `->` reads well)."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _cell(text: str) -> str:
    """Return text safe in a table cell (pipes escaped, HTML neutralised)."""
    return _html(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Return text as an inline code span that survives backticks inside it."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell_code(text: str) -> str:
    """Return text as inline code inside a table cell."""
    return _code(text).replace("|", "\\|")


def _prose(text: str) -> str:
    """Return text safe as markdown prose (emphasis and HTML characters escaped)."""
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", _html(text))


def _label(label: str) -> str:
    """Return a side's name: a git revision or folder as code, the working tree as words."""
    return label if label == WORKING_TREE else _code(label)


def _scope_title(scope: str) -> str:
    """Return the heading of a cluster section."""
    return {"": "other objects", FLEET: f"{FLEET} (fleet)"}.get(scope, scope)


# findings


def _finding(item: Disruption, level: str) -> str:
    """Return one finding as a list item: code, cluster, message (or subject) and blast radius."""
    where = f"**{_prose(item.scope)}** " if item.scope else ""
    text = _prose(item.message) if level == "full" else _prose(item.subject)
    reach = item.blast.describe()
    return f"{_code(item.code)} {where}{text}" + (f" — _reaches {_prose(reach)}_" if reach else "")


def _grouped(items: list[Disruption]) -> list[str]:
    """Return one line per (cluster, code) naming every subject."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in items:
        groups.setdefault((item.scope, item.code), []).append(item.subject)
    return [
        f"{_code(code)} **{_prose(scope)}**: {_prose(', '.join(subjects))}"
        for (scope, code), subjects in groups.items()
    ]


def _findings(result: DiffResult, level: str) -> list[dict[str, Any]]:
    """Return the disruptive section, then the risks, each listing every finding."""
    sections = []
    for severity, title in (
        (ERROR, "⛔ Refused by upstream"),
        (DISRUPTIVE, "⚠️ Disruptive changes"),
        (RISK, "Risks to review"),
    ):
        items = result.severe(severity)
        if items:
            lines = _grouped(items) if level == "grouped" else [_finding(d, level) for d in items]
            sections.append({"title": title, "count": len(items), "items": lines})
    return sections


# upgrade plans

STEP_TITLES = {
    "action": "Upstream",
    "nodes": "Kubernetes",
    "crds": "CRDs",
    "crd-install": "CRD install",
    "api": "Rendering",
    "defaults": "Chart defaults",
    "images": "GPU nodes",
    "metrics": "Metrics",
}


def _upgrades(result: DiffResult, limits: Limits) -> list[dict[str, Any]]:
    """Return each plan: a heading line with its reach, its numbered steps in order (stops first), and
    the folded details (every line behind a step, and its sources)."""
    out = []
    for plan in result.upgrades:
        reach = plan.blast.describe()
        head = f"**{_prose(plan.scope)}** · {_code(plan.component + (f' ({plan.line})' if plan.line else ''))} {_prose(plan.old)} → {_prose(plan.new)}"
        head += f" — _reaches {_prose(reach)}_" if reach else ""
        head += f"\n\n_{_prose(plan.note)}._" if plan.note else ""
        if plan.identical:
            head += ": CRDs and chart defaults identical, Argo CD only rolls the controller's pods"
            if not plan.notes:
                out.append({"head": head, "steps": [], "details": [], "fence": "```"})
                continue
        steps, details = [], []
        for stop in plan.stops:
            steps.append(f"⛔ **Stop at {_prose(stop.version)} first**: {_prose(stop.why)}")
            details.append(f"[{len(steps)}] source: {stop.source}")
        multi = len(plan.hops) > 1
        for hop in plan.hops:
            for step in hop.steps:
                text = step.text if limits.findings == "full" else step.text.split(":", 1)[0]
                mark = "❗ " if step.action else ""
                where = f"{_prose(hop.old)} → {_prose(hop.new)} · " if multi else ""
                line = f"{mark}{where}**{STEP_TITLES[step.kind]}**: {_prose(text)}"
                reach = step.blast.describe()
                steps.append(line + (f" — _reaches {_prose(reach)}_" if reach else ""))
                details += [f"[{len(steps)}] {d}" for d in step.details]
                if step.source:
                    details.append(f"[{len(steps)}] source: {step.source}")
        fence = "`" * max(
            3, max((len(r) for d in details for r in re.findall(r"`+", d)), default=0) + 1
        )
        kept = details if limits.plan_details else []
        out.append({"head": head, "steps": steps, "details": kept, "fence": fence})
    return out


# MIG layouts


def _mig(result: DiffResult, drawings: bool) -> list[dict[str, Any]]:
    """Return each pool's layout before and after, in words and (when placed) as slice tables."""
    out = []
    for change in result.mig:
        model = change.model
        title = f"{change.scope} · pool {change.pool}" + (f" ({model.name})" if model else "")
        table, slices = [], []
        if drawings and model is not None and model.mig is not None:
            slices = list(range(model.mig.memory_slices))
            table = _slice_rows(model, change)
        item = {
            "title": _prose(title),
            "before": _prose(migview.per_gpu(change.old, change.old_name)),
            "after": _prose(migview.per_gpu(change.new, change.new_name)),
        }
        out.append(item | {"table": table, "slices": slices})
    return out


def _slice_rows(model: Any, change: Any) -> list[dict[str, Any]]:
    """Return the drawn rows: one per side and GPU group, one cell per memory slice."""
    rows = []
    for side, config in (("before", change.old), ("after", change.new)):
        for group in config or ():
            cells = migview.slice_cells(model, group)
            if cells is None:
                return []
            rows.append(
                {
                    "side": side,
                    "gpus": _cell(group.where()),
                    "cells": [_cell_code(c) if c and c != migview.CONTINUED else c for c in cells],
                }
            )
    return rows


# renames and objects


def _renames(result: DiffResult) -> list[str]:
    """Return one line per rename with what else changed in the renamed objects."""
    changed = {c.key: c for c in result.changes}
    lines = []
    for rename in result.renames:
        real = sum(len(changed[new].real_fields) for _, new in rename.objects if new in changed)
        also = (
            f"; {real} real field change{'' if real == 1 else 's'} listed below"
            if real
            else "; nothing else changes in them"
        )
        count = len(rename.objects)
        lines.append(
            f"**{_prose(rename.scope)}**: {rename.entity} {_code(rename.old)} → {_code(rename.new)} ({count} object{'' if count == 1 else 's'} renamed{also})"
        )
    return lines


def _leaf(path: str) -> str:
    """Return the last field name of a path (list indexes skipped): `nominalQuota`, `requests.cpu`."""
    path = re.sub(r"(\[\d+\])+$", "", path)
    quoted = re.search(r"\['((?:[^'\\]|\\.)*)'\]$", path)
    return quoted.group(1) if quoted else path.rsplit(".", 1)[-1].rsplit("]", 1)[-1] or path


def _fields_cell(change: ObjectChange) -> str:
    """Return the field count and up to three distinct field names (references counted apart)."""
    if change.status not in ("changed", "renamed"):
        return ""
    real = change.real_fields
    leaves = list(dict.fromkeys(_leaf(f.path) for f in real))
    names = ", ".join(_cell_code(n) for n in leaves[:3]) + (", …" if len(leaves) > 3 else "")
    text = f"{len(real)} ({names})" if names else str(len(real))
    references = len(change.fields) - len(real)
    return text + (
        f" + {references} renamed reference{'' if references == 1 else 's'}" if references else ""
    )


def _object(change: ObjectChange) -> str:
    """Return the object cell: `Kind/name`, or `Kind/old → Kind/new` for a renamed one."""
    if change.renamed_from is not None:
        return f"{_cell_code(change.renamed_from.label())} → {_cell_code(change.key.label())}"
    return _cell_code(change.key.label())


def _details(change: ObjectChange, limits: Limits) -> dict[str, Any]:
    """Return one collapsible block: the object and its real field changes, one per line."""
    real = change.real_fields
    lines = [field_line(f, limits.value) for f in real[: limits.fields]]
    fence = "`" * max(
        3, max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0) + 1
    )
    count = len(real)
    title = f"<code>{html.escape(change.key.label())}</code>: {count} field {'change' if count == 1 else 'changes'}"
    if change.sources:  # which input to look at: a tenant, a cluster, an own manifest or a patch
        title += " from " + ", ".join(f"<code>{html.escape(s)}</code>" for s in change.sources)
    return {
        "title": title,
        "lines": lines,
        "fence": fence,
        "omitted": max(count - limits.fields, 0),
    }


def _clusters(result: DiffResult, limits: Limits) -> tuple[list[dict[str, Any]], int]:
    """Return the per-cluster sections within the object budget, and how many objects were left out."""
    sections: dict[str, dict[str, Any]] = {}
    budget, omitted = limits.objects, 0
    for change in result.changes:
        if limits.objects == 0:
            omitted += 1
            continue
        section = sections.setdefault(
            change.key.scope,
            {"title": _scope_title(change.key.scope), "rows": [], "details": [], "omitted": 0},
        )
        if budget <= 0:
            section["omitted"] += 1
            omitted += 1
            continue
        budget -= 1
        section["rows"].append(
            {"object": _object(change), "change": change.status, "fields": _fields_cell(change)}
        )
        if change.real_fields:
            section["details"].append(_details(change, limits))
    return list(sections.values()), omitted


def _counts(result: DiffResult, limits: Limits) -> list[dict[str, Any]]:
    """Return the counts table: per cluster and kind, or per cluster when that is too long."""
    rows = result.counts()
    if len(rows) > limits.counts:
        merged: dict[str, dict[str, Any]] = {}
        for scope, _, counter in rows:
            row = merged.setdefault(
                scope,
                {
                    "cluster": _cell(_scope_title(scope)),
                    "kind": "all kinds",
                    "changed": 0,
                    "added": 0,
                    "removed": 0,
                    "renamed": 0,
                },
            )
            for status in ("changed", "added", "removed", "renamed"):
                row[status] += counter[status]
        return list(merged.values())
    return [
        {"cluster": _cell(_scope_title(s)), "kind": _cell(k)}
        | {status: c[status] for status in ("changed", "added", "removed", "renamed")}
        for s, k, c in rows
    ]


def _capacity(result: DiffResult, limits: Limits) -> list[dict[str, str]]:
    """Return the capacity rows to show."""
    rows = []
    for item in result.capacity[: limits.capacity]:
        what = f"tenant {item.tenant}" if item.tenant else "capacity"
        old, new = (
            item.old if item.old is not None else "—",
            item.new if item.new is not None else "—",
        )
        rows.append(
            {
                "cluster": _cell(item.scope),
                "pool": _cell(item.pool),
                "resource": _cell_code(item.resource),
                "what": _cell(what),
                "old": _cell(old),
                "new": _cell(new),
            }
        )
    return rows


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("gpuplan", "templates"),
    autoescape=False,  # markdown, not HTML: every value is escaped by the helpers above
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _render(result: DiffResult, limits: Limits, cut: list[str]) -> str:
    """Return the markdown comment within these limits."""
    sections, omitted = _clusters(result, limits)
    context = {
        "marker": result.marker,
        "summary": summary(result),
        "changed": bool(result.changes or result.disruptions),
        "old": _label(result.old_label),
        "new": _label(result.new_label),
        "counts": _counts(result, limits),
        "findings": _findings(result, limits.findings),
        "upgrades": _upgrades(result, limits),
        "mig": _mig(result, limits.drawings),
        "renames": _renames(result),
        "capacity": _capacity(result, limits),
        "capacity_omitted": max(len(result.capacity) - limits.capacity, 0),
        "clusters": sections,
        "omitted": omitted,
        "cut": ", ".join(cut),
    }
    return _ENV.get_template("diff.md.j2").render(context)


def as_markdown(result: DiffResult, limits: Limits = LIMITS) -> str:
    """Return the pull-request comment, giving up details step by step until it fits in one comment."""
    cut: list[str] = []
    text = _render(result, limits, cut)
    while len(text) > MAX_COMMENT and limits.objects > 1:  # first only fewer details
        limits = replace(
            limits,
            objects=max(limits.objects // 2, 1),
            fields=max(limits.fields // 2, 1),
            capacity=max(limits.capacity // 2, 1),
        )
        text = _render(result, limits, cut)
    for what, step in STEPS:
        if len(text) <= MAX_COMMENT:
            break
        if what == "upgrade plan details" and not result.upgrades:
            continue  # nothing to give up
        limits = step(limits)
        cut.append(what)
        text = _render(result, limits, cut)
    return text
