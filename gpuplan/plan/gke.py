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
- Machine types (MACHINE_TYPES): cloud.google.com/compute/docs/gpus names the accelerator type of each
  series (A4X nvidia-gb200, A4 nvidia-b200, A3 Ultra nvidia-h200-141gb, A3 Mega nvidia-h100-mega-80gb,
  A3 High nvidia-h100-80gb, A2 Ultra nvidia-a100-80gb, A2 Standard nvidia-tesla-a100, G2 nvidia-l4, and
  nvidia-tesla-t4 attached to N1); cloud.google.com/compute/docs/accelerator-optimized-machines lists each
  series' machine types, every one with a fixed GPU model and count ("Each machine type within a series
  has a specific model and number of NVIDIA GPUs attached"): a4x-highgpu-4g (4 GPUs), a4-highgpu-8g,
  a3-ultragpu-8g, a3-megagpu-8g, a3-highgpu-1g/-2g/-4g/-8g, a2-ultragpu-1g/-2g/-4g/-8g,
  a2-highgpu-1g/-2g/-4g/-8g and a2-megagpu-16g (the -<N>g suffix is the GPU count), g2-standard-4, -8, -12,
  -16 and -32 (1 L4), g2-standard-24 (2), -48 (4) and -96 (8). T4s attach to an N1 machine type of the
  user's choice (1, 2 or 4 per VM), so no one type follows from the count.
"""

from __future__ import annotations

from dataclasses import dataclass
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


# The GKE accelerator type of a catalog GPU (the value of cloud.google.com/gke-accelerator), where
# Compute Engine offers it; a pool's own label wins (an H100 80GB is nvidia-h100-mega-80gb on A3 Mega).
ACCELERATORS = {
    "GB200": "nvidia-gb200",
    "B200": "nvidia-b200",
    "H200-141GB": "nvidia-h200-141gb",
    "H100-SXM5-80GB": "nvidia-h100-80gb",
    "A100-SXM4-80GB": "nvidia-a100-80gb",
    "A100-SXM4-40GB": "nvidia-tesla-a100",
    "L4": "nvidia-l4",
    "T4": "nvidia-tesla-t4",
}
# Accelerator type -> GPUs per VM -> the machine type(s) with exactly that many (sources above).
MACHINE_TYPES: dict[str, dict[int, tuple[str, ...]]] = {
    "nvidia-gb200": {4: ("a4x-highgpu-4g",)},
    "nvidia-b200": {8: ("a4-highgpu-8g",)},
    "nvidia-h200-141gb": {8: ("a3-ultragpu-8g",)},
    "nvidia-h100-mega-80gb": {8: ("a3-megagpu-8g",)},
    "nvidia-h100-80gb": {n: (f"a3-highgpu-{n}g",) for n in (1, 2, 4, 8)},
    "nvidia-a100-80gb": {n: (f"a2-ultragpu-{n}g",) for n in (1, 2, 4, 8)},
    "nvidia-tesla-a100": {
        **{n: (f"a2-highgpu-{n}g",) for n in (1, 2, 4, 8)},
        16: ("a2-megagpu-16g",),
    },
    "nvidia-l4": {
        1: tuple(f"g2-standard-{n}" for n in (4, 8, 12, 16, 32)),
        2: ("g2-standard-24",),
        4: ("g2-standard-48",),
        8: ("g2-standard-96",),
    },
}
N1_ATTACHED = {"nvidia-tesla-t4": (1, 2, 4)}


@dataclass(frozen=True)
class MachineType:
    """The Compute Engine machine type a GKE node pool of some GPU and count is made of."""

    name: str | None  # the (smallest) machine type, or None when no one type follows (or none fits)
    text: str  # what `gpuplan requirements` prints: the type and its alternatives, or why none fits
    fits: bool = True  # False: Compute Engine has no VM with this GPU and count


def accelerator(pool: Any, model: str) -> str | None:
    """Return a pool's GKE accelerator type: its cloud.google.com/gke-accelerator label, else its GPU's."""
    return pool.labels.get(ACCELERATOR_LABEL) or ACCELERATORS.get(model)


def machine_type(model: str, count: int, accelerator_type: str | None) -> MachineType:
    """Return the machine type of a GKE node pool with ``count`` GPUs of ``model`` per node."""
    if accelerator_type is None:
        return MachineType(
            None, f"Compute Engine offers no {model} GPU (no GKE accelerator type)", False
        )
    if accelerator_type in N1_ATTACHED:
        counts = N1_ATTACHED[accelerator_type]
        if count in counts:
            return MachineType(
                None,
                f"an N1 machine type of your choice with {count} {accelerator_type} attached",
            )
        return MachineType(None, _no_type(model, count, accelerator_type, counts), False)
    types = MACHINE_TYPES.get(accelerator_type)
    if types is None:
        return MachineType(
            None, f"gpuplan knows no machine type with {accelerator_type} GPUs", False
        )
    found = types.get(count)
    if not found:
        return MachineType(None, _no_type(model, count, accelerator_type, tuple(types)), False)
    others = f" (or {', '.join(found[1:])}: the same GPU, more vCPUs)" if len(found) > 1 else ""
    return MachineType(found[0], f"{found[0]}{others}")


def _no_type(model: str, count: int, accelerator_type: str, counts: tuple[int, ...]) -> str:
    listed = ", ".join(str(n) for n in sorted(counts))
    return (
        f"no GKE machine type has {count} {model} ({accelerator_type}) per node: "
        f"its machine types have {listed}; set gpusPerNode to one of them"
    )
