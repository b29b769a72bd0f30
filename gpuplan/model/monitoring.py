"""A cluster's monitoring: Prometheus Operator objects, alert thresholds and Grafana dashboards."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from gpuplan.components.monitoring import RELEASES
from gpuplan.model.common import LabelKey, LabelValue, Model, Name, Version

Duration = Annotated[str, Field(pattern=r"^[1-9][0-9]*(s|m|h)$")]
AlertName = Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]{0,62}$")]
MetricName = Annotated[str, Field(pattern=r"^[A-Za-z_:][A-Za-z0-9_:]*$", max_length=200)]


URL_PATTERN = r"^https?://(\[[0-9A-Fa-f:.]+\]|[^\s/@:\[\]]+)(:[0-9]{1,5})?(/[^\s#]*)?$"


def _prometheus_url(value: str) -> str:
    """Accept an http(s) URL of a host, an optional port and path: no credentials (it goes to Git)."""
    if re.match(URL_PATTERN, value):
        try:
            if urlsplit(value).port != 0:
                return value
        except ValueError:
            pass  # a port above 65535
    raise ValueError(
        "give an http:// or https:// URL of a host, with an optional port (1 to 65535) and path "
        "and no user or password, such as http://prometheus-operated.monitoring.svc:9090"
    )


PrometheusUrl = Annotated[
    str,
    AfterValidator(_prometheus_url),
    WithJsonSchema({"type": "string", "pattern": URL_PATTERN}),
]


class Thresholds(Model):
    """When gpuplan's alerts fire; every field has a default."""

    gpu_temperature: int = Field(default=87, ge=40, le=120)
    """GPU temperature (DCGM_FI_DEV_GPU_TEMP, degrees C) above which GpuThermalThrottling fires; default 87,
    below the slowdown temperature of H100 and A100 boards."""
    memory_temperature: int = Field(default=95, ge=40, le=120)
    """HBM temperature (DCGM_FI_DEV_MEMORY_TEMP, degrees C) above which GpuMemoryHot fires; default 95."""
    temperature_for: Duration = "5m"
    """How long a temperature stays above its threshold before the alert fires; default 5m."""
    exporter_down_for: Duration = "5m"
    """How long a pool's DCGM exporters may be missing before DcgmExporterDown fires; default 5m."""
    capacity_for: Duration = "15m"
    """How long a pool may have fewer nodes or GPUs than its quotas assume before the alert fires; default 15m."""
    pending_for: Duration = "15m"
    """How long a tenant's workloads may wait while it is under its nominal quota; default 15m."""
    mig_failed_for: Duration = "10m"
    """How long a node may report a failed or mismatched MIG config before the alert fires; default 10m."""


class ThresholdAlert(Model):
    """An extra alert on one exporter metric crossing a value (its name is checked against the pinned lists)."""

    name: AlertName
    """Alert name, such as GpuPowerHigh."""
    metric: MetricName
    """A metric the DCGM exporter or Kueue publishes at the cluster's versions, such as DCGM_FI_DEV_POWER_USAGE."""
    above: float | None = None
    """Fire when the metric is above this value (give above or below)."""
    below: float | None = None
    """Fire when the metric is below this value (give above or below)."""
    for_: Duration = Field(default="10m", alias="for")
    """How long the condition holds before the alert fires; default 10m."""
    severity: Literal["critical", "warning", "info"] = "warning"
    """Alert severity label; default warning."""

    @model_validator(mode="after")
    def _one_bound(self) -> ThresholdAlert:
        if (self.above is None) == (self.below is None):
            raise ValueError("give exactly one of above or below")
        return self


class Prometheus(Model):
    """Which Prometheus reads gpuplan's monitoring objects: the kube-prometheus-stack gpuplan installs, or
    one the cluster already runs (its own stack or a managed offering, with the Prometheus Operator CRDs)."""

    install: Literal["stack", "existing"] = "stack"
    """stack: gpuplan installs kube-prometheus-stack, whose Prometheus selects every rule and monitor.
    existing: the cluster runs a Prometheus Operator and Prometheus already; gpuplan installs neither and
    labels its objects for that Prometheus' selectors (the fields below). Default stack."""
    url: PrometheusUrl | None = None
    """existing only: the URL the Prometheus Adapter queries, such as
    http://prometheus-operated.monitoring.svc:9090; needed when a tenant asks for gpuMetricAutoscaling.
    No credentials in it (it is rendered into Git)."""
    rule_labels: dict[LabelKey, LabelValue] = {}
    """existing only: labels every PrometheusRule gets, which the Prometheus' spec.ruleSelector must match
    (a null ruleSelector matches no rule)."""
    service_monitor_labels: dict[LabelKey, LabelValue] = {}
    """existing only: labels every ServiceMonitor gets, which its spec.serviceMonitorSelector must match."""
    service_account: Name | None = None
    """existing only: the Prometheus' service account in the monitoring namespace, bound to Kueue's
    metrics-reader ClusterRole so that it can scrape Kueue; without it, bind it yourself."""
    dashboard_labels: dict[LabelKey, LabelValue] | None = None
    """existing only: labels the dashboard ConfigMaps get for the cluster's Grafana sidecar; default
    grafana_dashboard: "1" (the Grafana chart's own)."""

    def existing_fields(self) -> list[str]:
        """Return the fields set that describe an existing Prometheus (in input spelling)."""
        given = self.model_fields_set - {"install"}
        fields = type(self).model_fields
        return [fields[f].alias or f for f in sorted(given)]


class Monitoring(Model):
    """Prometheus Operator ServiceMonitors and PrometheusRules, Grafana dashboards and Prometheus Adapter rules."""

    version: Annotated[
        Version, WithJsonSchema({"type": "string", "enum": [r.version for r in RELEASES]})
    ]
    """Prometheus Operator release: its CRDs validate what is emitted, and with prometheus.install: stack
    the kube-prometheus-stack release gpuplan installs brings it (with an existing Prometheus: the
    release the cluster runs)."""
    namespace: Name = "monitoring"
    """Namespace of the PrometheusRules, dashboards and adapter rules (where Prometheus and Grafana run);
    with an existing Prometheus the ServiceMonitors too. Default monitoring."""
    prometheus: Prometheus = Prometheus()
    """The Prometheus that reads these objects: installed by gpuplan (default) or already running."""
    grafana_dashboards: bool = True
    """Emit Grafana dashboards (per pool and per tenant) as ConfigMaps labelled grafana_dashboard: "1"."""
    runbook_url: Annotated[str, Field(pattern=r"^https?://[^\s#]+$")] | None = None
    """Base URL of the team's runbooks; each alert then gets runbook_url <base>#<alert name in lower case>
    beside its one-line `runbook` annotation. Default: the one-line runbook only."""
    thresholds: Thresholds = Thresholds()
    """When the built-in alerts fire."""
    alerts: list[ThresholdAlert] = []
    """Extra alerts on one metric each; a metric the pinned exporters do not publish is an error."""
