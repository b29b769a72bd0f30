"""Monitoring: the Prometheus Operator release whose CRDs a cluster's ServiceMonitors and PrometheusRules
target, and the scrape endpoints of the components gpuplan monitors, read at their pinned versions.

- CRDs: prometheus-operator/prometheus-operator@<tag>:example/prometheus-operator-crd/
  monitoring.coreos.com_{servicemonitors,podmonitors,prometheusrules}.yaml (shipped by
  scripts/fetch_crds.py). With prometheus.install: stack (the default) the kube-prometheus-stack release
  below brings them; with existing, the cluster's own Prometheus Operator has them, and gpuplan labels
  its objects for that Prometheus' selectors (spec.ruleSelector, serviceMonitorSelector and their
  namespace selectors: prometheus-operator/prometheus-operator@v0.93.0 and @v0.92.1 example/prometheus-operator-crd/
  monitoring.coreos.com_prometheuses.yaml; gpuplan/requirements/monitoring.py says what they mean).
- DCGM exporter: the GPU Operator's Service "nvidia-dcgm-exporter", label app=nvidia-dcgm-exporter, port
  "gpu-metrics" 9400 (NVIDIA/gpu-operator@v26.7.0:assets/state-dcgm-exporter/0400_service.yaml; the same
  from v25.10.0), in the GPU Operator's namespace.
- Kueue: the chart's metrics Service, labels app.kubernetes.io/name=kueue and
  app.kubernetes.io/component=metrics-service, port "https" with the pod's service account token
  (kubernetes-sigs/kueue@v0.19.2:charts/kueue/templates/manager/auth_proxy_service.yaml,
  templates/prometheus/monitor.yaml, templates/_helpers.tpl; config/components/prometheus/monitor.yaml
  the same at v0.14.4). Prometheus' service account needs Kueue's metrics-reader ClusterRole.
- Volcano: Service "<release>-scheduler-service", label app=volcano-scheduler, port "metrics" 8080
  (volcano-sh/volcano@v1.15.1:installer/helm/chart/volcano/templates/scheduler.yaml).
- Install (gpuplan/emit/bootstrap/monitoring.py): kube-prometheus-stack 88.3.0, the chart release whose
  appVersion is prometheus-operator v0.93.0 (prometheus-community/helm-charts@kube-prometheus-stack-88.3.0:
  charts/kube-prometheus-stack/Chart.yaml); for v0.92.1, 87.21.0, the last release of the previous
  major (appVersion v0.92.1, kube-state-metrics subchart 8.0.0, also 2.19.1). Between the two tags the
  values gpuplan sets, the selectors' defaults and templates/_helpers.tpl are the same (git diff of
  charts/kube-prometheus-stack: image tags and crds.upgradeJob.forceConflicts change), and
  kube-state-metrics-8.0.0 and -8.2.0 both pass metricLabelsAllowlist as --metric-labels-allowlist
  (charts/kube-state-metrics/values.yaml, templates/deployment.yaml), so both get the same values. It brings the operator with its CRDs (charts/crds/crds/),
  Prometheus, Grafana with the dashboard sidecar (label grafana_dashboard "1", values.yaml
  grafana.sidecar.dashboards) and kube-state-metrics 2.19.1 (subchart 8.2.0). Its Prometheus picks only
  objects labelled with the Helm release unless the *SelectorNilUsesHelmValues values are false.
  Release "kube-prometheus-stack" names Prometheus' Service and service account
  kube-prometheus-stack-prometheus (templates/_helpers.tpl: fullname is the release name when it holds
  the chart name).
- Prometheus Adapter: chart 5.3.0; `rules.existing` names a ConfigMap holding config.yaml (read with
  --config=/etc/adapter/config.yaml), which then replaces its default rules; `prometheus.url`/`port`
  (prometheus-community/helm-charts@prometheus-adapter-5.3.0:charts/prometheus-adapter/values.yaml and
  templates/deployment.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

REPO = "prometheus-operator/prometheus-operator"
CRD_DIR = "example/prometheus-operator-crd"
API_VERSION = (
    "monitoring.coreos.com/v1"  # ServiceMonitor, PodMonitor, PrometheusRule: served v1 only
)

DCGM_SERVICE_LABELS = {"app": "nvidia-dcgm-exporter"}
DCGM_PORT = "gpu-metrics"
DCGM_JOB = "nvidia-dcgm-exporter"  # the Service name, the job label Prometheus gives its targets
KUEUE_SERVICE_LABELS = {
    "app.kubernetes.io/component": "metrics-service",
    "app.kubernetes.io/name": "kueue",
}
KUEUE_PORT = "https"
# The chart's ClusterRole granting GET /metrics, "<fullname>-metrics-reader"; fullname is the release name
# "kueue" the bootstrap Application uses (charts/kueue/templates/rbac/metrics_reader_role.yaml, _helpers.tpl).
KUEUE_METRICS_READER = "kueue-metrics-reader"
VOLCANO_SERVICE_LABELS = {"app": "volcano-scheduler"}
VOLCANO_PORT = "metrics"
# Node labels gpuplan's rules read through kube-state-metrics' kube_node_labels; its
# --metric-labels-allowlist must list them (docs/concepts/monitoring.md).
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
# The sidecar of the Grafana chart loads ConfigMaps carrying this label (grafana/helm-charts
# charts/grafana values.yaml sidecar.dashboards.label/labelValue defaults; kube-prometheus-stack uses "1").
DASHBOARD_LABEL = ("grafana_dashboard", "1")


CHART_REPO = "https://prometheus-community.github.io/helm-charts"
STACK_RELEASE = "kube-prometheus-stack"  # the Helm release name, hence the names below
PROMETHEUS_SERVICE = "kube-prometheus-stack-prometheus"  # Service and service account of Prometheus
PROMETHEUS_PORT = 9090
ADAPTER_CHART = Chart(CHART_REPO, "prometheus-adapter", "5.3.0")


@dataclass(frozen=True, kw_only=True)
class MonitoringRelease(Release):
    """A Prometheus Operator release and the kube-prometheus-stack chart release that installs it.

    The stack chart has its own version, so it is not `Release.chart` (the release's own chart).
    """

    stack_chart: Chart


def _release(tag: str, stack: str) -> MonitoringRelease:
    kinds = ("servicemonitors", "podmonitors", "prometheusrules")
    sources = tuple(f"{REPO}@{tag}:{CRD_DIR}/monitoring.coreos.com_{kind}.yaml" for kind in kinds)
    sources += tuple(
        f"prometheus-community/helm-charts@kube-prometheus-stack-{stack}:charts/kube-prometheus-stack/{path}"
        for path in ("Chart.yaml", "values.yaml", "templates/_helpers.tpl")
    )
    return MonitoringRelease(
        version=tag,
        sources=sources,
        crds=f"prometheus-operator/{tag}",
        stack_chart=Chart(CHART_REPO, "kube-prometheus-stack", stack),
    )


RELEASES: tuple[MonitoringRelease, ...] = (
    _release("v0.92.1", "87.21.0"),
    _release("v0.93.0", "88.3.0"),
)

MONITORING = Component(
    name="monitoring",
    field="monitoring",
    releases=RELEASES,
    emitter="gpuplan.emit.monitoring:emit",
    checks=("gpuplan.check.monitoring",),
)
