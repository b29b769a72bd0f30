"""Network checks: overlapping ranges, ranges too small for the pods that can attach, gateways,
excludes, host-local across nodes, and tenants attaching only networks of their clusters."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.check.networks import usable_addresses
from gpuplan.model.cluster import Ipam
from tests.conftest import run, write_repo

CLUSTER_FILE = "clusters/gpu.yaml"
TENANT_FILE = "tenants/alpha.yaml"


def cluster(networks: list[dict[str, Any]], name: str = "gpu") -> dict[str, Any]:
    """Return a cluster with two static pools, 2 x 7 and 1 x 8 GPUs, and the given networks."""
    return {
        "name": name,
        "kubernetesVersion": "1.33",
        "provider": "onprem",
        "gitops": {"repoURL": "https://git.example.com/fleet.git"},
        "components": {"kueue": {"version": "v0.19.2"}},
        "nodePools": [
            {"name": "seven", "gpu": "L40S", "gpusPerNode": 7, "cpu": 56, "memory": "448Gi",
             "nodes": {"count": 2}, "hostnames": ["seven-[0-9]+"]},
            {"name": "eight", "gpu": "L40S", "gpusPerNode": 8, "cpu": 64, "memory": "512Gi",
             "nodes": {"count": 1}, "hostnames": ["eight-[0-9]+"]},
        ],
        "networks": copy.deepcopy(networks),
    }  # fmt: skip


def net(name: str, cidr: str, pools: list[str], **extra: Any) -> dict[str, Any]:
    """Return a sriov network on whereabouts (ipam keys in `extra` go into ipam)."""
    ipam = {"type": extra.pop("ipam_type", "whereabouts"), "range": cidr}
    ipam |= {k: extra.pop(k) for k in ("gateway", "exclude") if k in extra}
    return {
        "name": name,
        "type": "sriov",
        "resourceName": "nvidia.com/sriov",
        "sriov": {"pfNames": ["ens1f0"], "numVfs": 8},
        "ipam": ipam,
        "pools": pools,
        **extra,
    }


def alpha(
    networks: list[str], cluster_name: str = "gpu", pools: tuple[str, ...] = ("seven", "eight")
) -> dict[str, Any]:
    quotas = [{"pool": p, "gpus": 1} for p in pools]
    return {
        "name": "alpha",
        "allocations": [{"cluster": cluster_name, "quotas": quotas, "networks": networks}],
    }


def check(
    root: Path, clusters: list[dict[str, Any]], tenants: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Write the repository, run `gpuplan check --format json`, return the diagnostics."""
    files = {f"clusters/{c['name']}.yaml": yaml.safe_dump(c, sort_keys=False) for c in clusters}
    files |= {f"tenants/{t['name']}.yaml": yaml.safe_dump(t, sort_keys=False) for t in tenants}
    write_repo(root, files)
    result = run("check", "--root", str(root), "--format", "json")
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def where(root: Path, file: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """Return the 1-based line and column of the n-th occurrence of `needle` in a file."""
    text = (root / file).read_text()
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def about(found: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [d for d in found if d["path"] == path]


# --- overlap ------------------------------------------------------------------------------------


def test_overlapping_ranges_are_an_error_at_the_second_range(tmp_path: Path) -> None:
    networks = [
        net("a", "10.0.0.0/16", ["seven"]),
        net("b", "10.1.0.0/24", ["seven"]),
        net("c", "10.0.128.0/24", ["eight"]),
    ]
    found = check(tmp_path, [cluster(networks)], [alpha(["a"])])
    (diag,) = about(found, "networks[2].ipam.range")
    assert diag["severity"] == "error"
    assert diag["message"] == (
        "range 10.0.128.0/24 of network c overlaps range 10.0.0.0/16 of network a: pods of both would get the same addresses"
    )
    assert (diag["line"], diag["col"]) == where(tmp_path, CLUSTER_FILE, "10.0.128.0/24")
    assert diag["file"] == CLUSTER_FILE
    assert not about(found, "networks[1].ipam.range") and not about(found, "networks[0].ipam.range")


def test_adjacent_and_other_family_ranges_do_not_overlap(tmp_path: Path) -> None:
    networks = [
        net("a", "10.0.0.0/25", ["seven"]), net("b", "10.0.0.128/25", ["seven"]), net("c", "fd00::/120", ["seven"]),
    ]  # fmt: skip
    found = check(tmp_path, [cluster(networks)], [alpha(["a"])])
    assert not [d for d in found if d["path"].endswith("ipam.range") and "overlaps" in d["message"]]


def test_the_same_range_in_two_clusters_is_fine(tmp_path: Path) -> None:
    clusters = [
        cluster([net("a", "10.0.0.0/24", ["seven"])]),
        cluster([net("a", "10.0.0.0/24", ["seven"])], name="other"),
    ]
    found = check(tmp_path, clusters, [alpha(["a"])])
    assert not [d for d in found if "overlaps" in d["message"]]


# --- size -----------------------------------------------------------------------------------------


def test_exactly_enough_addresses_pass(tmp_path: Path) -> None:
    # seven: 2 nodes x 7 GPUs = 14 pods; a /28 has 16 addresses, 14 without network and broadcast.
    found = check(tmp_path, [cluster([net("a", "10.0.0.0/28", ["seven"])])], [alpha(["a"])])
    assert not about(found, "networks[0].ipam.range"), found


def test_one_address_short_warns(tmp_path: Path) -> None:
    # The gateway takes one of the 14.
    networks = [net("a", "10.0.0.0/28", ["seven"], gateway="10.0.0.1")]
    found = check(tmp_path, [cluster(networks)], [alpha(["a"])])
    (diag,) = about(found, "networks[0].ipam.range")
    assert diag["severity"] == "warning"
    assert diag["message"] == (
        "range 10.0.0.0/28 of network a has 13 usable addresses for up to 14 pods (seven 2 x 7); pods beyond that cannot attach"
    )


def test_pods_are_summed_over_the_networks_pools(tmp_path: Path) -> None:
    # 14 + 8 = 22 pods; a /27 gives 30 (passes), a /28 14 (warns).
    found = check(
        tmp_path, [cluster([net("a", "10.0.0.0/27", ["seven", "eight"])])], [alpha(["a"])]
    )
    assert not about(found, "networks[0].ipam.range")
    found = check(
        tmp_path / "small", [cluster([net("a", "10.0.0.0/28", ["seven", "eight"])])], [alpha(["a"])]
    )
    (diag,) = about(found, "networks[0].ipam.range")
    assert "14 usable addresses for up to 22 pods (seven 2 x 7, eight 1 x 8)" in diag["message"]


def test_autoscaled_pools_count_at_nodes_max(tmp_path: Path) -> None:
    data = cluster([net("a", "10.0.0.0/27", ["auto"])])
    data["provider"] = "aws"
    data["components"]["karpenter"] = {
        "version": "v1.14.1",
        "nodeClass": {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": "gpu",
            "aws": {"role": "GpuNodes"},
        },
    }
    data["nodePools"].append({
        "name": "auto", "gpu": "L40S", "gpusPerNode": 4, "cpu": 48, "memory": "360Gi",
        "nodes": {"min": 0, "max": 8}, "karpenter": {"instanceTypes": ["g6e.12xlarge"]},
    })  # fmt: skip
    found = check(tmp_path, [data], [alpha(["a"], pools=("auto",))])
    (diag,) = about(found, "networks[0].ipam.range")
    assert "30 usable addresses for up to 32 pods (auto 8 x 4)" in diag["message"]


@pytest.mark.parametrize(
    ("ipam", "usable"),
    [
        ({"type": "whereabouts", "range": "10.0.0.0/24"}, 254),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "gateway": "10.0.0.1"}, 253),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "exclude": ["10.0.0.0/28"]}, 239),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "exclude": ["10.0.0.0/28", "10.0.0.8/29"]}, 239),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "exclude": ["10.0.0.0/28"], "gateway": "10.0.0.1"}, 239),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "exclude": ["10.0.0.0/16"]}, 0),
        ({"type": "whereabouts", "range": "10.0.0.0/24", "exclude": ["10.9.0.0/28"]}, 254),
        ({"type": "host-local", "range": "10.0.0.0/24"}, 253),  # host-local claims .1 as the gateway
        ({"type": "host-local", "range": "10.0.0.0/24", "gateway": "10.0.0.254"}, 253),
        ({"type": "whereabouts", "range": "10.0.0.0/31"}, 2),
        ({"type": "whereabouts", "range": "10.0.0.7/32"}, 1),
        ({"type": "whereabouts", "range": "fd00::/120"}, 255),
    ],
)  # fmt: skip
def test_usable_addresses(ipam: dict[str, Any], usable: int) -> None:
    assert usable_addresses(Ipam.model_validate(ipam, by_alias=True)) == usable


# --- gateway, exclude, host-local, host-device ------------------------------------------------------


@pytest.mark.parametrize(
    ("gateway", "message"),
    [
        ("10.0.1.1", "gateway 10.0.1.1 is not a host address of range 10.0.0.0/24"),
        ("10.0.0.255", "gateway 10.0.0.255 is not a host address of range 10.0.0.0/24"),
        ("router", "'router' is not an IP address"),
    ],
)
def test_gateway_outside_its_range_is_an_error(tmp_path: Path, gateway: str, message: str) -> None:
    found = check(
        tmp_path, [cluster([net("a", "10.0.0.0/24", ["seven"], gateway=gateway)])], [alpha(["a"])]
    )
    (diag,) = about(found, "networks[0].ipam.gateway")
    assert (diag["severity"], diag["message"]) == ("error", message)
    assert (diag["line"], diag["col"]) == where(tmp_path, CLUSTER_FILE, gateway)


def test_exclude_needs_whereabouts_and_should_be_inside_the_range(tmp_path: Path) -> None:
    networks = [
        net("a", "10.0.0.0/24", ["seven"], ipam_type="host-local", exclude=["10.0.0.0/28"]),
        net("b", "10.1.0.0/24", ["seven"], exclude=["10.1.0.0/28", "10.9.0.0/28"]),
    ]
    found = check(tmp_path, [cluster(networks)], [alpha(["a", "b"])])
    (host_local,) = about(found, "networks[0].ipam.exclude")
    assert host_local["severity"] == "error" and host_local["message"].startswith(
        "exclude is a whereabouts setting"
    )
    (outside,) = about(found, "networks[1].ipam.exclude[1]")
    assert (outside["severity"], outside["message"]) == (
        "warning",
        "10.9.0.0/28 is outside range 10.1.0.0/24: it excludes nothing",
    )
    assert not about(found, "networks[1].ipam.exclude[0]")


def test_host_local_across_nodes_warns_and_on_one_node_passes(tmp_path: Path) -> None:
    networks = [
        net("a", "10.0.0.0/24", ["seven"], ipam_type="host-local"),  # 2 nodes
        net("b", "10.1.0.0/24", ["eight"], ipam_type="host-local"),  # 1 node
    ]
    found = check(tmp_path, [cluster(networks)], [alpha(["a", "b"])])
    (diag,) = about(found, "networks[0].ipam.type")
    assert (
        diag["severity"] == "warning"
        and "pods on the 2 nodes of network a get the same addresses" in diag["message"]
    )
    assert not about(found, "networks[1].ipam.type")


def test_host_local_range_too_small_is_an_error(tmp_path: Path) -> None:
    found = check(
        tmp_path,
        [cluster([net("a", "10.0.0.0/31", ["eight"], ipam_type="host-local")])],
        [alpha(["a"])],
    )
    errors = [d for d in about(found, "networks[0].ipam.range") if d["severity"] == "error"]
    assert (
        errors
        and errors[0]["message"]
        == "host-local refuses range 10.0.0.0/31: it is too small to allocate from (at most /30)"
    )


def test_host_device_needs_a_device_or_a_resource(tmp_path: Path) -> None:
    bare = {
        "name": "hd",
        "type": "host-device",
        "ipam": {"type": "whereabouts", "range": "10.0.0.0/24"},
        "pools": ["seven"],
    }
    found = check(tmp_path, [cluster([bare])], [alpha(["hd"])])
    (diag,) = about(found, "networks[0].type")
    assert diag["severity"] == "error" and diag["message"].startswith(
        "a host-device network needs master"
    )
    for fix in ({"master": "ens5f0"}, {"resourceName": "example.com/nic"}):
        found = check(tmp_path / next(iter(fix)), [cluster([bare | fix])], [alpha(["hd"])])
        assert not about(found, "networks[0].type")


# --- input rules the model enforces -----------------------------------------------------------------


def test_invalid_cidr_and_missing_resource_name_are_input_errors(tmp_path: Path) -> None:
    networks = [net("a", "10.0.0.1/24", ["seven"])]
    found = check(tmp_path, [cluster(networks)], [alpha([])])
    assert any(
        d["path"] == "networks[0].ipam.range" and "not a valid CIDR" in d["message"] for d in found
    ), found
    bare = {
        "name": "ib",
        "type": "ipoib",
        "master": "ib0",
        "ipam": {"type": "whereabouts", "range": "10.0.0.0/24"},
        "pools": ["seven"],
    }
    found = check(tmp_path / "ipoib", [cluster([bare])], [alpha([])])
    assert any(d["severity"] == "error" and "needs resourceName" in d["message"] for d in found), (
        found
    )


# --- tenants and the networks they attach -----------------------------------------------------------


def test_a_tenant_attaches_only_networks_of_its_cluster(tmp_path: Path) -> None:
    clusters = [
        cluster([net("a", "10.0.0.0/24", ["seven"])]),
        cluster([net("b", "10.1.0.0/24", ["seven"])], name="other"),
    ]
    found = check(tmp_path, clusters, [alpha(["a", "b"])])
    (diag,) = about(found, "allocations[0].networks[1]")
    assert diag["file"] == TENANT_FILE and diag["severity"] == "error"
    assert diag["message"] == "cluster gpu has no network 'b'; known: a"
    line, col = where(tmp_path, TENANT_FILE, "- b")
    assert (diag["line"], diag["col"]) == (line, col + 2)
    assert not about(found, "allocations[0].networks[0]")


def test_network_attachments_go_to_the_tenants_cluster_only(tmp_path: Path) -> None:
    clusters = [
        cluster([net("a", "10.0.0.0/24", ["seven"])]),
        cluster([net("a", "10.0.0.0/24", ["seven"])], name="other"),
    ]
    files = {f"clusters/{c['name']}.yaml": yaml.safe_dump(c, sort_keys=False) for c in clusters}
    files[TENANT_FILE] = yaml.safe_dump(alpha(["a"]), sort_keys=False)
    write_repo(tmp_path, files)
    result = run("render", "--root", str(tmp_path))
    assert result.code == 0, result.stderr
    assert (tmp_path / "output/gpu/namespaces/alpha/networkattachmentdefinition-a.yaml").is_file()
    assert not list((tmp_path / "output/other").rglob("networkattachmentdefinition-*.yaml"))


def test_a_network_listed_twice_is_an_error(tmp_path: Path) -> None:
    found = check(tmp_path, [cluster([net("a", "10.0.0.0/24", ["seven"])])], [alpha(["a", "a"])])
    (diag,) = about(found, "allocations[0].networks[1]")
    assert (diag["severity"], diag["message"]) == ("error", "network a is listed already")


def test_a_network_on_pools_without_the_tenants_quota_warns(tmp_path: Path) -> None:
    networks = [net("a", "10.0.0.0/24", ["eight"]), net("b", "10.1.0.0/24", ["seven", "eight"])]
    found = check(tmp_path, [cluster(networks)], [alpha(["a", "b"], pools=("seven",))])
    (diag,) = about(found, "allocations[0].networks[0]")
    assert diag["severity"] == "warning"
    assert (
        diag["message"]
        == "network a reaches only pool(s) eight, where tenant alpha has no quota: its pods can never use it"
    )
    assert not about(found, "allocations[0].networks[1]")
