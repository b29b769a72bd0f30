"""GKE's own GPU stack: what a node pool can be set to (gpuplan/plan/gke.py has the facts and sources).

GKE partitions every GPU of a node pool into one MIG size (gpu-partition-size) and time-shares each
GPU among at most 48 clients, advertising both as nvidia.com/gpu; a layout it cannot set up would
leave the pool's quotas pointing at resources no node offers.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.plan.gke import (
    ACCELERATOR_LABEL,
    MAX_SHARED_CLIENTS,
    accelerator,
    google_stack,
    machine_type,
)
from gpuplan.plan.pools import PoolPlan


def _gke_pools(fleet: Fleet) -> Iterator[tuple[ClusterPlan, PoolPlan]]:
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if google_stack(cluster.spec):
            for pool in cluster.pools.values():
                yield cluster, pool


def _gcp_pools(fleet: Fleet) -> Iterator[tuple[ClusterPlan, PoolPlan]]:
    """Yield every pool of the gcp clusters, whichever GPU stack they run."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if cluster.spec.provider == "gcp":
            for pool in cluster.pools.values():
                yield cluster, pool


def _mig_problem(pool: PoolPlan) -> tuple[tuple[str, ...], str] | None:
    mig = pool.spec.sharing.mig
    if mig is None:
        return None
    if mig.layout is None:
        return (
            ("devices",),
            "GKE partitions every GPU of a node pool alike (gpu-partition-size): give one layout, not devices",
        )
    profiles = [name for name, count in mig.layout.items() if count]
    # One gpu-partition-size per node pool: cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi.
    if len(profiles) != 1:
        listed = ", ".join(profiles) or "none"
        return (
            ("layout",),
            f"GKE sets one MIG partition size per node pool (gpu-partition-size), this layout has {listed}: split the pool into node pools of one profile each",
        )
    geometry = pool.model.mig
    spec = geometry.profile(profiles[0]) if geometry is not None else None
    if spec is not None and mig.layout[profiles[0]] != spec.max_instances:
        return (
            ("layout", profiles[0]),
            f"GKE cuts each GPU into as many {profiles[0]} partitions as fit, {spec.max_instances} on {pool.model.name}: set {profiles[0]}: {spec.max_instances}",
        )
    return None


@check
def check_gke_mig(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a MIG layout GKE's gpu-partition-size cannot make: one profile per node pool, at its full count."""
    for cluster, pool in _gke_pools(fleet):
        found = _mig_problem(pool)
        if found is not None:
            rest, message = found
            yield cluster.located.source.diagnostic(
                ("nodePools", pool.index, "sharing", "mig", *rest), message
            )


@check
def check_gke_time_sharing(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on time-sharing GKE cannot set: more than 48 clients per GPU, renamed shares, or MPS."""
    for cluster, pool in _gke_pools(fleet):
        sharing = pool.spec.sharing
        base = ("nodePools", pool.index, "sharing")
        if sharing.mps is not None:
            yield cluster.located.source.diagnostic(
                (*base, "mps"),
                "gpuplan does not set up GKE's MPS sharing yet: use timeSlicing, or the GPU Operator (components.gpuOperator)",
            )
        sharer = sharing.time_slicing
        if sharer is None:
            continue
        # 2 to 48 clients per GPU: cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass
        # (gpuSharing.maxSharedClientsPerGPU), the flag itself on .../docs/how-to/timesharing-gpus; the
        # model already refuses fewer than 2 (TimeSlicing.replicas).
        if (sharer.replicas or 1) > MAX_SHARED_CLIENTS:
            message = f"GKE shares a GPU among at most {MAX_SHARED_CLIENTS} clients (max-shared-clients-per-gpu), not {sharer.replicas}"
            yield cluster.located.source.diagnostic((*base, "timeSlicing", "replicas"), message)
        if sharer.rename_by_default:
            message = "GKE advertises time-shared GPUs as nvidia.com/gpu, never nvidia.com/gpu.shared: set renameByDefault: false"
            yield cluster.located.source.diagnostic((*base, "timeSlicing"), message)


@check
def check_gke_accelerator_label(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on a GKE GPU pool that does not state its cloud.google.com/gke-accelerator label."""
    for cluster, pool in _gke_pools(fleet):
        if ACCELERATOR_LABEL not in pool.spec.labels:
            message = (
                f"GKE labels every GPU node with {ACCELERATOR_LABEL} (such as nvidia-l4): state it in labels, so that "
                "the pool's Kueue flavor selects GPU nodes of that type and `gpuplan requirements` names the accelerator"
            )
            loc = ("nodePools", pool.index, "name")
            yield cluster.located.source.warning(loc, message)


@check
def check_gke_expander_priority(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on nodes.priority of a GKE pool: gpuplan writes no priority expander for GKE's own autoscaler."""
    for cluster, pool in _gcp_pools(fleet):
        if pool.spec.nodes.priority is None:
            continue
        message = (
            "GKE runs its own Cluster Autoscaler, for which gpuplan writes no priority expander "
            "(the ConfigMap exists on aws and azure only): this priority has no effect"
        )
        loc = ("nodePools", pool.index, "nodes", "priority")
        yield cluster.located.source.warning(loc, message)


@check
def check_gke_machine_type(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on a GKE node pool whose GPU and count no Compute Engine machine type has."""
    for cluster, pool in _gcp_pools(fleet):
        if pool.spec.node_group is None:
            continue
        kind = accelerator(pool.spec, pool.model.name)
        found = machine_type(pool.model.name, pool.gpus_per_node, kind)
        if found.fits:
            continue
        loc = ("nodePools", pool.index, "gpusPerNode")
        message = f"{found.text} (gpuplan requirements prints no machine type for node pool {pool.spec.node_group})"
        yield cluster.located.source.warning(loc, message)
