"""Multus: a NetworkAttachmentDefinition per attached network in every namespace of a tenant.

The NAD CRD (k8s.cni.cncf.io/v1) holds the CNI configuration as one JSON string in
`spec.config`. gpuplan builds it as a dict and serialises it with sorted keys, so the text is
always valid JSON and byte-stable; it is never assembled from a string template.

CNI version: "0.3.1". Every plugin a network type maps to reads it: sriov-cni, ipoib-cni (whose
releases do not all accept 1.0.0), macvlan and host-device from containernetworking/plugins, the
whereabouts and host-local IPAM plugins, and Multus 3.x as well as 4.x; 1.0.0 would buy nothing
gpuplan uses and lose older Multus and ipoib-cni.

Plugin fields per network type:
- sriov: `type: sriov`; the VF comes from the device plugin (Multus passes its deviceID).
- ib-sriov: `type: ib-sriov` (k8snetworkplumbingwg/ib-sriov-cni v1.3.0 README.md, whose example uses
  cniVersion 0.3.1); the InfiniBand VF comes from the SR-IOV device plugin, as for sriov.
- efa: no NetworkAttachmentDefinition. EFA interfaces are attached to the instance by Karpenter's
  node class (EC2NodeClass networkInterfaces) and handed to pods by the EFA device plugin as
  `vpc.amazonaws.com/efa`; pods ask for that resource, no CNI is involved.
- ipoib: `type: ipoib`, `master` (the IPoIB parent interface).
- macvlan: `type: macvlan`, `master`, `mode: bridge` (pods on one node reach each other).
- host-device: `type: host-device`, `device` = master when given; without it the device comes
  from the device plugin named by resourceName (Multus passes its deviceID).
IPAM: whereabouts `{type, range, gateway?, exclude?}` (cluster-wide allocation) or host-local
`{type, ranges: [[{subnet, gateway?}]]}` (per-node allocation).

The `k8s.v1.cni.cncf.io/resourceName` annotation, set whenever the network names a device-plugin
resource (always for sriov and ipoib, for host-device and macvlan when given, as with RDMA shared
devices), makes Multus's resource injector add that resource to every pod that attaches.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplan.components.multus import MultusRelease
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.cluster import Ipam, Network
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan

RESOURCE_NAME = "k8s.v1.cni.cncf.io/resourceName"
MACVLAN_MODE = "bridge"


def ipam_config(ipam: Ipam) -> dict[str, Any]:
    """Return the IPAM section of a CNI config."""
    if ipam.type == "whereabouts":
        config: dict[str, Any] = {"type": "whereabouts", "range": ipam.range}
        if ipam.gateway:
            config["gateway"] = ipam.gateway
        if ipam.exclude:
            config["exclude"] = list(ipam.exclude)
        return config
    subnet: dict[str, Any] = {"subnet": ipam.range}
    if ipam.gateway:
        subnet["gateway"] = ipam.gateway
    return {"type": "host-local", "ranges": [[subnet]]}


def cni_config(release: MultusRelease, network: Network) -> dict[str, Any]:
    """Return the CNI configuration of a network as a dict."""
    assert (
        network.ipam is not None
    )  # every type that gets a NetworkAttachmentDefinition has one (model)
    config: dict[str, Any] = {
        "cniVersion": release.cni_version,
        "name": network.name,
        "type": network.type,
        "ipam": ipam_config(network.ipam),
    }
    if network.type in ("ipoib", "macvlan"):
        config["master"] = network.master
    if network.type == "macvlan":
        config["mode"] = MACVLAN_MODE
    if network.type == "host-device" and network.master:
        config["device"] = network.master
    return config


def config_text(release: MultusRelease, network: Network) -> str:
    """Return the CNI configuration as the JSON text of spec.config."""
    return json.dumps(cni_config(release, network), sort_keys=True, indent=2)


def attachment(release: MultusRelease, network: Network, namespace: str) -> dict[str, Any]:
    """Return the NetworkAttachmentDefinition of a network in one namespace."""
    spec = {"config": config_text(release, network)}
    obj = k8s(
        release.nad_api_version, "NetworkAttachmentDefinition", network.name, namespace, spec=spec
    )
    if network.resource_name:
        obj["metadata"]["annotations"] = {RESOURCE_NAME: network.resource_name}
    return obj


def attached(cluster: ClusterPlan, alloc: AllocationPlan) -> list[Network]:
    """Return the cluster networks an allocation attaches through Multus, each once, in the order listed."""
    by_name = {n.name: n for n in cluster.spec.networks if n.attaches}
    return [by_name[name] for name in dict.fromkeys(alloc.spec.networks) if name in by_name]


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a NetworkAttachmentDefinition per attached network in each tenant namespace."""
    release = cluster.release("multus")
    if not isinstance(release, MultusRelease):
        return []  # components.multus.version names a release gpuplan does not know: an error already
    out: list[Manifest] = []
    if not any(n.attaches for n in cluster.spec.networks):
        return out  # no network to attach: no allocation has one (attached)
    source = cluster.located.source.path
    for alloc in cluster.allocations:
        for network in attached(cluster, alloc):
            for namespace in alloc.namespaces:
                obj = attachment(release, network, namespace)
                out.append(
                    manifest(
                        cluster.name,
                        f"namespaces/{namespace}",
                        obj,
                        alloc.tenant.source.path,
                        source,
                    )
                )
    return out
