"""Component rules: what the GPU Operator and device plugin can actually run."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check
from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import Fleet


@check
def check_mps_strategy(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on MPS pools in a cluster with migStrategy mixed (the device plugin refuses it)."""
    for cluster in fleet.clusters.values():
        operator = cluster.spec.components.gpu_operator
        if operator is None or operator.mig_strategy != "mixed":
            continue
        for pool in cluster.pools.values():
            if pool.spec.sharing.mps is not None:
                message = "the NVIDIA device plugin does not run MPS with migStrategy mixed: set components.gpuOperator.migStrategy: single"
                yield cluster.located.source.diagnostic(("nodePools", pool.index, "sharing", "mps"), message)
