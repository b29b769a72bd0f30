"""Network rules: address ranges that fit together and hold every pod that can attach.

CIDR syntax, and sriov/ipoib without resourceName, are input errors of the Network model; that a
tenant attaches only networks of the cluster it runs on is resolved in fleet.py. What needs the
whole cluster is checked here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from gpuplan.check.registry import allocation_check, check
from gpuplan.components.karpenter import KarpenterRelease
from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile, format_path
from gpuplan.model.cluster import Ipam, Network
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _warning(source: SourceFile, loc: Key, message: str) -> Diagnostic:
    line, col = source.position(loc)
    return Diagnostic(source.path, line, col, Severity.WARNING, format_path(loc), message)


def _clusters(fleet: Fleet) -> Iterator[ClusterPlan]:
    for name in sorted(fleet.clusters):
        yield fleet.clusters[name]


def _addressed(cluster: ClusterPlan) -> Iterator[tuple[int, Network, Ipam]]:
    """Yield the networks that hand out addresses (every type but efa), with their IPAM."""
    for index, network in enumerate(cluster.spec.networks):
        if network.ipam is not None:
            yield index, network, network.ipam


def _gateway(ipam: Ipam) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Return the gateway address: as given, or host-local's default (the range's first host)."""
    if ipam.gateway is None:
        if ipam.type == "host-local":  # host-local claims .1 when no gateway is given, and skips it
            return ipaddress.ip_network(ipam.range).network_address + 1
        return None
    try:
        return ipaddress.ip_address(ipam.gateway)
    except ValueError:
        return None


def _reserved(net: IpNetwork) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Return the addresses of a range no pod gets: network and broadcast (IPv4), or the subnet-router anycast (IPv6)."""
    if net.version == 4 and net.prefixlen < 31:
        return {net.network_address, net.broadcast_address}
    if net.version == 6 and net.prefixlen < 127:
        return {net.network_address}
    return set()


def usable_addresses(ipam: Ipam) -> int:
    """Return how many pod addresses a range gives: minus reserved, excluded and gateway addresses."""
    net = ipaddress.ip_network(ipam.range)
    reserved = _reserved(net)
    excluded = [ipaddress.ip_network(e) for e in ipam.exclude if ipam.type == "whereabouts"]
    inside = [e for e in excluded if e.version == net.version and e.overlaps(net)]
    clipped = []
    for item in inside:  # an exclude larger than the range excludes the whole range
        clipped.append(net if net.subnet_of(item) else item)  # type: ignore[arg-type]
    count = net.num_addresses - len(reserved)
    for item in ipaddress.collapse_addresses(clipped):  # type: ignore[type-var]
        count -= item.num_addresses - sum(1 for r in reserved if r in item)
    gateway = _gateway(ipam)
    if (
        gateway is not None
        and gateway in net
        and gateway not in reserved
        and not any(gateway in e for e in inside)
    ):
        count -= 1
    return max(count, 0)


def attaching_pods(cluster: ClusterPlan, network: Network) -> int:
    """Return how many pods can attach at most: nodes.max x gpusPerNode over the network's pools."""
    return sum(
        cluster.pools[p].nodes_most * cluster.pools[p].gpus_per_node
        for p in dict.fromkeys(network.pools)
        if p in cluster.pools
    )


def _range_loc(index: int) -> Key:
    return ("networks", index, "ipam", "range")


@check
def check_overlapping_ranges(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when two networks of one cluster hand out addresses from overlapping ranges."""
    for cluster in _clusters(fleet):
        seen: list[tuple[str, IpNetwork]] = []
        for index, network, ipam in _addressed(cluster):
            net = ipaddress.ip_network(ipam.range)
            for name, other in seen:
                if net.version == other.version and net.overlaps(other):
                    message = f"range {net} of network {network.name} overlaps range {other} of network {name}: pods of both would get the same addresses"
                    yield cluster.located.source.diagnostic(_range_loc(index), message)
                    break
            seen.append((network.name, net))


@check
def check_range_size(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a range has fewer addresses than the pods that could attach (nodes.max x gpusPerNode)."""
    for cluster in _clusters(fleet):
        for index, network, ipam in _addressed(cluster):
            pods = attaching_pods(cluster, network)
            usable = usable_addresses(ipam)
            if usable < pods:
                pools = ", ".join(
                    f"{p} {cluster.pools[p].nodes_most} x {cluster.pools[p].gpus_per_node}"
                    for p in dict.fromkeys(network.pools)
                    if p in cluster.pools
                )
                message = f"range {ipam.range} of network {network.name} has {usable} usable addresses for up to {pods} pods ({pools}); pods beyond that cannot attach"
                yield _warning(cluster.located.source, _range_loc(index), message)


@check
def check_range_allocatable(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a host-local range too small to allocate from (/31, /32, /127, /128)."""
    for cluster in _clusters(fleet):
        for index, _network, ipam in _addressed(cluster):
            net = ipaddress.ip_network(ipam.range)
            if ipam.type == "host-local" and net.prefixlen > net.max_prefixlen - 2:
                message = f"host-local refuses range {net}: it is too small to allocate from (at most /{net.max_prefixlen - 2})"
                yield cluster.located.source.diagnostic(_range_loc(index), message)


@check
def check_gateway(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a gateway is not an address inside its range."""
    for cluster in _clusters(fleet):
        for index, _network, ipam in _addressed(cluster):
            if ipam.gateway is None:
                continue
            loc = ("networks", index, "ipam", "gateway")
            gateway = _gateway(ipam)
            net = ipaddress.ip_network(ipam.range)
            if gateway is None:
                yield cluster.located.source.diagnostic(
                    loc, f"{ipam.gateway!r} is not an IP address"
                )
            elif gateway not in net or gateway in _reserved(net):
                yield cluster.located.source.diagnostic(
                    loc, f"gateway {gateway} is not a host address of range {net}"
                )


@check
def check_exclude(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on exclude with host-local (it has none); warn on an exclude outside its range."""
    for cluster in _clusters(fleet):
        for index, _network, ipam in _addressed(cluster):
            if not ipam.exclude:
                continue
            base: Key = ("networks", index, "ipam", "exclude")
            if ipam.type != "whereabouts":
                message = "exclude is a whereabouts setting; host-local allocates from the whole range: use a smaller range or type whereabouts"
                yield cluster.located.source.diagnostic(base, message)
                continue
            net = ipaddress.ip_network(ipam.range)
            for e_index, value in enumerate(ipam.exclude):
                item = ipaddress.ip_network(value)
                if item.version != net.version or not item.overlaps(net):
                    yield _warning(
                        cluster.located.source,
                        base + (e_index,),
                        f"{item} is outside range {net}: it excludes nothing",
                    )


@check
def check_host_local_spans_nodes(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a host-local range serves more than one node: each node hands out the same addresses."""
    for cluster in _clusters(fleet):
        for index, network, ipam in _addressed(cluster):
            if ipam.type != "host-local":
                continue
            nodes = sum(
                cluster.pools[p].nodes_most
                for p in dict.fromkeys(network.pools)
                if p in cluster.pools
            )
            if nodes > 1:
                message = (
                    f"host-local keeps its allocations on each node, so pods on the {nodes} nodes of network {network.name} "
                    "get the same addresses from one range: use type whereabouts (cluster-wide allocation)"
                )
                yield _warning(cluster.located.source, ("networks", index, "ipam", "type"), message)


@check
def check_host_device_target(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a host-device network that names neither a device (master) nor a device-plugin resource."""
    for cluster in _clusters(fleet):
        for index, network in enumerate(cluster.spec.networks):
            if network.type == "host-device" and not network.master and not network.resource_name:
                message = "a host-device network needs master (the device to move into the pod) or resourceName (a device plugin that hands one out)"
                yield cluster.located.source.diagnostic(("networks", index, "type"), message)


@allocation_check
def check_attached_networks(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when an allocation lists a network twice; warn when it has no quota where the network is."""
    if not alloc.spec.networks:
        return
    networks = {n.name: n for n in alloc.cluster.spec.networks}
    granted = {g.pool.name for g in alloc.grants}
    seen: set[str] = set()
    for n_index, name in enumerate(alloc.spec.networks):
        loc = alloc.loc("networks", n_index)
        if name in seen:
            yield alloc.tenant.source.diagnostic(loc, f"network {name} is listed already")
            continue
        seen.add(name)
        network = networks.get(name)
        if network is None or not alloc.grants:
            continue  # unknown networks are errors in fleet.py
        if not granted & set(network.pools):
            pools = ", ".join(dict.fromkeys(network.pools))
            message = f"network {name} reaches only pool(s) {pools}, where tenant {alloc.name} has no quota: its pods can never use it"
            yield _warning(alloc.tenant.source, loc, message)


# The RDMA shared device plugin advertises <resourcePrefix>/<resourceName>, prefix "rdma" unless
# configured (Mellanox/k8s-rdma-shared-dev-plugin v1.5.3 README.md, "resourcePrefix" default);
# its README names resources hca_shared_devices_a and the NVIDIA Network Operator's samples
# rdma_shared_device_a, so those names mark one under another prefix too.
RDMA_SHARED_PREFIX = "rdma"
_RDMA_SHARED_NAMES = ("rdma_shared", "hca_shared")
# What each CNI needs from a device plugin (../shared/facts/upstream-components.md "Multus networks"):
# sriov-cni and ib-sriov-cni move an SR-IOV VF into the pod; macvlan and ipoib share the parent's
# device, and pods reach RDMA through the RDMA shared device plugin.
_VF_TYPES = ("sriov", "ib-sriov")
_SHARED_PAIRS = "type macvlan (Ethernet, RoCE) or type ipoib (InfiniBand)"


def rdma_shared(resource: str | None) -> bool:
    """Tell whether a resource name is an RDMA shared device (which has no SR-IOV VFs)."""
    if resource is None:
        return False
    prefix, _, name = resource.partition("/")
    return prefix == RDMA_SHARED_PREFIX or any(marker in name for marker in _RDMA_SHARED_NAMES)


@check
def check_network_device_pairing(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when sriov or ib-sriov is backed by an RDMA shared device: their CNIs need SR-IOV VFs."""
    for cluster in _clusters(fleet):
        for index, network in enumerate(cluster.spec.networks):
            if network.type in _VF_TYPES and rdma_shared(network.resource_name):
                cni = "ib-sriov-cni" if network.type == "ib-sriov" else "sriov-cni"
                message = (
                    f"{cni} moves an SR-IOV VF into the pod, and {network.resource_name} is an RDMA shared device, which "
                    f"has none: pair the RDMA shared device with {_SHARED_PAIRS}, or give {network.type} the SR-IOV "
                    "network device plugin's VF resource"
                )
                yield cluster.located.source.diagnostic(
                    ("networks", index, "resourceName"), message
                )


# Fabrics by provider: EFA exists on AWS only, and EC2 instances have no InfiniBand (p5 and p5en
# use EFA: ../shared/facts/upstream-components.md "Multus networks"). A static pool of an aws cluster
# may be on-premises machines (EKS hybrid nodes), so InfiniBand is refused only on pools Karpenter
# launches as EC2 instances.
_INFINIBAND = ("ipoib", "ib-sriov")


@check
def check_network_provider(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on efa off AWS, and on InfiniBand networks that reach EC2 instances Karpenter launches."""
    for cluster in _clusters(fleet):
        provider = cluster.spec.provider
        for index, network in enumerate(cluster.spec.networks):
            if network.type == "efa" and provider != "aws":
                message = f"EFA (Elastic Fabric Adapter) exists on AWS only; cluster {cluster.name} runs on {provider}"
                yield cluster.located.source.diagnostic(("networks", index, "type"), message)
            if network.type not in _INFINIBAND or provider != "aws":
                continue
            for p_index, name in enumerate(network.pools):
                pool = cluster.pools.get(name)
                if pool is not None and pool.karpenter_made:
                    message = (
                        f"pool {name} is EC2 instances, which have no InfiniBand ({network.type}): p5 and p5en "
                        "reach each other over EFA (a network of type: efa)"
                    )
                    yield cluster.located.source.diagnostic(
                        ("networks", index, "pools", p_index), message
                    )


@check
def check_efa_interfaces(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when an efa network reaches Karpenter's nodes but the EC2NodeClass gpuplan renders has no EFA interfaces."""
    for cluster in _clusters(fleet):
        karpenter, release = cluster.spec.components.karpenter, cluster.release("karpenter")
        settings = karpenter.node_class.aws if karpenter is not None else None
        if settings is None or not isinstance(release, KarpenterRelease):
            continue  # no node class gpuplan renders: it is the user's (extra/<cluster>/)
        assert karpenter is not None
        rendered = karpenter.node_class.name
        for index, network in enumerate(cluster.spec.networks):
            reached = [p for p in network.pools if cluster.node_class(p) == rendered]
            if network.type != "efa" or not reached:
                continue
            loc = ("networks", index, "type")
            # EC2NodeClass spec.networkInterfaces: aws/karpenter-provider-aws v1.11.0 on (gpuplan/components/karpenter.py).
            if "networkInterfaces" not in release.node_class_fields:
                message = (
                    f"Karpenter {release.version}'s EC2NodeClass has no networkInterfaces, so the nodes of pool(s) "
                    f"{', '.join(reached)} get no EFA interface: upgrade Karpenter to v1.11 or later"
                )
                yield cluster.located.source.diagnostic(loc, message)
            elif settings.efa_network_cards is None:
                message = (
                    f"the EC2NodeClass gpuplan renders gives the nodes of pool(s) {', '.join(reached)} no EFA interface: "
                    "set components.karpenter.nodeClass.aws.efaNetworkCards (32 on p5.48xlarge)"
                )
                yield cluster.located.source.diagnostic(loc, message)


def _sriov_loc(index: int) -> Key:
    return ("networks", index, "sriov")


@check
def check_sriov_resources(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when networks sharing a resourceName disagree on its devices: the plugin has one pool per name."""
    for cluster in _clusters(fleet):
        first: dict[str, tuple[int, Network]] = {}
        for index, network in enumerate(cluster.spec.networks):
            resource = network.device_resource
            if resource is None or network.type == "efa":
                continue
            if resource not in first:
                first[resource] = (index, network)
                continue
            other_index, other = first[resource]
            vfs = network.type in _VF_TYPES
            if vfs != (other.type in _VF_TYPES):
                message = (
                    f"{resource} is the SR-IOV device plugin's VF pool for one of networks {other.name} and "
                    f"{network.name} and another plugin's device for the other: give each its own resourceName"
                )
                yield cluster.located.source.diagnostic(
                    ("networks", index, "resourceName"), message
                )
            elif vfs and (network.type, network.sriov) != (other.type, other.sriov):
                message = (
                    f"network {network.name} names the VF pool {resource} of network {other.name} "
                    f"(networks[{other_index}]) with other devices or type: the SR-IOV device plugin has one "
                    "pool per resource name, so give both the same sriov and type, or another resourceName"
                )
                yield cluster.located.source.diagnostic(_sriov_loc(index), message)


@check
def check_sriov_vfs(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a node has fewer VFs for a network than GPUs: pods past the VFs cannot attach."""
    for cluster in _clusters(fleet):
        for index, network in enumerate(cluster.spec.networks):
            if network.sriov is None:
                continue
            vfs = network.sriov.vfs_per_node()
            if vfs is None:
                continue  # VFs by PCI ID: the node's count is the cloud's
            short = [
                f"{p} ({cluster.pools[p].gpus_per_node} GPUs)"
                for p in dict.fromkeys(network.pools)
                if p in cluster.pools and cluster.pools[p].gpus_per_node > vfs
            ]
            if short:
                message = (
                    f"network {network.name} has {vfs} VFs per node (pfNames x numVfs), fewer than the one-GPU pods "
                    f"a node of {', '.join(short)} can run: pods past {vfs} per node cannot attach"
                )
                yield _warning(cluster.located.source, _sriov_loc(index), message)


@check
def check_efa_node_class_shared(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when the node class gpuplan renders with EFA interfaces also launches pools on no efa network."""
    for cluster in _clusters(fleet):
        karpenter, release = cluster.spec.components.karpenter, cluster.release("karpenter")
        settings = karpenter.node_class.aws if karpenter is not None else None
        if karpenter is None or settings is None or settings.efa_network_cards is None:
            continue
        if (
            not isinstance(release, KarpenterRelease)
            or "networkInterfaces" not in release.node_class_fields
        ):
            continue  # the node class gets no interfaces (an error of its own, node-class-fields)
        on_efa = {p for n in cluster.spec.networks if n.type == "efa" for p in n.pools}
        for index, pool in enumerate(cluster.spec.node_pools):
            if pool.name in on_efa or cluster.node_class(pool.name) != karpenter.node_class.name:
                continue
            assert pool.karpenter is not None
            # aws/karpenter-provider-aws v1.14.1 pkg/providers/instancetype/compatibility/compatibility.go:
            # an instance type with fewer network cards (or EFA interfaces) than the node class names is
            # never launched.
            message = (
                f"node class {karpenter.node_class.name} gives every node {settings.efa_network_cards} EFA network cards, "
                f"and Karpenter launches only instance types that have them: pool {pool.name} is on no efa network, and its "
                f"{', '.join(pool.karpenter.instance_types)} may never launch; give it a node class of its own "
                "(karpenter.nodeClass, yours in extra/)"
            )
            yield _warning(cluster.located.source, ("nodePools", index, "karpenter"), message)
