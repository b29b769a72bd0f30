"""Every alert gpuplan writes, run by Prometheus' own rule engine (`promtool test rules`, issue 35).

For each cluster of the rendered example with PrometheusRules, a synthetic healthy cluster is built from
what the rules promise (each pool's node labels, GPUs per node, nodes and GPUs the quotas need, MIG
instances per profile; each tenant's ClusterQueue): on it no alert fires. Then, for each alert, one
failure is injected into that healthy cluster (an XID, a hot GPU, a missing GPU, an exporter down, a
failed MIG config...) and that alert must fire. Alerts are told apart by their name and rule labels
(pool, profile) in Prometheus' ALERTS series.

promtool comes with Debian's `prometheus` package (`.ci/run` installs it); without it these tests skip.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT

OUTPUT = PROJECT / "output"
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)"
)
MINUTES = 60  # samples per series, one a minute
# Each cluster's alerts are read 5 minutes after its longest `for`: promtool evaluates every rule
# once a minute up to that time, so a later reading only costs time.
Series = dict[str, str]  # series selector -> promtool values


def _rule_files(cluster: Path) -> list[Path]:
    return sorted(cluster.glob("*/prometheusrule-*.yaml"))


def _clusters() -> list[Path]:
    """Return the rendered clusters with alerts: the example's and the golden cases'."""
    folders = [OUTPUT, *sorted((PROJECT / "tests/cases").glob("*/expected"))]
    return [c for f in folders for c in sorted(f.iterdir()) if c.is_dir() and _rule_files(c)]


def _rules(cluster: Path) -> list[dict[str, Any]]:
    return [
        rule
        for path in _rule_files(cluster)
        for group in yaml.safe_load(path.read_text())["spec"]["groups"]
        for rule in group["rules"]
    ]


def _threshold(expr: str) -> int:
    """Return the number an alert compares against last (`... < 8`)."""
    found = re.search(r"(?:<|>|!=|==)\s*(\d+)\s*$", expr)
    assert found, expr
    return int(found.group(1))


def _selector(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


class World:
    """A healthy cluster as the rules see it: per pool nodes with their GPUs, per tenant a ClusterQueue."""

    def __init__(self, rules: list[dict[str, Any]]) -> None:
        self.rules = rules
        self.pools: dict[str, dict[str, Any]] = {}
        for rule in rules:
            pool = rule["labels"].get("pool")
            if pool is None:
                continue
            info = self.pools.setdefault(
                pool, {"labels": {}, "gpus": 1, "nodes": 1, "quota": 0, "mig": {}}
            )
            name, expr = rule["alert"], rule["expr"]
            if name == "DcgmExporterDown":
                matchers = re.search(r"kube_node_labels\{([^}]*)\}", expr)
                assert matchers, expr
                info["labels"] |= dict(re.findall(r'(\w+)="([^"]*)"', matchers.group(1)))
            elif name == "MigConfigLabelDiffers":
                info["labels"] |= dict(re.findall(r'(\w+)!="([^"]*)"', expr))
            elif name == "GpuMissing":
                info["gpus"] = _threshold(expr)
            elif name == "GpuPoolNodesBelowQuota":
                info["nodes"] = max(info["nodes"], _threshold(expr))
            elif name == "GpuPoolGpusBelowQuota":
                info["quota"] = _threshold(expr)
            elif name == "MigInstancesDiffer":
                info["mig"][rule["labels"]["profile"]] = _threshold(expr)
        for info in self.pools.values():
            info["nodes"] = max(info["nodes"], math.ceil(info["quota"] / info["gpus"]))
        queues = set()
        for rule in rules:
            queues |= {
                q
                for m in re.findall(r'cluster_queue=~"([^"]*)"', rule["expr"])
                for q in m.split("|")
            }
        self.queues = sorted(queues)

    def healthy(self) -> Series:
        series: Series = {}
        flat = lambda value: f"{value}x{MINUTES}"  # noqa: E731
        for pool, info in sorted(self.pools.items()):
            for n in range(info["nodes"]):
                node = {"node": f"{pool}-{n}"}
                labels = node | info["labels"] | {"label_nvidia_com_mig_config_state": "success"}
                series[f"kube_node_labels{_selector(labels)}"] = flat(1)
                series[f"up{_selector(node | {'job': 'nvidia-dcgm-exporter'})}"] = flat(1)
                for g in range(info["gpus"]):
                    gpu = node | {"gpu": str(g)}
                    for metric, value in (
                        ("DCGM_FI_DEV_GPU_TEMP", 60),
                        ("DCGM_FI_DEV_MEMORY_TEMP", 60),
                        ("DCGM_FI_DEV_XID_ERRORS", 0),
                        ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 0),
                        ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 0),
                        ("DCGM_FI_DEV_POWER_USAGE", 300),
                    ):
                        series[f"{metric}{_selector(gpu)}"] = flat(value)
                for profile, count in sorted(info["mig"].items()):
                    for i in range(count):
                        instance = node | {
                            "gpu": str(i % info["gpus"]),
                            "GPU_I_PROFILE": profile,
                            "GPU_I_ID": str(i),
                        }
                        series[f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{_selector(instance)}"] = flat(0.5)
        for queue in self.queues:
            cq = {"cluster_queue": queue}
            gpu = cq | {"resource": "nvidia.com/gpu", "flavor": "f"}
            series[f"kueue_pending_workloads{_selector(cq | {'status': 'active'})}"] = flat(0)
            series[f"kueue_cluster_queue_resource_usage{_selector(gpu)}"] = flat(4)
            series[f"kueue_cluster_queue_nominal_quota{_selector(gpu)}"] = flat(4)
            for status, value in (("active", 1), ("pending", 0), ("terminating", 0)):
                series[f"kueue_cluster_queue_status{_selector(cq | {'status': status})}"] = flat(
                    value
                )
        return series


def _first(series: Series, metric: str, pool: str | None = None, **labels: str) -> str:
    """Return the first series of a metric (on a pool's first node) carrying the given labels."""
    node = f'node="{pool}-0"' if pool else ""
    return next(
        s
        for s in sorted(series)
        if s.startswith(metric + "{")
        and node in s
        and all(f'{k}="{v}"' in s for k, v in labels.items())
    )


def _set(metric: str, value: str, **labels: str) -> Callable[[Series, dict[str, Any]], None]:
    def inject(series: Series, rule: dict[str, Any]) -> None:
        series[_first(series, metric, rule["labels"].get("pool"), **labels)] = value

    return inject


def _drop(metric: str, **labels: str) -> Callable[[Series, dict[str, Any]], None]:
    def inject(series: Series, rule: dict[str, Any]) -> None:
        del series[_first(series, metric, rule["labels"].get("pool"), **labels)]

    return inject


def _drop_node(series: Series, rule: dict[str, Any]) -> None:
    node = f'node="{rule["labels"]["pool"]}-0"'
    for key in [s for s in series if node in s]:
        del series[key]


def _drop_node_gpus(series: Series, rule: dict[str, Any]) -> None:
    node = f'node="{rule["labels"]["pool"]}-0"'
    for key in [s for s in series if node in s and s.startswith("DCGM_FI_DEV_GPU_TEMP{")]:
        del series[key]


def _relabel(old: str, new: str) -> Callable[[Series, dict[str, Any]], None]:
    def inject(series: Series, rule: dict[str, Any]) -> None:
        key = _first(series, "kube_node_labels", rule["labels"]["pool"])
        series[re.sub(old, new, key)] = series.pop(key)

    return inject


def _pending_under_quota(series: Series, rule: dict[str, Any]) -> None:
    queue = re.search(r'cluster_queue=~"([^"|]*)', rule["expr"])
    assert queue
    series[_first(series, "kueue_pending_workloads", cluster_queue=queue.group(1))] = f"2x{MINUTES}"
    series[_first(series, "kueue_cluster_queue_resource_usage", cluster_queue=queue.group(1))] = (
        f"1x{MINUTES}"
    )


def _inactive(series: Series, rule: dict[str, Any]) -> None:
    queue = re.search(r'cluster_queue=~"([^"|]*)', rule["expr"])
    assert queue
    for status, value in (("active", 0), ("pending", 1)):
        key = _first(
            series, "kueue_cluster_queue_status", cluster_queue=queue.group(1), status=status
        )
        series[key] = f"{value}x{MINUTES}"


def _mig_instance_missing(series: Series, rule: dict[str, Any]) -> None:
    _drop("DCGM_FI_PROF_GR_ENGINE_ACTIVE", GPU_I_PROFILE=rule["labels"]["profile"])(series, rule)


def _custom(series: Series, rule: dict[str, Any]) -> None:
    """A cluster's own threshold alert (`metric > above or metric < below`): cross the first bound."""
    found = re.match(r"(\w+) ([<>]) ([\d.]+)", rule["expr"])
    assert found, rule["expr"]
    metric, op, bound = found.group(1), found.group(2), float(found.group(3))
    series[_first(series, metric)] = f"{bound + 1 if op == '>' else bound - 1}x{MINUTES}"


FAILURES: dict[str, Callable[[Series, dict[str, Any]], None]] = {
    "GpuXidError": _set("DCGM_FI_DEV_XID_ERRORS", f"13x{MINUTES}"),
    "GpuFallenOffBus": _set("DCGM_FI_DEV_XID_ERRORS", f"79x{MINUTES}"),
    "GpuMissing": _drop("DCGM_FI_DEV_GPU_TEMP"),
    "GpuUncorrectableEccRowRemap": _set(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", f"0x4 1x{MINUTES - 5}"
    ),
    "GpuRowRemapFailed": _set("DCGM_FI_DEV_ROW_REMAP_FAILURE", f"1x{MINUTES}"),
    "GpuThermalThrottling": _set("DCGM_FI_DEV_GPU_TEMP", f"99x{MINUTES}"),
    "GpuMemoryHot": _set("DCGM_FI_DEV_MEMORY_TEMP", f"110x{MINUTES}"),
    "DcgmExporterDown": _set("up", f"0x{MINUTES}"),
    "GpuPoolNodesBelowQuota": _drop_node,
    "GpuPoolGpusBelowQuota": _drop_node_gpus,
    "TenantPendingUnderQuota": _pending_under_quota,
    "ClusterQueueInactive": _inactive,
    "MigConfigFailed": _relabel(
        'label_nvidia_com_mig_config_state="success"', 'label_nvidia_com_mig_config_state="failed"'
    ),
    "MigConfigLabelDiffers": _relabel(
        r'label_nvidia_com_mig_config="[^"]*"', 'label_nvidia_com_mig_config="someone-elses"'
    ),
    "MigInstancesDiffer": _mig_instance_missing,
}


def _firing(rule: dict[str, Any]) -> str:
    """Return a query that is 1 while this alert (name and rule labels) fires, else 0."""
    labels = {"alertname": rule["alert"], "alertstate": "firing"} | {
        k: v for k, v in rule["labels"].items() if k != "severity"
    }
    return f"(count(ALERTS{_selector(labels)}) or vector(0)) > bool 0"


def _eval_time(rules: list[dict[str, Any]]) -> str:
    """Return when to read the alerts: 5 minutes after the longest `for` of the rules."""
    longest = 0
    for rule in rules:
        amount = re.fullmatch(r"(\d+)([mh])", str(rule.get("for", "0m")))
        assert amount, rule.get("for")
        longest = max(longest, int(amount[1]) * (60 if amount[2] == "h" else 1))
    assert longest + 5 < MINUTES, "the series must outlast the reading"
    return f"{longest + 5}m"


def _case(
    name: str, series: Series, checks: list[tuple[dict[str, Any], int]], at: str
) -> dict[str, Any]:
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in sorted(series.items())],
        "promql_expr_test": [
            {"expr": _firing(r), "eval_time": at, "exp_samples": [{"labels": "{}", "value": v}]}
            for r, v in checks
        ],
    }


def _promtool(tmp_path: Path, cluster: Path, cases: list[dict[str, Any]]) -> str:
    files = [str(p) for p in _rule_files(cluster)]
    for path in files:  # promtool reads a rule file, not the PrometheusRule around it
        spec = yaml.safe_load(Path(path).read_text())["spec"]
        (tmp_path / Path(path).name).write_text(yaml.safe_dump(spec))
    test = {
        "rule_files": [Path(p).name for p in files],
        "evaluation_interval": "1m",
        "tests": cases,
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("cluster", _clusters(), ids=lambda p: p.relative_to(PROJECT).as_posix())
def test_no_alert_fires_on_a_healthy_cluster(tmp_path: Path, cluster: Path) -> None:
    rules = _rules(cluster)
    assert rules
    world = World(rules)
    _promtool(
        tmp_path,
        cluster,
        [_case("healthy", world.healthy(), [(r, 0) for r in rules], _eval_time(rules))],
    )


@pytest.mark.parametrize("cluster", _clusters(), ids=lambda p: p.relative_to(PROJECT).as_posix())
def test_each_alert_fires_on_its_failure(tmp_path: Path, cluster: Path) -> None:
    rules = _rules(cluster)
    world = World(rules)
    cases = []
    for rule in rules:
        series = world.healthy()
        FAILURES.get(rule["alert"], _custom)(series, rule)
        at = _eval_time(rules)
        cases.append(_case(f"{rule['alert']} {rule['labels']}", series, [(rule, 1)], at))
    _promtool(tmp_path, cluster, cases)


def test_promtool_refuses_the_old_ecc_rule(tmp_path: Path) -> None:
    """The rule before issue 35: Prometheus refuses the whole rule file over it."""
    rule = 'increase((DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS * on (node) group_left () kube_node_labels{a="b"})[1h]) > 0'
    (tmp_path / "rules.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "g", "rules": [{"alert": "A", "expr": rule}]}]})
    )
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "ranges only allowed for vector selectors" in done.stdout + done.stderr
