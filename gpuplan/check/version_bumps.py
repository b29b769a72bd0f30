"""Version bumps against `check --base REF`: a bump that skips a release upstream requires as a stop."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.components import REGISTRY, chosen
from gpuplan.components.skew import SKEW, kubernetes_stops
from gpuplan.components.upgrades import steps
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import ClusterPlan, Fleet


@check
def check_upgrade_skip(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a bump since the base that skips a required stop: a component release upstream
    requires (upgrades.STOPS), or a Kubernetes minor.

    Upstream refuses such a skip (a storage migration or a conversion the skipped release runs), so
    the bump must be merged in steps; `gpuplan diff` shows the same as an `upgrade-skip` finding.
    """
    for cluster in fleet.clusters.values():
        yield from _kubernetes_skip(fleet, cluster)
        for name, component in REGISTRY.items():
            base = (fleet.base_releases or {}).get((cluster.name, name))
            now = chosen(component, cluster.spec)
            if base is None or now is None or base[1] != now[1] or base[0] == now[0]:
                continue
            stops = steps(component, now[1], base[0], now[0])
            if stops:
                via = ", ".join(f"{s.version} ({s.why}; {s.source})" for s in stops)
                message = f"{name} {base[0]} -> {now[0]} skips what upstream requires as a stop: {via}; bump to {stops[0].version} first and merge it, then on"
                yield cluster.located.source.diagnostic(
                    ("components", component.field, "version"), message
                )


def _kubernetes_skip(fleet: Fleet, cluster: ClusterPlan) -> Iterator[Diagnostic]:
    """Yield an error when the cluster's Kubernetes version moves more than one minor since the base."""
    base = (fleet.base_releases or {}).get((cluster.name, "kubernetes"))
    now = str(cluster.spec.kubernetes_version)
    stops = kubernetes_stops(base[0], now) if base is not None else []
    if base is not None and stops:
        skipped = ", ".join(s.version for s in stops)
        message = f"Kubernetes {base[0]} -> {now} skips {skipped}: the control plane moves one minor at a time ({SKEW}); bump to {stops[0].version} first and merge it, then on"
        yield cluster.located.source.diagnostic(("kubernetesVersion",), message)
