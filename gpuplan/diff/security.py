"""Changes that loosen a tenant's isolation: Pod Security level, owners and RBAC, NetworkPolicy,
and the priority ceiling quota."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gpuplan.diff.kinds import Blast, Context, Disruption, both, dig, is_kind, listing, mapping
from gpuplan.diff.objects import ObjectKey, Side
from gpuplan.emit.tenants import PSA, TENANT_LABEL

RBAC = "rbac.authorization.k8s.io"
# Pod Security Standards from the most to the least restrictive (kubernetes.io/docs/concepts/
# security/pod-security-standards); a label removed falls back to the API server's default,
# privileged unless the cluster configures otherwise.
LEVELS = ("restricted", "baseline", "privileged")
# ClusterRoles from the least to the most powerful (the user-facing roles of
# kubernetes.io/docs/reference/access-authn-authz/rbac/#user-facing-roles).
ROLES = ("view", "edit", "admin", "cluster-admin")


def tenant_of(scope: str, namespace: str, *sides: Side) -> str | None:
    """Return the tenant a namespace belongs to, from its Namespace's gpuplan.io/tenant label."""
    for side in sides:
        entry = side.get(ObjectKey(scope, "", "Namespace", "", namespace))
        if entry is not None:
            tenant = mapping(dig(entry.obj, "metadata", "labels")).get(TENANT_LABEL)
            if tenant:
                return str(tenant)
    return None


def namespace_text(scope: str, namespace: str, *sides: Side) -> str:
    """Return `namespace N of tenant T`, or without the tenant when it is not known."""
    tenant = tenant_of(scope, namespace, *sides)
    return f"namespace {namespace}" + (f" of tenant {tenant}" if tenant else "")


def _tenants(scope: str, namespace: str, *sides: Side) -> Blast:
    """Return the blast radius of a change to one namespace: its tenant."""
    tenant = tenant_of(scope, namespace, *sides)
    return Blast(tenants=(tenant,) if tenant else ())


def _rank(order: tuple[str, ...], value: Any, missing: str) -> int:
    """Return a value's place in an order (unknown values rank as the most open)."""
    text = missing if value is None else str(value)
    return order.index(text) if text in order else len(order)


def psa_loosened(ctx: Context) -> Iterator[Disruption]:
    """Yield every Namespace whose enforced Pod Security level becomes less restrictive."""
    label = f"{PSA}/enforce"
    for key in ctx.changed():
        if not is_kind(key, "", "Namespace"):
            continue
        was = mapping(dig(ctx.old[key].obj, "metadata", "labels")).get(label)
        now = mapping(dig(ctx.new[key].obj, "metadata", "labels")).get(label)
        if _rank(LEVELS, now, "privileged") > _rank(LEVELS, was, "privileged"):
            message = f"{namespace_text(key.scope, key.name, ctx.new, ctx.old)}: Pod Security enforce {was or 'unset'} -> {now or 'unset (privileged by default)'}: pods there may now run with more host access"
            yield Disruption(
                key.scope,
                "psa-loosened",
                key.name,
                message,
                _tenants(key.scope, key.name, ctx.new, ctx.old),
            )


def _subject(item: Any) -> str:
    """Return `Group/name` (or `ServiceAccount/ns/name`) of an RBAC subject."""
    item = mapping(item)
    where = f"{item['namespace']}/" if item.get("namespace") else ""
    return f"{item.get('kind', '')}/{where}{item.get('name', '')}"


def _role(obj: dict[str, Any]) -> str:
    """Return the role a binding grants."""
    return str(mapping(obj.get("roleRef")).get("name", "")) if obj else ""


def rbac_widened(ctx: Context) -> Iterator[Disruption]:
    """Yield every RoleBinding or ClusterRoleBinding that gains subjects or a more powerful role."""
    for change in ctx.changes:
        key = change.key
        if (
            key.group != RBAC
            or key.kind not in ("RoleBinding", "ClusterRoleBinding")
            or change.status == "removed"
        ):
            continue
        old, new = both(ctx.old, ctx.new, key)
        gained = sorted(
            {_subject(s) for s in listing(new.get("subjects"))}
            - {_subject(s) for s in listing(old.get("subjects"))}
        )
        stronger = bool(old) and _rank(ROLES, _role(new), "") > _rank(ROLES, _role(old), "")
        if not gained and not stronger:
            continue
        parts = (
            [f"{', '.join(gained)} gain{'s' if len(gained) == 1 else ''} {_role(new)}"]
            if gained
            else []
        )
        if stronger:
            parts.append(f"the role grows {_role(old)} -> {_role(new)}")
        where = (
            namespace_text(key.scope, key.namespace, ctx.new, ctx.old)
            if key.namespace
            else "the whole cluster"
        )
        yield Disruption(
            key.scope,
            "rbac-widened",
            key.label(),
            f"{key.label()} in {where}: {'; '.join(parts)}",
            _tenants(key.scope, key.namespace, ctx.new, ctx.old),
        )


def isolation_off(ctx: Context) -> Iterator[Disruption]:
    """Yield every NetworkPolicy removed from a namespace that stays, or whose ingress widens."""
    for change in ctx.changes:
        key = change.key
        if not is_kind(key, "networking.k8s.io", "NetworkPolicy") or change.status == "added":
            continue
        namespace_stays = ObjectKey(key.scope, "", "Namespace", "", key.namespace) in ctx.new
        if change.status == "removed" and namespace_stays:
            why = "is removed: every pod of the cluster can reach the namespace's pods"
        elif change.status == "changed" and _ingress_wider(ctx.old[key].obj, ctx.new[key].obj):
            why = "admits more ingress than before"
        else:
            continue
        message = (
            f"{key.label()} in {namespace_text(key.scope, key.namespace, ctx.new, ctx.old)} {why}"
        )
        yield Disruption(
            key.scope,
            "isolation-off",
            key.label(),
            message,
            _tenants(key.scope, key.namespace, ctx.new, ctx.old),
        )


def _ingress_wider(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Tell whether a policy admits a source it did not (a rule or peer added, or Ingress dropped)."""
    if "Ingress" in listing(dig(old, "spec", "policyTypes")) and "Ingress" not in listing(
        dig(new, "spec", "policyTypes")
    ):
        return True
    before = {
        json.dumps(p, sort_keys=True)
        for rule in listing(dig(old, "spec", "ingress"))
        for p in listing(dig(rule, "from")) or [{}]
    }
    after = {
        json.dumps(p, sort_keys=True)
        for rule in listing(dig(new, "spec", "ingress"))
        for p in listing(dig(rule, "from")) or [{}]
    }
    return bool(after - before)


def _ceiling(obj: dict[str, Any]) -> set[str] | None:
    """Return the priority classes a priority-ceiling ResourceQuota forbids (None: not one)."""
    hard = mapping(dig(obj, "spec", "hard"))
    selectors = listing(dig(obj, "spec", "scopeSelector", "matchExpressions"))
    classes = {
        str(v)
        for s in selectors
        if dig(s, "scopeName") == "PriorityClass" and dig(s, "operator") == "In"
        for v in listing(dig(s, "values"))
    }
    return classes if classes and str(hard.get("pods")) == "0" else None


def ceilings_raised(ctx: Context) -> Iterator[Disruption]:
    """Yield every priority-ceiling quota removed or narrowed: the tenant may use higher classes."""
    for change in ctx.changes:
        key = change.key
        if not is_kind(key, "", "ResourceQuota") or change.status == "added":
            continue
        old, new = both(ctx.old, ctx.new, key)
        was = _ceiling(old)
        if was is None:
            continue
        now = _ceiling(new) or set()
        freed = sorted(was - now)
        if not freed or (
            change.status == "removed"
            and ObjectKey(key.scope, "", "Namespace", "", key.namespace) not in ctx.new
        ):
            continue
        where = namespace_text(key.scope, key.namespace, ctx.new, ctx.old)
        message = f"priority ceiling raised in {where}: pods may now use priority class {', '.join(freed)} and preempt other tenants"
        yield Disruption(
            key.scope,
            "priority-ceiling-raised",
            key.label(),
            message,
            _tenants(key.scope, key.namespace, ctx.new, ctx.old),
        )
