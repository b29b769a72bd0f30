"""The upgrade plan of a version bump: what a component's new release does, in the order it must happen.

A bump is an Argo CD Application whose chart moves from one supported release to another (the
registry maps a chart and version to its release). For each, the plan goes hop by hop through the
releases upstream requires as stops (`gpuplan.components.upgrades.steps`), and per hop lists:
upstream's action notes, the CRD changes between the shipped sets and how the Application installs
them, the objects gpuplan renders differently, the chart defaults the fleet does not set, the operand
images that restart on the GPU nodes, and the metrics the fleet reads that the new exporter drops.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from gpuplan.components import REGISTRY
from gpuplan.components.base import Component, Release
from gpuplan.components.skew import SKEW, kubernetes_stops
from gpuplan.components.values import COMPONENTS as COVERED
from gpuplan.diff import upgrade_crds, upgrade_gpu, upgrade_reach
from gpuplan.diff.kinds import Blast, Context, Disruption, dig, is_kind, listing, mapping
from gpuplan.diff.objects import Side
from gpuplan.diff.upgrade_model import (
    NONE,
    UPSTREAM,
    Bump,
    Bumped,
    Hop,
    Plan,
    Step,
    Upstream,
)
from gpuplan.plan.pools import POOL_LABEL

__all__ = ["NONE", "UPSTREAM", "Bumped", "Plan", "Step", "Upstream", "bumps", "findings", "plans"]

ARGOCD = "argoproj.io"
CLUSTER_LABEL = "gpuplan.io/cluster"
GPU_NODE_COMPONENTS = ("gpu-operator", "dra-driver")  # DaemonSets on every GPU node
ARGO = "argoproj/argo-cd@v3.5.1"
# Argo CD renders a chart with `helm template --include-crds` unless skipCrds (util/helm/cmd.go), so
# a sync applies the chart's crds/, which `helm upgrade` never does; a pre-upgrade hook runs as a
# PreSync hook on every sync (docs/user-guide/helm.md "Helm Hooks").
INCLUDE_CRDS = f"{ARGO}:util/helm/cmd.go"
HOOKS = f"{ARGO}:docs/user-guide/helm.md"


def _sources(obj: dict[str, object]) -> list[dict[str, object]]:
    spec = mapping(obj.get("spec"))
    items = [spec["source"]] if spec.get("source") else listing(spec.get("sources"))
    return [mapping(s) for s in items]


def _charts(release: Release) -> list[object]:
    return [c for c in (release.chart, getattr(release, "stack_chart", None)) if c is not None]


def releases_on(
    obj: dict[str, object], crd_charts: bool = False
) -> dict[str, tuple[Component, Release]]:
    """Return component -> (component, release) of every supported chart an Application installs;
    with `crd_charts` also a release's CRD-only chart (karpenter-crd, the same repository and version)."""
    out = {}
    for source in _sources(obj):
        name, version = source.get("chart"), str(source.get("targetRevision", ""))
        if crd_charts and isinstance(name, str):
            name = name.removesuffix("-crd")
        repo = str(source.get("repoURL", ""))
        for component in REGISTRY.values():
            for release in component.releases:
                for chart in _charts(release):
                    if (
                        getattr(chart, "name", None) == name
                        and getattr(chart, "version", None) == version
                        and str(getattr(chart, "repo", "")).removeprefix("oci://") == repo
                    ):
                        out[component.name] = (component, release)
    return out


def bumps(ctx: Context) -> list[Bump]:
    """Return every component whose release an Application moves."""
    out = []
    for key in ctx.changed():
        if not is_kind(key, ARGOCD, "Application"):
            continue
        before, after = releases_on(ctx.old[key].obj), releases_on(ctx.new[key].obj)
        labels = mapping(dig(ctx.new[key].obj, "metadata", "labels"))
        scope = str(labels.get(CLUSTER_LABEL) or key.scope)
        for name in sorted(before.keys() & after.keys()):
            component, old = before[name]
            new = after[name][1]
            if old.version != new.version and old.line == new.line:
                out.append(Bump(scope, component, new.line, old, new, key))
    return out


def plans(ctx: Context, bumped: Bumped = NONE) -> list[Plan]:
    """Return the upgrade plan of every bump, by cluster: its Kubernetes version first, then its
    components; a held release (the base could not render it) shows the new one on both sides."""
    found = {(b.scope, b.component.name): b for b in bumps(ctx)}
    for (scope, name), version in sorted(bumped.held.items()):
        made = _held_bump(ctx.new, scope, name, version)
        if made is not None:
            found.setdefault((scope, name), made)
    out = [_kubernetes_plan(ctx, c, *v) for c, v in sorted(bumped.kubernetes.items())]
    out += [_plan(ctx, b, bumped.source) for _, b in sorted(found.items())]
    return sorted(out, key=lambda p: p.scope)


def _held_bump(side: Side, scope: str, name: str, version: str) -> Bump | None:
    for key, entry in side.items():
        labels = mapping(dig(entry.obj, "metadata", "labels"))
        if is_kind(key, ARGOCD, "Application") and labels.get(CLUSTER_LABEL) == scope:
            on = releases_on(entry.obj).get(name)
            if on is not None:
                component, new = on
                old = component.release(version, new.line)
                return Bump(scope, component, new.line, old, new, key, held=True)
    return None


def _reach(ctx: Context, bump: Bump) -> Blast:
    if bump.component.name in GPU_NODE_COMPONENTS:
        return ctx.facts.cluster(bump.scope)
    return Blast(text="its own pods only: no GPU node is touched")


def _nodes_of(ctx: Context, bump: Bump) -> Blast:
    """Return the nodes a component's own change can replace: Karpenter's NodePools', else every GPU node."""
    if bump.component.name != "karpenter":
        return ctx.facts.cluster(bump.scope)
    pools = {
        str(
            mapping(dig(entry.obj, "spec", "template", "metadata", "labels")).get(POOL_LABEL)
            or key.name
        )
        for side in (ctx.old, ctx.new)
        for key, entry in side.items()
        if key.scope == bump.scope and is_kind(key, "karpenter.sh", "NodePool")
    }
    return ctx.facts.some(bump.scope, pools)


def _plan(ctx: Context, bump: Bump, source: Upstream) -> Plan:
    stops = tuple(source.stops(bump.component, bump.line, bump.old.version, bump.new.version))
    path = [bump.old] + [bump.component.release(s.version, bump.line) for s in stops] + [bump.new]
    hops = tuple(
        Hop(a.version, b.version, tuple(_hop(ctx, bump, a, b, source))) for a, b in pairwise(path)
    )
    note = (
        f"the base runs {bump.old.version}, which gpuplan does not render (chart-cluster-policy): its objects are compared as rendered at {bump.new.version}, the releases' facts as they are"
        if bump.held
        else ""
    )
    reach = _reach(ctx, bump)
    if not reach.nodes:  # a step that replaces nodes by itself reaches them all the same
        reach = next((s.blast for h in hops for s in h.steps if s.blast.nodes), reach)
    return Plan(
        bump.scope, bump.component.name, bump.line, bump.old.version, bump.new.version,
        bump.application.label(), reach, stops, hops, note,
    )  # fmt: skip


def _hop(ctx: Context, bump: Bump, old: Release, new: Release, source: Upstream) -> Iterator[Step]:
    """Yield what one hop does, in the order it happens."""
    for note in source.notes(bump.component, bump.line, old.version, new.version):
        mark = "ACTION REQUIRED" if note.required else "note"
        yield Step(
            "action",
            f"{mark} ({note.version}): {note.action}",
            source=note.source,
            blast=_nodes_of(ctx, bump) if note.replaces_nodes else Blast(),
            action=note.required,
        )
    yield from _crd_steps(ctx, bump, old, new)
    yield from _api_steps(ctx, bump, old, new)
    yield from _default_steps(ctx, bump, old, new)
    yield from upgrade_gpu.image_steps(ctx, bump, old, new)
    yield from _metric_steps(ctx, bump, old, new)


def _crd_steps(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    component = bump.component
    old_set, new_set = component.crd_set(old), component.crd_set(new)
    if old_set is None or new_set is None or upgrade_crds.same_set(old_set, new_set):
        return
    changes = upgrade_crds.crd_changes(old_set, new_set)
    changes += upgrade_crds.pruned_fields(new_set, bump.scope, (ctx.old, ctx.new))
    if changes:
        acts = [c for c in changes if c.action]
        sources = sorted({c.source for c in changes if c.source})
        text = f"{old_set} -> {new_set}: {len(changes)} change{'s' if len(changes) != 1 else ''}"
        if acts:
            text += f", {len(acts)} to act on: " + "; ".join(c.short for c in acts[:2])
            text += f" (and {len(acts) - 2} more)" if len(acts) > 2 else ""
        details = tuple(c.line for c in changes)
        yield Step("crds", text, details, ", ".join(sources), action=bool(acts))
    else:
        yield Step(
            "crds", f"{old_set} -> {new_set}: validation details only (same versions and fields)"
        )
    yield _install_step(ctx, bump)


def _install_step(ctx: Context, bump: Bump) -> Step:
    """Return how this fleet's Application brings the new CRDs to the cluster."""
    app = ctx.new[bump.application].obj
    helm = next((mapping(s.get("helm")) for s in _sources(app) if s.get("chart")), {})
    options = [str(o) for o in listing(dig(app, "spec", "syncPolicy", "syncOptions"))]
    side = " server-side (ServerSideApply=true)" if "ServerSideApply=true" in options else ""
    if helm.get("skipCrds"):
        crd_app = _crd_application(ctx.new, bump)
        where = f"{crd_app} (its own chart, an earlier sync wave)" if crd_app else "another source"
        text = f"{bump.application.label()} skips the chart's crds/ (skipCrds); the CRDs come from {where}, applied{side} before the controller restarts"
        return Step("crd-install", text, source=INCLUDE_CRDS)
    text = f"unlike `helm upgrade`, Argo CD renders the chart with its CRDs (--include-crds) and applies them{side} in the same sync as the controller"
    if bump.component.name == "gpu-operator":
        text += "; the chart's operator.upgradeCRD pre-upgrade hook (on: gpuplan sets it) applies them again first, as a PreSync hook"
        return Step("crd-install", text, source=f"{INCLUDE_CRDS}, {HOOKS}")
    return Step("crd-install", text, source=INCLUDE_CRDS)


def _crd_application(side: Side, bump: Bump) -> str:
    for key, entry in side.items():
        labels = mapping(dig(entry.obj, "metadata", "labels"))
        charts = [str(s.get("chart", "")) for s in _sources(entry.obj)]
        if (
            is_kind(key, ARGOCD, "Application")
            and labels.get(CLUSTER_LABEL) == bump.scope
            and any(c.endswith("-crd") for c in charts)
        ):
            return key.label()
    return ""


def _groups(component: Component, release: Release) -> set[str]:
    crd_set = component.crd_set(release)
    if crd_set is None:
        return set()
    return {str(dig(d, "spec", "group")) for d in upgrade_crds.crd_documents(crd_set).values()}


def _api_steps(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    """Yield how gpuplan renders the component's objects differently: new apiVersions, kinds that
    replace others, and the GPU Operator's ClusterPolicy moving from the chart to gpuplan."""
    yield from upgrade_gpu.switch_over(ctx, bump, old, new)
    if new.version != bump.new.version:
        return  # the objects on both sides are those of the bump's ends: shown on the last hop only
    yield from _rendered(
        ctx, bump.scope, _groups(bump.component, new) | _groups(bump.component, old)
    )


def _rendered(ctx: Context, scope: str, groups: set[str] | None) -> Iterator[Step]:
    """Yield the objects of a cluster (of these API groups; None: all) rendered at another
    apiVersion, and the kinds that replace others."""
    moved, groups_moved = [], set()
    old_keys = {k: e for k, e in ctx.old.items() if k.scope == scope}
    new_keys = {k: e for k, e in ctx.new.items() if k.scope == scope}
    for key in sorted(old_keys.keys() & new_keys.keys(), key=str):
        was, now = old_keys[key].obj.get("apiVersion"), new_keys[key].obj.get("apiVersion")
        if was != now and (groups is None or key.group in groups):
            moved.append(f"{key.label()}: {was} -> {now}")
            groups_moved.add(key.group)
    kinds = groups if groups is not None else groups_moved  # every group: those that move only
    gone = {k.kind for k in old_keys if k.group in kinds} - {k.kind for k in new_keys}
    came = {k.kind for k in new_keys if k.group in kinds} - {k.kind for k in old_keys}
    if moved:
        text = f"gpuplan renders {len(moved)} object{'s' if len(moved) != 1 else ''} at a new apiVersion: Argo CD applies them as such and the API server converts what it stores"
        yield Step("api", text, tuple(moved))
    if gone or came:
        text = f"gpuplan renders {', '.join(sorted(came)) or 'no new kind'} instead of {', '.join(sorted(gone)) or 'nothing'}: Argo CD creates the new objects and prunes the old ones in the same sync"
        yield Step("api", text, action=bool(gone))


def _default_steps(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    given = upgrade_reach.application_values(ctx.new[bump.application].obj)
    found = upgrade_reach.default_changes(
        bump.component.name, bump.line, old.version, new.version, given
    )
    if found is None:
        if bump.component.name in COVERED:  # a release added without its values
            missing = (
                "chart values of this release are not shipped: run scripts/fetch_chart_values.py"
            )
        else:
            missing = "gpuplan does not compare this chart's defaults: read its release notes"
        yield Step("defaults", f"{old.version} -> {new.version}: {missing}")
        return
    if not found[0]:
        return
    changes, sources = found
    named = ", ".join(c.split(":", 1)[0] for c in changes[: upgrade_reach.SHOWN])
    more = (
        f" and {len(changes) - upgrade_reach.SHOWN} more"
        if len(changes) > upgrade_reach.SHOWN
        else ""
    )
    one = len(changes) == 1
    text = f"{len(changes)} chart default{'' if one else 's'} {'changes' if one else 'change'} that gpuplan's values leave alone ({named}{more})"
    yield Step("defaults", text, tuple(changes), sources)


def _metric_steps(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    before = upgrade_reach.metric_names(bump.component.name, old)
    after = upgrade_reach.metric_names(bump.component.name, new)
    if before is None or after is None:
        return
    gone = before - after
    read = upgrade_reach.readers(ctx.new, bump.scope, gone)
    if read:
        lines = tuple(f"{m}: read by {', '.join(who)}" for m, who in read.items())
        text = f"{len(read)} metric{'s' if len(read) != 1 else ''} the fleet reads {'are' if len(read) != 1 else 'is'} no longer collected ({', '.join(read)}): those alerts, dashboards and adapter rules go silent"
        sources = ", ".join(upgrade_reach.metric_source(bump.component.name, r) for r in (old, new))
        yield Step("metrics", text, lines, sources, action=True)


def _kubernetes_plan(ctx: Context, scope: str, old: str, new: str) -> Plan:
    """Return a cluster's Kubernetes bump: one minor at a time, the control plane before the nodes."""
    stops = tuple(kubernetes_stops(old, new))
    path = [old, *(s.version for s in stops), new]
    blast = ctx.facts.cluster(scope)
    hops = []
    for was, now in pairwise(path):
        text = f"control plane {was} -> {now} first, then the nodes (a kubelet may be up to three minors older than kube-apiserver, never newer): each node is drained and upgraded or replaced, as the provider does it"
        steps = [Step("nodes", text, source=SKEW, blast=blast)]
        if now == new:
            steps += _rendered(ctx, scope, None)
        hops.append(Hop(was, now, tuple(steps)))
    return Plan(scope, "kubernetes", "", old, new, "", blast, stops, tuple(hops))


def findings(found: list[Plan]) -> Iterator[Disruption]:
    """Yield one finding per plan: `upgrade-skip` for a skip upstream forbids, else `upgrade`."""
    for plan in found:
        if plan.stops:
            via = ", ".join(s.version for s in plan.stops)
            text = f"{plan.title} skips {via}, which upstream requires as a stop: bump to {plan.stops[0].version} first and merge it, then on (see the upgrade plan)"
            yield Disruption(plan.scope, "upgrade-skip", plan.component, text, plan.blast)
        else:
            acts = sum(1 for h in plan.hops for s in h.steps if s.action)
            text = f"{plan.title}: " + (
                "CRDs and chart defaults unchanged"
                + (
                    f", {plan.notes} upstream note{'s' if plan.notes > 1 else ''}"
                    if plan.notes
                    else ""
                )
                if plan.identical
                else f"{sum(len(h.steps) for h in plan.hops)} steps, {acts} to act on (see the upgrade plan)"
            )
            yield Disruption(plan.scope, "upgrade", plan.component, text, plan.blast)
