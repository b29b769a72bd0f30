"""Cross-object and capacity checks over the resolved fleet: small named functions, one registry.

A check is `def check_x(fleet) -> Iterable[Diagnostic]`, registered with @check; adding one is
one function in the module of its topic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    """Register a check."""
    CHECKS.append(fn)
    return fn


def run_checks(fleet: Fleet) -> list[Diagnostic]:
    """Run every registered check and return all findings."""
    found: list[Diagnostic] = []
    for fn in CHECKS:
        found.extend(fn(fleet))
    return found


from gpuplan.check import capacity, components, karpenter, kueue, networks, quotas, volcano  # noqa: E402,F401  (register the checks)
