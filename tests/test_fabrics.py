"""Fabrics by provider: EFA on AWS (no NetworkAttachmentDefinition), ib-sriov with SR-IOV VFs, and the
device pairing every CNI needs (an RDMA shared device goes with macvlan or ipoib, never sriov)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gpuplan.check.networks import rdma_shared
from gpuplan.pipeline import compile_fleet
from tests import builders
from tests.builders import KUEUE, allocation, aws_karpenter, cluster, position, tenant
from tests.conftest import run, write_repo

KARPENTER = aws_karpenter(efaNetworkCards=32)
AUTOSCALED = {"nodes": {"min": 0, "max": 4}, "karpenter": {"instanceTypes": ["p5.48xlarge"]}}
STATIC = {"nodes": {"count": 2}, "hostnames": ["gpu-.*"]}
TENANT = tenant("t", allocation(quotas=[{"pool": "p", "gpus": 8}], networks=["n"]))
IPAM = {"ipam": {"type": "whereabouts", "range": "10.0.0.0/24"}}
VFS = {"sriov": {"pfNames": ["ibp12s0"], "numVfs": 8}}


def net(name: str, kind: str, *parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """One network on pool p: its fields, then the parts (VFS, IPAM) in order."""
    entry = {"name": name, "type": kind} | fields
    for part in parts:
        entry |= part
    return entry | {"pools": ["p"]}


def ipam(cidr: str) -> dict[str, Any]:
    return {"ipam": {"type": "whereabouts", "range": cidr}}


EFA = [net("n", "efa")]


def _files(
    networks: list[dict[str, Any]], provider: str = "aws", pool: dict[str, Any] = AUTOSCALED,
    *more: str,
) -> dict[str, str]:  # fmt: skip
    components = {"kueue": KUEUE} | ({"karpenter": KARPENTER} if "karpenter" in pool else {})
    text = cluster(
        builders.pool("p", **pool),
        *more,
        provider=provider,
        components=components,
        networks=networks,
    )
    return {"clusters/c1.yaml": text, "tenants/t.yaml": TENANT}


def _check(tmp_path: Path, files: dict[str, str]) -> tuple[int, str]:
    result = run("check", "--root", str(write_repo(tmp_path, files)))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr


def _objects(
    tmp_path: Path, files: dict[str, str]
) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    result = compile_fleet(write_repo(tmp_path, files))
    errors = [d.text() for d in result.diagnostics if d.severity.value == "error"]
    assert not errors, errors
    return {(m.kind, m.namespace, m.name): m.obj for m in result.manifests}


def test_efa_renders_no_network_attachment(tmp_path: Path) -> None:
    found = _objects(tmp_path, _files(EFA))
    assert not [key for key in found if key[0] == "NetworkAttachmentDefinition"]
    assert ("Namespace", None, "t") in found  # the tenant is rendered; only the NAD is absent


def test_efa_off_aws_is_an_error(tmp_path: Path) -> None:
    files = _files(EFA, provider="onprem", pool=STATIC)
    code, err = _check(tmp_path, files)
    assert code == 1
    at = position(files["clusters/c1.yaml"], "efa")
    assert (
        f"clusters/c1.yaml:{at}: error: networks[0].type: EFA (Elastic Fabric Adapter) exists on AWS only; cluster c1 runs on onprem"
        in err
    )


@pytest.mark.parametrize(
    ("network", "message"),
    [
        (
            [net("n", "efa", IPAM)],
            "an efa network has no ipam or master",
        ),
        (
            [net("n", "efa", resourceName="example.com/efa")],
            "an efa network's resource is vpc.amazonaws.com/efa",
        ),
        (
            [net("n", "macvlan", master="eth1")],
            "a macvlan network needs ipam",
        ),
        (
            [net("n", "ib-sriov", IPAM)],
            "a ib-sriov network needs resourceName (the SR-IOV device plugin's VF resource)",
        ),
    ],
)
def test_network_shapes_are_input_errors(
    tmp_path: Path, network: list[dict[str, Any]], message: str
) -> None:
    files = _files(network)
    code, err = _check(tmp_path, files)
    assert code == 1 and message in err, err
    assert (
        f"clusters/c1.yaml:{position(files['clusters/c1.yaml'], '{name: n')}: error: networks[0]"
        in err
    )


def test_ib_sriov_renders_the_ib_sriov_cni(tmp_path: Path) -> None:
    network = [net("n", "ib-sriov", VFS, IPAM, resourceName="nvidia.com/ib_vf")]
    nad = _objects(tmp_path, _files(network, provider="azure", pool=STATIC))[
        ("NetworkAttachmentDefinition", "t", "n")
    ]
    assert json.loads(nad["spec"]["config"]) == {
        "cniVersion": "0.3.1", "name": "n", "type": "ib-sriov",
        "ipam": {"type": "whereabouts", "range": "10.0.0.0/24"},
    }  # fmt: skip
    assert nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/ib_vf"


@pytest.mark.parametrize("kind", ["sriov", "ib-sriov"])
def test_sriov_with_an_rdma_shared_device_names_the_right_pairing(
    tmp_path: Path, kind: str
) -> None:
    network = [net("n", kind, VFS, IPAM, resourceName="nvidia.com/rdma_shared_device_a")]
    code, err = _check(tmp_path, _files(network, provider="onprem", pool=STATIC))
    assert code == 1
    cni = "ib-sriov-cni" if kind == "ib-sriov" else "sriov-cni"
    assert (
        f"error: networks[0].resourceName: {cni} moves an SR-IOV VF into the pod, and nvidia.com/rdma_shared_device_a "
        "is an RDMA shared device, which has none: pair the RDMA shared device with type macvlan (Ethernet, RoCE) "
        "or type ipoib (InfiniBand)"
    ) in err


def test_rdma_shared_device_with_macvlan_and_ipoib_is_fine(tmp_path: Path) -> None:
    networks = [
        net("n", "macvlan", IPAM, master="eth1", resourceName="rdma/rdma_shared_device_a"),
        net(
            "m",
            "ipoib",
            ipam("10.1.0.0/24"),
            master="ib0",
            resourceName="rdma/hca_shared_devices_a",
        ),
    ]
    code, err = _check(tmp_path, _files(networks, provider="onprem", pool=STATIC))
    assert code == 0 and "network-device-pairing" not in err, err


@pytest.mark.parametrize(
    ("kind", "network"),
    [
        ("ipoib", [net("n", "ipoib", IPAM, master="ib0", resourceName="rdma/hca_shared_devices_a")]),
        ("ib-sriov", [net("n", "ib-sriov", VFS, IPAM, resourceName="nvidia.com/ib_vf")]),
    ],
)  # fmt: skip
def test_infiniband_on_ec2_instances_is_an_error(
    tmp_path: Path, kind: str, network: list[dict[str, Any]]
) -> None:
    code, err = _check(tmp_path / "ec2", _files(network))
    assert code == 1
    assert (
        f"error: networks[0].pools[0]: pool p is EC2 instances, which have no InfiniBand ({kind}): p5 and p5en reach each other over EFA"
        in err
    )
    # A static pool of an aws cluster may be on-premises machines (EKS hybrid nodes): no finding.
    code, err = _check(tmp_path / "hybrid", _files(network, "aws", STATIC | {"taints": []}))
    assert "network-provider" not in err, err


def test_rdma_shared_recognises_the_plugin_prefix_and_names() -> None:
    assert rdma_shared("rdma/anything")
    assert rdma_shared("nvidia.com/rdma_shared_device_a")
    assert rdma_shared("example.com/hca_shared_devices_b")
    assert not rdma_shared("nvidia.com/sriov_ib")
    assert not rdma_shared(None)


# --- the networks' device plugins, installed by the bootstrap Applications -----------------------------


def _operators(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    from gpuplan.emit.bootstrap.fabrics import operators

    fleet = compile_fleet(write_repo(tmp_path, files), emit_output=False).fleet
    assert fleet is not None
    return {o.name: o for o in operators(fleet.clusters["c1"])}


def test_efa_installs_the_pinned_efa_device_plugin_tolerating_the_pool_taints(
    tmp_path: Path,
) -> None:
    found = _operators(tmp_path, _files(EFA))
    efa = found.pop("efa-device-plugin")
    assert not found  # no RDMA shared device here
    assert efa.chart is not None and (efa.chart.repo, efa.chart.name, efa.chart.version) == (
        "https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.30",
    )  # fmt: skip
    assert efa.values == {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    }


def test_rdma_shared_devices_get_one_plugin_resource_each(tmp_path: Path) -> None:
    networks = [
        net("n", "macvlan", IPAM, master="ens1f0", resourceName="rdma/roce_a"),
        net(
            "m", "ipoib", ipam("10.1.0.0/24"), master="ib0", resourceName="example.com/hca_shared_b"
        ),
    ]
    plugin = _operators(tmp_path, _files(networks, provider="onprem", pool=STATIC))[
        "rdma-shared-device-plugin"
    ]
    source = plugin.source
    assert (source["repoURL"], source["targetRevision"], source["path"]) == (
        "https://github.com/Mellanox/k8s-rdma-shared-dev-plugin.git", "v1.5.3", "deployment/k8s/base",
    )  # fmt: skip
    assert source["kustomize"]["images"] == ["ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3"]
    config_map = json.loads(source["kustomize"]["patches"][0]["patch"])
    assert json.loads(config_map["data"]["config.json"])["configList"] == [
        {
            "resourceName": "hca_shared_b",
            "resourcePrefix": "example.com",
            "rdmaHcaMax": 1000,
            "devices": ["ib0"],
        },
        {"resourceName": "roce_a", "rdmaHcaMax": 1000, "devices": ["ens1f0"]},
    ]
    # The plugin reads its config only at start: the pod template carries the config's digest.
    daemon_set = json.loads(source["kustomize"]["patches"][1]["patch"])["spec"]["template"]
    digest = hashlib.sha256(config_map["data"]["config.json"].encode()).hexdigest()
    assert daemon_set["metadata"]["annotations"] == {"gpuplan.io/config-sha256": digest}
    assert daemon_set["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_sriov_networks_install_no_bootstrap_application(tmp_path: Path) -> None:
    network = [net("n", "sriov", VFS, IPAM, resourceName="nvidia.com/sriov_eth")]
    assert _operators(tmp_path, _files(network, provider="onprem", pool=STATIC)) == {}


def test_kueue_ignores_the_network_device_resources(tmp_path: Path) -> None:
    from gpuplan.components.kueue import KueueRelease
    from gpuplan.emit.bootstrap.kueue import configuration

    networks = EFA + [net("m", "sriov", VFS, IPAM, resourceName="example.com/vf")]
    fleet = compile_fleet(write_repo(tmp_path, _files(networks)), emit_output=False).fleet
    assert fleet is not None
    cluster = fleet.clusters["c1"]
    release = cluster.release("kueue")
    assert isinstance(release, KueueRelease)
    # A ClusterQueue covers GPUs, cpu and memory only: Kueue would never admit a pod asking for these.
    assert configuration(cluster, release)["resources"] == {
        "excludeResourcePrefixes": ["example.com/vf", "vpc.amazonaws.com/efa"]
    }


# --- the SR-IOV network device plugin (sriov, ib-sriov) ----------------------------------------------


def _emitted(
    tmp_path: Path, network: list[dict[str, Any]], provider: str = "onprem"
) -> dict[str, Any]:
    found = _objects(tmp_path, _files(network, provider=provider, pool=STATIC))
    return {f"{kind}/{name}": obj for (kind, _, name), obj in found.items()}


def test_ib_sriov_gets_the_pinned_sriov_device_plugin_advertising_the_nad_resource(
    tmp_path: Path,
) -> None:
    vfs = {
        "pfNames": ["ibp12s0", "ibp75s0#0-3"],
        "numVfs": 8,
        "vendor": "15b3",
        "devices": ["101e"],
    }
    network = [net("n", "ib-sriov", {"sriov": vfs}, IPAM, resourceName="nvidia.com/ib_vf")]
    found = _emitted(tmp_path, network)
    config = json.loads(found["ConfigMap/sriovdp-config"]["data"]["config.json"])
    assert config == {
        "resourceList": [
            {
                "resourceName": "ib_vf",
                "resourcePrefix": "nvidia.com",
                "selectors": [
                    {
                        "pfNames": ["ibp12s0", "ibp75s0#0-3"],
                        "linkTypes": ["infiniband"],
                        "isRdma": True,
                        "vendors": ["15b3"],
                        "devices": ["101e"],
                    }
                ],
            }
        ]
    }
    # The plugin advertises <prefix>/<name>: what the NAD asks Multus to inject.
    nad = found["NetworkAttachmentDefinition/n"]
    entry = config["resourceList"][0]
    assert nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == (
        f"{entry['resourcePrefix']}/{entry['resourceName']}"
    )
    pod = found["DaemonSet/sriov-device-plugin"]["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["containers"]] == [
        "ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.11.0"
    ]
    assert pod["tolerations"] == [{"operator": "Exists"}] and pod["hostNetwork"] is True
    assert {v["name"]: v.get("configMap", v.get("hostPath")) for v in pod["volumes"]} == {
        "config": {"name": "sriovdp-config"},
        "device-info": {"path": "/var/run/k8s.cni.cncf.io/devinfo/dp", "type": "DirectoryOrCreate"},
        "device-plugins": {"path": "/var/lib/kubelet/device-plugins"},
        "plugins-registry": {"path": "/var/lib/kubelet/plugins_registry"},
    }
    assert "ServiceAccount/sriov-device-plugin" in found


def test_sriov_ethernet_vfs_are_ether_and_rdma_only_when_asked(tmp_path: Path) -> None:
    roce = {"sriov": {"pfNames": ["ens1f0"], "numVfs": 8, "rdma": True}}
    networks = [
        net("n", "sriov", VFS, IPAM, resourceName="example.com/eth_vf"),
        net("m", "sriov", roce, ipam("10.1.0.0/24"), resourceName="example.com/roce_vf"),
    ]
    found = _emitted(tmp_path, networks)
    config = json.loads(found["ConfigMap/sriovdp-config"]["data"]["config.json"])
    assert [
        (r["resourceName"], r["selectors"][0]["linkTypes"], r["selectors"][0]["isRdma"])
        for r in config["resourceList"]
    ] == [("eth_vf", ["ether"], False), ("roce_vf", ["ether"], True)]


def test_no_sriov_network_no_plugin(tmp_path: Path) -> None:
    network = [net("n", "macvlan", IPAM, master="eth1")]
    assert not [k for k in _emitted(tmp_path, network) if "sriov" in k]


@pytest.mark.parametrize(
    ("network", "message"),
    [
        (
            [net("n", "ib-sriov", IPAM, resourceName="nvidia.com/ib_vf")],
            "networks[0]: a ib-sriov network needs sriov: the VFs that back it (pfNames and numVfs, or vendor and devices)",
        ),
        (
            [net("n", "sriov", IPAM, resourceName="nvidia.com/eth_vf")],
            "networks[0]: a sriov network needs sriov: the VFs that back it (pfNames and numVfs, or vendor and devices)",
        ),
        (
            [
                net(
                    "n",
                    "ib-sriov",
                    {"sriov": VFS["sriov"] | {"rdma": False}},
                    IPAM,
                    resourceName="nvidia.com/ib_vf",
                )
            ],
            "networks[0]: an ib-sriov network's VFs carry RDMA",
        ),
        (
            [net("n", "sriov", VFS, IPAM, resourceName="nvidia.com/eth.vf")],
            "the SR-IOV device plugin refuses resource name 'eth.vf'",
        ),
        (
            [
                net(
                    "n",
                    "sriov",
                    {"sriov": {"pfNames": ["ens1f0#4-8"], "numVfs": 8}},
                    IPAM,
                    resourceName="nvidia.com/vf",
                )
            ],
            "pfNames entry 'ens1f0#4-8' takes VF 8, but each PF has numVfs 8 (VFs 0-7)",
        ),
        (
            [net("n", "macvlan", VFS, IPAM, master="eth1")],
            "a macvlan network has no VFs",
        ),
        (
            [net("n", "sriov", {"sriov": {"vendor": "15b3"}}, IPAM, resourceName="nvidia.com/vf")],
            "name the VFs: pfNames and numVfs where the nodes own the PFs, or vendor and devices",
        ),
        (
            [
                net(
                    "n",
                    "sriov",
                    {"sriov": {"pfNames": ["ens1f0"]}},
                    IPAM,
                    resourceName="nvidia.com/vf",
                )
            ],
            "pfNames needs numVfs: the VFs each PF has",
        ),
        (
            [
                net(
                    "n",
                    "sriov",
                    {"sriov": {"numVfs": 4, "vendor": "15b3", "devices": ["101e"]}},
                    IPAM,
                    resourceName="nvidia.com/vf",
                )
            ],
            "numVfs counts the VFs of each PF in pfNames",
        ),
    ],
)
def test_sriov_device_data_errors(
    tmp_path: Path, network: list[dict[str, Any]], message: str
) -> None:
    files = _files(network, provider="onprem", pool=STATIC)
    code, err = _check(tmp_path, files)
    assert code == 1, err
    # The network's item, or its sriov mapping (when there is one) for a rule of its own.
    text = files["clusters/c1.yaml"]
    item = position(text, "{name: n")
    at = [item, position(text, "{", after="sriov:")] if "sriov:" in text else [item]
    found = [f"clusters/c1.yaml:{a}: error: networks[0]" in err for a in at]
    assert any(found) and message in err, err


def test_networks_sharing_a_vf_pool_must_agree(tmp_path: Path) -> None:
    other = {"sriov": {"pfNames": ["ens2f0"], "numVfs": 8}}
    networks = [
        net("n", "sriov", VFS, IPAM, resourceName="example.com/vf"),
        net("m", "sriov", other, ipam("10.1.0.0/24"), resourceName="example.com/vf"),
        net("o", "sriov", VFS, ipam("10.2.0.0/24"), resourceName="example.com/vf"),
    ]
    files = _files(networks, provider="onprem", pool=STATIC)
    code, err = _check(tmp_path, files)
    assert code == 1
    at = position(
        files["clusters/c1.yaml"],
        "{",
        after="{name: m, type: sriov, resourceName: example.com/vf, sriov:",
    )
    assert (
        f"clusters/c1.yaml:{at}: error: networks[1].sriov: network m names the VF pool example.com/vf of network n "
        "(networks[0]) with other devices or type"
    ) in err, err
    assert "networks[2]" not in err  # the same devices: one pool, two NADs


def test_fewer_vfs_than_gpus_is_a_warning(tmp_path: Path) -> None:
    def network(first: str, vfs: int) -> list[dict[str, Any]]:
        sriov = {"sriov": {"pfNames": [first, "ens2f0"], "numVfs": vfs}}
        return [net("n", "sriov", sriov, IPAM, resourceName="example.com/vf")]

    code, err = _check(tmp_path, _files(network("ens1f0#0-3", 2), "onprem", STATIC))
    assert code == 1 and "pfNames entry 'ens1f0#0-3' takes VF 3" in err  # past numVfs
    code, err = _check(tmp_path / "b", _files(network("ens1f0#0-3", 4), "onprem", STATIC))
    assert code == 0
    assert (
        "warning: networks[0].sriov: network n has 8 VFs per node (pfNames x numVfs), fewer than"
    ) not in err  # 4 + 4 = 8 VFs for 8 GPUs: enough
    code, err = _check(tmp_path / "c", _files(network("ens1f0#0-2", 4), "onprem", STATIC))
    assert code == 0
    assert (
        "warning: networks[0].sriov: network n has 7 VFs per node (pfNames x numVfs), fewer than the one-GPU "
        "pods a node of p (8 GPUs) can run: pods past 7 per node cannot attach [sriov-vfs]"
    ) in err, err


def test_requirements_list_the_vfs_and_cni_binary_each_host_needs(tmp_path: Path) -> None:
    network = [net("n", "ib-sriov", VFS, IPAM, resourceName="nvidia.com/ib_vf")]
    root = write_repo(tmp_path, _files(network, provider="onprem", pool=STATIC))
    result = run("requirements", "--root", str(root))
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "c1: network n (ib-sriov), nodes of pool(s) p",
        "  SR-IOV enabled in the NIC firmware and BIOS; 8 VFs on each of PF(s) ibp12s0 "
        "(echo 8 > /sys/class/net/<pf>/device/sriov_numvfs at boot, or an SR-IOV Network Operator policy)",
        "  gpuplan's SR-IOV network device plugin advertises them as nvidia.com/ib_vf",
    ]
    assert "ib-sriov CNI binary in /opt/cni/bin" in result.stdout


# --- network devices in tenants' quotas ----------------------------------------------------------------


def test_tenants_not_attaching_efa_get_no_efa_devices(tmp_path: Path) -> None:
    files = _files(EFA)
    files["tenants/u.yaml"] = tenant("u", allocation(quotas=[{"pool": "p", "gpus": 8}]))
    found = _objects(tmp_path, files)
    listed = found[("ResourceQuota", "t", "t")]["spec"]["hard"]
    unlisted = found[("ResourceQuota", "u", "u")]["spec"]["hard"]
    assert "requests.vpc.amazonaws.com/efa" not in listed  # EFA follows the GPUs granted
    assert unlisted["requests.vpc.amazonaws.com/efa"] == "0"


# --- EFA interfaces and the node classes of the pools ----------------------------------------------


def _with_dev_pool(**node_class: str) -> dict[str, str]:
    karpenter = {"instanceTypes": ["g6e.12xlarge"]} | node_class
    dev = builders.pool("dev", "L40S", gpus_per_node=4, cpu=44, memory="180Gi",
                        nodes={"min": 0, "max": 2}, karpenter=karpenter)  # fmt: skip
    return _files(EFA, "aws", AUTOSCALED, dev)


def test_an_efa_node_class_shared_with_other_pools_is_a_warning(tmp_path: Path) -> None:
    code, err = _check(tmp_path, _with_dev_pool())
    assert code == 0
    assert (
        "warning: nodePools[1].karpenter: node class gpu gives every node 32 EFA network cards, and Karpenter "
        "launches only instance types that have them: pool dev is on no efa network, and its g6e.12xlarge may "
        "never launch; give it a node class of its own (karpenter.nodeClass, yours in extra/) [efa-node-class-shared]"
    ) in err, err


def test_a_pool_of_its_own_node_class_launches_from_it(tmp_path: Path) -> None:
    files = _with_dev_pool(nodeClass="gpu-dev")
    files["extra/c1/ec2nodeclass-gpu-dev.yaml"] = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu-dev}
spec:
  role: GpuNodes
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c1}}]
  metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
"""
    code, err = _check(tmp_path / "own", files)
    assert code == 0 and "efa-node-class-shared" not in err, err
    found = _objects(tmp_path / "render", files)
    refs = {
        name: obj["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        for (kind, _, name), obj in found.items()
        if kind == "NodePool"
    }
    assert refs == {"p": "gpu", "dev": "gpu-dev"}, refs
    # A node class nobody supplies is refused before anything is written.
    del files["extra/c1/ec2nodeclass-gpu-dev.yaml"]
    root = write_repo(tmp_path / "missing", files)
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert 'nodeClassRef.name: EC2NodeClass "gpu-dev" does not exist (has: gpu)' in result.stderr


def test_roce_vfs_are_rdma_for_pod_security(tmp_path: Path) -> None:
    def network(**rdma: bool) -> list[dict[str, Any]]:
        sriov = {"sriov": {"pfNames": ["ens1f0"], "numVfs": 8} | rdma}
        return [net("n", "sriov", sriov, IPAM, resourceName="example.com/roce_vf")]

    code, err = _check(tmp_path / "roce", _files(network(rdma=True), "onprem", STATIC))
    assert code == 0 and "[rdma-pod-security]" in err, err
    plain = network()
    code, err = _check(tmp_path / "eth", _files(plain, provider="onprem", pool=STATIC))
    assert code == 0 and "[rdma-pod-security]" not in err, err


# --- the proof: validation finds every sriov NAD's resource among the plugin's VF pools ---------------


def _vf_problems(objects: list[dict[str, Any]]) -> list[str]:
    from gpuplan.validate import check_references

    report = check_references(objects)
    return [str(p) for p in report.problems if "SR-IOV" in p.message or "VFs" in p.message]


def test_validation_ties_each_sriov_nad_to_a_vf_pool(tmp_path: Path) -> None:
    import copy

    network = [net("n", "ib-sriov", VFS, IPAM, resourceName="nvidia.com/ib_vf")]
    found = _objects(tmp_path, _files(network, provider="onprem", pool=STATIC))
    objects = list(found.values())
    assert _vf_problems(objects) == []
    config_map = found[("ConfigMap", "kube-system", "sriovdp-config")]
    renamed, ethernet = copy.deepcopy(config_map), copy.deepcopy(config_map)
    renamed["data"]["config.json"] = renamed["data"]["config.json"].replace('"ib_vf"', '"other"')
    ethernet["data"]["config.json"] = ethernet["data"]["config.json"].replace(
        '"infiniband"', '"ether"'
    )
    others = [o for o in objects if o is not config_map]
    assert _vf_problems(others + [renamed]) == [
        "error: NetworkAttachmentDefinition t/n: metadata.annotations.k8s.v1.cni.cncf.io/resourceName: "
        "the SR-IOV network device plugin advertises nvidia.com/other, not nvidia.com/ib_vf: pods attaching it never schedule"
    ]
    assert _vf_problems(others + [ethernet]) == [
        "error: NetworkAttachmentDefinition t/n: metadata.annotations.k8s.v1.cni.cncf.io/resourceName: "
        "nvidia.com/ib_vf is a pool of ether VFs, and ib-sriov needs infiniband ones"
    ]
    assert len(_vf_problems(others)) == 1  # no plugin config at all


def test_a_new_vf_config_rolls_the_plugin_pods(tmp_path: Path) -> None:
    def template(numvfs: str, where: str) -> dict[str, Any]:
        vfs = {"sriov": {"pfNames": [f"ens{numvfs}f0"], "numVfs": int(numvfs)}}
        found = _emitted(
            tmp_path / where, [net("n", "sriov", vfs, IPAM, resourceName="example.com/vf")]
        )
        text = found["ConfigMap/sriovdp-config"]["data"]["config.json"]
        meta = found["DaemonSet/sriov-device-plugin"]["spec"]["template"]["metadata"]
        assert (
            meta["annotations"]["gpuplan.io/config-sha256"]
            == hashlib.sha256(text.encode()).hexdigest()
        )
        return meta

    assert template("8", "a") != template("9", "b")  # the plugin reads its config only at start


def test_vms_select_their_vfs_by_pci_id(tmp_path: Path) -> None:
    """Azure ND-series VMs see InfiniBand VFs, never their PFs: the plugin selects them by PCI ID."""
    vfs = {"vendor": "15b3", "devices": ["101c"], "drivers": ["mlx5_core"], "rdma": True}
    network = [net("n", "sriov", {"sriov": vfs}, IPAM, resourceName="nvidia.com/vm_vf")]
    files = _files(network, provider="azure", pool=STATIC)
    found = _emitted(tmp_path / "render", network, provider="azure")
    config = json.loads(found["ConfigMap/sriovdp-config"]["data"]["config.json"])
    assert config["resourceList"][0]["selectors"] == [
        {
            "linkTypes": ["ether"],
            "isRdma": True,
            "vendors": ["15b3"],
            "devices": ["101c"],
            "drivers": ["mlx5_core"],
        }
    ]
    root = write_repo(tmp_path / "req", files)
    result = run("requirements", "--root", str(root))
    assert (
        "  VFs of vendor 15b3, device(s) 101c on every node (attached to the VM by the cloud or hypervisor)"
        in result.stdout
    )
    code, err = _check(tmp_path / "check", files)
    assert code == 0 and "sriov-vfs" not in err, err  # the count is the cloud's: no VF warning
