"""The device plugins the cluster's networks need, each a pinned Application beside Multus.

- efa: the AWS EFA device plugin, which advertises `vpc.amazonaws.com/efa`. Chart
  `aws-efa-k8s-device-plugin` v0.5.30 (image v0.5.20) from https://aws.github.io/eks-charts
  (aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml at commit 5239609242f3; README "helm
  repo add eks https://aws.github.io/eks-charts"). Its DaemonSet runs only on EFA instance types
  (values.yaml supportedInstanceLabels, p5.48xlarge and p5en.48xlarge among them) and tolerates
  CriticalAddonsOnly plus `tolerations` (templates/daemonset.yaml), so the EFA pools' taints are added.
- macvlan and ipoib over an RDMA shared device (`rdma/...` or a *_shared_* name, see
  gpuplan.check.networks.rdma_shared): Mellanox/k8s-rdma-shared-dev-plugin v1.5.3, which publishes no
  chart. The Application syncs deployment/k8s/base (a kustomization of configmap.yaml, the `rdma-devices`
  ConfigMap in kube-system, and daemonset.yaml) at the tag, pins the untagged image to the release's
  (.github/workflows/release.yaml pushes ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:<tag>), replaces
  the sample config with one resource per network (README "configList": resourceName, resourcePrefix
  default "rdma", rdmaHcaMax required, devices = interface names) and tolerates every taint, as a node
  agent must. Argo CD kustomize `images` and `patches` (argoproj/argo-cd v3.5.1 Application CRD).
- sriov and ib-sriov: the SR-IOV network device plugin, which upstream ships as a plain manifest with
  an unpinned image, so gpuplan writes its pinned DaemonSet into the cluster's folder
  (gpuplan/emit/sriov.py) rather than an Application here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gpuplan.check.networks import RDMA_SHARED_PREFIX, rdma_shared
from gpuplan.components.base import Chart
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.emit.sriov import CONFIG_DIGEST
from gpuplan.model.cluster import Network
from gpuplan.plan.fleet import ClusterPlan

NAMESPACE = (
    "kube-system"  # both plugins' own namespace (the manifest's; the chart's release namespace)
)
EFA_CHART = Chart("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.30")
RDMA_REPO = "https://github.com/Mellanox/k8s-rdma-shared-dev-plugin.git"
RDMA_TAG = "v1.5.3"
RDMA_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin"
RDMA_PATH = "deployment/k8s/base"
RDMA_CONFIG_MAP = "rdma-devices"
RDMA_DAEMON_SET = "rdma-shared-dp-ds"
# Pods that may share one RDMA device on a node: the README's example value, far above the pods a
# GPU node runs, so the device never limits scheduling (GPU quotas do).
RDMA_HCA_MAX = 1000
PERIODIC_UPDATE = 300  # seconds between device rescans (README: 60 when unset, 0 disables)


def _tolerations(cluster: ClusterPlan, networks: list[Network]) -> list[dict[str, str]]:
    """Return a toleration (Exists) for every taint of the pools the networks reach, each once."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for network in networks:
        for name in network.pools:
            pool = cluster.pools.get(name)
            for taint in pool.taints if pool is not None else []:
                seen[(taint["key"], taint["effect"])] = {
                    "key": taint["key"],
                    "operator": "Exists",
                    "effect": taint["effect"],
                }
    return [seen[k] for k in sorted(seen)]


def efa(cluster: ClusterPlan) -> list[Operator]:
    """Return the EFA device plugin's Application when an efa network reaches some pool."""
    networks = [n for n in cluster.spec.networks if n.type == "efa"]
    if not networks:
        return []
    values = {"tolerations": _tolerations(cluster, networks)}
    return [
        Operator(
            "efa-device-plugin",
            NAMESPACE,
            chart=EFA_CHART,
            values=values,
            create_namespace=False,
            cluster_kinds=(),
        )
    ]


def rdma_config(networks: list[Network]) -> dict[str, Any]:
    """Return the RDMA shared device plugin's config.json: one resource per RDMA shared device."""
    devices: dict[tuple[str, str], list[str]] = {}
    for network in networks:
        prefix, _, name = str(network.resource_name).partition("/")
        devices.setdefault((prefix, name), [])
        if network.master and network.master not in devices[(prefix, name)]:
            devices[(prefix, name)].append(network.master)
    entries = []
    for (prefix, name), interfaces in sorted(devices.items()):
        entry: dict[str, Any] = {
            "resourceName": name,
            "rdmaHcaMax": RDMA_HCA_MAX,
            "devices": sorted(interfaces),
        }
        if prefix != RDMA_SHARED_PREFIX:
            entry["resourcePrefix"] = prefix
        entries.append(entry)
    return {"periodicUpdateInterval": PERIODIC_UPDATE, "configList": entries}


def rdma_shared_networks(cluster: ClusterPlan) -> list[Network]:
    """Return the macvlan and ipoib networks backed by an RDMA shared device."""
    return [
        n
        for n in cluster.spec.networks
        if n.type in ("macvlan", "ipoib") and rdma_shared(n.resource_name)
    ]


def rdma(cluster: ClusterPlan) -> list[Operator]:
    """Return the RDMA shared device plugin's Application when a network uses an RDMA shared device."""
    networks = rdma_shared_networks(cluster)
    if not networks:
        return []
    config = json.dumps(rdma_config(networks), sort_keys=True, indent=2)
    config_patch = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": RDMA_CONFIG_MAP, "namespace": NAMESPACE},
        "data": {"config.json": config},
    }
    # Every taint tolerated; the config's digest on the pod template, as the plugin reads config.json
    # only at start (cmd/k8s-rdma-shared-dp/main.go watches the kubelet socket and signals): a new
    # config rolls the pods.
    digest = {CONFIG_DIGEST: hashlib.sha256(config.encode()).hexdigest()}
    tolerate_all = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": RDMA_DAEMON_SET, "namespace": NAMESPACE},
        "spec": {"template": {"metadata": {"annotations": digest}, "spec": {"tolerations": [{"operator": "Exists"}]}}},
    }  # fmt: skip
    source = {
        "repoURL": RDMA_REPO,
        "targetRevision": RDMA_TAG,
        "path": RDMA_PATH,
        "kustomize": {
            "images": [f"{RDMA_IMAGE}:{RDMA_TAG}"],
            "patches": [
                {
                    "target": {"kind": "ConfigMap", "name": RDMA_CONFIG_MAP},
                    "patch": json.dumps(config_patch, sort_keys=True),
                },
                {
                    "target": {"kind": "DaemonSet", "name": RDMA_DAEMON_SET},
                    "patch": json.dumps(tolerate_all, sort_keys=True),
                },
            ],
        },
    }
    return [
        Operator(
            "rdma-shared-device-plugin",
            NAMESPACE,
            source=source,
            create_namespace=False,
            cluster_kinds=(),
        )
    ]


def device_resources(cluster: ClusterPlan) -> list[str]:
    """Return the device-plugin resources the cluster's networks hand to pods (efa, VFs, RDMA devices).

    Kueue admits a workload only when its ClusterQueue covers every resource it requests, so these
    go into the Kueue Configuration's `resources.excludeResourcePrefixes` (kubernetes-sigs/kueue
    apis/config/<version>/configuration_types.go from v0.8.0 to v0.19.2; pkg/workload/workload.go
    drops them from a workload's requests): quotas are on GPUs, not on network devices.
    """
    return sorted({n.device_resource for n in cluster.spec.networks if n.device_resource})


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the device-plugin Applications of the cluster's networks."""
    return efa(cluster) + rdma(cluster)
