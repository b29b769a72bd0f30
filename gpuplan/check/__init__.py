"""Cross-object and capacity checks over the resolved fleet: small named functions, one registry.

A check is `def check_x(fleet) -> Iterable[Diagnostic]`, registered with @check; adding one is
one function in the module of its topic. A component's check modules are named by its registry
entry (gpuplan/components/), so a new component's checks need no line here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator

from gpuplan.diagnostics import Diagnostic, with_code
from gpuplan.fleet import ClusterPlan, Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
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


def run_checks(fleet: Fleet) -> list[Diagnostic]:
    """Run every registered check and return all findings."""
    found: list[Diagnostic] = []
    for fn in CHECKS:
        found.extend(with_code(fn(fleet), code_of(fn)))
    return found


def _register() -> None:
    """Import the checks of no one component, then each registry component's check modules."""
    # register the checks (gke: GKE's GPU stack, which is no registry component)
    from gpuplan.check import capacity, gke, quotas, rbac, tenants, topology  # noqa: F401
    from gpuplan.components import REGISTRY

    for component in REGISTRY.values():
        for module in component.checks:
            importlib.import_module(module)


_register()
