"""Monitoring (issue 23): the rendered example's ServiceMonitors, PrometheusRules, dashboards and adapter
rules validate against the shipped Prometheus Operator CRDs, name only metrics and labels the pinned
exporters publish, hold PromQL that Prometheus parses, and a misspelt metric in a cluster file is an error at its line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from gpuplan.components.metrics import (
    KSM,
    PROMETHEUS,
    dcgm_metrics,
    dcgm_tag,
    kueue_metrics,
    references,
    unknown_references,
)
from gpuplan.crds import index_for
from gpuplan.emit.monitoring_common import ksm_label
from gpuplan.validate import Validator
from gpuplan.validate.promql import parse_error
from tests.conftest import PROJECT, copy_example, run, snapshot

FOLDER = "h100-prod/monitoring"
# The example cluster's pinned releases: GPU Operator v26.7.0 (exporter 4.6.0-4.8.3), Kueue v0.19.2.
KNOWN = (
    dict(KSM)
    | dict(PROMETHEUS)
    | dcgm_metrics(dcgm_tag("4.6.0-4.8.3-distroless"))
    | kueue_metrics("v0.19.2")
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    result = run("render", "--root", str(PROJECT), "--out", str(out), "--cluster", "h100-prod")
    assert result.code == 0, result.stderr
    return out


def _objects(rendered: Path) -> dict[str, dict]:
    return {
        p.name: yaml.safe_load(p.read_text()) for p in sorted((rendered / FOLDER).glob("*.yaml"))
    }


def _rules(rendered: Path) -> list[dict]:
    return [
        rule
        for obj in _objects(rendered).values()
        if obj["kind"] == "PrometheusRule"
        for g in obj["spec"]["groups"]
        for rule in g["rules"]
    ]


def _dashboards(rendered: Path) -> dict[str, dict]:
    found = {}
    for obj in _objects(rendered).values():
        if (
            obj["kind"] == "ConfigMap"
            and obj["metadata"].get("labels", {}).get("grafana_dashboard") == "1"
        ):
            found |= {key: json.loads(text) for key, text in obj["data"].items()}
    return found


def _queries(rendered: Path) -> list[str]:
    exprs = [rule["expr"] for rule in _rules(rendered)]
    exprs += [
        t["expr"] for d in _dashboards(rendered).values() for p in d["panels"] for t in p["targets"]
    ]
    adapter = _objects(rendered)["configmap-gpuplan-prometheus-adapter.yaml"]
    exprs += [r["seriesQuery"] for r in yaml.safe_load(adapter["data"]["config.yaml"])["rules"]]
    return exprs


def test_the_example_renders_every_kind_of_monitoring_object(rendered: Path) -> None:
    names = set(_objects(rendered))
    assert {
        "servicemonitor-gpuplan-dcgm-exporter.yaml",
        "servicemonitor-gpuplan-kueue.yaml",
        "servicemonitor-gpuplan-volcano-scheduler.yaml",
    } <= names
    assert {
        f"prometheusrule-gpuplan-{g}.yaml"
        for g in ("gpu-health", "capacity", "fairness", "mig", "custom")
    } <= names
    alerts = {rule["alert"] for rule in _rules(rendered)}
    assert {"GpuXidError", "GpuFallenOffBus", "GpuUncorrectableEccRowRemap", "GpuThermalThrottling", "DcgmExporterDown",
            "GpuPoolNodesBelowQuota", "GpuPoolGpusBelowQuota", "TenantPendingUnderQuota", "ClusterQueueInactive",
            "MigConfigFailed", "MigInstancesDiffer", "GpuPowerHigh"} <= alerts  # fmt: skip
    assert (rendered / "argocd" / "h100-prod" / "monitoring.yaml").is_file()
    assert (rendered / "argocd" / "h100-prod" / "prometheus-adapter.yaml").is_file()


def test_monitoring_objects_validate_strictly_against_the_shipped_prometheus_operator_crds(
    rendered: Path,
) -> None:
    validator = Validator(index_for({"prometheus-operator": "v0.93.0"}), "1.33")
    custom = {
        n: o
        for n, o in _objects(rendered).items()
        if o["apiVersion"].startswith("monitoring.coreos.com/")
    }
    assert len(custom) >= 8
    assert {n: validator.validate(o) for n, o in custom.items() if validator.validate(o)} == {}


def test_the_validator_refuses_a_field_the_crd_lacks(rendered: Path) -> None:
    validator = Validator(index_for({"prometheus-operator": "v0.93.0"}), "1.33")
    rule = _objects(rendered)["prometheusrule-gpuplan-mig.yaml"]
    rule["spec"]["groups"][0]["rules"][0]["runbook"] = "misplaced: belongs under annotations"
    assert validator.validate(rule)


def test_every_alert_carries_a_runbook_line_and_a_severity(rendered: Path) -> None:
    for rule in _rules(rendered):
        assert rule["annotations"]["runbook"].strip(), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]


def test_every_metric_and_label_referenced_is_in_the_pinned_lists(rendered: Path) -> None:
    queries = _queries(rendered)
    assert len(queries) > 40
    problems = {q: unknown_references(q, KNOWN) for q in queries}
    assert {q: p for q, p in problems.items() if p} == {}


def test_every_query_parses_as_promql(rendered: Path) -> None:
    # On main before issue 35 GpuUncorrectableEccRowRemap put [1h] on a join, which Prometheus refuses.
    assert {q: parse_error(q) for q in _queries(rendered) if parse_error(q)} == {}


def test_the_ecc_remap_alert_takes_its_range_on_the_series(rendered: Path) -> None:
    rule = next(r for r in _rules(rendered) if r["alert"] == "GpuUncorrectableEccRowRemap")
    assert rule["expr"].startswith(
        "(increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) * on (node)"
    )
    old = 'increase((DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS * on (node) group_left () kube_node_labels{a="b"})[1h]) > 0'
    assert parse_error(old) == "ranges only allowed for vector selectors"


def test_capacity_thresholds_come_from_the_quotas(rendered: Path) -> None:
    # h100-infer (8 GPUs a node, 7 x 1g.10gb a GPU): team-a 14 + team-b 56 instances = 10 GPUs = 2 nodes.
    # Autoscaled pools (h100-train, l40s-dev) get no capacity alert.
    by_pool = {
        r["labels"]["pool"]: r["expr"]
        for r in _rules(rendered)
        if r["alert"] == "GpuPoolGpusBelowQuota"
    }
    assert set(by_pool) == {"h100-infer", "a100-mixed"}
    assert by_pool["h100-infer"].endswith("< 10")
    # a100-mixed advertises 12 x 3g.40gb and 4 x 2g.20gb a node (per-GPU layouts); team-b's 12 and 4 fill one node.
    assert by_pool["a100-mixed"].endswith("< 8")
    nodes = {
        r["labels"]["pool"]: r["expr"]
        for r in _rules(rendered)
        if r["alert"] == "GpuPoolNodesBelowQuota"
    }
    assert nodes["h100-infer"].endswith("< 2")


def test_dashboards_reference_only_defined_data_sources_and_variables(rendered: Path) -> None:
    dashboards = _dashboards(rendered)
    assert {"gpuplan-dashboard-pool-h100-infer.json", "gpuplan-dashboard-tenants.json"} <= set(
        dashboards
    )
    for name, model in dashboards.items():
        variables = {v["name"] for v in model["templating"]["list"]}
        datasources = {v["name"] for v in model["templating"]["list"] if v["type"] == "datasource"}
        assert model["panels"], name
        for panel in model["panels"]:
            for ref in [panel["datasource"], *(t["datasource"] for t in panel["targets"])]:
                assert ref["type"] == "prometheus" and ref["uid"].strip("${}") in datasources, (
                    name,
                    panel["title"],
                )
            for target in panel["targets"]:
                used = set(re.findall(r"\$\{?(\w+)", target["expr"])) - {"__rate_interval"}
                assert used <= variables, (name, panel["title"], used - variables)
        ids = [p["id"] for p in model["panels"]]
        assert len(ids) == len(set(ids)), name


def test_mig_pool_dashboard_shows_instance_use_and_the_tenants_dashboard_lists_the_tenants(
    rendered: Path,
) -> None:
    dashboards = _dashboards(rendered)
    titles = [p["title"] for p in dashboards["gpuplan-dashboard-pool-a100-mixed.json"]["panels"]]
    assert any("MIG" in t for t in titles)
    assert not any(
        "MIG" in p["title"] for p in dashboards["gpuplan-dashboard-pool-h100-train.json"]["panels"]
    )
    tenant = next(
        v
        for v in dashboards["gpuplan-dashboard-tenants.json"]["templating"]["list"]
        if v["name"] == "tenant"
    )
    assert tenant["query"] == "team-a,team-b"


def test_adapter_rules_serve_gpu_utilisation_for_the_autoscaling_tenant_only(
    rendered: Path,
) -> None:
    config = yaml.safe_load(
        _objects(rendered)["configmap-gpuplan-prometheus-adapter.yaml"]["data"]["config.yaml"]
    )
    served = {r["name"]["as"]: r for r in config["rules"]}
    assert set(served) == {"gpu_utilization", "gpu_memory_used_mib"}
    assert 'exported_namespace=~"team-b"' in served["gpu_utilization"]["seriesQuery"]
    assert served["gpu_utilization"]["resources"]["overrides"]["exported_pod"] == {
        "resource": "pod"
    }


# DCGM fields DCGM does not report for MIG instances (NVIDIA/dcgm-exporter issues 216 and 430).
NOT_FOR_MIG = {
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
}


def test_gpu_autoscaling_on_a_mig_pool_reads_a_metric_dcgm_reports_for_mig_instances(
    rendered: Path,
) -> None:
    """team-b autoscales on GPU metrics and its quota is MIG instances of h100-prod's MIG pools."""
    team_b = yaml.safe_load((PROJECT / "tenants/team-b.yaml").read_text())
    assert any("mig" in str(a) for a in team_b["allocations"]), "the example no longer has the case"
    config = yaml.safe_load(
        _objects(rendered)["configmap-gpuplan-prometheus-adapter.yaml"]["data"]["config.yaml"]
    )
    served = {r["name"]["as"]: r for r in config["rules"]}
    series = {name: r["seriesQuery"].split("{", 1)[0] for name, r in served.items()}
    assert series["gpu_utilization"] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    assert not set(series.values()) & NOT_FOR_MIG
    assert served["gpu_utilization"]["metricsQuery"].endswith(" * 100")  # percent, as before


@pytest.mark.parametrize(
    ("expr", "metrics", "labels"),
    [
        (
            'sum by (node) (rate(DCGM_FI_DEV_XID_ERRORS{gpu="0"}[5m]))',
            {"DCGM_FI_DEV_XID_ERRORS"},
            {"node", "gpu"},
        ),
        ('a * on (node) group_left () b{x=~"$v"} > 0 unless c', {"a", "b", "c"}, {"node", "x"}),
        ('count(up{job="x"} == 1) or vector(0)', {"up"}, {"job"}),
    ],
)
def test_references_reads_metrics_and_labels(
    expr: str, metrics: set[str], labels: set[str]
) -> None:
    assert references(expr) == (metrics, labels)


@pytest.mark.parametrize(
    "expr", ["sum(a", "a[5m", 'a{b="c}', "a)", 'sum(a{b="("})]', "rate(sum(a)[5m])", "a > > 1"]
)
def test_a_query_prometheus_refuses_does_not_parse(expr: str) -> None:
    assert parse_error(expr) is not None


@pytest.mark.parametrize(
    "expr", ['avg(a{n=~"$node"}) by (x)', "rate(a[$__rate_interval])", "sum(rate(a[5m]))[1h:5m]"]
)
def test_a_valid_query_with_grafana_variables_parses(expr: str) -> None:
    assert parse_error(expr) is None


def test_a_misspelt_metric_or_label_is_found() -> None:
    assert unknown_references("DCGM_FI_DEV_GPU_UTILL > 90", KNOWN) == [
        "metric DCGM_FI_DEV_GPU_UTILL"
    ]
    assert unknown_references('kueue_pending_workloads{clusterqueue="a"}', KNOWN) == [
        "label clusterqueue"
    ]
    assert unknown_references('kube_node_labels{label_gpuplan_io_pool="a"}', KNOWN) == []


def test_ksm_label_follows_kube_state_metrics_naming() -> None:
    assert ksm_label("nvidia.com/mig.config.state") == "label_nvidia_com_mig_config_state"
    assert ksm_label("example.com/rackName") == "label_example_com_rack_name"


def test_a_misspelt_metric_in_a_cluster_alert_is_an_error_at_its_line(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    cluster = repo / "clusters" / "h100-prod.yaml"
    text = cluster.read_text()
    assert "metric: DCGM_FI_DEV_POWER_USAGE," in text
    cluster.write_text(
        text.replace("metric: DCGM_FI_DEV_POWER_USAGE,", "metric: DCGM_FI_DEV_POWER_USAGES,")
    )
    line = next(
        n
        for n, text in enumerate(cluster.read_text().splitlines(), 1)
        if "DCGM_FI_DEV_POWER_USAGES" in text
    )
    col = cluster.read_text().splitlines()[line - 1].index("DCGM_FI_DEV_POWER_USAGES") + 1
    before = snapshot(repo / "output")
    result = run("render", "--root", str(repo))
    assert result.code == 1
    assert f"clusters/h100-prod.yaml:{line}:{col}: error: " in result.stderr
    assert (
        "DCGM_FI_DEV_POWER_USAGES is no metric" in result.stderr
        and "did you mean DCGM_FI_DEV_POWER_USAGE?" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert snapshot(repo / "output") == before


def test_autoscaling_asked_on_a_cluster_without_monitoring_is_an_error(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    cluster = repo / "clusters" / "h100-prod.yaml"
    text = cluster.read_text()
    start = text.index("  monitoring:\n")
    end = text.index("\n\n", start)
    cluster.write_text(text[:start] + text[end + 1 :])
    result = run("render", "--root", str(repo))
    assert result.code == 1
    assert re.search(
        r"tenants/team-b\.yaml:\d+:\d+: error: .*no components\.monitoring", result.stderr
    ), result.stderr


def test_an_alert_with_no_bound_is_refused(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    cluster = repo / "clusters" / "h100-prod.yaml"
    cluster.write_text(cluster.read_text().replace(", above: 680", ""))
    result = run("render", "--root", str(repo))
    assert result.code == 1
    assert "give exactly one of above or below" in result.stderr


def test_the_shipped_metric_lists_match_their_sources() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "fetch_metrics", PROJECT / "scripts" / "fetch_metrics.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.check() == []
    sources = json.loads((PROJECT / "gpuplan/components/metrics/SOURCES.json").read_text())["files"]
    assert {s["file"] for s in sources} >= {"dcgm-exporter/4.5.3-4.8.2.csv", "kueue/v0.19.2.json"}
    assert all(len(s["commit"]) == 40 and s["path"] for s in sources)


def test_kueue_metric_facts_differ_by_release() -> None:
    # kueue_cluster_queue_resource_pending and replica_role arrive after v0.14 (metrics.md at each tag).
    assert "kueue_cluster_queue_resource_pending" in kueue_metrics("v0.19.2")
    assert "kueue_cluster_queue_resource_pending" not in kueue_metrics("v0.14.4")
    assert "replica_role" not in kueue_metrics("v0.14.4")["kueue_pending_workloads"]


def test_a_second_dcgm_scrape_is_a_warning(tmp_path: Path) -> None:
    repo = copy_example(tmp_path / "repo")
    cluster = repo / "clusters" / "h100-prod.yaml"
    text = cluster.read_text()
    cluster.write_text(
        text.replace(
            "    dcgmExporter: true\n",
            "    dcgmExporter: true\n    serviceMonitor: {interval: 30s}\n",
            1,
        )
    )
    result = run("check", "--root", str(repo), "--strict")
    assert result.code == 1
    assert re.search(
        r"clusters/h100-prod\.yaml:\d+:\d+: warning: .*scrapes the DCGM exporter .*\[monitoring-duplicate-scrape\]",
        result.stderr,
    ), result.stderr


def test_render_refuses_an_emitted_rule_naming_an_unknown_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplan.emit import monitoring_rules

    real = monitoring_rules.health

    def misspelt(monitoring: object, pool: object) -> list[dict]:
        rules = real(monitoring, pool)  # type: ignore[arg-type]
        rules[0] = {
            **rules[0],
            "expr": rules[0]["expr"].replace("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"),
        }
        return rules

    monkeypatch.setattr(monitoring_rules, "health", misspelt)
    repo = copy_example(tmp_path / "repo")
    result = run("render", "--root", str(repo))
    assert result.code == 1
    assert re.search(
        r"output/h100-prod/monitoring/prometheusrule-gpuplan-gpu-health\.yaml:\d+:\d+: error: .*metric DCGM_FI_DEV_XID_ERROR is not published",
        result.stderr,
    ), result.stderr
    assert not (repo / "output").exists()


def test_query_problems_read_dashboards_and_adapter_rules() -> None:
    from gpuplan.validate.promql import query_problems

    panel = {
        "targets": [{"expr": 'avg(DCGM_FI_DEV_GPU_UTIL{gpu="0"}'}, {"expr": "DCGM_FI_DEV_FB_USD"}]
    }
    dashboard = {
        "kind": "ConfigMap",
        "metadata": {"labels": {"grafana_dashboard": "1"}},
        "data": {"d.json": json.dumps({"panels": [panel]})},
    }
    assert query_problems(dashboard, KNOWN) == [
        (
            "data[d.json].panels[0].targets[0].expr",
            "query is not valid PromQL (unclosed left parenthesis): "
            + 'avg(DCGM_FI_DEV_GPU_UTIL{gpu="0"}',
        ),
        (
            "data[d.json].panels[0].targets[1].expr",
            "metric DCGM_FI_DEV_FB_USD is not published by the cluster's exporters at their pinned versions",
        ),
    ]
    adapter = {
        "kind": "ConfigMap",
        "data": {
            "config.yaml": "rules:\n- seriesQuery: 'DCGM_FI_DEV_GPU_UTIL{exported_podd!=\"\"}'\n"
        },
    }
    assert [m for _, m in query_problems(adapter, KNOWN)] == [
        "label exported_podd is not published by the cluster's exporters at their pinned versions"
    ]


def test_query_problems_read_dashboard_variables() -> None:
    from gpuplan.validate.promql import query_problems

    variable = {
        "name": "node",
        "type": "query",
        "query": "label_values(kube_node_labels, nodename)",
    }
    dashboard = {
        "kind": "ConfigMap",
        "metadata": {"labels": {"grafana_dashboard": "1"}},
        "data": {"d.json": json.dumps({"templating": {"list": [variable]}, "panels": []})},
    }
    assert [m for _, m in query_problems(dashboard, KNOWN)] == [
        "label nodename is not published by the cluster's exporters at their pinned versions"
    ]


NARROW_LIST = """\
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_NVLINK_TX_BYTES, counter, The rate of data transmitted over NVLink (in B/s).
"""
# The metrics gpuplan's alerts and dashboards read that the list above (the example's before issue 35) lacks.
UNCOLLECTED = {
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
}  # fmt: skip


def test_a_metric_the_patched_cluster_policy_does_not_collect_is_an_error(tmp_path: Path) -> None:
    """The example's ClusterPolicy patch names a collector ConfigMap: the exporter collects only its list."""
    repo = copy_example(tmp_path / "repo")
    shutil.copytree(PROJECT / "patches", repo / "patches")
    config = repo / "extra/h100-prod/gpu-operator/configmap-dcgm-metrics.yaml"
    obj = yaml.safe_load(config.read_text())
    obj["data"]["dcgm-metrics.csv"] = NARROW_LIST
    config.write_text(yaml.safe_dump(obj))
    before = snapshot(repo / "output")
    result = run("render", "--root", str(repo))
    assert result.code == 1
    found = set(
        re.findall(r"metric (DCGM_\w+) is not collected: the ClusterPolicy's", result.stderr)
    )
    assert found == UNCOLLECTED, result.stderr
    assert re.search(
        r"output/h100-prod/monitoring/prometheusrule-gpuplan-gpu-health\.yaml:\d+:\d+: error: .*"
        r"metric DCGM_FI_DEV_XID_ERRORS is not collected: .*names ConfigMap dcgm-metrics",
        result.stderr,
    )
    assert "please report this bug" not in result.stderr  # the user's list, not gpuplan's fault
    assert snapshot(repo / "output") == before


def test_the_collected_metrics_follow_the_cluster_policy() -> None:
    from gpuplan.validate.collectors import narrowed

    policy = {"kind": "ClusterPolicy", "spec": {"dcgmExporter": {"config": {"name": "mine"}}}}
    config_map = {"metadata": {"name": "mine"}, "data": {"dcgm-metrics.csv": NARROW_LIST}}
    default, why = narrowed(KNOWN, [{"kind": "ClusterPolicy", "spec": {}}], [config_map])
    assert default == KNOWN and why == {}
    known, why = narrowed(KNOWN, [policy], [config_map])
    assert {m for m in known if m.startswith("DCGM_")} == {
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_NVLINK_TX_BYTES",
    }  # fmt: skip
    assert "kueue_pending_workloads" in known and set(why) >= UNCOLLECTED
