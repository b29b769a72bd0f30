"""Cross-object and capacity checks over the resolved fleet: small named functions, one registry.

A check is `def check_x(fleet) -> Iterable[Diagnostic]`, registered with @check; adding one is
one function in the module of its topic. A component's check modules are named by its registry
entry (gpuplan/components/), so a new component's checks need no line here.

A check whose findings are each allocation's own is written `def check_x(alloc)` and registered
with @allocation_check: `render --watch` then keeps a tenant's findings of all such checks at
once, by its allocations' tokens, and an edit of one tenant checks that tenant again, not the fleet.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Iterator

from gpuplan import warm
from gpuplan.diagnostics import Diagnostic, with_code
from gpuplan.entitlements import shared_token
from gpuplan.fleet import AllocationPlan, ClusterPlan, Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
AllocationCheck = Callable[[AllocationPlan], Iterable[Diagnostic]]
CHECKS: list[Check] = []
# a check registered with @allocation_check -> its findings of one allocation, and whether they
# read the allocation's cohort (its lending) besides the allocation
PER_ALLOCATION: dict[Check, tuple[AllocationCheck, bool]] = {}
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


def allocation_check(cohort: bool = False) -> Callable[[AllocationCheck], Check]:
    """Register a check made of each allocation's findings, found from that allocation alone.

    The function is given one allocation and may read the allocation as written, its tenant's and
    its cluster's models and what follows from them (pools, grants, figures of own_inputs in
    gpuplan.entitlements), never another allocation; with `cohort`, also its cohort's lending
    (entitlements.shared_inputs: the ceiling, the namespace quotas). What is registered, and
    returned, is the check over the fleet: every allocation, clusters in name order.
    """

    def register(body: AllocationCheck) -> Check:
        @functools.wraps(body)
        def over_fleet(fleet: Fleet) -> Iterator[Diagnostic]:
            for alloc in allocations(fleet):
                yield from body(alloc)

        PER_ALLOCATION[over_fleet] = (body, cohort)
        return check(over_fleet)

    return register


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


def run_checks(fleet: Fleet) -> list[Diagnostic]:
    """Run every registered check and return all findings.

    Inside `render --watch` the allocation checks' findings are kept per tenant (_kept_findings):
    the same findings, in another order (they are shown ordered, gpuplan.diagnostics.ordered).
    """
    keep = warm.active()
    found: list[Diagnostic] = []
    for fn in CHECKS:
        if not (keep and fn in PER_ALLOCATION):
            found.extend(with_code(fn(fleet), code_of(fn)))
    if keep:
        found.extend(_kept_findings(fleet))
    return found


Coded = tuple[tuple[AllocationCheck, str], ...]  # allocation checks and their codes


def _kept_findings(fleet: Fleet) -> list[Diagnostic]:
    """Return the findings of every allocation check, each tenant's kept by its allocations' tokens.

    A tenant's findings of the checks that read its allocations alone are kept by their tokens
    (AllocationPlan.token: the tenant's and each cluster's model, the index), those of the checks
    that read the cohort too by their shared tokens (entitlements.shared_token: with the lending);
    the checks themselves (functions and codes) are part of the key.
    """
    own, shared = _coded(cohort=False), _coded(cohort=True)
    tenants: dict[int, list[AllocationPlan]] = {}
    for alloc in allocations(fleet):
        tenants.setdefault(id(alloc.tenant), []).append(alloc)
    found: list[Diagnostic] = []
    for group in tenants.values():
        found += _findings("check/own", tuple(a.token for a in group), own, group)
        found += _findings("check/shared", tuple(shared_token(a) for a in group), shared, group)
    return found


def _coded(cohort: bool) -> Coded:
    """Return the allocation checks (registered through `check`: all in CHECKS) that read the
    cohort's lending, or those that do not, each with its code."""
    return tuple((body, code_of(fn)) for fn, (body, c) in PER_ALLOCATION.items() if c == cohort)


def _findings(
    kind: str, tokens: tuple[object | None, ...], checks: Coded, group: list[AllocationPlan]
) -> list[Diagnostic]:
    """Return the checks' findings of the allocations, kept by their tokens (one per allocation)."""
    if not checks:
        return []
    if None in tokens:  # allocations gpuplan.resolve did not make: nothing stands for them
        return _check(checks, group)
    return warm.remember_same(kind, tokens, checks, _check, checks, group)


def _check(checks: Coded, group: list[AllocationPlan]) -> list[Diagnostic]:
    return [d for alloc in group for body, code in checks for d in with_code(body(alloc), code)]


def _register() -> None:
    """Import the checks of no one component, then each registry component's check modules."""
    # register the checks (gke: GKE's GPU stack, which is no registry component)
    from gpuplan.check import capacity, gke, quotas, rbac, tenants, topology  # noqa: F401
    from gpuplan.components import REGISTRY

    for component in REGISTRY.values():
        for module in component.checks:
            importlib.import_module(module)


_register()
