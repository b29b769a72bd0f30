"""GPU Operator: the ClusterPolicy, NVIDIADrivers for pools with their own driver, the mig-parted
ConfigMap and the device-plugin ConfigMap."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.components.dra_driver import KUBELET_PLUGIN_LABEL
from gpuplan.emit import gpu_operator_objects as objects
from gpuplan.emit import gpu_operator_policy as policy
from gpuplan.emit.meta import Manifest, manifest
from gpuplan.model.cluster import GpuOperator
from gpuplan.plan.dra import dra_pools
from gpuplan.plan.drivers import DriverLayout
from gpuplan.plan.drivers import layout as driver_layout
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import PoolPlan, mig_resource

MIG_CONFIG_MAP = "gpuplan-mig-parted-config"
DEVICE_PLUGIN_CONFIG_MAP = "gpuplan-device-plugin-config"
FOLDER = "gpu-operator"


def mig_configs(cluster: ClusterPlan) -> dict[str, list[dict[str, Any]]]:
    """Return mig-parted config name -> entries, one config per distinct pool layout."""
    configs: dict[str, list[dict[str, Any]]] = {}
    for pool in cluster.pools.values():
        if not pool.mig_layouts or pool.mig_config is None:
            continue
        entries = []
        for gpus, layout in pool.mig_layouts:
            every = gpus == tuple(range(pool.gpus_per_node))
            entries.append(objects.mig_entry("all" if every else list(gpus), layout))
        configs[pool.mig_config] = entries
    return configs


def _shared_resources(pool: PoolPlan, strategy: str) -> list[str]:
    if pool.spec.sharing.mig is None:
        return ["nvidia.com/gpu"]
    profiles = sorted({p for _, layout in pool.mig_layouts for p in layout if "+" not in p})
    return sorted({mig_resource(p, strategy) for p in profiles})


def device_plugin_configs(cluster: ClusterPlan, strategy: str) -> dict[str, dict[str, Any]]:
    """Return device-plugin config name -> document: `default`, then one per sharing pool."""
    configs = {
        objects.DEVICE_PLUGIN_DEFAULT_CONFIG: objects.device_plugin_config(
            mig_strategy=strategy, sharing=None, replicas=None, resources=[]
        )
    }
    for pool in cluster.pools.values():
        if pool.device_plugin_config is None:
            continue
        sharing = pool.spec.sharing
        sharer = sharing.time_slicing or sharing.mps
        assert sharer is not None
        configs[pool.device_plugin_config] = objects.device_plugin_config(
            mig_strategy=strategy,
            sharing="mps" if sharing.mps is not None else "time-slicing",
            replicas=sharing.replicas,
            resources=_shared_resources(pool, strategy),
            rename_by_default=sharer.rename_by_default,
            fail_requests_greater_than_one=getattr(sharer, "fail_requests_greater_than_one", False),
        )
    return configs


def _pool_tolerations(cluster: ClusterPlan) -> list[dict[str, str]]:
    """Return tolerations for every pool taint the operator's default does not cover."""
    out: list[dict[str, str]] = []
    for pool in cluster.pools.values():
        for taint in pool.taints:
            if taint["key"] == "nvidia.com/gpu" and taint["effect"] == "NoSchedule":
                continue
            toleration = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
            if toleration not in out:
                out.append(toleration)
    return sorted(out, key=lambda t: (t["key"], t["effect"]))


def settings(operator: GpuOperator, drivers: DriverLayout) -> policy.Settings:
    """Return the ClusterPolicy settings of the cluster's operator and driver layout."""
    upgrade = operator.driver.upgrade_policy
    monitor = operator.service_monitor
    return policy.Settings(
        driver_enabled=drivers.enabled,
        use_driver_crd=bool(drivers.per_pool),
        toolkit=drivers.toolkit,
        cos=drivers.cos,
        rdma=operator.driver.rdma.enabled,
        use_host_mofed=operator.driver.rdma.use_host_mofed,
        upgrade=policy.Upgrade(
            auto_upgrade=upgrade.auto_upgrade,
            max_parallel_upgrades=upgrade.max_parallel_upgrades,
            max_unavailable=upgrade.max_unavailable,
            drain=upgrade.drain.enable,
            drain_force=upgrade.drain.force,
            drain_timeout_seconds=upgrade.drain.timeout_seconds,
            drain_delete_empty_dir=upgrade.drain.delete_empty_dir,
        ),
        gds=operator.gpu_direct_storage,
        service_monitor=None
        if monitor is None
        else {"interval": monitor.interval, "additionalLabels": monitor.additional_labels},
        node_status_exporter=operator.node_status_exporter,
        validator_workload=operator.validator_workload,
        mirror=operator.registry.mirror,
        repositories={
            str(component): repo for component, repo in operator.registry.repositories.items()
        },
        pull_secrets=tuple(operator.registry.image_pull_secrets),
    )


def _nvidia_drivers(
    cluster: ClusterPlan, drivers: DriverLayout, chosen: policy.Settings
) -> list[dict[str, Any]]:
    """Return an NVIDIADriver per pool when pools need different drivers (useNvidiaDriverCRD)."""
    operator = cluster.spec.components.gpu_operator
    assert operator is not None
    out = []
    for driver in drivers.per_pool:
        if driver.version is None:
            continue  # reported by check_driver_version_required
        pool = cluster.pools[driver.pool]
        out.append(
            policy.nvidia_driver(
                operator_version=operator.version,
                name=f"gpuplan-{pool.name}",
                driver_version=driver.version,
                node_selector=pool.selector_labels,
                settings=chosen,
            )
        )
    return out


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the GPU Operator objects of a cluster, or nothing without the component."""
    operator = cluster.spec.components.gpu_operator
    if operator is None:
        return []
    source = cluster.located.source.path
    ns = operator.namespace
    migs = mig_configs(cluster)
    uses_mig_label = any(p.mig_config for p in cluster.pools.values())
    plugin = device_plugin_configs(cluster, operator.mig_strategy)
    sharing = len(plugin) > 1
    drivers = driver_layout(cluster)
    chosen = settings(operator, drivers)
    if dra_pools(cluster):
        chosen = replace(chosen, eviction_label=KUBELET_PLUGIN_LABEL)
    out = []
    if uses_mig_label:
        doc = objects.mig_parted_config(migs)
        cm = objects.config_map(MIG_CONFIG_MAP, ns, {objects.MIG_PARTED_CONFIG_KEY: doc})
        out.append(manifest(cluster.name, FOLDER, cm, source))
    if sharing:
        cm = objects.config_map(DEVICE_PLUGIN_CONFIG_MAP, ns, plugin)
        out.append(manifest(cluster.name, FOLDER, cm, source))
    cluster_policy = policy.cluster_policy(
        operator_version=operator.version,
        driver_version=drivers.version,
        mig_strategy=operator.mig_strategy,
        dcgm_exporter=operator.dcgm_exporter,
        mig_config_map=MIG_CONFIG_MAP if uses_mig_label else None,
        mig_default=objects.ALL_DISABLED,
        device_plugin_config_map=DEVICE_PLUGIN_CONFIG_MAP if sharing else None,
        device_plugin_default=objects.DEVICE_PLUGIN_DEFAULT_CONFIG if sharing else None,
        namespace=ns,
        tolerations=_pool_tolerations(cluster),
        settings=chosen,
    )
    out.append(manifest(cluster.name, FOLDER, cluster_policy, source))
    out.extend(
        manifest(cluster.name, FOLDER, cr, source)
        for cr in _nvidia_drivers(cluster, drivers, chosen)
    )
    return out
