"""A diff's result and its three forms: text (terminals, CI logs), json (tools), markdown (PR comments).

Text and json are complete. The markdown is a pull-request comment, so it is bounded (LIMITS,
and GitHub's comment size) and says what it left out.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

import jinja2

from gpuplan.diff.disruptions import Disruption
from gpuplan.diff.objects import ABSENT, FLEET, FieldChange, ObjectChange

WORKING_TREE = "the working tree"
MAX_COMMENT = 60_000  # GitHub refuses comments over 65,536 characters
ARROW = " -> "
SIGNS = {"added": "+", "removed": "-", "changed": "~"}


@dataclass(frozen=True)
class Limits:
    """How much of a diff the markdown shows."""

    objects: int = 50  # objects listed (table rows and details), all clusters together
    fields: int = 20  # field-change lines per object
    value: int = 160  # characters per value
    capacity: int = 100  # capacity rows


LIMITS = Limits()


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

    def count(self, status: str) -> int:
        """Return how many objects have this status."""
        return sum(1 for c in self.changes if c.status == status)

    def scopes(self) -> list[str]:
        """Return the clusters (and fleet-level folder) with changes, sorted."""
        return sorted({c.key.scope for c in self.changes})


def summary(result: DiffResult) -> str:
    """Return `3 objects changed, 1 added, 0 removed in 2 clusters`, or `no changes`."""
    if not result.changes:
        return "no changes"
    changed = result.count("changed")
    text = f"{changed} {'object' if changed == 1 else 'objects'} changed, {result.count('added')} added, {result.count('removed')} removed"
    clusters = [s for s in result.scopes() if s not in ("", FLEET)]
    if clusters:
        text += f" in {len(clusters)} {'cluster' if len(clusters) == 1 else 'clusters'}"
    if FLEET in result.scopes():
        text += f" {'and' if clusters else 'in'} {FLEET}"
    return text


def show(value: Any, limit: int = 0) -> str:
    """Return a value on one line as JSON (strings quoted), cut to `limit` characters if set."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text[: limit - 1] + "…" if limit and len(text) > limit else text


def field_line(change: FieldChange, limit: int = 0) -> str:
    """Return `path: old -> new`."""
    return f"{change.path}: {show(change.old, limit)}{ARROW}{show(change.new, limit)}"


def _who(change: ObjectChange) -> str:
    """Return `cluster Kind/name` (the cluster left out when unknown)."""
    return f"{change.key.scope} {change.key.label()}" if change.key.scope else change.key.label()


# text


def as_text(result: DiffResult) -> str:
    """Return one line per changed field, added or removed object, then warnings and the summary."""
    lines = []
    for change in result.changes:
        if change.status != "changed" or not change.fields:
            lines.append(f"{SIGNS[change.status]} {_who(change)}")
        else:
            lines.extend(f"~ {_who(change)} {field_line(f)}" for f in change.fields)
    lines += [f"! {d.scope}: {d.message}" if d.scope else f"! {d.message}" for d in result.disruptions]
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
        fields.append(row)
    out = {"cluster": key.scope, "apiVersion": change.api_version, "kind": key.kind, "namespace": key.namespace or None, "name": key.name}
    return out | {"file": change.path, "change": change.status, "fields": fields}


def as_json(result: DiffResult) -> str:
    """Return the whole diff as one JSON document."""
    document = {
        "old": result.old_label,
        "new": result.new_label,
        "summary": {"text": summary(result), "changed": result.count("changed"), "added": result.count("added"), "removed": result.count("removed"), "clusters": result.scopes()},
        "objects": [_change_json(c) for c in result.changes],
        "disruptions": [{"cluster": d.scope, "kind": d.kind, "subject": d.subject, "message": d.message} for d in result.disruptions],
        "capacity": [{"cluster": c.scope, "pool": c.pool, "resource": c.resource, "tenant": c.tenant or None, "old": c.old, "new": c.new} for c in result.capacity],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


# markdown


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


def _leaf(path: str) -> str:
    """Return the last field name of a path (list indexes skipped): `nominalQuota`, `requests.cpu`."""
    path = re.sub(r"(\[\d+\])+$", "", path)
    quoted = re.search(r"\['((?:[^'\\]|\\.)*)'\]$", path)
    return quoted.group(1) if quoted else path.rsplit(".", 1)[-1].rsplit("]", 1)[-1] or path


def _fields_cell(change: ObjectChange) -> str:
    """Return the field count and up to three distinct field names."""
    if change.status != "changed":
        return ""
    leaves = list(dict.fromkeys(_leaf(f.path) for f in change.fields))
    names = ", ".join(_cell_code(n) for n in leaves[:3]) + (", …" if len(leaves) > 3 else "")
    return f"{len(change.fields)} ({names})" if names else str(len(change.fields))


def _details(change: ObjectChange, limits: Limits) -> dict[str, Any]:
    """Return one collapsible block: the object and its field changes, one per line."""
    lines = [field_line(f, limits.value) for f in change.fields[: limits.fields]]
    fence = "`" * max(3, max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0) + 1)
    count = len(change.fields)
    title = f"<code>{html.escape(change.key.label())}</code>: {count} field {'change' if count == 1 else 'changes'}"
    return {"title": title, "lines": lines, "fence": fence, "omitted": max(count - limits.fields, 0)}


def _clusters(result: DiffResult, limits: Limits) -> tuple[list[dict[str, Any]], int]:
    """Return the per-cluster sections within the object budget, and how many objects were left out."""
    sections: dict[str, dict[str, Any]] = {}
    budget, omitted = limits.objects, 0
    for change in result.changes:
        section = sections.setdefault(change.key.scope, {"title": _scope_title(change.key.scope), "rows": [], "details": [], "omitted": 0})
        if budget <= 0:
            section["omitted"] += 1
            omitted += 1
            continue
        budget -= 1
        section["rows"].append({"object": _cell_code(change.key.label()), "change": change.status, "fields": _fields_cell(change)})
        if change.fields:
            section["details"].append(_details(change, limits))
    return list(sections.values()), omitted


def _capacity(result: DiffResult, limits: Limits) -> list[dict[str, str]]:
    """Return the capacity rows to show."""
    rows = []
    for item in result.capacity[: limits.capacity]:
        what = f"tenant {item.tenant}" if item.tenant else "capacity"
        old, new = item.old if item.old is not None else "—", item.new if item.new is not None else "—"
        rows.append({"cluster": _cell(item.scope), "pool": _cell(item.pool), "resource": _cell_code(item.resource), "what": _cell(what), "old": _cell(old), "new": _cell(new)})
    return rows


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("gpuplan", "templates"),
    autoescape=False,  # markdown, not HTML: every value is escaped by the helpers above
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _render(result: DiffResult, limits: Limits) -> str:
    """Return the markdown comment within these limits."""
    sections, omitted = _clusters(result, limits)
    context = {
        "summary": summary(result),
        "old": _label(result.old_label),
        "new": _label(result.new_label),
        "warnings": [(_prose(d.scope), _prose(d.message)) for d in result.disruptions],
        "capacity": _capacity(result, limits),
        "capacity_omitted": max(len(result.capacity) - limits.capacity, 0),
        "clusters": sections,
        "omitted": omitted,
    }
    return _ENV.get_template("diff.md.j2").render(context)


def as_markdown(result: DiffResult, limits: Limits = LIMITS) -> str:
    """Return the pull-request comment, shrinking the limits until it fits in one comment."""
    text = _render(result, limits)
    while len(text) > MAX_COMMENT and (limits.objects > 1 or limits.fields > 1):
        limits = replace(limits, objects=max(limits.objects // 2, 1), fields=max(limits.fields // 2, 1), capacity=max(limits.capacity // 2, 1))
        text = _render(result, limits)
    return text
