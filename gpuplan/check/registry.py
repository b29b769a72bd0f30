"""The check registry: how a check is declared, and every check and code declared so far.

A check module imports this module (never gpuplan.check, which imports every check module).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator

from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet

Check = Callable[[Fleet], Iterable[Diagnostic]]
AllocationCheck = Callable[[AllocationPlan], Iterable[Diagnostic]]
CHECKS: list[Check] = []
EXTRA_CODES: dict[str, str] = {}  # explicit code -> the check that reports it
EXTRA_DESCRIPTIONS: dict[str, str] = {}  # explicit code -> what it reports (the docs' reference)
# Codes of the stages around the checks (sources.py, resolve.py, verify.py, ignores.py, `validate`),
# each with what it reports (the docs' reference shows it).
STAGE_CODES: dict[str, str] = {
    "yaml": "Not reported any more: a YAML syntax error is an `input` error now. Kept so that a "
    "repository naming it in an `ignore` entry still loads.",
    "schema": "Not reported any more: a field the input models refuse is an `input` error now. "
    "Kept so that a repository naming it in an `ignore` entry still loads.",
    "input": "Error on an input file gpuplan cannot read or that its model refuses: YAML syntax, an "
    "unknown or missing field, a value out of bounds, a file name that differs from its `name`, "
    "an own manifest or patch that does not apply.",
    "resolve": "Error on a reference between input files that resolves to nothing or to two things: "
    "an unknown cluster, pool or cohort, a component version gpuplan has no facts for, a "
    "namespace two tenants claim.",
    "output": "Error on a rendered object the proof refuses: the Kubernetes or CRD schema, a CRD's "
    "CEL rule, a webhook rule, or a reference to an object the output does not hold.",
    "manifest": "`gpuplan validate`: a finding about a manifest file it was given (schema, CEL, "
    "webhook rule, object name, duplicate or reference).",
    "unused-ignore": "Warn on an `ignore` entry whose warning is not reported where it stands any "
    "more: remove the entry.",
    "unknown-code": "Error on an `ignore` entry naming a code gpuplan does not have (a typo, or a "
    "renamed check).",
}
# Codes that no input triggers any more (kept for old `ignore` entries): the reference shows none.
RETIRED_CODES = ("yaml", "schema")


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


def codes(*declared: tuple[str, str]) -> Callable[[Check], Check]:
    """Declare the explicit codes a check gives some of its findings, each with what it reports
    (so `ignore` can name them and the docs describe them)."""

    def declare(fn: Check) -> Check:
        for name, description in declared:
            EXTRA_CODES[name] = fn.__name__
            EXTRA_DESCRIPTIONS[name] = description
        return fn

    return declare


def code_of(fn: Check) -> str:
    """Return a check's default code: its name without `check_`, in kebab-case (check_pool_capacity -> pool-capacity)."""
    return fn.__name__.removeprefix("check_").replace("_", "-")


def known_codes() -> set[str]:
    """Return every code a finding of gpuplan can carry."""
    return {code_of(fn) for fn in CHECKS} | set(EXTRA_CODES) | set(STAGE_CODES)


def code_descriptions() -> dict[str, str]:
    """Return every code with what it reports: a check's docstring, or its declared description."""
    found = {code_of(fn): inspect.getdoc(fn) or "" for fn in CHECKS}
    return found | EXTRA_DESCRIPTIONS | STAGE_CODES


def clusters_with(fleet: Fleet, component: str) -> Iterator[ClusterPlan]:
    """Yield, in name order, the clusters that run a registry component ("kueue", "volcano"...).

    A cluster naming a version gpuplan does not know is left out: resolve.py reports the version.
    """
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if cluster.release(component) is not None:
            yield cluster
