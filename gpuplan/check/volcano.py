"""Volcano rules: what the Queue CRD and Volcano's own queues leave to tenants."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check, clusters_with
from gpuplan.components.volcano import RESERVED_QUEUES, VolcanoRelease
from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import Fleet


@check
def check_volcano_queues(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on queue weights above the Queue CRD's maximum and on Volcano's reserved names."""
    for cluster in clusters_with(fleet, "volcano"):
        name, release = cluster.name, cluster.release("volcano")
        most = release.max_weight if isinstance(release, VolcanoRelease) else None
        for alloc in cluster.allocations:
            weight = alloc.spec.weight or 1
            if most is not None and weight > most:
                yield alloc.tenant.source.diagnostic(alloc.loc("weight"), f"weight {weight} is above {most}, the most a Volcano queue takes (cluster {name} runs Volcano)")
            if alloc.name in RESERVED_QUEUES:
                yield alloc.tenant.source.diagnostic(("name",), f"tenant {alloc.name!r} would take over Volcano's own queue of that name on cluster {name}: rename the tenant")


@check
def check_quota_authority(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when Kueue and Volcano both run on a cluster and none is named the quota authority."""
    for cluster in clusters_with(fleet, "volcano"):
        components = cluster.spec.components
        if components.kueue is not None and components.quota_authority is None:
            yield cluster.located.source.diagnostic(("components",), (
                f"cluster {cluster.name} runs both Kueue and Volcano: say which one enforces the tenants' quotas with "
                "components.quotaAuthority: kueue (Volcano only gang-schedules) or volcano (Kueue manages no job "
                "without a queue name), or a job admitted by one can wait forever in the other"
            ), at_key=True)
