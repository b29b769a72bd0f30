"""The SR-IOV network device plugin of the cluster's sriov and ib-sriov networks, pinned.

Facts (k8snetworkplumbingwg/sriov-network-device-plugin v3.11.0):
- upstream publishes no chart and no kustomization, only deployments/sriovdp-daemonset.yaml with the
  image at `:latest`, and Argo CD can patch a source only through a kustomization file (argoproj/argo-cd
  v3.5.1 util/kustomize/kustomize.go: "kustomization file not found in the path"). So gpuplan writes the
  DaemonSet itself, into the cluster's folder: the image pinned to the tag, which
  .github/workflows/image-push-release.yml pushes to ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin
  (multi-arch: amd64, arm64, ppc64le, s390x);
- what the DaemonSet needs (deployments/sriovdp-daemonset.yaml): privileged, hostNetwork (it reads the
  host's net devices), the kubelet's device-plugins and plugins_registry folders, the device-info folder
  /var/run/k8s.cni.cncf.io/devinfo/dp (DirectoryOrCreate) for Multus, and the config at
  /etc/pcidp/config.json (cmd/sriovdp/main.go defaultConfig) from the ConfigMap `sriovdp-config`;
  images/entrypoint.sh takes `--log-level` (glog -v) and logs to stderr without `--log-dir`;
- config.json (README.md "Configurations"): `resourceList` of {resourceName, resourcePrefix (default
  intel.com, so always written), selectors: [{vendors, devices, drivers, pfNames, linkTypes, isRdma}]};
  the plugin advertises <resourcePrefix>/<resourceName>, the name the NetworkAttachmentDefinition's
  k8s.v1.cni.cncf.io/resourceName annotation carries (gpuplan/emit/multus.py), so both come from the
  network's resourceName. linkTypes is the net device's encapsulation (pkg/devices/gen_net.go,
  netlink EncapType): `ether` for sriov, `infiniband` for ib-sriov.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.cluster import Network
from gpuplan.plan.fleet import ClusterPlan

VERSION = "v3.11.0"
IMAGE = f"ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:{VERSION}"
NAMESPACE = "kube-system"
NAME = "sriov-device-plugin"
CONFIG_MAP = "sriovdp-config"
FOLDER = "sriov-device-plugin"
LINK_TYPES = {"sriov": "ether", "ib-sriov": "infiniband"}
LABELS = {"app.kubernetes.io/name": NAME}
CONFIG_DIGEST = "gpuplan.io/config-sha256"
LOG_LEVEL = 2  # glog -v: start-up and allocations, without the upstream sample's per-poll detail
HOST_PATHS = {  # volume -> (host path, mount path, hostPath type)
    "device-plugins": ("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/device-plugins", ""),
    "plugins-registry": ("/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins_registry", ""),
    "device-info": ("/var/run/k8s.cni.cncf.io/devinfo/dp", "/var/run/k8s.cni.cncf.io/devinfo/dp", "DirectoryOrCreate"),
}  # fmt: skip
# Requests and limits of the upstream sample DaemonSet (a Go process polling sysfs).
RESOURCES = {
    "requests": {"cpu": "250m", "memory": "40Mi"},
    "limits": {"cpu": "1", "memory": "200Mi"},
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sriov_networks(cluster: ClusterPlan) -> list[Network]:
    """Return the cluster's sriov and ib-sriov networks."""
    return [n for n in cluster.spec.networks if n.type in LINK_TYPES and n.sriov is not None]


def selector(network: Network) -> dict[str, Any]:
    """Return the device selector of one network's VFs."""
    devices = network.sriov
    assert devices is not None
    found: dict[str, Any] = {"linkTypes": [LINK_TYPES[network.type]], "isRdma": network.rdma_vfs}
    if devices.pf_names:
        found["pfNames"] = list(devices.pf_names)
    if devices.vendor:
        found["vendors"] = [devices.vendor]
    if devices.devices:
        found["devices"] = list(devices.devices)
    if devices.drivers:
        found["drivers"] = list(devices.drivers)
    return found


def config(networks: list[Network]) -> dict[str, Any]:
    """Return the plugin's config.json: one resource per resourceName (networks sharing one agree: check)."""
    pools: dict[str, Network] = {}
    for network in networks:
        pools.setdefault(str(network.resource_name), network)
    resources = []
    for resource, network in sorted(pools.items()):
        prefix, _, name = resource.partition("/")
        resources.append(
            {"resourceName": name, "resourcePrefix": prefix, "selectors": [selector(network)]}
        )
    return {"resourceList": resources}


def daemon_set(config_text: str) -> dict[str, Any]:
    """Return the plugin's DaemonSet: on every Linux node, tolerating every taint, as a node agent must.

    The plugin reads config.json once at start (cmd/sriovdp/manager.go watches only the kubelet's
    socket), so the pod template carries the config's digest: a new config rolls the pods.
    """
    mounts = [{"name": "config", "mountPath": "/etc/pcidp", "readOnly": True}]
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": CONFIG_MAP}}]
    for volume, (host, mount, kind) in sorted(HOST_PATHS.items()):
        mounts.append({"name": volume, "mountPath": mount})
        path = {"path": host, "type": kind} if kind else {"path": host}
        volumes.append({"name": volume, "hostPath": path})
    container = {
        "name": "sriovdp",
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": [f"--log-level={LOG_LEVEL}"],
        "securityContext": {"privileged": True},
        "resources": RESOURCES,
        "volumeMounts": mounts,
    }
    pod = {
        "hostNetwork": True,
        "serviceAccountName": NAME,
        "priorityClassName": "system-node-critical",  # device plugins must outlive eviction
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"operator": "Exists"}],
        "containers": [container],
        "volumes": volumes,
    }
    spec = {
        "selector": {"matchLabels": LABELS},
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": LABELS, "annotations": {CONFIG_DIGEST: _digest(config_text)}},
            "spec": pod,
        },
    }
    obj = k8s("apps/v1", "DaemonSet", NAME, NAMESPACE, spec=spec)
    obj["metadata"]["labels"] = dict(LABELS)
    return obj


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the SR-IOV network device plugin (ServiceAccount, ConfigMap, DaemonSet) when a network needs it."""
    networks = sriov_networks(cluster)
    if not networks:
        return []
    text = json.dumps(config(networks), sort_keys=True, indent=2)
    objects = [
        k8s("v1", "ServiceAccount", NAME, NAMESPACE),
        k8s("v1", "ConfigMap", CONFIG_MAP, NAMESPACE, data={"config.json": text}),
        daemon_set(text),
    ]
    source = cluster.located.source.path
    return [manifest(cluster.name, FOLDER, obj, source) for obj in objects]
