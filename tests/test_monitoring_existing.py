"""Monitoring with a Prometheus the cluster already runs (issue 37): no kube-prometheus-stack, objects
labelled for that Prometheus' selectors, the adapter pointed at its URL, the CRDs taken as the
cluster's own, what it must select printed by `gpuplan requirements`, contradictions refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import copy_example, edit, run

CLUSTER = "clusters/h100-prod.yaml"
DASHBOARDS = "    grafanaDashboards: true\n"
EXISTING = """    prometheus:
      install: existing
      url: http://prometheus-operated.monitoring.svc:9090/prom/
      ruleLabels: {release: prom}
      serviceMonitorLabels: {team: platform}
      serviceAccount: prometheus-k8s
      dashboardLabels: {grafana: shared}
"""


def existing_repo(root: Path, block: str = EXISTING) -> Path:
    copy_example(root)
    edit(root, CLUSTER, DASHBOARDS, DASHBOARDS + block)
    return root


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = existing_repo(tmp_path_factory.mktemp("existing") / "repo")
    out = root / "out"
    result = run("render", "--root", str(root), "--out", str(out), "--cluster", "h100-prod")
    assert result.code == 0, result.stderr
    whole = run("check", "--root", str(root))  # the whole fleet: the sync simulation runs
    assert whole.code == 0, whole.stderr
    return out, whole.stderr


def _load(out: Path, name: str) -> dict:
    return yaml.safe_load((out / "h100-prod" / "monitoring" / name).read_text())


def test_no_stack_is_installed_and_the_adapter_queries_the_given_url(
    rendered: tuple[Path, str],
) -> None:
    out, _ = rendered
    apps = out / "argocd" / "h100-prod"
    assert not (apps / "monitoring.yaml").exists()  # no kube-prometheus-stack Application
    adapter = yaml.safe_load((apps / "prometheus-adapter.yaml").read_text())
    values = adapter["spec"]["source"]["helm"]["valuesObject"]["prometheus"]
    # the chart joins --prometheus-url={{url}}:{{port}}{{path}}
    assert values == {
        "url": "http://prometheus-operated.monitoring.svc",
        "port": 9090,
        "path": "/prom",
    }


def test_objects_carry_the_labels_the_existing_prometheus_selects(
    rendered: tuple[Path, str],
) -> None:
    out, _ = rendered
    rule = _load(out, "prometheusrule-gpuplan-mig.yaml")
    assert rule["metadata"]["labels"]["release"] == "prom"
    monitor = _load(out, "servicemonitor-gpuplan-kueue.yaml")
    assert monitor["metadata"]["labels"]["team"] == "platform"
    # in the Prometheus' namespace, still selecting Kueue's Service in Kueue's namespace
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kueue-system"]}
    dashboard = _load(out, "configmap-gpuplan-dashboard-pool-h100-infer.yaml")
    assert "grafana_dashboard" not in dashboard["metadata"]["labels"]
    assert dashboard["metadata"]["labels"]["grafana"] == "shared"
    binding = _load(out, "clusterrolebinding-gpuplan-prometheus-kueue-metrics.yaml")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
    ]


def test_the_crds_are_taken_as_the_clusters_own_and_render_says_so(
    rendered: tuple[Path, str],
) -> None:
    _, stderr = rendered
    assert (
        "note: cluster h100-prod: the monitoring.coreos.com CRDs are taken as the cluster's own "
        "(components.monitoring.prometheus.install: existing)" in stderr
    )
    # only a declared existing Prometheus is noted
    assert "note: cluster edge-inference" not in stderr


def test_requirements_print_what_the_existing_prometheus_must_select(tmp_path: Path) -> None:
    root = existing_repo(tmp_path / "repo")
    result = run("requirements", "--root", str(root), "--cluster", "h100-prod")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        "h100-prod: the existing Prometheus (components.monitoring.prometheus.install: existing)"
        in lines
    )
    assert "  spec.ruleSelector matches the labels release=prom" in lines
    assert "  spec.serviceMonitorSelector matches the labels team=platform" in lines
    assert any(
        "--metric-labels-allowlist=nodes=[" in line and "gpuplan.io/pool" in line for line in lines
    )
    # with the stack, nothing is asked of the cluster's Prometheus
    stack = run(
        "requirements", "--root", str(copy_example(tmp_path / "stack")), "--cluster", "h100-prod"
    )
    assert "existing Prometheus" not in stack.stdout


def error_line(tmp_path: Path, block: str, marker: str) -> str:
    """Return the one diagnostic of `gpuplan check` naming `marker`, checked to be file:line:col: error."""
    result = run("check", "--root", str(existing_repo(tmp_path / "repo", block)))
    assert result.code == 1 and "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if marker in x]
    assert re.match(r"^clusters/h100-prod\.yaml:\d+:\d+: error: ", line), line
    return line


def test_existing_prometheus_settings_beside_the_stack_are_an_error_at_their_line(
    tmp_path: Path,
) -> None:
    block = "    prometheus:\n      ruleLabels: {release: prom}\n"
    line = error_line(tmp_path, block, "prometheus.ruleLabels")
    assert "describes an existing Prometheus, but prometheus.install is stack" in line


def test_an_autoscaling_tenant_needs_the_existing_prometheus_url(tmp_path: Path) -> None:
    line = error_line(tmp_path, "    prometheus:\n      install: existing\n", "prometheus.url")
    assert "team-b" in line and "gpuMetricAutoscaling" in line


@pytest.mark.parametrize(
    "url", ["prometheus:9090", "http://user:secret@prom:9090", "http://prom:99999"]
)
def test_a_malformed_url_is_an_input_error(tmp_path: Path, url: str) -> None:
    block = f"    prometheus:\n      install: existing\n      url: {url}\n"
    line = error_line(tmp_path, block, "prometheus.url")
    assert "give an http:// or https:// URL of a host" in line  # the URL's own error
