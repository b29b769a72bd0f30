"""Volcano rules: what the Queue CRD and Volcano's own queues leave to tenants."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import allocation_check, check
from gpuplan.components.volcano import RESERVED_QUEUES, VolcanoRelease
from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.plan.fleet import AllocationPlan, Fleet


@allocation_check
def check_volcano_queues(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error on queue weights above the Queue CRD's maximum and on Volcano's reserved names."""
    cluster = alloc.cluster
    name, release = cluster.name, cluster.release("volcano")
    if release is None:
        return  # the cluster does not run Volcano (or a version gpuplan does not know: resolve.py)
    most = release.max_weight if isinstance(release, VolcanoRelease) else None
    weight = alloc.spec.weight or 1
    if most is not None and weight > most:
        yield alloc.tenant.source.diagnostic(
            alloc.loc("weight"),
            f"weight {weight} is above {most}, the most a Volcano queue takes (cluster {name} runs Volcano)",
        )
    if alloc.name in RESERVED_QUEUES:
        yield alloc.tenant.source.diagnostic(
            ("name",),
            f"tenant {alloc.name!r} would take over Volcano's own queue of that name on cluster {name}: rename the tenant",
        )


@check
def check_quota_authority(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when Kueue and Volcano both run and no quota authority is named (Kueue is); error when it names one that does not run."""
    for cluster in fleet.clusters.values():
        components = cluster.spec.components
        both = components.kueue is not None and components.volcano is not None
        named = components.quota_authority
        source = cluster.located.source
        if named is not None and getattr(components, named) is None:
            yield source.diagnostic(
                ("components", "quotaAuthority"),
                f"quotaAuthority {named}: cluster {cluster.name} does not run {named.capitalize()}",
            )
        elif both and named is None:
            line, col = source.position(("components",), True)
            yield Diagnostic(source.path, line, col, Severity.WARNING, "components", (
                f"cluster {cluster.name} runs both Kueue and Volcano, so Kueue enforces the tenants' quotas and Volcano only "
                "gang-schedules: say so with components.quotaAuthority: kueue, or volcano to have Volcano enforce them "
                "(Kueue then manages no job without a queue name)"
            ))  # fmt: skip
