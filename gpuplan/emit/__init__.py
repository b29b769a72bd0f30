"""Fleet -> manifests, one module per component; pure functions, no I/O.

Adding a component is one new module with an `emit(cluster)` function and one line in EMITTERS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpuplan.emit import argocd, gpu_operator, kueue, priorities, tenants
from gpuplan.emit import karpenter, multus, nfd, volcano
from gpuplan.emit.meta import Manifest, finalize
from gpuplan.fleet import ClusterPlan, Fleet

ClusterEmitter = Callable[[ClusterPlan], list[Manifest]]

EMITTERS: tuple[ClusterEmitter, ...] = (
    priorities.emit,
    tenants.emit,
    kueue.emit,
    gpu_operator.emit,
    volcano.emit,
    karpenter.emit,
    nfd.emit,
    multus.emit,
)


def emit(fleet: Fleet, only: Iterable[str] = (), output_path: str = argocd.OUTPUT_PATH) -> list[Manifest]:
    """Return every manifest of the fleet (or of the named clusters), finalized and sorted."""
    wanted = set(only)
    manifests: list[Manifest] = []
    for name in sorted(fleet.clusters):
        if wanted and name not in wanted:
            continue
        cluster = fleet.clusters[name]
        cluster_manifests = [finalize(m) for emitter in EMITTERS for m in emitter(cluster)]
        manifests.extend(cluster_manifests)
        manifests.append(argocd.kustomization(cluster, cluster_manifests))
    manifests.extend(finalize(m) for m in argocd.applications(fleet, output_path))
    manifests.append(argocd.app_of_apps(fleet))
    return sorted(manifests, key=lambda m: m.path)
