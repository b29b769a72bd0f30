"""A tenant allocation's objects, made once per inputs inside `render --watch` (gpuplan.warm).

Most of a fleet's objects belong to one allocation (its namespaces' objects, its ClusterQueue,
LocalQueues and Volcano Queue), and an edit of one tenant changes few of them: each emitter's
objects of an allocation are kept by what they are made from (gpuplan.entitlements.own_inputs,
or shared_inputs for what reads the cohort's lending), so an unchanged allocation gives the very
same objects, which later stages can then tell unchanged by identity. They are kept finalized
(gpuplan.emit.meta.finalize), so a run does not finalize them again.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuplan import warm
from gpuplan.emit.meta import Manifest, finalized
from gpuplan.entitlements import kept, shared_token
from gpuplan.fleet import AllocationPlan


def objects(
    kind: str,
    alloc: AllocationPlan,
    build: Callable[[AllocationPlan], list[Manifest]],
    cohort: bool,
) -> list[Manifest]:
    """Return build(alloc) finalized, kept by the allocation's inputs (cohort: its cohort's lending too).

    `kind` names `build` (one kind, one function); the list is shared: never change it.
    """
    return kept(f"objects/{kind}", alloc, lambda a: finalized(build(a)), cohort)


def each(
    kind: str,
    allocs: list[AllocationPlan],
    build: Callable[[AllocationPlan], list[Manifest]],
    cohort: bool,
) -> list[list[Manifest]]:
    """Return objects(kind, alloc, build, cohort) for each allocation, in one pass.

    The same lists, kept in the same table by the same tokens (entitlements.kept's), looked up
    in one loop instead of one call per allocation.
    """
    tokens = [shared_token(a) if cohort else a.token for a in allocs]
    if not warm.active() or None in tokens:
        return [objects(kind, alloc, build, cohort) for alloc in allocs]
    # an allocation not found is made as objects() makes it, and kept there as well
    return warm.map_tokens(
        f"objects/{kind}", tokens, lambda a: objects(kind, a, build, cohort), allocs
    )
