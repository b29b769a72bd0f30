"""Monitoring rules: user alerts name metrics the pinned exporters publish; autoscaling needs monitoring;
an existing Prometheus is described only when it is the one used, with the URL the adapter needs."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from gpuplan.check.registry import allocation_check, check
from gpuplan.components.metrics import known_metrics, not_collected
from gpuplan.diagnostics import Diagnostic, Severity, format_path
from gpuplan.plan.fleet import AllocationPlan, Fleet


@check
def check_monitoring_metrics(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on an alert metric the cluster's DCGM exporter and Kueue releases do not publish."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        monitoring = cluster.spec.components.monitoring
        if monitoring is None:
            continue
        known = known_metrics(cluster)
        for index, extra in enumerate(monitoring.alerts):
            if extra.metric in known:
                continue
            loc = ("components", "monitoring", "alerts", index, "metric")
            yield cluster.located.source.diagnostic(
                loc, _unknown_metric(extra.metric, known, not_collected(cluster))
            )


@allocation_check
def check_monitoring_autoscaling(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error on GPU-metric autoscaling asked on a cluster without monitoring."""
    if alloc.spec.gpu_metric_autoscaling and alloc.cluster.spec.components.monitoring is None:
        yield alloc.tenant.source.diagnostic(alloc.loc("gpuMetricAutoscaling"), (
            f"cluster {alloc.cluster.name} has no components.monitoring: no Prometheus Adapter rules are rendered, "
            "so an HPA on GPU utilisation finds no metric"
        ))  # fmt: skip


@check
def check_monitoring_prometheus_settings(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on settings of an existing Prometheus beside prometheus.install: stack, and on an existing
    Prometheus without the URL the Prometheus Adapter of an autoscaling tenant must query."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        monitoring = cluster.spec.components.monitoring
        if monitoring is None:
            continue
        prometheus = monitoring.prometheus
        base = ("components", "monitoring", "prometheus")
        if prometheus.install == "stack":
            for field in prometheus.existing_fields():
                yield cluster.located.source.diagnostic((*base, field), (
                    f"prometheus.{field} describes an existing Prometheus, but prometheus.install is stack: gpuplan "
                    "installs kube-prometheus-stack, whose Prometheus selects every rule and monitor at its own "
                    f"Service; set install: existing (the cluster runs its own Prometheus) or drop {field}"
                ))  # fmt: skip
            continue
        tenants = sorted({a.name for a in cluster.allocations if a.spec.gpu_metric_autoscaling})
        if tenants and prometheus.url is None:
            yield cluster.located.source.diagnostic((*base, "install"), (
                f"tenant(s) {', '.join(tenants)} ask for gpuMetricAutoscaling, which the Prometheus Adapter serves "
                "from the existing Prometheus: give its URL in prometheus.url "
                "(such as http://prometheus-operated.monitoring.svc:9090)"
            ))  # fmt: skip


@check
def check_monitoring_duplicate_scrape(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when the GPU Operator's own DCGM ServiceMonitor runs beside monitoring's."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        components = cluster.spec.components
        operator = components.gpu_operator
        if (
            components.monitoring is not None
            and operator is not None
            and operator.service_monitor is not None
        ):
            loc = ("components", "gpuOperator", "serviceMonitor")
            line, col = cluster.located.source.position(loc, True)
            yield Diagnostic(cluster.located.source.path, line, col, Severity.WARNING, format_path(loc), (
                "components.monitoring already scrapes the DCGM exporter (with the node label its rules need): "
                "drop gpuOperator.serviceMonitor, or every GPU series is stored twice"
            ))  # fmt: skip


def _unknown_metric(
    metric: str, known: dict[str, frozenset[str]], uncollected: frozenset[str]
) -> str:
    """Say why an alert's metric never has a series: not collected by the exporter, or no such metric."""
    if metric in uncollected:
        return (
            f"{metric} is not collected: the DCGM exporter runs with the GPU Operator's collector list "
            "(dcp-metrics-included.csv), which has it commented out, so the alert would never fire; "
            "give the exporter a collectors ConfigMap that enables it, or alert on a collected metric"
        )
    close = difflib.get_close_matches(metric, sorted(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (
        f"{metric} is no metric the cluster's exporters publish{hint}: the alert would never fire "
        "(DCGM exporter collectors of its GPU Operator release, Kueue's metrics at its version; gpuplan/components/metrics)"
    )
