"""Cross-object and capacity checks over the resolved fleet: small named functions, one registry.

A check is `def check_x(fleet) -> Iterable[Diagnostic]`, registered with @check; adding one is
one function in the module of its topic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import ClusterPlan, Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    """Register a check."""
    CHECKS.append(fn)
    return fn


def clusters_with(fleet: Fleet, component: str) -> Iterator[ClusterPlan]:
    """Yield, in name order, the clusters that run a component (e.g. "kueue", "volcano")."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if getattr(cluster.spec.components, component) is not None:
            yield cluster


def run_checks(fleet: Fleet) -> list[Diagnostic]:
    """Run every registered check and return all findings."""
    found: list[Diagnostic] = []
    for fn in CHECKS:
        found.extend(fn(fleet))
    return found


from gpuplan.check import capacity, components, karpenter, kueue, networks, quotas, volcano  # noqa: E402,F401  (register the checks)
