"""Version bumps against `check --base REF`: a bump that skips a release upstream requires as a stop."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.components import REGISTRY, chosen
from gpuplan.components.upgrades import steps
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet


@check
def check_upgrade_skip(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a component bump since the base that skips a required stop (upgrades.STOPS).

    Upstream refuses such a skip (a storage migration or a conversion the skipped release runs), so
    the bump must be merged in steps; `gpuplan diff` shows the same as an `upgrade-skip` finding.
    """
    for cluster in fleet.clusters.values():
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
