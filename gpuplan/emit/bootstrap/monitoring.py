"""Monitoring's Applications: kube-prometheus-stack (the Prometheus Operator and its CRDs, Prometheus,
Grafana, kube-state-metrics) unless the cluster runs a Prometheus already (prometheus.install: existing),
and, when a tenant autoscales on GPU metrics, the Prometheus Adapter (pointed at either Prometheus).

Facts and the names the values rely on: gpuplan/components/monitoring.py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from gpuplan.components import REGISTRY
from gpuplan.components.monitoring import (
    ADAPTER_CHART,
    MIG_CONFIG_STATE_LABEL,
    PROMETHEUS_PORT,
    PROMETHEUS_SERVICE,
    STACK_RELEASE,
    MonitoringRelease,
)
from gpuplan.emit.bootstrap.app import WEBHOOKS, Operator
from gpuplan.emit.monitoring_adapter import NAME as ADAPTER_RULES
from gpuplan.emit.monitoring_adapter import autoscaled_namespaces
from gpuplan.model.monitoring import Monitoring
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import MIG_CONFIG_LABEL, POOL_LABEL

NAME = "monitoring"
# Prometheus Adapter: an APIService for custom.metrics.k8s.io (templates/custom-metrics-apiservice.yaml).
ADAPTER_KINDS = ("apiregistration.k8s.io/APIService",)
# The adapter mounts its rules ConfigMap (rules.existing), which the cluster's own Application (wave 0)
# holds: it syncs after it, or its pod never starts and the cluster's root never gets past its wave.
ADAPTER_WAVE = 1


def node_labels(cluster: ClusterPlan) -> list[str]:
    """Return the node labels the rules and dashboards read through kube_node_labels."""
    keys = {POOL_LABEL, MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL}
    keys |= {key for pool in cluster.pools.values() for key in pool.selector_labels}
    return sorted(keys)


def stack_values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return kube-prometheus-stack values: pick up every ServiceMonitor and rule; export the pool labels."""
    spec = {
        f"{kind}SelectorNilUsesHelmValues": False
        for kind in ("serviceMonitor", "podMonitor", "rule")
    }
    return {
        "prometheus": {"prometheusSpec": spec},
        "kube-state-metrics": {
            "metricLabelsAllowlist": [f"nodes=[{','.join(node_labels(cluster))}]"]
        },
    }


def adapter_prometheus(monitoring: Monitoring) -> dict[str, Any] | None:
    """Return the Prometheus Adapter's `prometheus` values: the stack's Prometheus Service, or the
    existing Prometheus' URL (None: none given, an input error check/monitoring.py reports).

    The chart passes --prometheus-url={{ url }}:{{ port }}{{ path }} (prometheus-community/helm-charts@
    prometheus-adapter-5.3.0:charts/prometheus-adapter/templates/deployment.yaml; values.yaml prometheus.url,
    port, path), so a URL is split into the three.
    """
    if monitoring.prometheus.install == "stack":
        return {
            "url": f"http://{PROMETHEUS_SERVICE}.{monitoring.namespace}.svc",
            "port": PROMETHEUS_PORT,
        }
    given = monitoring.prometheus.url
    if given is None:
        return None
    parts = urlsplit(given)
    host = parts.netloc if parts.port is None else parts.netloc[: parts.netloc.rfind(":")]
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/") + (f"?{parts.query}" if parts.query else "")
    return {"url": f"{parts.scheme}://{host}", "port": port, "path": path}


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the monitoring Applications, if the cluster enables monitoring."""
    monitoring = cluster.spec.components.monitoring
    release = cluster.release(NAME)
    if monitoring is None or not isinstance(release, MonitoringRelease):
        return []
    crds = REGISTRY[NAME].crd_set(release)
    found = []
    if monitoring.prometheus.install == "stack":
        found.append(Operator(
            NAME, monitoring.namespace, chart=release.stack_chart, values=stack_values(cluster), server_side=True,
            crds=(crds,) if crds else (), release_name=STACK_RELEASE, privileged=True,  # node-exporter: host network and PID
            cluster_kinds=Operator.cluster_kinds + WEBHOOKS,
        ))  # fmt: skip
    prometheus = adapter_prometheus(monitoring)
    if autoscaled_namespaces(cluster) and prometheus is not None:
        values = {"prometheus": prometheus, "rules": {"existing": ADAPTER_RULES}}
        found.append(Operator(
            "prometheus-adapter", monitoring.namespace, chart=ADAPTER_CHART, values=values,
            cluster_kinds=Operator.cluster_kinds + ADAPTER_KINDS, wave=ADAPTER_WAVE,
        ))  # fmt: skip
    return found
