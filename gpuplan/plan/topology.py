"""Topology-aware scheduling: a pool's levels (block, subblock, rack, host, clique) and their node labels.

The node labels by provider, from ../shared/facts/upstream-components.md ("Kueue TAS and fair sharing"):
EKS puts topology.k8s.aws/network-node-layer-1..3 on instances that support it (layer 1 the farthest
from the host); GKE cloud.google.com/gce-topology-{block,subblock,host}; GPU Feature Discovery (run by
the GPU Operator) nvidia.com/gpu.clique for an NVLink domain; every node has kubernetes.io/hostname.
On premises nothing labels racks: the pool names the label and sets it (pool labels, which NFD or
Karpenter put on its nodes).
"""

from __future__ import annotations

from typing import Any

HOSTNAME = "kubernetes.io/hostname"
CLIQUE = "nvidia.com/gpu.clique"
# level -> node label, per provider; a level missing here needs its nodeLabel stated.
PROVIDER_LABELS: dict[str, dict[str, str]] = {
    "aws": {
        "block": "topology.k8s.aws/network-node-layer-1",
        "subblock": "topology.k8s.aws/network-node-layer-2",
        "rack": "topology.k8s.aws/network-node-layer-3",
    },
    "gcp": {
        "block": "cloud.google.com/gce-topology-block",
        "subblock": "cloud.google.com/gce-topology-subblock",
        "host": "cloud.google.com/gce-topology-host",
    },
}
EVERYWHERE = {"host": HOSTNAME, "clique": CLIQUE}


def default_label(provider: str, level: str) -> str | None:
    """Return the node label a provider puts for a topology level, None when it puts none."""
    return PROVIDER_LABELS.get(provider, {}).get(level) or EVERYWHERE.get(level)


def node_label(provider: str, level: Any) -> str | None:
    """Return the node label of a pool's topology level: the one stated, else the provider's."""
    return level.node_label or default_label(provider, level.level)


def labels_of(provider: str, pool: Any) -> list[str]:
    """Return a pool's topology node labels, coarsest first (None where no label is known)."""
    return [node_label(provider, level) for level in pool.topology]  # type: ignore[misc]


def carried(provider: str, label: str, pool: Any, gfd: bool) -> bool:
    """Tell whether the pool's nodes carry a label: put by the cloud, GFD, Kubernetes, or the pool's own labels."""
    if label == HOSTNAME or label in pool.labels:
        return True
    if label == CLIQUE:
        return gfd
    return label in PROVIDER_LABELS.get(provider, {}).values()
