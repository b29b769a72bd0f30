"""Component rules: what the GPU Operator and device plugin can actually run."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.gpu_operator import CHART_DEPLOY_CR, GpuOperatorRelease
from gpuplan.diagnostics import Diagnostic, Severity
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
    """Warn when the GPU Operator chart of the release always renders its own ClusterPolicy."""
    for cluster in clusters_with(fleet, "gpu-operator"):
        found = cluster.release("gpu-operator")
        if not isinstance(found, GpuOperatorRelease) or found.has(CHART_DEPLOY_CR):
            continue
        message = (
            f"the gpu-operator chart {found.version} always renders a ClusterPolicy named cluster-policy "
            "(clusterPolicy.deployCR exists from v26.7.0), the name of gpuplan's: the chart's values and "
            "gpuplan's object then fight over it; use v26.7.0, or keep the chart's values in step"
        )
        line, col = cluster.located.source.position(("components", "gpuOperator", "version"))
        yield Diagnostic(
            cluster.located.source.path,
            line,
            col,
            Severity.WARNING,
            "components.gpuOperator.version",
            message,
        )
