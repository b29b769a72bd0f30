"""Monitoring's Applications: kube-prometheus-stack (the Prometheus Operator and its CRDs, Prometheus,
Grafana, kube-state-metrics) and, when a tenant autoscales on GPU metrics, the Prometheus Adapter.

Facts and the names the values rely on: gpuplan/components/monitoring.py.
"""

from __future__ import annotations

from typing import Any

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


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the monitoring Applications, if the cluster enables monitoring."""
    monitoring = cluster.spec.components.monitoring
    release = cluster.release(NAME)
    if monitoring is None or not isinstance(release, MonitoringRelease):
        return []
    crds = REGISTRY[NAME].crd_set(release)
    found = [
        Operator(
            NAME, monitoring.namespace, chart=release.stack_chart, values=stack_values(cluster), server_side=True,
            crds=(crds,) if crds else (), release_name=STACK_RELEASE, privileged=True,  # node-exporter: host network and PID
            cluster_kinds=Operator.cluster_kinds + WEBHOOKS,
        )
    ]  # fmt: skip
    if autoscaled_namespaces(cluster):
        url = f"http://{PROMETHEUS_SERVICE}.{monitoring.namespace}.svc"
        values = {
            "prometheus": {"url": url, "port": PROMETHEUS_PORT},
            "rules": {"existing": ADAPTER_RULES},
        }
        found.append(Operator(
            "prometheus-adapter", monitoring.namespace, chart=ADAPTER_CHART, values=values,
            cluster_kinds=Operator.cluster_kinds + ADAPTER_KINDS, wave=ADAPTER_WAVE,
        ))  # fmt: skip
    return found
