"""What a Prometheus the cluster already runs must select (components.monitoring.prometheus.install:
existing): gpuplan installs no kube-prometheus-stack there, so the settings the stack's values would
have made are the cluster's to make.

Facts (prometheus-operator/prometheus-operator@v0.93.0:example/prometheus-operator-crd/
monitoring.coreos.com_prometheuses.yaml, the same fields and wording at v0.92.1): spec.ruleSelector and
spec.serviceMonitorSelector match no object when null and every object when empty;
spec.ruleNamespaceSelector and spec.serviceMonitorNamespaceSelector match the Prometheus' own namespace
only when null. kube-state-metrics exports node labels in kube_node_labels only when its
--metric-labels-allowlist names them (gpuplan/components/monitoring.py; the stack's values set it).
"""

from __future__ import annotations

from gpuplan.components.monitoring import DASHBOARD_LABEL, KUEUE_METRICS_READER
from gpuplan.emit.bootstrap.monitoring import node_labels
from gpuplan.plan.fleet import ClusterPlan


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none: it must select all)"


def existing_prometheus(cluster: ClusterPlan) -> list[str]:
    """Return what the cluster's own Prometheus, kube-state-metrics and Grafana must do for gpuplan's objects."""
    monitoring = cluster.spec.components.monitoring
    if monitoring is None or monitoring.prometheus.install != "existing":
        return []
    prometheus, namespace = monitoring.prometheus, monitoring.namespace
    lines = [
        f"{cluster.name}: the existing Prometheus (components.monitoring.prometheus.install: existing)",
        f"  spec.ruleSelector matches the labels {_labels(prometheus.rule_labels)}",
        f"  spec.serviceMonitorSelector matches the labels {_labels(prometheus.service_monitor_labels)}",
        f"  spec.ruleNamespaceSelector and spec.serviceMonitorNamespaceSelector include namespace {namespace} "
        "(null selectors: the Prometheus' own namespace only)",
        "  kube-state-metrics runs with --metric-labels-allowlist="
        f"nodes=[{','.join(node_labels(cluster))}] (the rules join pools on kube_node_labels)",
    ]
    if cluster.spec.components.kueue is not None and prometheus.service_account is None:
        lines.append(
            f"  the Prometheus' service account is bound to ClusterRole {KUEUE_METRICS_READER} "
            "(Kueue's /metrics needs a token; or name it in prometheus.serviceAccount and gpuplan binds it)"
        )
    if monitoring.grafana_dashboards:
        labels = prometheus.dashboard_labels or dict([DASHBOARD_LABEL])
        lines.append(
            f"  Grafana's dashboard sidecar loads ConfigMaps labelled {_labels(labels)} from namespace {namespace}"
        )
    return lines
