"""Fleet -> manifests, one module per component; pure functions, no I/O.

A component's emitter is named by its registry entry (gpuplan/components/): adding a component is one
new module with an `emit(cluster)` function and one registry line, nothing here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter

from gpuplan.components import REGISTRY
from gpuplan.components.base import load
from gpuplan.emit import admission, argocd, nodeclass, priorities, sriov, tenants
from gpuplan.emit.meta import Manifest, finalized
from gpuplan.plan.fleet import ClusterPlan, Fleet

ClusterEmitter = Callable[[ClusterPlan], list[Manifest]]
FleetEmitter = Callable[[Fleet, str], list[Manifest]]

# PriorityClasses and the tenants' namespaces, quotas and policies belong to no one component; the
# SR-IOV device plugin comes with the networks (gpuplan/emit/sriov.py).
EMITTERS: tuple[ClusterEmitter, ...] = (
    priorities.emit,
    tenants.emit,
    nodeclass.emit,
    sriov.emit,
    admission.emit,
) + tuple(load(c.emitter) for c in REGISTRY.values() if c.emitter and c.scope == "cluster")
FLEET_EMITTERS: tuple[FleetEmitter, ...] = tuple(
    load(c.emitter) for c in REGISTRY.values() if c.emitter and c.scope == "fleet"
)


def emit(
    fleet: Fleet, only: Iterable[str] = (), output_path: str = argocd.OUTPUT_PATH
) -> list[Manifest]:
    """Return every manifest of the fleet (or of the named clusters), finalized and sorted."""
    wanted = set(only)
    manifests: list[Manifest] = []
    for name in sorted(fleet.clusters):
        if wanted and name not in wanted:
            continue
        cluster = fleet.clusters[name]
        cluster_manifests = [m for emitter in EMITTERS for m in finalized(emitter(cluster))]
        manifests.extend(cluster_manifests)
        manifests.append(argocd.kustomization(cluster, cluster_manifests))
    for fleet_emitter in FLEET_EMITTERS:
        manifests.extend(fleet_emitter(fleet, output_path))
    return sorted(manifests, key=attrgetter("path"))
