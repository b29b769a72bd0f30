"""The GPU Operator chart values gpuplan derives for a cluster (for the Argo CD Application that
installs the chart): no chart-made ClusterPolicy or default NVIDIADriver, and the bundled NFD
worker tolerating every GPU pool's taints.

Keys are the chart's (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml at each tag):
`clusterPolicy.deployCR` (from v26.7.0), `driver.nvidiaDriverCRD.{enabled,deployDefaultCR}`,
`nfd.enabled` and the bundled chart's `node-feature-discovery.worker.tolerations`.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.gpu_operator import CHART_DEPLOY_CR, release
from gpuplan.emit.nfd import master_values as nfd_master_values
from gpuplan.plan.drivers import layout
from gpuplan.plan.fleet import ClusterPlan

# The bundled NFD worker's tolerations in values.yaml (v25.3.x also had node-role.../master,
# which no supported Kubernetes sets any more): a values list replaces the chart's whole list,
# so they are kept.
NFD_WORKER_DEFAULT_TOLERATIONS = (
    {
        "effect": "NoSchedule",
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
    },
    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
)


def nfd_worker_tolerations(cluster: ClusterPlan) -> list[dict[str, str]]:
    """Return the NFD worker's tolerations: the chart's, then every GPU pool taint by key and effect.

    Without the pool's `pci-10de` label NFD never sets, the operator runs no operand on a node
    (../shared/facts/upstream-components.md): a worker that does not tolerate a pool taint leaves
    that pool's GPUs unused.
    """
    out = [dict(t) for t in NFD_WORKER_DEFAULT_TOLERATIONS]
    for pool in cluster.pools.values():
        for taint in pool.taints:
            toleration = {"effect": taint["effect"], "key": taint["key"], "operator": "Exists"}
            covered = any(
                t["key"] == toleration["key"]
                and t["effect"] == toleration["effect"]
                and t["operator"] == "Exists"
                for t in out
            )
            if not covered:
                out.append(toleration)
    return out[: len(NFD_WORKER_DEFAULT_TOLERATIONS)] + sorted(
        out[len(NFD_WORKER_DEFAULT_TOLERATIONS) :], key=lambda t: (t["key"], t["effect"])
    )


def chart_values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the chart values gpuplan needs, or {} without the GPU Operator."""
    operator = cluster.spec.components.gpu_operator
    if operator is None:
        return {}
    facts = release(operator.version)
    drivers = layout(cluster)
    values: dict[str, Any] = {
        "driver": {
            "enabled": drivers.enabled,
            # gpuplan renders one NVIDIADriver per pool; the chart's default one would select every
            # node no other NVIDIADriver selects, preinstalled pools included.
            "nvidiaDriverCRD": {"enabled": bool(drivers.per_pool), "deployDefaultCR": False},
        },
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": nfd_worker_tolerations(cluster)}},
    }
    # Pool taints in gpuplan's NodeFeatureRules need nfd-master's enableTaints (chart value
    # master.enableTaints in every bundled NFD chart, v0.17.3 to v0.19.0: templates/master.yaml).
    if nfd_master_values(cluster):
        values["node-feature-discovery"]["master"] = nfd_master_values(cluster)
    if facts.has(CHART_DEPLOY_CR):
        values["clusterPolicy"] = {"deployCR": False}
    return values
