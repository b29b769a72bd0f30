"""The DCGM metrics a cluster's exporter actually collects, read from its effective ClusterPolicy.

The GPU Operator starts the exporter with its own collector list unless the ClusterPolicy names a
ConfigMap in `spec.dcgmExporter.config.name`: then it mounts that ConfigMap's key `dcgm-metrics.csv`
and points DCGM_EXPORTER_COLLECTORS at it, so the exporter collects that list and nothing else
(NVIDIA/gpu-operator@v26.7.0:controllers/object_controls.go, MetricsConfigFileName and the
"mount configmap for custom metrics" block of TransformDCGMExporter). The ClusterPolicy read here is
the one written to output/, after the user's patches, and the ConfigMap is one of the cluster's
objects (rendered or the user's own). Pure: objects in, metrics out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpuplan.components.metrics import DCGM_LABELS, TARGET_LABELS, collector_list

CSV_KEY = "dcgm-metrics.csv"
DCGM_PREFIX = "DCGM_"


def config_name(policies: Iterable[Mapping[str, Any]]) -> str | None:
    """Return the ConfigMap a ClusterPolicy gives the DCGM exporter, None when it keeps the default list."""
    for policy in policies:
        config = ((policy.get("spec") or {}).get("dcgmExporter") or {}).get("config") or {}
        if config.get("name"):
            return str(config["name"])
    return None


def narrowed(
    known: Mapping[str, frozenset[str]],
    policies: Iterable[Mapping[str, Any]],
    config_maps: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, frozenset[str]], dict[str, str]]:
    """Return the known metrics with the DCGM exporter's narrowed to what it collects, and why each
    metric the exporter knows but does not collect is absent."""
    name = config_name(policies)
    if name is None:
        return dict(known), {}
    texts = [
        str((cm.get("data") or {}).get(CSV_KEY, ""))
        for cm in config_maps
        if (cm.get("metadata") or {}).get("name") == name
    ]
    if not texts:  # a ConfigMap no object holds: the reference check's finding
        return dict(known), {}
    collected = collector_list(texts[0])
    out = {m: labels for m, labels in known.items() if not m.startswith(DCGM_PREFIX)}
    out |= dict.fromkeys(sorted(collected), DCGM_LABELS | TARGET_LABELS)
    why = {
        metric: (
            f"metric {metric} is not collected: the ClusterPolicy's dcgmExporter.config names ConfigMap "
            f"{name}, and the exporter collects only the metrics its {CSV_KEY} lists; add {metric} there"
        )
        for metric in known
        if metric.startswith(DCGM_PREFIX) and metric not in collected
    }
    return out, why
