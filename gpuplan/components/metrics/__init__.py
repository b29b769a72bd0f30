"""The metrics the exporters publish at the pinned versions, and a small reader of the names a PromQL query uses.

Data (scripts/fetch_metrics.py writes it, SOURCES.json records repository, tag, commit, path, sha256):
- dcgm-exporter/<tag>.csv: NVIDIA/dcgm-exporter@<tag>:etc/dcp-metrics-included.csv, the collectors
  the GPU Operator starts the exporter with (DCGM_EXPORTER_COLLECTORS in NVIDIA/gpu-operator@v26.7.0:
  assets/state-dcgm-exporter/0800_daemonset.yaml). Not default-counters.csv: that list is not what
  the operator runs.
- kueue/<tag>.json: the metric tables of kubernetes-sigs/kueue@<tag>:site/content/en/docs/reference/metrics.md.
"""

from __future__ import annotations

import csv
import io
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent

# Labels on every DCGM exporter series: NVIDIA/dcgm-exporter@4.5.3-4.8.2:
# internal/pkg/rendermetrics/render_metrics.go (gpu, UUID, pci_bus_id, device, modelName, GPU_I_PROFILE and
# GPU_I_ID on MIG instances, Hostname) and internal/pkg/transformation/const.go (pod, namespace, container
# of the workload using the GPU; Prometheus renames them exported_* beside the target's own labels).
DCGM_LABELS = frozenset({
    "gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "Hostname",
    "DCGM_FI_DRIVER_VERSION", "exported_pod", "exported_namespace", "exported_container",
})  # fmt: skip
# Labels Prometheus gives every scraped series (job, instance) and those the Prometheus Operator adds
# from a ServiceMonitor target (namespace, service, pod, container, endpoint), plus `node`, which
# gpuplan's ServiceMonitors relabel from __meta_kubernetes_pod_node_name.
TARGET_LABELS = frozenset(
    {"job", "instance", "namespace", "service", "pod", "container", "endpoint", "node"}
)
# kube-state-metrics, kubernetes/kube-state-metrics@v2.19.1:docs/metrics/cluster/node-metrics.md (the release
# kube-prometheus-stack 88.3.0 installs).
# kube_node_labels carries label_<node label> only for labels in --metric-labels-allowlist.
KSM = {"kube_node_labels": frozenset({"node"})}
KSM_LABEL_PREFIX = "label_"
# Prometheus' own series (up per target; ALERTS for firing rules).
PROMETHEUS = {"up": TARGET_LABELS, "ALERTS": frozenset({"alertname", "alertstate", "severity"})}


def dcgm_tag(image_version: str) -> str:
    """Return the shipped list of an exporter image ("4.5.3-4.8.2-distroless"): its tag, else the newest older one.

    The GPU Operator v26.7.0 runs 4.6.0-4.8.3, a tag the pinned mirror of NVIDIA/dcgm-exporter does not hold;
    etc/dcp-metrics-included.csv is byte-identical from 4.5.1-4.8.0 to its main branch of 2026-05-12
    (d5e5f510), so the newest shipped list stands for it.
    """
    wanted = _key(image_version)
    shipped = sorted((p.stem for p in (DATA / "dcgm-exporter").glob("*.csv")), key=_key)
    older = [tag for tag in shipped if _key(tag) <= wanted]
    return older[-1] if older else shipped[0]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:6])


@cache
def dcgm_metrics(tag: str) -> dict[str, frozenset[str]]:
    """Return {metric: labels} of one DCGM exporter list (label-type rows are labels, not metrics)."""
    text = (DATA / "dcgm-exporter" / f"{tag}.csv").read_text(encoding="utf-8")
    return dict.fromkeys(sorted(collector_list(text)), DCGM_LABELS | TARGET_LABELS)


def collector_list(text: str) -> set[str]:
    """Return the metrics a dcgm-exporter collector CSV collects (comments and label rows aside)."""
    return {
        row[0].strip()
        for row in csv.reader(io.StringIO(text))
        if row
        and not row[0].lstrip().startswith("#")
        and len(row) >= 2
        and row[1].strip() != "label"
    }


@cache
def dcgm_not_collected(tag: str) -> frozenset[str]:
    """Return the DCGM fields the list names but leaves commented out (ECC counters, throttle durations...)."""
    text = (DATA / "dcgm-exporter" / f"{tag}.csv").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^#\s*(DCGM_[A-Z0-9_]+)\s*,", text, re.M))


def not_collected(cluster: Any) -> frozenset[str]:
    """Return the DCGM fields the cluster's exporter knows but its collector list does not collect."""
    operator = cluster.release("gpu-operator")
    if operator is None or "dcgmExporter" not in getattr(operator, "operands", {}):
        return frozenset()
    return dcgm_not_collected(dcgm_tag(operator.operands["dcgmExporter"].version))


@cache
def kueue_metrics(tag: str) -> dict[str, frozenset[str]]:
    """Return {metric: labels} of one Kueue release (histograms also as _bucket, _sum and _count)."""
    table = json.loads((DATA / "kueue" / f"{tag}.json").read_text(encoding="utf-8"))
    out = {}
    for name, labels in table.items():
        for suffix in ("", "_bucket", "_sum", "_count"):
            out[name + suffix] = (
                frozenset(labels) | TARGET_LABELS | ({"le"} if suffix == "_bucket" else set())
            )
    return out


def kueue_tags() -> tuple[str, ...]:
    """Return the Kueue releases with a shipped metric list."""
    return tuple(sorted(p.stem for p in (DATA / "kueue").glob("*.json")))


def known_metrics(cluster: Any) -> dict[str, frozenset[str]]:
    """Return {metric: labels} of every series a cluster's monitoring may use, at its pinned versions.

    `cluster` is a gpuplan.plan.fleet.ClusterPlan (read duck-typed: `release(name)`).
    """
    known: dict[str, frozenset[str]] = dict(KSM) | dict(PROMETHEUS)
    operator = cluster.release("gpu-operator")
    if operator is not None and "dcgmExporter" in getattr(operator, "operands", {}):
        known |= dcgm_metrics(dcgm_tag(operator.operands["dcgmExporter"].version))
    kueue = cluster.release("kueue")
    if kueue is not None and kueue.version in kueue_tags():
        known |= kueue_metrics(kueue.version)
    return known


def unknown_references(expr: str, known: dict[str, frozenset[str]]) -> list[str]:
    """Return what a PromQL expression names that the pinned lists lack: 'metric X', 'label Y'."""
    metrics, labels = references(expr)
    problems = [f"metric {m}" for m in sorted(metrics - set(known))]
    allowed = set().union(*(known[m] for m in metrics if m in known)) if metrics else set()
    for label in sorted(labels - allowed - {"__name__"}):
        if not (label.startswith(KSM_LABEL_PREFIX) and "kube_node_labels" in metrics):
            problems.append(f"label {label}")
    return problems


# --- PromQL ---------------------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_DURATION = re.compile(r"\[[^\]]*\]")
_WORD = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)")
KEYWORDS = frozenset({
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
    "group", "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "delta", "deriv", "exp", "floor", "histogram_quantile", "idelta", "increase", "irate", "label_replace",
    "label_join", "ln", "log2", "log10", "rate", "resets", "round", "scalar", "sort", "sort_desc", "sqrt",
    "time", "timestamp", "vector", "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
    "count_over_time", "last_over_time", "present_over_time", "quantile_over_time", "inf", "nan",
})  # fmt: skip


def references(expr: str) -> tuple[set[str], set[str]]:
    """Return the metric names and label names a PromQL expression (or Grafana query) refers to."""
    text = _STRING.sub('""', expr.replace("$__rate_interval", "5m"))
    text = re.sub(r"\$\w+|\$\{[^}]*\}", "x", text)  # Grafana variables stand in for values
    labels = {m.group(1) for s in _SELECTOR.finditer(text) for m in _MATCHER.finditer(s.group(1))}
    labels |= {w for g in _GROUPING.finditer(text) for w in _WORD.findall(g.group(2))}
    bare = _DURATION.sub("", _GROUPING.sub(" ", _SELECTOR.sub(" ", text)))
    metrics = set()
    for match in _WORD.finditer(bare):
        word, after = match.group(0), bare[match.end() :].lstrip()[:1]
        if word.lower() not in KEYWORDS and after != "(" and not re.fullmatch(r"[0-9eE]+", word):
            metrics.add(word)
    return metrics, labels
