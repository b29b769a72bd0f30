"""Prometheus Adapter rules: the GPU use of the pods of tenants that ask for GPU-metric autoscaling,
served as custom pod metrics so an inference HorizontalPodAutoscaler can scale on them.

The DCGM exporter labels a GPU's series with the pod using it (pod, namespace: NVIDIA/dcgm-exporter
internal/pkg/transformation/const.go), which Prometheus keeps as exported_pod and exported_namespace beside
the exporter's own target labels. The ConfigMap holds the adapter's config.yaml; install the
prometheus-adapter chart with rules.existing set to its name (it then serves these rules instead of its
defaults: prometheus-community/helm-charts charts/prometheus-adapter/values.yaml, chart 5.3.0).
"""

from __future__ import annotations

from typing import Any

from gpuplan.emit.meta import k8s
from gpuplan.model.monitoring import Monitoring
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.writer.yamlout import dump

NAME = "gpuplan-prometheus-adapter"
# Custom metric served -> DCGM exporter series, the aggregation over a pod's GPUs, and a scale.
# gpu_utilization is the graphics engine's active ratio in percent, not DCGM_FI_DEV_GPU_UTIL: DCGM does
# not report GPU_UTIL for MIG instances (it stays 0 or absent) and points to the profiling field
# DCGM_FI_PROF_GR_ENGINE_ACTIVE, which it reports per MIG instance and per full GPU alike
# (NVIDIA/dcgm-exporter issues 216 and 430, maintainers' answers; the field is in the GPU Operator's
# collector list, NVIDIA/dcgm-exporter@4.5.3-4.8.2:etc/dcp-metrics-included.csv "Ratio of time the
# graphics engine is active"). One metric then scales pods on MIG pools and on whole GPUs.
METRICS = (
    ("gpu_utilization", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "avg", " * 100"),
    ("gpu_memory_used_mib", "DCGM_FI_DEV_FB_USED", "sum", ""),
)


def rule(
    namespaces: list[str], served: str, series: str, aggregation: str, scale: str
) -> dict[str, Any]:
    """Return one adapter rule serving a DCGM series per pod of the given namespaces."""
    selector = f'{series}{{exported_namespace=~"{"|".join(namespaces)}",exported_pod!=""}}'
    return {
        "seriesQuery": selector,
        "resources": {
            "overrides": {
                "exported_namespace": {"resource": "namespace"},
                "exported_pod": {"resource": "pod"},
            }
        },
        "name": {"matches": f"^{series}$", "as": served},
        "metricsQuery": f"{aggregation}(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>){scale}",
    }


def autoscaled_namespaces(cluster: ClusterPlan) -> list[str]:
    """Return the namespaces of the tenants on this cluster that ask for GPU-metric autoscaling."""
    return sorted(
        {
            ns
            for alloc in cluster.allocations
            if alloc.spec.gpu_metric_autoscaling
            for ns in alloc.namespaces
        }
    )


def adapter(cluster: ClusterPlan, monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the adapter's rules ConfigMap, or nothing when no tenant asks for GPU-metric autoscaling."""
    namespaces = autoscaled_namespaces(cluster)
    if not namespaces:
        return []
    config = {"rules": [rule(namespaces, *metric) for metric in METRICS]}
    return [k8s("v1", "ConfigMap", NAME, monitoring.namespace, data={"config.yaml": dump(config)})]
