"""Node Feature Discovery on its own (the GPU Operator's `nfd: standalone`, or NodeFeatureRules without
the GPU Operator): chart `node-feature-discovery` (kubernetes-sigs/node-feature-discovery v0.19.0
deployment/helm/node-feature-discovery/values.yaml: `worker.tolerations`)."""

from __future__ import annotations

from gpuplan.components import REGISTRY
from gpuplan.emit import nfd as nfd_emitter
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.emit.gpu_operator_values import nfd_worker_tolerations
from gpuplan.plan.fleet import ClusterPlan

NAME = "nfd"
NAMESPACE = "node-feature-discovery"


def needed(cluster: ClusterPlan) -> bool:
    """Tell whether NFD gets its own Application: standalone, or rules with no GPU Operator to bring it."""
    operator = cluster.spec.components.gpu_operator
    if operator is not None:
        return operator.nfd == "standalone"
    return bool(nfd_emitter.emit(cluster))


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return NFD's Application when the cluster needs one."""
    if not needed(cluster):
        return []
    component = REGISTRY[NAME]
    release = cluster.release(NAME)  # components.nfd.version, else the newest
    if release is None or release.chart is None:
        return []  # an unknown version: an error already
    # Every pool's taint tolerated: a pool NFD does not label runs no GPU Operator operand.
    values: dict[str, object] = {"worker": {"tolerations": nfd_worker_tolerations(cluster)}}
    if nfd_emitter.master_values(cluster):  # pool taints in the rules: nfd-master's enableTaints
        values["master"] = nfd_emitter.master_values(cluster)
    crds = component.crd_set(release)
    return [
        Operator(
            NAME, NAMESPACE, chart=release.chart, values=values, privileged=True,  # worker reads host paths
            crds=(crds,) if crds else (),
        )
    ]  # fmt: skip
