"""GKE's own GPU stack: Google installs the driver and device plugin, partitions MIG and time-shares GPUs.

A gcp cluster without components.gpuOperator uses it; one with the GPU Operator opts out (its node
pools then need gpu-driver-version=disabled). Facts (Google Cloud documentation):
- cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi: a node pool's MIG partitions are set by
  `--accelerator ...,gpu-partition-size=<profile>`, one size per node pool; each partition appears as a
  regular GPU resource (nvidia.com/gpu) and nodes carry cloud.google.com/gke-gpu-partition-size=<profile>.
- cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus: `gpu-sharing-strategy=time-sharing`
  with `max-shared-clients-per-gpu=N` labels nodes cloud.google.com/gke-gpu-sharing-strategy=time-sharing
  and cloud.google.com/gke-max-shared-clients-per-gpu="N"; each shared GPU is advertised N times as
  nvidia.com/gpu and a container may ask for at most 1.
- cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass (gpuSharing.maxSharedClientsPerGPU):
  2 to 48 clients per GPU.
"""

from __future__ import annotations

from typing import Any

PARTITION_LABEL = "cloud.google.com/gke-gpu-partition-size"
STRATEGY_LABEL = "cloud.google.com/gke-gpu-sharing-strategy"
CLIENTS_LABEL = "cloud.google.com/gke-max-shared-clients-per-gpu"
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
MAX_SHARED_CLIENTS = 48


def google_stack(cluster: Any) -> bool:
    """Tell whether a cluster model uses GKE's GPU stack (gcp, no GPU Operator)."""
    return cluster.provider == "gcp" and cluster.components.gpu_operator is None


def node_labels(pool: Any) -> dict[str, str]:
    """Return the labels GKE puts on a node pool's nodes for its MIG partition size and time-sharing."""
    sharing = pool.sharing
    labels = {}
    if sharing.mig is not None and sharing.mig.layout is not None and len(sharing.mig.layout) == 1:
        labels[PARTITION_LABEL] = next(iter(sharing.mig.layout))
    if sharing.time_slicing is not None:
        labels[STRATEGY_LABEL] = "time-sharing"
        labels[CLIENTS_LABEL] = str(sharing.time_slicing.replicas)
    return labels


def gcloud_accelerator(pool: Any, gpus_per_node: int, accelerator: str, google_driver: bool) -> str:
    """Return the node pool's gcloud --accelerator value (type, count, driver, partition and sharing)."""
    parts = [
        f"type={accelerator}",
        f"count={gpus_per_node}",
        f"gpu-driver-version={'default' if google_driver else 'disabled'}",
    ]
    # With the GPU Operator (driver disabled) its MIG manager and device plugin partition and share the
    # GPUs, so GKE is asked for neither.
    labels = node_labels(pool) if google_driver else {}
    if PARTITION_LABEL in labels:
        parts.append(f"gpu-partition-size={labels[PARTITION_LABEL]}")
    if STRATEGY_LABEL in labels:
        parts += [
            "gpu-sharing-strategy=time-sharing",
            f"max-shared-clients-per-gpu={labels[CLIENTS_LABEL]}",
        ]
    return ",".join(parts)
