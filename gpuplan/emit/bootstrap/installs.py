"""What each operator Application installs, for the deployment graph check (gpuplan.validate.graph)."""

from __future__ import annotations

from gpuplan.crds import crd_set
from gpuplan.emit.bootstrap import operators
from gpuplan.plan.fleet import ClusterPlan, Fleet

Kind = tuple[str, str]  # (group, kind)


def set_kinds(crds: str) -> set[Kind]:
    """Return the (group, kind) of every CRD of a shipped set ("kueue/v0.19.2")."""
    component, _, version = crds.rpartition("/")
    return {(c.group, c.kind) for c in crd_set(component, version)}


def installs(fleet: Fleet) -> dict[str, set[Kind]]:
    """Return operator Application name -> the custom resource kinds whose CRDs it installs."""
    out: dict[str, set[Kind]] = {}
    for name, cluster in fleet.clusters.items():
        for operator in operators(cluster):
            out[f"{name}-{operator.name}"] = {k for s in operator.crds for k in set_kinds(s)}
    return out


def cluster_kinds(fleet: Fleet) -> dict[str, set[Kind]]:
    """Return operator Application name -> the cluster-scoped kinds its chart creates."""
    out: dict[str, set[Kind]] = {}
    for name, cluster in fleet.clusters.items():
        for operator in operators(cluster):
            out[f"{name}-{operator.name}"] = {
                (k.rpartition("/")[0], k.rpartition("/")[2]) for k in operator.cluster_kinds
            }
    return out


def external(cluster: ClusterPlan) -> set[Kind]:
    """Return the kinds the platform installs itself: Karpenter's CRDs under AKS Node Auto Provisioning."""
    karpenter = cluster.spec.components.karpenter
    release = cluster.release("karpenter")
    if karpenter is None or release is None or release.crds is None:
        return set()
    if cluster.spec.provider == "azure" and not karpenter.self_hosted:
        return set_kinds(release.crds)
    return set()
