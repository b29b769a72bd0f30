"""Karpenter: one NodePool (karpenter.sh/v1) per autoscaled pool (`nodes: {min, max}`).

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
from gpuplan.fleet import ClusterPlan
from gpuplan.model.cluster import Karpenter
from gpuplan.pools import GPU, PoolPlan

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
# - budgets: Drifted 0 - a node whose NodePool or node class changed (new AMI, new labels) is not
#   drained to replace it; it goes when it is empty (as an Empty candidate), so busy nodes roll
#   over as their jobs end. Empty 10% (rounded up by Karpenter) - empty nodes go a few at a time.
# - expireAfter Never: the v1 default (720h) recycles every node after 30 days, and expiry is
#   forceful (not bound by budgets), which would kill a long training run; node refresh is left
#   to drift-when-empty or to the operator.
CONSOLIDATE_AFTER = "10m"
DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmpty",
    "consolidateAfter": CONSOLIDATE_AFTER,
    "budgets": [
        {"nodes": "0", "reasons": ["Drifted"]},
        {"nodes": "10%", "reasons": ["Empty"]},
    ],
}
EXPIRE_AFTER = "Never"


def requirements(pool: PoolPlan) -> list[dict[str, Any]]:
    """Return the node requirements: instance types, capacity types, zones (if any), architecture."""
    spec = pool.spec.karpenter
    assert spec is not None  # autoscaled pools without a karpenter section are errors in fleet.py
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


def node_pool(api: str, karpenter: Karpenter, pool: PoolPlan) -> dict[str, Any]:
    """Return the NodePool of one autoscaled pool."""
    node_class = karpenter.node_class
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": node_class.group, "kind": node_class.kind, "name": node_class.name},
        "requirements": requirements(pool),
        "taints": pool.taints,
        "expireAfter": EXPIRE_AFTER,
    }
    spec = {
        "template": {"metadata": {"labels": pool.node_labels}, "spec": template_spec},
        "limits": limits(pool),
        "disruption": {**DISRUPTION, "budgets": [dict(b) for b in DISRUPTION["budgets"]]},
    }
    # No `weight`: every pool has its own pool label, which the pool's flavor (and so every
    # workload of the pool) selects, so no pod ever matches two NodePools for weight to order.
    return k8s(api, "NodePool", pool.name, spec=spec)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a NodePool per autoscaled pool, or nothing without the Karpenter component."""
    karpenter, release = cluster.spec.components.karpenter, cluster.release("karpenter")
    if karpenter is None or not isinstance(release, KarpenterRelease):
        return []  # not a component here (an unknown version is reported by resolve.py)
    api = NODEPOOL_API
    source = cluster.located.source.path
    return [
        manifest(cluster.name, FOLDER, node_pool(api, karpenter, pool), source)
        for pool in cluster.pools.values()
        if pool.spec.nodes.autoscaled
    ]
