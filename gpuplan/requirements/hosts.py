"""What the hosts of sriov, ib-sriov and ipoib networks need: gpuplan installs device plugins, not VFs or CNI binaries.

Creating VFs (SR-IOV on in the NIC firmware and BIOS, the PF's sriov_numvfs) and installing the CNI
binaries the NetworkAttachmentDefinitions name is host (or SR-IOV / NVIDIA Network Operator) setup:
`gpuplan requirements` states it per network, as it states what node groups must carry.
"""

from __future__ import annotations

from gpuplan.plan.fleet import ClusterPlan

# Where the CNI binaries of the NetworkAttachmentDefinitions come from (each ships an image that copies
# its binary to the host's /opt/cni/bin, or the NVIDIA Network Operator's secondaryNetwork installs them).
CNI_PROJECTS = {
    "sriov": "k8snetworkplumbingwg/sriov-cni",
    "ib-sriov": "k8snetworkplumbingwg/ib-sriov-cni v1.3.0, deployment/ib-sriov-cni-daemonset.yaml",
    # Mellanox/ipoib-cni v1.2.2 images/ipoib-cni-daemonset.yaml: a DaemonSet whose container copies the
    # ipoib binary into the host's /opt/cni/bin (hostPath mounted at /host/opt/cni/bin).
    "ipoib": "Mellanox/ipoib-cni v1.2.2, images/ipoib-cni-daemonset.yaml",
}


def sriov_hosts(cluster: ClusterPlan) -> list[str]:
    """Return the host setup of each sriov / ib-sriov network: gpuplan installs the device plugin, not the VFs."""
    lines = []
    for network in cluster.spec.networks:
        devices = network.sriov
        if devices is None:
            continue
        pfs = ", ".join(name.partition("#")[0] for name in dict.fromkeys(devices.pf_names))
        pools = ", ".join(dict.fromkeys(network.pools))
        lines.append(
            f"{cluster.name}: network {network.name} ({network.type}), nodes of pool(s) {pools}"
        )
        if devices.pf_names:
            lines.append(
                f"  SR-IOV enabled in the NIC firmware and BIOS; {devices.num_vfs} VFs on each of PF(s) {pfs} "
                f"(echo {devices.num_vfs} > /sys/class/net/<pf>/device/sriov_numvfs at boot, or an SR-IOV Network Operator policy)"
            )
        else:
            lines.append(
                f"  VFs of vendor {devices.vendor}, device(s) {', '.join(devices.devices)} on every node "
                "(attached to the VM by the cloud or hypervisor)"
            )
        lines += [
            f"  gpuplan's SR-IOV network device plugin advertises them as {network.resource_name}",
            _cni_binary(network.type),
        ]
    for network in cluster.spec.networks:
        if network.type == "ipoib":  # ipoib-cni is a project of its own, installed on the hosts
            pools = ", ".join(dict.fromkeys(network.pools))
            lines += [
                f"{cluster.name}: network {network.name} (ipoib), nodes of pool(s) {pools}",
                f"  the IPoIB parent interface {network.master} on every node",
                _cni_binary(network.type),
            ]
    return lines


def _cni_binary(kind: str) -> str:
    return f"  the {kind} CNI binary in /opt/cni/bin ({CNI_PROJECTS[kind]}), which gpuplan does not install"


def hand_labels(cluster: ClusterPlan) -> list[str]:
    """Return the labels someone must put on nodes by hand: a Kueue flavor selects them, nothing sets them."""
    lines = []
    for _, what, labels, nodes in cluster.unset_labels():
        wanted = " ".join(f"{k}={v}" for k, v in labels.items())
        lines += [
            f"{cluster.name}: {what}, {nodes} node(s) no NodePool, NFD rule or node group labels",
            f"  kubectl label node <each of them> {wanted}  (its ResourceFlavor selects them by these)",
        ]
    return lines
