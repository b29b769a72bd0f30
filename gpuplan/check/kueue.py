"""Kueue's size limits, caught on the input: what its schema and webhooks would reject.

Source: kubernetes-sigs/kueue v0.19.2 (../shared/facts/kueue-admission-rules.md): a resource
group holds 1-64 flavors and 1-64 covered resources, at most 512 flavor x resource entries;
a ResourceFlavor has at most 8 nodeLabels and 8 tolerations.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check, clusters_with
from gpuplan.diagnostics import Diagnostic
from gpuplan.entitlements import covered_resources
from gpuplan.fleet import Fleet

MAX_FLAVORS = 64
MAX_COVERED = 64
MAX_COMBINATIONS = 512
MAX_FLAVOR_LABELS = 8
MAX_TOLERATIONS = 8


@check
def check_resource_group_size(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a tenant's one resource group would exceed Kueue's flavor or resource limits."""
    for cluster in clusters_with(fleet, "kueue"):
        for alloc in cluster.allocations:
            flavors, covered = len(alloc.pools()), len(covered_resources(alloc))
            where = alloc.loc("quotas")
            if flavors > MAX_FLAVORS:
                yield alloc.tenant.source.diagnostic(where, f"quota on {flavors} pools: a Kueue resource group holds at most {MAX_FLAVORS} flavors (one per pool)")
            if covered > MAX_COVERED:
                yield alloc.tenant.source.diagnostic(where, f"{covered} resources (cpu, memory and {covered - 2} GPU resources): a Kueue resource group covers at most {MAX_COVERED}")
            if flavors * covered > MAX_COMBINATIONS:
                yield alloc.tenant.source.diagnostic(where, f"{flavors} pools x {covered} resources = {flavors * covered} quota entries: Kueue allows at most {MAX_COMBINATIONS} in one resource group")


@check
def check_flavor_size(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a pool's ResourceFlavor would carry more than 8 node labels or tolerations."""
    for cluster in clusters_with(fleet, "kueue"):
        for pool in cluster.pools.values():
            source = cluster.located.source
            if len(pool.selector_labels) > MAX_FLAVOR_LABELS:
                yield source.diagnostic(("nodePools", pool.index, "labels"), f"{len(pool.selector_labels)} labels select this pool's nodes: a Kueue ResourceFlavor takes at most {MAX_FLAVOR_LABELS} (give the pool hostnames so gpuplan labels the nodes itself)")
            if len(pool.taints) > MAX_TOLERATIONS:
                yield source.diagnostic(("nodePools", pool.index, "taints"), f"{len(pool.taints)} taints: a Kueue ResourceFlavor takes at most {MAX_TOLERATIONS} tolerations")
