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
    """Return the kinds the cluster has before gpuplan syncs anything: Karpenter's CRDs under AKS Node
    Auto Provisioning, and the Prometheus Operator's where the cluster runs its own Prometheus."""
    found: set[Kind] = set()
    karpenter = cluster.spec.components.karpenter
    release = cluster.release("karpenter")
    nap = karpenter is not None and cluster.spec.provider == "azure" and not karpenter.self_hosted
    if nap and release is not None and release.crds is not None:
        found |= set_kinds(release.crds)
    monitoring = cluster.spec.components.monitoring
    stack = cluster.release("monitoring")
    existing = monitoring is not None and monitoring.prometheus.install == "existing"
    if existing and stack is not None and stack.crds is not None:
        found |= set_kinds(stack.crds)
    return found
