"""KAI Scheduler's Application: the chart at the pinned tag, for the Queues gpuplan emits.

The chart (kai-scheduler/KAI-Scheduler v0.17.0 deployments/kai-scheduler) ships its CRDs and creates
cluster-scoped objects: Namespaces (resource reservation, scale adjuster), PriorityClasses, the default
Queues (templates/default-queue.yaml), its Config and SchedulingShard (templates/kai-config.yaml,
default-shard.yaml). Its webhooks are made by its operator at run time, not by the chart.

Where KAI enforces the tenants' quotas, the chart's `default-queue` is not created
(values.yaml defaultQueue.createDefaultQueue): its limit is -1, so a pod without a tenant's queue label
would run there outside every quota; without it such a pod waits for a queue instead.
"""

from __future__ import annotations

from gpuplan.components import REGISTRY
from gpuplan.components.kai import authority
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.plan.fleet import ClusterPlan

NAME = "kai-scheduler"
CLUSTER_KINDS = (
    "/Namespace",
    "scheduling.k8s.io/PriorityClass",
    "scheduling.run.ai/Queue",
    "kai.scheduler/Config",
    "kai.scheduler/SchedulingShard",
)


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return KAI Scheduler's Application, if the cluster runs KAI."""
    kai = cluster.spec.components.kai
    release = cluster.release(NAME)
    if kai is None or release is None or release.chart is None:
        return []
    values = (
        {"defaultQueue": {"createDefaultQueue": False}}
        if authority(cluster.spec.components) == "kai"
        else {}
    )
    crds = REGISTRY[NAME].crd_set(release)
    return [
        Operator(
            NAME, kai.namespace, chart=release.chart, values=values, server_side=True, crds=(crds,) if crds else (),
            cluster_kinds=Operator.cluster_kinds + CLUSTER_KINDS,
        )
    ]  # fmt: skip
