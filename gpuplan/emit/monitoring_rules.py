"""PrometheusRules: GPU health, capacity, fairness and MIG alerts for a cluster's pools and tenants.

Every alert carries a one-line `runbook` annotation (and `runbook_url` when the cluster names a base).
Metric facts: gpuplan/components/metrics (the DCGM exporter's collector list the GPU Operator runs, Kueue's
metrics at the pinned tag, kube-state-metrics' kube_node_labels). What the operator's collector list
lacks shapes the rules:
- ECC: the DCGM_FI_DEV_ECC_* counters are not collected; uncorrectable ECC errors show as remapped rows
  (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS) and a failed remap (DCGM_FI_DEV_ROW_REMAP_FAILURE).
- Thermal throttling: DCGM_FI_DEV_THERMAL_VIOLATION is not collected; the GPU and HBM temperatures are.
- Fallen off the bus: XID 79 (DCGM_FI_DEV_XID_ERRORS holds the last XID), or fewer GPUs reporting on a node
  than the pool's gpusPerNode.
Kueue's quota and usage series need its Configuration's metrics.enableClusterQueueResources.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.monitoring import API_VERSION, DCGM_JOB, MIG_CONFIG_STATE_LABEL
from gpuplan.emit.meta import k8s
from gpuplan.emit.monitoring_common import in_pool, ksm_label, pool_nodes, quota_gpus
from gpuplan.model.monitoring import Monitoring
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import MIG_CONFIG_LABEL, PoolPlan

XID_FALLEN_OFF_BUS = 79  # NVIDIA XID catalogue: "GPU has fallen off the bus"


def alert(
    monitoring: Monitoring,
    name: str,
    expr: str,
    duration: str,
    severity: str,
    summary: str,
    runbook: str,
    **labels: str,
) -> dict[str, Any]:
    """Return one alerting rule with its severity, summary and runbook line."""
    annotations = {"summary": summary, "runbook": runbook}
    if monitoring.runbook_url:
        annotations["runbook_url"] = f"{monitoring.runbook_url}#{name.lower()}"
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **labels},
        "annotations": annotations,
    }


def health(monitoring: Monitoring, pool: PoolPlan) -> list[dict[str, Any]]:
    """Return the GPU health alerts of one pool."""
    t, p = monitoring.thresholds, {"pool": pool.name}

    def dcgm(metric: str) -> str:
        return in_pool(metric, pool)

    return [
        alert(monitoring, "GpuXidError", f"{dcgm('DCGM_FI_DEV_XID_ERRORS')} > 0 unless {dcgm('DCGM_FI_DEV_XID_ERRORS')} == {XID_FALLEN_OFF_BUS}", "0m", "warning",
              f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool.name}) reported XID {{{{ $value }}}}",
              "Look the XID up in NVIDIA's XID catalogue; for 48, 63, 64, 74, 92-95 drain the node and reset the GPU (nvidia-smi -r) or reboot. The exporter holds the last XID until the GPU is reset, so the alert stays until then.", **p),
        alert(monitoring, "GpuFallenOffBus", f"{dcgm('DCGM_FI_DEV_XID_ERRORS')} == {XID_FALLEN_OFF_BUS}", "0m", "critical",
              f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool.name}) has fallen off the bus (XID 79)",
              "Cordon and drain the node, then power-cycle it; if the GPU stays missing, open a hardware ticket.", **p),
        alert(monitoring, "GpuMissing", f"count by (node) (count by (node, gpu) ({dcgm('DCGM_FI_DEV_GPU_TEMP')})) < {pool.gpus_per_node}", "5m", "critical",
              f"{{{{ $labels.node }}}} reports {{{{ $value }}}} GPUs, pool {pool.name} has {pool.gpus_per_node} per node",
              "Run nvidia-smi on the node: a GPU missing from it fell off the bus; drain the node and power-cycle it.", **p),
        alert(monitoring, "GpuUncorrectableEccRowRemap", f"{dcgm('increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h])')} > 0", "0m", "warning",
              "GPU {{ $labels.gpu }} on {{ $labels.node }} remapped rows after uncorrectable ECC errors",
              "Drain the node and reset the GPU so the remap takes effect; repeated remaps mean replacing the GPU.", **p),
        alert(monitoring, "GpuRowRemapFailed", f"{dcgm('DCGM_FI_DEV_ROW_REMAP_FAILURE')} > 0", "0m", "critical",
              "GPU {{ $labels.gpu }} on {{ $labels.node }} failed to remap a row after an ECC error",
              "Cordon the node and take the GPU out of service: its memory can no longer hide uncorrectable errors.", **p),
        alert(monitoring, "GpuThermalThrottling", f"{dcgm('DCGM_FI_DEV_GPU_TEMP')} > {t.gpu_temperature}", t.temperature_for, "warning",
              f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} is at {{{{ $value }}}} C (threshold {t.gpu_temperature} C)",
              "Check the node's fans, airflow and inlet temperature; a hot GPU clocks down and slows the whole job.", **p),
        alert(monitoring, "GpuMemoryHot", f"{dcgm('DCGM_FI_DEV_MEMORY_TEMP')} > {t.memory_temperature}", t.temperature_for, "warning",
              f"GPU {{{{ $labels.gpu }}}} memory on {{{{ $labels.node }}}} is at {{{{ $value }}}} C (threshold {t.memory_temperature} C)",
              "Check cooling as for GpuThermalThrottling; HBM above its limit throttles memory bandwidth.", **p),
        alert(monitoring, "DcgmExporterDown", f'{pool_nodes(pool)} unless on (node) (up{{job="{DCGM_JOB}"}} == 1)', t.exporter_down_for, "warning",
              f"No DCGM exporter reports from {{{{ $labels.node }}}} (pool {pool.name}): its GPUs are unwatched",
              "kubectl -n <gpu-operator namespace> get pods -l app=nvidia-dcgm-exporter -o wide; read the pod's logs and the node's nvidia.com/gpu.deploy.dcgm-exporter label.", **p),
    ]  # fmt: skip


def capacity(cluster: ClusterPlan, monitoring: Monitoring, pool: PoolPlan) -> list[dict[str, Any]]:
    """Return the alerts on a static pool having fewer nodes or GPUs than its quotas assume."""
    gpus = quota_gpus(cluster, pool)
    if pool.karpenter_made or gpus == 0:
        return []  # Karpenter adds nodes for pending pods: a scaled-down pool is no shortfall
    nodes, p, duration = (
        -(-gpus // pool.gpus_per_node),
        {"pool": pool.name},
        monitoring.thresholds.capacity_for,
    )
    gpu_count = f"count(count by (node, gpu) ({in_pool('DCGM_FI_DEV_GPU_TEMP', pool)}))"
    return [
        alert(monitoring, "GpuPoolNodesBelowQuota", f"(count({pool_nodes(pool)}) or vector(0)) < {nodes}", duration, "critical",
              f"Pool {pool.name} has {{{{ $value }}}} nodes; the tenants' nominal quotas need {nodes}",
              "Quotas promise GPUs the pool no longer has: bring nodes back (node group size, failed nodes) or lower the quotas in tenants/.", **p),
        alert(monitoring, "GpuPoolGpusBelowQuota", f"({gpu_count} or vector(0)) < {gpus}", duration, "critical",
              f"Pool {pool.name} reports {{{{ $value }}}} GPUs; the tenants' nominal quotas need {gpus}",
              "Find nodes with missing GPUs (GpuMissing, DcgmExporterDown) and repair them, or lower the quotas in tenants/.", **p),
    ]  # fmt: skip


def mig(monitoring: Monitoring, pool: PoolPlan) -> list[dict[str, Any]]:
    """Return the alerts on a MIG pool's nodes: mig-manager failed, or instances unlike the layout."""
    if pool.mig_config is None or not pool.mig_layouts:
        return []
    p, duration = {"pool": pool.name}, monitoring.thresholds.mig_failed_for
    # A pool found by other labels than mig.config is found whatever its nodes' mig.config says; a pool
    # found by its mig.config label alone cannot have nodes labelled otherwise.
    others = {
        k: v for k, v in pool.selector_labels.items() if k != MIG_CONFIG_LABEL
    } or pool.selector_labels
    nodes = "".join(f'{ksm_label(k)}="{v}",' for k, v in sorted(others.items()))
    rules = [
        alert(monitoring, "MigConfigFailed", f'kube_node_labels{{{nodes}{ksm_label(MIG_CONFIG_STATE_LABEL)}="failed"}}', duration, "critical",
              f"MIG manager failed to apply the MIG config on {{{{ $labels.node }}}} (pool {pool.name}, {pool.mig_config})",
              "kubectl logs the nvidia-mig-manager pod on the node; drain GPU pods (MIG changes need idle GPUs) and relabel to retry.", **p),
    ]  # fmt: skip
    if MIG_CONFIG_LABEL not in others:
        rules.append(alert(
            monitoring, "MigConfigLabelDiffers", f'kube_node_labels{{{nodes}{ksm_label(MIG_CONFIG_LABEL)}!="{pool.mig_config}"}}', duration, "warning",
            f"{{{{ $labels.node }}}} of pool {pool.name} is not labelled {MIG_CONFIG_LABEL}={pool.mig_config}",
            "Someone relabelled the node or its node group: restore the label gpuplan renders, or change the pool's layout in clusters/.", **p,
        ))  # fmt: skip
    for profile, count in sorted(_instances(pool).items()):
        series = in_pool(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_PROFILE="{profile}"}}', pool)
        rules.append(alert(
            monitoring, "MigInstancesDiffer", f"count by (node) ({series}) != {count}", duration, "warning",
            f"{{{{ $labels.node }}}} of pool {pool.name} has {{{{ $value }}}} {profile} MIG instances; the layout has {count}",
            "Compare nvidia-smi mig -lgi with the pool's layout; relabel the node's nvidia.com/mig.config to make mig-manager reapply it.",
            profile=profile, **p,
        ))  # fmt: skip
    return rules


def _instances(pool: PoolPlan) -> dict[str, int]:
    """Return per MIG profile the instances one node of the pool has."""
    total: dict[str, int] = {}
    for gpus, layout in pool.mig_layouts:
        for profile, count in layout.items():
            total[profile] = total.get(profile, 0) + count * len(gpus)
    return total


def fairness(cluster: ClusterPlan, monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the tenants' Kueue alerts: pending while under nominal quota, ClusterQueue not active."""
    queues = "|".join(sorted(alloc.name for alloc in cluster.allocations))
    if cluster.release("kueue") is None or not queues:
        return []
    cq = f'cluster_queue=~"{queues}"'
    gpu = f'{cq},resource=~"nvidia.com/.+"'
    under = (f"sum by (cluster_queue, resource) (kueue_cluster_queue_resource_usage{{{gpu}}}) "
             f"< on (cluster_queue, resource) sum by (cluster_queue, resource) (kueue_cluster_queue_nominal_quota{{{gpu}}})")  # fmt: skip
    return [
        alert(monitoring, "TenantPendingUnderQuota", f"(sum by (cluster_queue) (kueue_pending_workloads{{{cq}}}) > 0) and on (cluster_queue) ({under})",
              monitoring.thresholds.pending_for, "warning",
              "Tenant {{ $labels.cluster_queue }} has workloads pending while using less than its nominal GPU quota",
              "kubectl get workloads -A and describe a pending one: a flavor's nodes may be missing (see capacity alerts) or a pod asks for a resource no flavor of the tenant covers."),
        alert(monitoring, "ClusterQueueInactive", f'kueue_cluster_queue_status{{{cq},status!="active"}} == 1', "5m", "critical",
              "ClusterQueue {{ $labels.cluster_queue }} is {{ $labels.status }}: none of its workloads is admitted",
              "kubectl describe clusterqueue {{ $labels.cluster_queue }}: a missing ResourceFlavor, Cohort or admission check keeps it inactive."),
    ]  # fmt: skip


def custom(monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the cluster's own threshold alerts."""
    rules = []
    for extra in monitoring.alerts:
        condition = " or ".join(
            f"{extra.metric} {op} {_number(value)}"
            for op, value in ((">", extra.above), ("<", extra.below))
            if value is not None
        )
        rules.append(alert(monitoring, extra.name, condition, extra.for_, extra.severity, f"{extra.metric} crossed the cluster's threshold on {{{{ $labels.node }}}}",
                           "A threshold set in the cluster file (components.monitoring.alerts): see its owner."))  # fmt: skip
    return rules


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def rules(cluster: ClusterPlan, monitoring: Monitoring) -> list[dict[str, Any]]:
    """Return the cluster's PrometheusRules, one per group of alerts."""
    pools = list(cluster.pools.values())
    groups = [
        ("gpuplan-gpu-health", [r for pool in pools for r in health(monitoring, pool)]),
        ("gpuplan-capacity", [r for pool in pools for r in capacity(cluster, monitoring, pool)]),
        ("gpuplan-fairness", fairness(cluster, monitoring)),
        ("gpuplan-mig", [r for pool in pools for r in mig(monitoring, pool)]),
        ("gpuplan-custom", custom(monitoring)),
    ]
    return [
        k8s(API_VERSION, "PrometheusRule", name, monitoring.namespace, spec={"groups": [{"name": name, "rules": found}]})
        for name, found in groups if found
    ]  # fmt: skip
