"""The component registry: one module per component, one line each in REGISTRY.

The helpers below read a cluster model duck-typed (`cluster.components.<field>`, `cluster.provider`),
so this package imports neither the models nor `emit/` and `check/`, and every stage can use it.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplan.components.argocd import ARGO_CD
from gpuplan.components.base import Chart, Component, Release, UnknownVersion
from gpuplan.components.cluster_autoscaler import CLUSTER_AUTOSCALER
from gpuplan.components.dra_driver import DRA_DRIVER
from gpuplan.components.gpu_operator import COMPONENT as GPU_OPERATOR
from gpuplan.components.kai import KAI
from gpuplan.components.karpenter import KARPENTER
from gpuplan.components.kueue import KUEUE
from gpuplan.components.monitoring import MONITORING
from gpuplan.components.multus import MULTUS_COMPONENT
from gpuplan.components.nfd import NFD
from gpuplan.components.volcano import VOLCANO

__all__ = [
    "REGISTRY",
    "Chart",
    "Component",
    "Release",
    "UnknownVersion",
    "attribute",
    "chosen",
    "namespaces_of",
    "release_of",
    "releases_of",
]  # fmt: skip

# One line per component.
REGISTRY: dict[str, Component] = {
    GPU_OPERATOR.name: GPU_OPERATOR,
    KUEUE.name: KUEUE,
    VOLCANO.name: VOLCANO,
    KARPENTER.name: KARPENTER,
    NFD.name: NFD,
    MULTUS_COMPONENT.name: MULTUS_COMPONENT,
    ARGO_CD.name: ARGO_CD,
    MONITORING.name: MONITORING,
    KAI.name: KAI,
    CLUSTER_AUTOSCALER.name: CLUSTER_AUTOSCALER,
    DRA_DRIVER.name: DRA_DRIVER,
}


def attribute(component: Component) -> str:
    """Return the model attribute of a component's key under `components:` (gpuOperator -> gpu_operator)."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", component.field).lower()


def settings(component: Component, cluster: Any) -> Any:
    """Return the cluster's settings of a component (components.<field>), None when the file has none.

    For a component that is not `configured` the settings only pin its version (components.nfd).
    """
    return getattr(cluster.components, attribute(component), None)


def chosen(component: Component, cluster: Any) -> tuple[str, str] | None:
    """Return the (version, line) a cluster's file asks for, None when the file names no version."""
    spec = settings(component, cluster)
    if spec is None:
        return None
    line = str(getattr(cluster, component.line_field)) if component.line_field else ""
    return spec.version, line


def release_of(component: Component, cluster: Any) -> Release | None:
    """Return the release a cluster runs: None when it does not run the component or the version is unknown.

    A component that is not `configured` runs its newest release unless the cluster pins another.
    """
    wanted = chosen(component, cluster)
    if wanted is None:
        return None if component.configured else component.newest()
    try:
        return component.release(*wanted)
    except UnknownVersion:
        return None


def releases_of(cluster: Any) -> dict[str, Release]:
    """Return, per registry name, the release of every component a cluster runs (known versions only)."""
    found = {}
    for name, component in REGISTRY.items():
        release = release_of(component, cluster)
        if release is not None:
            found[name] = release
    return found


def namespaces_of(cluster: Any) -> list[str]:
    """Return the namespaces the cluster's configured components run in (reserved for them)."""
    out = []
    for component in REGISTRY.values():
        spec = settings(component, cluster)
        namespace = getattr(spec, "namespace", None)
        if namespace:
            out.append(str(namespace))
    return out
