"""Changes to the admission policies (gpuplan/emit/admission.py) that tighten or loosen what tenants may create.

Tightening refuses objects that were admitted: a deploy pipeline that worked may start failing. Loosening
admits objects that were refused: a tenant may again reach another's queue, a higher priority or GPUs
without quota. A policy enforces only through a binding with Deny; Warn and Audit refuse nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpuplan.diff.kinds import Blast, Context, Disruption, dig, listing
from gpuplan.diff.objects import ObjectKey, Side
from gpuplan.diff.security import tenant_of

GROUP = "admissionregistration.k8s.io"
POLICY, BINDING = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
TABLE = "ByNamespace"  # the variables that hold each namespace's allowed values
ENTRY = re.compile(r"'([^']*)':\s*\[([^\]]*)\]")
ITEM = re.compile(r"'([^']*)'")


def _denying(side: Side, scope: str, name: str) -> bool:
    """Tell whether a policy exists and a binding of it has Deny."""
    if ObjectKey(scope, GROUP, POLICY, "", name) not in side:
        return False
    binding = side.get(ObjectKey(scope, GROUP, BINDING, "", name))
    return binding is not None and "Deny" in listing(dig(binding.obj, "spec", "validationActions"))


def _tables(policy: dict[str, Any]) -> dict[str, set[tuple[str, str]]]:
    """Return namespace -> the (table, value) pairs the policy allows there."""
    out: dict[str, set[tuple[str, str]]] = {}
    for variable in listing(dig(policy, "spec", "variables")):
        name = str(dig(variable, "name") or "")
        if not name.endswith(TABLE):
            continue
        for namespace, values in ENTRY.findall(str(dig(variable, "expression") or "")):
            out.setdefault(namespace, set()).update((name, v) for v in ITEM.findall(values))
    return out


def _rules(policy: dict[str, Any]) -> set[str]:
    return {str(dig(v, "expression")) for v in listing(dig(policy, "spec", "validations"))}


def _tenants(scope: str, namespaces: set[str], *sides: Side) -> tuple[str, ...]:
    found = {tenant_of(scope, ns, *sides) for ns in namespaces}
    return tuple(sorted(t for t in found if t))


def _all_namespaces(side: Side, scope: str, name: str) -> set[str]:
    """Return the namespaces a policy reaches: those of its tables, else every tenant namespace."""
    entry = side.get(ObjectKey(scope, GROUP, POLICY, "", name))
    tables = set(_tables(entry.obj)) if entry is not None else set()
    return tables or {
        key.name
        for key in side
        if key.scope == scope and key.kind == "Namespace" and tenant_of(scope, key.name, side)
    }


def admission_changes(ctx: Context) -> Iterator[Disruption]:
    """Yield each enforced policy that starts or stops refusing, and each tenant whose allowed values shrink or grow."""
    names = {
        (c.key.scope, c.key.name)
        for c in ctx.changes
        if c.key.group == GROUP and c.key.kind in (POLICY, BINDING)
    }
    for scope, name in sorted(names):
        was, now = _denying(ctx.old, scope, name), _denying(ctx.new, scope, name)
        if was != now:
            reached = _all_namespaces(ctx.new if now else ctx.old, scope, name)
            tenants = _tenants(scope, reached, ctx.new, ctx.old)
            if now:
                text = f"policy {name} now denies: objects it refuses fail to apply (check deploy pipelines, roll out with Warn first)"
            else:
                text = f"policy {name} no longer denies: objects it refused are admitted again"
            code = "admission-tightened" if now else "admission-loosened"
            yield Disruption(scope, code, name, text, Blast(tenants=tenants))
            continue
        if not now:
            continue
        old = ctx.old[ObjectKey(scope, GROUP, POLICY, "", name)].obj
        new = ctx.new[ObjectKey(scope, GROUP, POLICY, "", name)].obj
        yield from _compared(scope, name, old, new, ctx, _all_namespaces(ctx.new, scope, name))


def _compared(
    scope: str,
    name: str,
    old: dict[str, Any],
    new: dict[str, Any],
    ctx: Context,
    everyone: set[str],
) -> Iterator[Disruption]:
    """Yield what changed inside a policy that denies on both sides: its rules and its tables."""
    before, after = _tables(old), _tables(new)
    everyone = everyone | set(before) | set(after)
    lost = {ns: before.get(ns, set()) - after.get(ns, set()) for ns in everyone}
    won = {ns: after.get(ns, set()) - before.get(ns, set()) for ns in everyone}
    for code, rules, changed, what in (
        ("admission-tightened", _rules(new) - _rules(old), lost, "refuses more"),
        ("admission-loosened", _rules(old) - _rules(new), won, "admits more"),
    ):
        namespaces = everyone if rules else {ns for ns, values in changed.items() if values}
        if not namespaces:
            continue
        values = sorted({v for ns in namespaces for _, v in changed[ns]})
        detail = f" ({', '.join(values)})" if values else ""
        text = f"policy {name} {what}{detail} in {', '.join(sorted(namespaces))}"
        tenants = _tenants(scope, namespaces, ctx.new, ctx.old)
        yield Disruption(scope, code, name, text, Blast(tenants=tenants))
