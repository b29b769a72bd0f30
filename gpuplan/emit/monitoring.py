"""Monitoring: ServiceMonitors for the DCGM exporter, Kueue and Volcano, then the PrometheusRules,
Grafana dashboards and Prometheus Adapter rules of the sibling modules, for a cluster that enables it.

The ServiceMonitors select the Services the pinned charts and the GPU Operator create
(gpuplan/components/monitoring.py cites each), in those components' namespaces, and copy the pod's node
name into a `node` label, which the rules and dashboards join with kube-state-metrics' kube_node_labels
to tell a pool's nodes apart.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.monitoring import (
    API_VERSION,
    DASHBOARD_LABEL,
    DCGM_PORT,
    DCGM_SERVICE_LABELS,
    KUEUE_METRICS_READER,
    KUEUE_PORT,
    KUEUE_SERVICE_LABELS,
    PROMETHEUS_SERVICE,
    VOLCANO_PORT,
    VOLCANO_SERVICE_LABELS,
)
from gpuplan.emit import monitoring_adapter, monitoring_dashboards, monitoring_rules
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.monitoring import Monitoring
from gpuplan.plan.fleet import ClusterPlan

FOLDER = "monitoring"
NODE_RELABELING = {
    "action": "replace",
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "node",
}


def service_monitor(
    name: str, namespace: str, labels: dict[str, str], endpoint: dict[str, Any]
) -> dict[str, Any]:
    """Return a ServiceMonitor of one Service (selected by labels in its namespace) with the node relabeling."""
    spec = {
        "endpoints": [{**endpoint, "relabelings": [dict(NODE_RELABELING)]}],
        "namespaceSelector": {"matchNames": [namespace]},
        "selector": {"matchLabels": dict(sorted(labels.items()))},
    }
    return k8s(API_VERSION, "ServiceMonitor", name, namespace, spec=spec)


def service_monitors(cluster: ClusterPlan) -> list[dict[str, Any]]:
    """Return the ServiceMonitors of the components the cluster runs."""
    components = cluster.spec.components
    found = []
    endpoint: dict[str, Any]
    if components.gpu_operator is not None and components.gpu_operator.dcgm_exporter:
        endpoint = {"port": DCGM_PORT, "path": "/metrics"}
        found.append(
            service_monitor(
                "gpuplan-dcgm-exporter",
                components.gpu_operator.namespace,
                DCGM_SERVICE_LABELS,
                endpoint,
            )
        )
    if components.kueue is not None:
        endpoint = {
            "port": KUEUE_PORT, "path": "/metrics", "scheme": "https",
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "tlsConfig": {"insecureSkipVerify": True},  # the chart's default: Kueue's own self-signed certificate
        }  # fmt: skip
        found.append(
            service_monitor(
                "gpuplan-kueue", components.kueue.namespace, KUEUE_SERVICE_LABELS, endpoint
            )
        )
    if components.volcano is not None:
        endpoint = {"port": VOLCANO_PORT, "path": "/metrics"}
        found.append(
            service_monitor(
                "gpuplan-volcano-scheduler",
                components.volcano.namespace,
                VOLCANO_SERVICE_LABELS,
                endpoint,
            )
        )
    return found


def kueue_metrics_reader(cluster: ClusterPlan, monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the binding that lets Prometheus' service account read Kueue's authenticated /metrics
    (an existing Prometheus' only when its service account is named)."""
    prometheus = monitoring.prometheus
    account = PROMETHEUS_SERVICE if prometheus.install == "stack" else prometheus.service_account
    if cluster.spec.components.kueue is None or account is None:
        return []
    subject = {"kind": "ServiceAccount", "name": account, "namespace": monitoring.namespace}
    role = {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": KUEUE_METRICS_READER,
    }
    return [
        k8s(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "gpuplan-prometheus-kueue-metrics",
            roleRef=role,
            subjects=[subject],
        )
    ]


def for_existing(obj: dict[str, Any], monitoring: Monitoring) -> dict[str, Any]:
    """Fit an object to a Prometheus the cluster already runs: the labels its selectors match, and
    ServiceMonitors in the monitoring namespace (a null serviceMonitorNamespaceSelector matches the
    Prometheus' own namespace only: prometheus-operator/prometheus-operator@v0.93.0:example/
    prometheus-operator-crd/monitoring.coreos.com_prometheuses.yaml, the same at v0.92.1)."""
    prometheus = monitoring.prometheus
    metadata = obj["metadata"]
    labels: dict[str, str] = {}
    if obj["kind"] == "PrometheusRule":
        labels = prometheus.rule_labels
    elif obj["kind"] == "ServiceMonitor":
        labels = prometheus.service_monitor_labels
        # its namespaceSelector still names the Service's own namespace
        metadata["namespace"] = monitoring.namespace
    elif DASHBOARD_LABEL[0] in (metadata.get("labels") or {}):
        metadata["labels"] = {}
        labels = prometheus.dashboard_labels or dict([DASHBOARD_LABEL])
    if labels:
        metadata["labels"] = dict(sorted({**(metadata.get("labels") or {}), **labels}.items()))
    return obj


def objects(cluster: ClusterPlan) -> list[dict[str, Any]]:
    """Return every monitoring object of a cluster (none when monitoring is off)."""
    monitoring = cluster.spec.components.monitoring
    if monitoring is None or cluster.release("monitoring") is None:
        return []
    found = service_monitors(cluster) + kueue_metrics_reader(cluster, monitoring)
    found += monitoring_rules.rules(cluster, monitoring)
    if monitoring.grafana_dashboards:
        found += monitoring_dashboards.dashboards(cluster, monitoring)
    found += monitoring_adapter.adapter(cluster, monitoring)
    if monitoring.prometheus.install == "existing":
        found = [for_existing(obj, monitoring) for obj in found]
    return found


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the cluster's monitoring manifests, filed under monitoring/."""
    made = objects(cluster)
    if not made:
        return []  # (no monitoring: the tenants' files need not be gathered)
    source = cluster.located.source.path
    tenants = sorted({alloc.tenant.source.path for alloc in cluster.allocations})
    return [manifest(cluster.name, FOLDER, obj, source, *tenants) for obj in made]
