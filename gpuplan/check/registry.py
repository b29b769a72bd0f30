"""The check registry: how a check is declared, and every check and code declared so far.

A check module imports this module (never gpuplan.check, which imports every check module).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator

from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
AllocationCheck = Callable[[AllocationPlan], Iterable[Diagnostic]]
CHECKS: list[Check] = []
EXTRA_CODES: dict[str, str] = {}  # explicit code -> the check that reports it
# Codes of the stages around the checks (sources.py, resolve.py, verify.py, ignores.py, `validate`).
STAGE_CODES = (
    "yaml",
    "schema",
    "input",
    "resolve",
    "output",
    "manifest",
    "unused-ignore",
    "unknown-code",
)


def check(fn: Check) -> Check:
    """Register a check; its findings' code is derived from its name unless they carry one."""
    CHECKS.append(fn)
    return fn


def allocation_check(body: AllocationCheck) -> Check:
    """Register a check made of each allocation's findings: every allocation, clusters in name order."""

    @functools.wraps(body)
    def over_fleet(fleet: Fleet) -> Iterator[Diagnostic]:
        for alloc in allocations(fleet):
            yield from body(alloc)

    return check(over_fleet)


def allocations(fleet: Fleet) -> Iterator[AllocationPlan]:
    """Yield every allocation of the fleet: clusters in name order, each cluster's in its order."""
    for name in sorted(fleet.clusters):
        yield from fleet.clusters[name].allocations


def codes(*names: str) -> Callable[[Check], Check]:
    """Declare the explicit codes a check gives some of its findings (so `ignore` can name them)."""

    def declare(fn: Check) -> Check:
        for name in names:
            EXTRA_CODES[name] = fn.__name__
        return fn

    return declare


def code_of(fn: Check) -> str:
    """Return a check's default code: its name without `check_`, in kebab-case (check_pool_capacity -> pool-capacity)."""
    return fn.__name__.removeprefix("check_").replace("_", "-")


def known_codes() -> set[str]:
    """Return every code a finding of gpuplan can carry."""
    return {code_of(fn) for fn in CHECKS} | set(EXTRA_CODES) | set(STAGE_CODES)


def clusters_with(fleet: Fleet, component: str) -> Iterator[ClusterPlan]:
    """Yield, in name order, the clusters that run a registry component ("kueue", "volcano"...).

    A cluster naming a version gpuplan does not know is left out: resolve.py reports the version.
    """
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if cluster.release(component) is not None:
            yield cluster
