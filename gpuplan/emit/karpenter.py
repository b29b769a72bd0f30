"""Karpenter: one NodePool (karpenter.sh/v1) per pool it makes: autoscaled (`nodes: {min, max}`),
or static (`nodes: {count}` with a karpenter section: `spec.replicas`, core v1.8 and later).

Source of every field: the Karpenter v1.14.1 NodePool CRD (kubernetes-sigs/karpenter and
aws/karpenter-provider-aws pkg/apis/crds). Every release gpuplan supports (v1.0 on,
gpuplan/components/karpenter.py) serves karpenter.sh/v1 and every field below; v0.33-v0.37 served
v1beta1 and are not supported (resolve.py reports them as unknown versions).

The NodePool puts on its nodes exactly `PoolPlan.node_labels` (the pool label the ResourceFlavor
selects, the MIG and device-plugin config labels the GPU Operator reads, the user's labels) and
`PoolPlan.taints` (which the flavor tolerates), so a workload admitted to the pool's flavor fits
the nodes this NodePool makes.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.karpenter import NODEPOOL_API, KarpenterRelease
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.cluster import Karpenter, MaintenanceWindow
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import GPU, PoolPlan

FOLDER = "karpenter"

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"
NODES = "nodes"

# Disruption: remove a node only once nothing runs on it, never to repack running pods.
# - consolidationPolicy WhenEmpty: "Underutilized" consolidation would evict a running training
#   job to move it to a cheaper node; only empty nodes are candidates.
# - consolidateAfter 10m: a node stays empty that long before it goes, so the gap between one
#   job finishing and the next being admitted does not cost a GPU node boot (and an image pull).
#   Static NodePools ignore both (the CRD's descriptions), but the CRD requires consolidateAfter.
# - budgets: Drifted nodes (a new AMI, security patches, a changed NodePool or node class) are
#   drained `maintenance.nodes` at a time, and only inside the cluster's maintenance window: a
#   budget of 0 for Drifted is scheduled over every gap between windows. Karpenter applies the
#   most restrictive active budget and activates a scheduled one for `duration` after each cron
#   hit, in UTC (v1.14.1 pkg/apis/crds/karpenter.sh_nodepools.yaml, spec.disruption.budgets).
#   Empty 10% (rounded up by Karpenter): empty nodes go a few at a time, at any hour.
# - expireAfter Never: the v1 default (720h) recycles every node after 30 days, and expiry is
#   forceful (not bound by budgets), which would kill a long training run; nodes are refreshed
#   through drift inside the maintenance window instead.
CONSOLIDATE_AFTER = "10m"
CONSOLIDATION_POLICY = "WhenEmpty"
EMPTY_BUDGET: dict[str, Any] = {"nodes": "10%", "reasons": ["Empty"]}
EXPIRE_AFTER = "Never"
DRIFTED = "Drifted"
# Cron day-of-week numbers (0 = Sunday, as the upstream cron syntax Karpenter parses).
CRON_DAYS = {
    "sunday": 0,
    "monday": 1,
    "tuesday": 2,
    "wednesday": 3,
    "thursday": 4,
    "friday": 5,
    "saturday": 6,
}
DAY, WEEK = 24 * 60, 7 * 24 * 60


def _duration(minutes: int) -> str:
    """Return minutes as a budget duration (hours and minutes only, as the CRD's pattern allows)."""
    hours, rest = divmod(minutes, 60)
    return (f"{hours}h" if hours else "") + (f"{rest}m" if rest else "")


def _cron(minute_of_week: int) -> str:
    """Return the weekly cron schedule that fires at a minute of the week (Sunday 00:00 = 0)."""
    day, minute = divmod(minute_of_week % WEEK, DAY)
    return f"{minute % 60} {minute // 60} * * {day}"


def closed_gaps(window: MaintenanceWindow) -> list[tuple[int, int]]:
    """Return (start, length) in minutes of the week of each stretch between two maintenance windows."""
    hour, minute = (int(x) for x in window.start.split(":"))
    starts = sorted(CRON_DAYS[d] * DAY + hour * 60 + minute for d in window.days)
    gaps = []
    for i, start in enumerate(starts):
        end = start + window.minutes
        following = starts[(i + 1) % len(starts)] + (WEEK if i + 1 == len(starts) else 0)
        if following > end:
            gaps.append((end % WEEK, following - end))
    return gaps


def budgets(window: MaintenanceWindow) -> list[dict[str, Any]]:
    """Return the disruption budgets: drifted nodes inside the maintenance window only, empty ones any time."""
    if window.nodes == "0":
        return [{"nodes": "0", "reasons": [DRIFTED]}, dict(EMPTY_BUDGET)]
    out: list[dict[str, Any]] = [{"nodes": window.nodes, "reasons": [DRIFTED]}]
    for start, length in closed_gaps(window):
        out.append(
            {
                "nodes": "0",
                "reasons": [DRIFTED],
                "schedule": _cron(start),
                "duration": _duration(length),
            }
        )
    return out + [dict(EMPTY_BUDGET)]


def disruption(karpenter: Karpenter) -> dict[str, Any]:
    """Return spec.disruption: consolidation of empty nodes only, drift inside the maintenance window."""
    return {
        "consolidationPolicy": CONSOLIDATION_POLICY,
        "consolidateAfter": CONSOLIDATE_AFTER,
        "budgets": budgets(karpenter.maintenance),
    }


def requirements(pool: PoolPlan) -> list[dict[str, Any]]:
    """Return the node requirements: instance types, capacity types, zones (if any), architecture."""
    spec = pool.spec.karpenter
    assert spec is not None  # autoscaled pools without a karpenter section are errors in resolve.py
    wanted: list[tuple[str, list[str]]] = [
        (INSTANCE_TYPE, list(spec.instance_types)),
        (CAPACITY_TYPE, list(spec.capacity_types)),
    ]
    if spec.zones:
        wanted.append((ZONE, list(spec.zones)))
    wanted.append((ARCH, [spec.architecture]))
    # Sorted values: reordering a list in the input changes nothing Karpenter does, so no diff.
    return [{"key": key, "operator": "In", "values": sorted(set(values))} for key, values in wanted]


def limits(pool: PoolPlan) -> dict[str, str]:
    """Return limits that stop the NodePool at nodes.max: node count and physical GPUs.

    Karpenter checks limits against the resources it predicts from the instance type (and, once
    nodes are up, their capacity). Which names are worth a limit:

    - `nodes`: the node count itself, exactly nodes.max. Karpenter counts it in the NodePool's
      status, but only for launched nodes, so a burst of parallel launches can overshoot it.
    - `nvidia.com/gpu` = nodes.max x gpusPerNode: Karpenter's instance-type model carries the
      physical GPU count, and it drops instance types that would exceed a resource limit while it
      plans a batch, so this one also holds during a burst. It stays the physical count on MIG and
      shared pools too; `nvidia.com/mig-*` and `*.shared` resources are unknown to Karpenter's
      model and would never bind.
    - no cpu or memory: the pool states allocatable cpu and memory, while Karpenter counts the
      instance's capacity (larger by the kubelet and system reservations and the VM overhead), so
      nodes.max x allocatable would stop the pool a node short of nodes.max; a looser number would
      cap nothing that the two limits above do not already cap.
    """
    most = pool.nodes_most
    return {NODES: str(most), GPU: str(most * pool.gpus_per_node)}


def node_class_name(karpenter: Karpenter, pool: PoolPlan) -> str:
    """Return the node class a pool's nodes launch from: its own, else the cluster's."""
    own = pool.spec.karpenter.node_class if pool.spec.karpenter is not None else None
    return own or karpenter.node_class.name


def node_pool(api: str, karpenter: Karpenter, pool: PoolPlan) -> dict[str, Any]:
    """Return the NodePool of one pool: autoscaled up to its limits, or static with spec.replicas."""
    node_class = karpenter.node_class
    template_spec: dict[str, Any] = {
        "nodeClassRef": {
            "group": node_class.group,
            "kind": node_class.kind,
            "name": node_class_name(karpenter, pool),
        },
        "requirements": requirements(pool),
        "taints": pool.taints,
        "expireAfter": EXPIRE_AFTER,
    }
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": pool.node_labels}, "spec": template_spec},
        "disruption": disruption(karpenter),
    }
    if pool.spec.nodes.autoscaled:
        spec["limits"] = limits(pool)
    else:
        # A static NodePool keeps exactly `replicas` nodes; the CRD refuses any limit but nodes
        # (its CEL rule "only 'limits.nodes' is supported on static NodePools"), and none is needed.
        spec["replicas"] = pool.nodes_most
    # No `weight`: every pool has its own pool label, which the pool's flavor (and so every
    # workload of the pool) selects, so no pod ever matches two NodePools for weight to order.
    return k8s(api, "NodePool", pool.name, spec=spec)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a NodePool per pool Karpenter makes, or nothing without the Karpenter component."""
    karpenter, release = cluster.spec.components.karpenter, cluster.release("karpenter")
    if karpenter is None or not isinstance(release, KarpenterRelease):
        return []  # not a component here (an unknown version is reported by resolve.py)
    api = NODEPOOL_API
    source = cluster.located.source.path
    return [
        manifest(cluster.name, FOLDER, node_pool(api, karpenter, pool), source)
        for pool in cluster.pools.values()
        if pool.karpenter_made
    ]
