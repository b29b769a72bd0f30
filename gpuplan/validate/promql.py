"""The queries of emitted monitoring objects: PromQL that Prometheus parses, naming only metrics and labels
the cluster's exporters publish at their pinned versions (gpuplan/components/metrics), so no alert or panel
stays empty and no PrometheusRule is refused.

Reads PrometheusRule `spec.groups[].rules[].expr`, the `targets[].expr` of Grafana dashboards in
ConfigMaps labelled grafana_dashboard, and the Prometheus Adapter's `rules[].seriesQuery` and
`metricsQuery` (its Go template filled in as the adapter does). Each is parsed by promql-parser, a Rust
PromQL parser following Prometheus' grammar (the Prometheus Operator's admission webhook parses a
PrometheusRule's expressions with Prometheus' own rule parser and refuses the whole object on one error:
prometheus-operator/prometheus-operator@v0.93.0:pkg/admission/admission.go calls ValidateRule of
pkg/operator/rules.go, which runs rulefmt.Parse). Pure: objects and the known metrics in,
problems out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import promql_parser
import yaml

from gpuplan.components.metrics import unknown_references

DASHBOARD_LABEL = "grafana_dashboard"
ADAPTER_KEY = "config.yaml"
_LABEL_VALUES = re.compile(r"label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)")
# The adapter fills its metricsQuery template per request with the series, the matchers of the resources
# asked for and the labels grouped by (kubernetes-sigs/prometheus-adapter@v0.12.0:pkg/naming/metrics_query.go,
# Series, LabelMatchers, GroupBy), its resources' labels named by `resources.overrides`.
_SERIES = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
# Grafana's variables in a query, replaced by what Grafana puts there before Prometheus parses it.
_GRAFANA = re.compile(r"\$__rate_interval|\$__interval|\$\{?\w+\}?")


def queries(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Yield (field path, query) of every PromQL query an object holds."""
    if obj.get("kind") == "PrometheusRule":
        for g, group in enumerate((obj.get("spec") or {}).get("groups") or []):
            for r, rule in enumerate(group.get("rules") or []):
                yield f"spec.groups[{g}].rules[{r}].expr", str(rule.get("expr", ""))
    elif obj.get("kind") == "ConfigMap":
        data = obj.get("data") or {}
        if DASHBOARD_LABEL in ((obj.get("metadata") or {}).get("labels") or {}):
            for key, text in sorted(data.items()):
                yield from _dashboard(key, text)
        elif ADAPTER_KEY in data:
            config = yaml.safe_load(data[ADAPTER_KEY]) or {}
            for r, rule in enumerate(config.get("rules") or []):
                yield (
                    f"data[{ADAPTER_KEY}].rules[{r}].seriesQuery",
                    str(rule.get("seriesQuery", "")),
                )
                if rule.get("metricsQuery"):
                    yield f"data[{ADAPTER_KEY}].rules[{r}].metricsQuery", _filled(rule)


def _filled(rule: dict[str, Any]) -> str:
    """Return an adapter rule's metricsQuery as the adapter sends it for one pod of a namespace."""
    series = _SERIES.match(str(rule.get("seriesQuery", "")))
    overrides = (rule.get("resources") or {}).get("overrides") or {}
    label = {str(v.get("resource")): str(k) for k, v in overrides.items()}
    fill = {
        "<<.Series>>": series.group(0) if series else "",
        "<<.LabelMatchers>>": f'{label.get("namespace", "namespace")}="x"',
        "<<.GroupBy>>": label.get("pod", "pod"),
    }
    query = str(rule["metricsQuery"])
    for key, value in fill.items():
        query = query.replace(key, value)
    return query


def _dashboard(key: str, text: str) -> Iterator[tuple[str, str]]:
    model = json.loads(text)
    for v, variable in enumerate((model.get("templating") or {}).get("list") or []):
        found = (
            _LABEL_VALUES.fullmatch(str(variable.get("query", "")))
            if variable.get("type") == "query"
            else None
        )
        if found:  # label_values(<series>, <label>): the series must exist and carry the label
            yield (
                f"data[{key}].templating.list[{v}].query",
                f"count by ({found.group(2)}) ({found.group(1)})",
            )
    for p, panel in enumerate(model.get("panels") or []):
        for t, target in enumerate(panel.get("targets") or []):
            yield f"data[{key}].panels[{p}].targets[{t}].expr", str(target.get("expr", ""))


def query_problems(
    obj: dict[str, Any], known: dict[str, frozenset[str]], why: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """Return (field path, message) for each query Prometheus cannot parse or name the pinned metric lists lack."""
    found = []
    for path, query in queries(obj):
        wrong = parse_error(query)
        if wrong is not None:
            found.append((path, f"query is not valid PromQL ({wrong}): {query}"))
            continue
        unknowns = unknown_references(query, known)
        # A metric the exporter knows but is not told to collect: that, not the labels it would carry.
        uncollected = [
            why[u[7:]] for u in unknowns if why and u.startswith("metric ") and u[7:] in why
        ]
        if uncollected:
            found += [(path, message) for message in uncollected]
            continue
        for unknown in unknowns:
            found.append(
                (
                    path,
                    f"{unknown} is not published by the cluster's exporters at their pinned versions",
                )
            )
    return found


def parse_error(query: str) -> str | None:
    """Return why Prometheus would refuse a query (Grafana's variables filled in), None when it parses."""
    try:
        promql_parser.parse(_GRAFANA.sub(_grafana_value, query))
    except ValueError as error:
        return str(error)
    return None


def _grafana_value(match: re.Match[str]) -> str:
    """Return what Grafana puts for a variable: a duration for an interval, else a value (inside quotes)."""
    return "5m" if "interval" in match.group(0) else "x"
