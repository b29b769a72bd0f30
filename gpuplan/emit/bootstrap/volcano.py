"""Volcano's Application: the chart with a scheduler configuration for the Queues gpuplan emits.

The chart writes `custom.scheduler_config_override` verbatim as volcano-scheduler.conf, else its
config/volcano-scheduler.conf (volcano-sh/volcano installer/helm/chart/volcano at every supported
tag: templates/scheduler.yaml, values.yaml). That default uses the proportion plugin, which shares
by weight and ignores `deserved`; the capacity plugin shares by `deserved`, needs the reclaim action
and must replace proportion (docs/user-guide/how_to_use_capacity_plugin.md at v1.15.1); hierarchical
queues need `enableHierarchy` on it (pkg/scheduler/conf/scheduler_conf.go).

The `enqueue` action admits a PodGroup only when every JobEnqueueable plugin permits it, and the
overcommit plugin permits it only within the idle resources of the nodes that exist (times 1.2); the
job controller creates no pod while its PodGroup is Pending, so a pool that grows on demand
(Karpenter, an autoscaler) never sees a pending pod and never grows. Without `enqueue`, allocate moves
a Pending PodGroup to Inqueue itself and the queue plugins still bound what is allocated (volcano-sh/volcano
v1.15.1 pkg/scheduler/plugins/overcommit/overcommit.go, pkg/scheduler/actions/allocate/allocate.go,
pkg/controllers/job/job_controller_actions.go syncJob; volcano-sh/volcano#3910).
"""

from __future__ import annotations

from typing import Any

from gpuplan.components import REGISTRY
from gpuplan.components.kai import authority
from gpuplan.emit import volcano as volcano_emitter
from gpuplan.emit.bootstrap.app import WEBHOOKS, Operator
from gpuplan.plan.dra import dra_pools
from gpuplan.plan.fleet import ClusterPlan

NAME = "volcano"


def queue_plugin(cluster: ClusterPlan) -> dict[str, Any] | None:
    """Return the queue-sharing plugin the emitted Queues need; None when Volcano is not the quota authority."""
    components = cluster.spec.components
    if authority(components) != NAME:
        return None  # Kueue (the default beside Volcano) or KAI admits: Volcano only gang-schedules, it enforces no queue quota
    queues = [m.obj.get("spec") or {} for m in volcano_emitter.emit(cluster) if m.kind == "Queue"]
    dra: dict[str, Any] = {}
    if dra_pools(
        cluster
    ):  # the capacity plugin counts deviceclass/<class> only when told to (capacity.go v1.15.1)
        dra = {"arguments": {"capacity.DynamicResourceAllocationEnable": True}}
    if any(q.get("parent") for q in queues):
        return {"name": "capacity", "enableHierarchy": True, **dra}
    if any(q.get("deserved") for q in queues) or dra:
        return {"name": "capacity", **dra}
    return {"name": "proportion"}


def scheduler_config(cluster: ClusterPlan) -> str:
    """Return volcano-scheduler.conf: the chart's tiers with the queue plugin the Queues need."""
    plugin = queue_plugin(cluster)
    capacity = plugin is not None and plugin["name"] == "capacity"
    gate = not any(
        p.nodes_least < p.nodes_most for p in cluster.pools.values()
    )  # see the module's doc
    # The capacity guide's configuration drops overcommit along with proportion.
    second = ["  - name: overcommit"] if gate and not capacity else []
    second += [
        "  - name: drf",
        "    enablePreemptable: false",
        "  - name: predicates",
    ]
    if plugin is not None:
        second.append(f"  - name: {plugin['name']}")
        second += [
            f"    {k}: {str(v).lower()}"
            for k, v in plugin.items()
            if k not in ("name", "arguments")
        ]
        if plugin.get("arguments"):
            second.append("    arguments:")
            second += [f"      {k}: {str(v).lower()}" for k, v in plugin["arguments"].items()]
    second += ["  - name: nodeorder", "  - name: binpack"]
    actions = (
        ("enqueue, " if gate else "") + "allocate, backfill" + (", reclaim" if capacity else "")
    )
    first = [
        "- plugins:",
        "  - name: priority",
        "  - name: gang",
        "    enablePreemptable: false",
        "  - name: conformance",
    ]
    lines = [f'actions: "{actions}"', "tiers:", *first, "- plugins:", *second]
    return "\n".join(lines) + "\n"


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return Volcano's Application, if the cluster runs Volcano."""
    volcano = cluster.spec.components.volcano
    release = cluster.release(NAME)
    if volcano is None or release is None or release.chart is None:
        return []
    values = {"custom": {"scheduler_config_override": scheduler_config(cluster)}}
    crds = REGISTRY[NAME].crd_set(release)
    return [
        Operator(
            NAME, volcano.namespace, chart=release.chart, values=values, server_side=True, crds=(crds,) if crds else (),
            cluster_kinds=Operator.cluster_kinds + WEBHOOKS,  # installer/helm/chart/volcano/templates
        )
    ]  # fmt: skip
