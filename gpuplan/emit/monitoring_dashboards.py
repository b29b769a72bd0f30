"""Grafana dashboards as ConfigMaps the Grafana sidecar loads (label grafana_dashboard: "1"):
one per pool (utilisation, memory, power, MIG instance use) and one per cluster for its tenants
(Kueue quota against usage, borrowed, unused nominal and lending limit, pending).

The JSON is Grafana's dashboard model (schemaVersion 39): every panel's datasource is the
`datasource` variable, every query filters by the pool's nodes or the `tenant` variable.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplan.components.monitoring import DASHBOARD_LABEL
from gpuplan.emit.meta import k8s
from gpuplan.emit.monitoring_common import in_pool, known_metrics, pool_nodes
from gpuplan.model.monitoring import Monitoring
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import PoolPlan

SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
DATASOURCE_VARIABLE = {
    "name": "datasource",
    "label": "Data source",
    "type": "datasource",
    "query": "prometheus",
    "hide": 0,
}


def panel(index: int, title: str, unit: str, *targets: tuple[str, str]) -> dict[str, Any]:
    """Return a time-series panel with its queries ((expr, legend) pairs), placed two to a row."""
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": dict(DATASOURCE),
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": dict(DATASOURCE),
                "expr": expr,
                "legendFormat": legend,
            }
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def dashboard(
    uid: str, title: str, panels: list[dict[str, Any]], variables: list[dict[str, Any]]
) -> dict[str, Any]:
    """Return a Grafana dashboard model."""
    return {
        "uid": uid,
        "title": title,
        "tags": ["gpuplan"],
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [dict(DATASOURCE_VARIABLE), *variables]},
        "panels": panels,
    }


def pool_dashboard(cluster: ClusterPlan, pool: PoolPlan) -> dict[str, Any]:
    """Return the dashboard of one GPU pool."""

    def scoped(metric: str) -> str:
        return f'({in_pool(metric, pool)} and on (node) kube_node_labels{{node=~"$node"}})'

    panels = [
        panel(0, "GPU utilisation", "percent", (f"avg by (node) {scoped('DCGM_FI_DEV_GPU_UTIL')}", "{{node}}")),
        panel(1, "GPU memory used", "percentunit", (
            f"sum by (node) {scoped('DCGM_FI_DEV_FB_USED')} / (sum by (node) {scoped('DCGM_FI_DEV_FB_USED')} + sum by (node) {scoped('DCGM_FI_DEV_FB_FREE')})",
            "{{node}}",
        )),
        panel(2, "Power draw", "watt", (f"sum by (node) {scoped('DCGM_FI_DEV_POWER_USAGE')}", "{{node}}")),
        panel(3, "GPU temperature", "celsius", (f"max by (node) {scoped('DCGM_FI_DEV_GPU_TEMP')}", "{{node}}")),
    ]  # fmt: skip
    if pool.mig_layouts:
        engine = scoped('DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!=""}')
        panels.append(
            panel(
                4,
                "MIG instance use (graphics engine active)",
                "percentunit",
                (f"avg by (GPU_I_PROFILE) {engine}", "{{GPU_I_PROFILE}}"),
            )
        )
        panels.append(
            panel(
                5,
                "MIG instances busy (> 0)",
                "short",
                (f"count by (GPU_I_PROFILE) ({engine} > 0)", "{{GPU_I_PROFILE}}"),
            )
        )
    variable = {
        "name": "node", "label": "Node", "type": "query", "datasource": dict(DATASOURCE),
        "query": f"label_values({pool_nodes(pool)}, node)", "multi": True, "includeAll": True, "refresh": 2, "hide": 0,
    }  # fmt: skip
    return dashboard(
        f"gpuplan-{cluster.name}-{pool.name}"[:40],
        f"GPU pool {pool.name} ({cluster.name})",
        panels,
        [variable],
    )


def tenants_dashboard(cluster: ClusterPlan) -> dict[str, Any] | None:
    """Return the dashboard of the cluster's tenants (None without Kueue or tenants)."""
    names = sorted(alloc.name for alloc in cluster.allocations)
    if cluster.release("kueue") is None or not names:
        return None
    q = 'cluster_queue="$tenant",resource=~"nvidia.com/.+"'
    nominal, usage = (
        f"kueue_cluster_queue_nominal_quota{{{q}}}",
        f"kueue_cluster_queue_resource_usage{{{q}}}",
    )
    panels = [
        panel(0, "GPU quota and usage", "short", (f"sum by (resource) ({nominal})", "nominal {{resource}}"), (f"sum by (resource) ({usage})", "used {{resource}}")),
        panel(1, "Borrowed beyond nominal", "short", (f"clamp_min(sum by (resource) ({usage}) - sum by (resource) ({nominal}), 0)", "{{resource}}")),
        panel(2, "Unused nominal and lending limit", "short",
              (f"clamp_min(sum by (resource) ({nominal}) - sum by (resource) ({usage}), 0)", "unused {{resource}}"),
              (f"sum by (resource) (kueue_cluster_queue_lending_limit{{{q}}})", "lending limit {{resource}}")),
        panel(3, "Pending workloads", "short", ('sum by (status) (kueue_pending_workloads{cluster_queue="$tenant"})', "{{status}}")),
    ]  # fmt: skip
    if "kueue_cluster_queue_resource_pending" in known_metrics(cluster):
        panels.append(
            panel(
                4,
                "Pending GPU requests",
                "short",
                (
                    f"sum by (resource) (kueue_cluster_queue_resource_pending{{{q}}})",
                    "{{resource}}",
                ),
            )
        )
    variable = {
        "name": "tenant", "label": "Tenant", "type": "custom", "query": ",".join(names), "multi": False, "includeAll": False, "hide": 0,
        "current": {"text": names[0], "value": names[0]}, "options": [{"text": n, "value": n, "selected": n == names[0]} for n in names],
    }  # fmt: skip
    return dashboard(
        f"gpuplan-{cluster.name}-tenants"[:40], f"GPU tenants ({cluster.name})", panels, [variable]
    )


def config_map(name: str, namespace: str, model: dict[str, Any]) -> dict[str, Any]:
    """Return the ConfigMap carrying one dashboard for the Grafana sidecar."""
    key, value = DASHBOARD_LABEL
    obj = k8s(
        "v1",
        "ConfigMap",
        name,
        namespace,
        data={f"{name}.json": json.dumps(model, indent=1, sort_keys=True) + "\n"},
    )
    obj["metadata"]["labels"] = {key: value}
    return obj


def dashboards(cluster: ClusterPlan, monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the cluster's dashboard ConfigMaps."""
    found = [
        config_map(
            f"gpuplan-dashboard-pool-{pool.name}",
            monitoring.namespace,
            pool_dashboard(cluster, pool),
        )
        for pool in cluster.pools.values()
    ]
    tenants = tenants_dashboard(cluster)
    if tenants is not None:
        found.append(config_map("gpuplan-dashboard-tenants", monitoring.namespace, tenants))
    return found
