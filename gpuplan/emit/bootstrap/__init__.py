"""Bootstrap: the Argo CD Applications that install each cluster's operators, and the fleet's root.

Per cluster and enabled component, one Application (output/argocd/<cluster>/<component>.yaml) installs
the component's chart at the registry's pinned version with values derived from the model. Each
component module below returns its `Operator`s; another module adds one with `register()`:

    from gpuplan.emit.bootstrap import Operator, register
    register(lambda cluster: [Operator("sriov-device-plugin", "kube-system", chart=...)] if ... else [])
"""

from __future__ import annotations

from collections.abc import Callable

from gpuplan.emit.bootstrap.app import (
    CLUSTER_LABEL,
    COMPONENT_LABEL,
    CRD_WAVE,
    OPERATOR_WAVE,
    Operator,
    operator_application,
)
from gpuplan.emit.bootstrap.cluster_autoscaler import operators as cluster_autoscaler
from gpuplan.emit.bootstrap.dra_driver import operators as dra_driver
from gpuplan.emit.bootstrap.fabrics import operators as fabrics
from gpuplan.emit.bootstrap.gpu_operator import operators as gpu_operator
from gpuplan.emit.bootstrap.kai import operators as kai
from gpuplan.emit.bootstrap.karpenter import operators as karpenter
from gpuplan.emit.bootstrap.kueue import operators as kueue
from gpuplan.emit.bootstrap.monitoring import operators as monitoring
from gpuplan.emit.bootstrap.multus import operators as multus
from gpuplan.emit.bootstrap.nfd import operators as nfd
from gpuplan.emit.bootstrap.volcano import operators as volcano
from gpuplan.plan.fleet import ClusterPlan

__all__ = [
    "CLUSTER_LABEL", "COMPONENT_LABEL", "CRD_WAVE", "OPERATOR_WAVE", "Operator",
    "operator_application", "operators", "register",
]  # fmt: skip

OperatorSource = Callable[[ClusterPlan], list[Operator]]
CACHE_KEY = "bootstrap.operators"

_SOURCES: list[OperatorSource] = [
    gpu_operator,
    nfd,
    kueue,
    volcano,
    kai,
    karpenter,
    multus,
    monitoring,
    fabrics,
    cluster_autoscaler,
    dra_driver,
]


def register(source: OperatorSource) -> OperatorSource:
    """Add a function returning the operators a cluster needs (a component outside the registry)."""
    if source not in _SOURCES:
        _SOURCES.append(source)
    return source


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return every operator a cluster installs, sorted by Application name (computed once per cluster)."""
    cached = cluster.cache.get(CACHE_KEY)
    if cached is None:
        cached = sorted((o for source in _SOURCES for o in source(cluster)), key=lambda o: o.name)
        cluster.cache[CACHE_KEY] = cached
    return list(cached)  # type: ignore[call-overload]
