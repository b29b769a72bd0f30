"""The GPU Operator's Application: chart values that agree with the ClusterPolicy gpuplan renders.

Chart keys (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml, every supported tag from v25.3.1
to v26.7.0): `operator.upgradeCRD` (a pre-upgrade hook that applies the chart's new CRDs, which Helm
itself never upgrades), `driver.enabled`, `toolkit.enabled`, `nfd.enabled`. The rest
(`clusterPolicy.deployCR: false`, NVIDIADriver defaults, the bundled NFD worker's tolerations) comes
from gpuplan.emit.gpu_operator_values.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components import REGISTRY
from gpuplan.emit import gpu_operator as policy_emitter
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.emit.gpu_operator_values import chart_values
from gpuplan.plan.fleet import ClusterPlan

NAME = "gpu-operator"


def _policy_spec(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the spec of the ClusterPolicy gpuplan emits for the cluster (read, not recomputed)."""
    for item in policy_emitter.emit(cluster):
        if item.kind == "ClusterPolicy":
            return dict(item.obj.get("spec") or {})
    return {}


def values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the chart values: gpuplan's ClusterPolicy stays the only one, operands as it says."""
    out = chart_values(cluster)
    operator = cluster.spec.components.gpu_operator
    assert operator is not None
    spec = _policy_spec(cluster)
    # The chart's driver/toolkit switches feed only the ClusterPolicy it no longer renders; kept
    # equal to gpuplan's so `helm template` and the live ClusterPolicy tell the same story.
    out.setdefault("driver", {})["enabled"] = bool((spec.get("driver") or {}).get("enabled", True))
    out["toolkit"] = {"enabled": bool((spec.get("toolkit") or {}).get("enabled", True))}
    out["operator"] = {"upgradeCRD": True}
    if operator.nfd == "standalone":
        out["nfd"] = {"enabled": False}
        out.pop("node-feature-discovery", None)
    return out


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the GPU Operator's Application, if the cluster runs it."""
    operator = cluster.spec.components.gpu_operator
    release = cluster.release(NAME)
    if operator is None or release is None or release.chart is None:
        return []
    crds = [REGISTRY[NAME].crd_set(release)]
    if operator.nfd == "bundled":
        crds.append(REGISTRY["nfd"].crd_set(REGISTRY["nfd"].newest()))
    return [
        Operator(
            NAME, operator.namespace, chart=release.chart, values=values(cluster),
            privileged=True,  # driver, toolkit and device plugin run privileged with host paths
            server_side=True,  # the ClusterPolicy CRD is larger than client-side apply allows
            crds=tuple(c for c in crds if c),
        )
    ]  # fmt: skip
