"""The queries of emitted monitoring objects: balanced PromQL naming only metrics and labels the cluster's
exporters publish at their pinned versions (gpuplan/components/metrics), so no alert or panel stays empty.

Reads PrometheusRule `spec.groups[].rules[].expr`, the `targets[].expr` of Grafana dashboards in
ConfigMaps labelled grafana_dashboard, and the Prometheus Adapter's `rules[].seriesQuery`. Pure: objects
and the known metrics in, problems out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from gpuplan.components.metrics import balanced, unknown_references

DASHBOARD_LABEL = "grafana_dashboard"
ADAPTER_KEY = "config.yaml"
_LABEL_VALUES = re.compile(r"label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)")


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


def query_problems(obj: dict[str, Any], known: dict[str, frozenset[str]]) -> list[tuple[str, str]]:
    """Return (field path, message) for each unbalanced query or name the pinned metric lists lack."""
    found = []
    for path, query in queries(obj):
        wrong = balanced(query)
        if wrong is not None:
            found.append((path, f"query has {wrong}: {query}"))
            continue
        for unknown in unknown_references(query, known):
            found.append(
                (
                    path,
                    f"{unknown} is not published by the cluster's exporters at their pinned versions",
                )
            )
    return found
