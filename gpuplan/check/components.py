"""Component rules: what the GPU Operator and device plugin can actually run."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.gpu_operator import CHART_DEPLOY_CR, GpuOperatorRelease
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet


@check
def check_mps_strategy(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on MPS pools in a cluster with migStrategy mixed (the device plugin refuses it)."""
    for cluster in fleet.clusters.values():
        operator = cluster.spec.components.gpu_operator
        if operator is None or operator.mig_strategy != "mixed":
            continue
        for pool in cluster.pools.values():
            if (
                pool.spec.sharing.mps is not None and pool.spec.dra is None
            ):  # DRA pools: no device plugin
                message = "the NVIDIA device plugin does not run MPS with migStrategy mixed: set components.gpuOperator.migStrategy: single"
                yield cluster.located.source.diagnostic(
                    ("nodePools", pool.index, "sharing", "mps"), message
                )


@check
def check_chart_cluster_policy(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when the GPU Operator chart of the release always renders its own ClusterPolicy.

    Before v26.7.0 the chart's templates/clusterpolicy.yaml has no `clusterPolicy.deployCR` guard
    (NVIDIA/gpu-operator v25.10.1 and v26.7.0 deployments/gpu-operator/templates/clusterpolicy.yaml),
    so the chart and gpuplan would both own `cluster-policy`: two Applications fight over one object.
    """
    for cluster in clusters_with(fleet, "gpu-operator"):
        found = cluster.release("gpu-operator")
        if not isinstance(found, GpuOperatorRelease) or found.has(CHART_DEPLOY_CR):
            continue
        yield cluster.located.source.diagnostic(("components", "gpuOperator", "version"), (
            f"the gpu-operator chart {found.version} always renders its own ClusterPolicy named cluster-policy "
            "(clusterPolicy.deployCR exists from v26.7.0), the name of gpuplan's, so two owners would fight over "
            "it: use v26.7.0 or later"
        ))  # fmt: skip
