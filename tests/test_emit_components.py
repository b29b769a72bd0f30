"""Volcano Queues, Karpenter NodePools, NFD NodeFeatureRules, Multus NADs: exact objects, strict
validity against the upstream CRDs, the checks that guard them, and the label wiring between
NodePools / NFD rules, ResourceFlavors and the GPU Operator ConfigMaps."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.check.nfd import re2_problem
from gpuplan.emit import emit, multus, nfd, volcano
from gpuplan.inputs.sources import read_inputs
from gpuplan.pipeline import compile_fleet
from gpuplan.plan.resolve import build_fleet
from gpuplan.validate import CrdIndex, Validator
from tests.conftest import PROJECT, run, write_repo

NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
FINAL = {"app.kubernetes.io/managed-by": "gpuplan"}
CR_SYNC = "SkipDryRunOnMissingResource=true"


def cluster(**changes: Any) -> dict[str, Any]:
    """Return a valid cluster (every component) with one pool of each shape; `changes` replace keys."""
    data: dict[str, Any] = {
        "name": "gpu",
        "kubernetesVersion": "1.33",
        "provider": "aws",
        "gitops": {"repoURL": "https://git.example.com/fleet.git"},
        "components": {
            "gpuOperator": {"version": "v26.7.0", "driverVersion": "580.82.07"},
            "kueue": {"version": "v0.19.2"},
            "volcano": {"version": "v1.15.1"},
            "karpenter": {"version": "v1.14.1", "nodeClass": {**NODE_CLASS, "aws": {"role": "GpuNodes"}}},  # gpuplan renders it
        },
        "cohorts": [{"name": "shared"}],
        "nodePools": [
            {
                "name": "train", "gpu": "H100-SXM5-80GB", "gpusPerNode": 8, "cpu": 96, "memory": "800Gi",
                "nodes": {"min": 1, "max": 4},
                "karpenter": {"instanceTypes": ["p5.48xlarge"], "capacityTypes": ["spot", "on-demand"],
                              "zones": ["us-east-1b", "us-east-1a"]},
                "labels": {"example.com/fabric": "rack-1"},
            },
            {
                "name": "dev", "gpu": "L40S", "gpusPerNode": 4, "cpu": 48, "memory": "360Gi",
                "nodes": {"min": 0, "max": 2},
                "karpenter": {"instanceTypes": ["g6e.12xlarge"]},
                "taints": [{"key": "example.com/dedicated", "value": "dev", "effect": "NoSchedule"},
                           {"key": "example.com/preemptible", "effect": "PreferNoSchedule"}],
            },
            {
                "name": "infer", "gpu": "H100-SXM5-80GB", "gpusPerNode": 8, "cpu": 96, "memory": "800Gi",
                "nodes": {"count": 2}, "hostnames": ["infer-[0-9]+", "inf-b-.*"],
                "sharing": {"mig": {"layout": {"1g.10gb": 7}}},
            },
            {
                "name": "shared", "gpu": "L40S", "gpusPerNode": 4, "cpu": 48, "memory": "360Gi",
                "nodes": {"count": 1}, "hostnames": ["l40s-0[0-9]"],
                "sharing": {"timeSlicing": {"replicas": 2}},
            },
            {
                "name": "a100", "gpu": "A100-SXM4-80GB", "gpusPerNode": 8, "cpu": 96, "memory": "1000Gi",
                "nodes": {"count": 1}, "hostnames": ["a100-[0-9]+"],
                "sharing": {"mig": {"devices": [
                    {"gpus": [0, 1, 2, 3], "layout": {"3g.40gb": 2}},
                    {"gpus": [4, 5, 6, 7], "layout": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
                ]}},
            },
        ],
        "networks": [
            {"name": "ib", "type": "sriov", "resourceName": "nvidia.com/sriov_ib",
             "sriov": {"pfNames": ["ens1f0"], "numVfs": 16},
             "ipam": {"type": "whereabouts", "range": "10.10.0.0/24", "gateway": "10.10.0.1",
                      "exclude": ["10.10.0.0/28"]},
             "pools": ["train"]},
            {"name": "ipoib", "type": "ipoib", "master": "ib0", "resourceName": "rdma/hca_shared_devices_a",
             "ipam": {"type": "whereabouts", "range": "10.11.0.0/24"}, "pools": ["infer"]},
            {"name": "mac", "type": "macvlan", "master": "eth1",
             "ipam": {"type": "host-local", "range": "10.12.0.0/24", "gateway": "10.12.0.254"}, "pools": ["a100"]},
            {"name": "hostdev", "type": "host-device", "master": "ens5f0",
             "ipam": {"type": "host-local", "range": "10.13.0.0/26"}, "pools": ["a100"]},
        ],
    }  # fmt: skip
    data.update(copy.deepcopy(changes))
    return data


def tenant(name: str, **allocation: Any) -> dict[str, Any]:
    """Return a tenant with one allocation on cluster gpu."""
    return {"name": name, "allocations": [{"cluster": "gpu", **copy.deepcopy(allocation)}]}


ALPHA = tenant(
    "alpha", cohort="shared", weight=3,
    quotas=[{"pool": "train", "gpus": 4, "borrowingLimit": 4}, {"pool": "infer", "mig": {"1g.10gb": 7}},
            {"pool": "dev", "gpus": 4}],
    networks=["ib", "ipoib"],
)  # fmt: skip
ALPHA["namespaces"] = ["alpha", "alpha-jobs"]
BETA = tenant(
    "beta", cohort="shared",
    quotas=[{"pool": "train", "gpus": 8}, {"pool": "shared", "gpus": 4}, {"pool": "a100", "mig": {"3g.40gb": 2}}],
    networks=["mac", "hostdev"],
)  # fmt: skip


def repo(root: Path, clusters: list[dict[str, Any]], tenants: list[dict[str, Any]]) -> Path:
    """Write a repository from cluster and tenant dicts."""
    files = {f"clusters/{c['name']}.yaml": yaml.safe_dump(c, sort_keys=False) for c in clusters}
    files |= {f"tenants/{t['name']}.yaml": yaml.safe_dump(t, sort_keys=False) for t in tenants}
    return write_repo(root, files)


def compiled(
    root: Path,
    clusters: list[dict[str, Any]] | None = None,
    tenants: list[dict[str, Any]] | None = None,
):
    """Compile a repository in-process (no CRDs) and return the result."""
    repo(root, clusters or [cluster()], [ALPHA, BETA] if tenants is None else tenants)
    return compile_fleet(root)


def objects(root: Path, **kwargs: Any) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    """Return the emitted objects by (kind, namespace, name); fail on any error."""
    result = compiled(root, **kwargs)
    errors = [d.text() for d in result.diagnostics if d.severity.value == "error"]
    assert not errors, errors
    return {
        (m.kind, m.namespace, m.name): m.obj for m in result.manifests if m.kind != "Kustomization"
    }


def texts(root: Path, *args: str) -> list[str]:
    """Return the diagnostics of `gpuplan check` as text lines."""
    result = run("check", "--root", str(root), *args)
    assert "Traceback" not in result.stderr
    return result.stderr.splitlines()


def meta(
    name: str, wave: str, namespace: str | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(FINAL)
    metadata["annotations"] = {
        **(annotations or {}),
        "argocd.argoproj.io/sync-wave": wave,
        "argocd.argoproj.io/sync-options": CR_SYNC,
    }
    return metadata


# --- Volcano -------------------------------------------------------------------------------------


def test_queue_exact(tmp_path: Path) -> None:
    # train: 8 GPUs, 96 cpu, 800Gi per node -> 12 cpu and 100Gi per GPU. alpha has 4 GPUs and may
    # borrow 4, which beta (8 GPUs, nothing held back) can lend: capability = 8 GPUs' worth.
    small = cluster(nodePools=cluster()["nodePools"][:1], networks=[])
    alpha = tenant(
        "alpha",
        cohort="shared",
        weight=3,
        quotas=[{"pool": "train", "gpus": 4, "borrowingLimit": 4}],
    )
    beta = tenant("beta", cohort="shared", quotas=[{"pool": "train", "gpus": 8}])
    found = objects(tmp_path, clusters=[small], tenants=[alpha, beta])
    assert found[("Queue", None, "alpha")] == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": meta("alpha", "-1"),
        "spec": {
            "weight": 3,
            "capability": {"cpu": "96", "memory": "800Gi", "nvidia.com/gpu": "8"},
            "deserved": {"cpu": "48", "memory": "400Gi", "nvidia.com/gpu": "4"},
            "guarantee": {"resource": {"cpu": "48", "memory": "400Gi", "nvidia.com/gpu": "4"}},
            "reclaimable": True,
            "dequeueStrategy": "traverse",
        },
    }
    beta_queue = found[("Queue", None, "beta")]["spec"]
    assert beta_queue["weight"] == volcano.DEFAULT_WEIGHT == 1  # no weight given
    # beta may borrow all of alpha's lendable 4 GPUs (no borrowingLimit): 12 GPUs at most.
    assert beta_queue["capability"] == {"cpu": "144", "memory": "1200Gi", "nvidia.com/gpu": "12"}


def test_queue_capability_equals_resource_quota(tmp_path: Path) -> None:
    found = objects(tmp_path)
    from gpuplan.model.quantity import parse_quantity

    for name in ("alpha", "beta"):
        queue = found[("Queue", None, name)]["spec"]
        quotas = [
            o["spec"]["hard"]
            for (kind, _, n), o in found.items()
            if kind == "ResourceQuota" and n == name
        ]
        assert quotas
        # Volcano admits: each of the tenant's namespaces holds exactly the Queue's capability
        assert all(q == quotas[0] for q in quotas)
        total = {key: parse_quantity(quotas[0][key]) for key in quotas[0]}
        # Network devices of networks the tenant does not attach are pinned to zero (not Volcano's).
        devices = {"requests.nvidia.com/sriov_ib", "requests.rdma/hca_shared_devices_a"}
        pinned = {k: total.pop(k) for k in devices & set(total)}
        assert set(pinned.values()) <= {0}
        assert {f"requests.{k}": parse_quantity(v) for k, v in queue["capability"].items()} == total
        assert queue["deserved"] == queue["guarantee"]["resource"]
        assert set(queue["deserved"]) == set(
            queue["capability"]
        )  # Volcano's webhook wants every name in capability


def test_no_queues_without_volcano(tmp_path: Path) -> None:
    components = dict(cluster()["components"])
    del components["volcano"]
    found = objects(tmp_path, clusters=[cluster(components=components)])
    assert not [k for k in found if k[0] == "Queue"]


# --- Karpenter ----------------------------------------------------------------------------------


def test_node_pool_exact(tmp_path: Path) -> None:
    found = objects(tmp_path)
    assert found[("NodePool", None, "train")] == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": meta("train", "-1"),
        "spec": {
            "template": {
                "metadata": {"labels": {
                    "example.com/fabric": "rack-1",
                    "gpuplan.io/pool": "train",
                    "nvidia.com/mig.config": "all-disabled",
                }},
                "spec": {
                    "nodeClassRef": NODE_CLASS,
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                    "expireAfter": "Never",
                },
            },
            "limits": {"nodes": "4", "nvidia.com/gpu": "32"},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "10m",
                # Drifted nodes drain one at a time inside the default window (Sunday 02:00-06:00 UTC) only.
                "budgets": [
                    {"nodes": "1", "reasons": ["Drifted"]},
                    {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 6 * * 0", "duration": "164h"},
                    {"nodes": "10%", "reasons": ["Empty"]},
                ],
            },
        },
    }  # fmt: skip


def test_node_pool_carries_pool_taints_config_labels_and_no_zone_without_zones(
    tmp_path: Path,
) -> None:
    spec = objects(tmp_path)[("NodePool", None, "dev")]["spec"]
    template = spec["template"]
    assert template["metadata"]["labels"] == {"gpuplan.io/pool": "dev"}  # L40S: no MIG label
    assert template["spec"]["taints"] == [
        {"key": "example.com/dedicated", "value": "dev", "effect": "NoSchedule"},
        {"key": "example.com/preemptible", "effect": "PreferNoSchedule"},
    ]
    keys = [r["key"] for r in template["spec"]["requirements"]]
    assert keys == [
        "node.kubernetes.io/instance-type",
        "karpenter.sh/capacity-type",
        "kubernetes.io/arch",
    ]
    assert template["spec"]["requirements"][1]["values"] == [
        "on-demand"
    ]  # the default capacity type
    assert spec["limits"] == {"nodes": "2", "nvidia.com/gpu": "8"}


def test_node_pool_limits_count_physical_gpus_on_shared_and_mig_pools(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[1]["sharing"] = {"timeSlicing": {"replicas": 4}}  # dev: nvidia.com/gpu.shared x 4
    pools[0]["sharing"] = {"mig": {"layout": {"1g.10gb": 7}}}  # train: nvidia.com/mig-1g.10gb
    alpha = tenant(
        "alpha", quotas=[{"pool": "dev", "gpus": 8}, {"pool": "train", "mig": {"1g.10gb": 7}}]
    )
    found = objects(tmp_path, clusters=[cluster(nodePools=pools)], tenants=[alpha])
    assert found[("NodePool", None, "dev")]["spec"]["limits"] == {
        "nodes": "2",
        "nvidia.com/gpu": "8",
    }
    train = found[("NodePool", None, "train")]["spec"]
    assert train["limits"] == {"nodes": "4", "nvidia.com/gpu": "32"}
    assert train["template"]["metadata"]["labels"]["nvidia.com/mig.config"] == "gpuplan-7x1g.10gb"
    assert (
        found[("NodePool", None, "dev")]["spec"]["template"]["metadata"]["labels"][
            "nvidia.com/device-plugin.config"
        ]
        == "dev"
    )


def test_node_pools_only_for_autoscaled_pools_with_karpenter(tmp_path: Path) -> None:
    found = objects(tmp_path)
    assert sorted(k[2] for k in found if k[0] == "NodePool") == ["dev", "train"]


def test_karpenter_before_v1_is_an_unknown_version(tmp_path: Path) -> None:
    components = cluster()["components"]
    components["karpenter"]["version"] = "v0.37.2"
    repo(tmp_path, [cluster(components=components)], [ALPHA, BETA])
    lines = texts(tmp_path)
    assert any(
        "clusters/gpu.yaml:" in line
        and "error: components.karpenter.version: karpenter (aws) v0.37.2 is not supported" in line
        and "supported versions: v1.0.14, " in line
        for line in lines
    ), lines


def test_autoscaled_pool_without_karpenter_or_on_an_unserved_provider(tmp_path: Path) -> None:
    components = cluster()["components"]
    del components["karpenter"]
    repo(tmp_path / "a", [cluster(components=components)], [ALPHA, BETA])
    lines = texts(tmp_path / "a")
    assert any(
        "error: nodePools[0].nodes: an autoscaled pool (min/max) needs components.karpenter" in x
        for x in lines
    ), lines
    repo(tmp_path / "b", [cluster(provider="gcp")], [ALPHA, BETA])
    lines = texts(tmp_path / "b")
    assert any(
        "error: nodePools[0].nodes: Karpenter does not serve provider gcp" in x for x in lines
    ), lines
    assert any(
        "error: nodePools[1].nodes: Karpenter does not serve provider gcp" in x for x in lines
    ), lines


def test_instance_type_gpu_count_must_match_gpus_per_node(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[0]["karpenter"]["instanceTypes"] = ["p5.48xlarge", "g6e.12xlarge"]
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    lines = texts(tmp_path)
    assert any(
        "error: nodePools[0].karpenter.instanceTypes[1]: g6e.12xlarge has 4 GPUs, but the pool's nodes have 8"
        in x
        for x in lines
    ), lines
    assert not any("instanceTypes[0]" in x for x in lines)


def test_requirement_values_must_be_label_values(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[0]["karpenter"]["zones"] = ["us east 1a"]
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    assert any(
        "error: nodePools[0].karpenter.zones[0]: 'us east 1a' is not a valid Kubernetes label value"
        in x
        for x in texts(tmp_path)
    )


@pytest.mark.parametrize(
    "key", ["karpenter.sh/nodepool", "team.karpenter.sh/x", "kubernetes.io/hostname"]
)
def test_labels_the_node_pool_crd_refuses(tmp_path: Path, key: str) -> None:
    pools = cluster()["nodePools"]
    pools[0]["labels"] = {key: "x"}
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    lines = texts(tmp_path)
    assert any(
        f"error: nodePools[0].labels.{key}: " in x and "the NodePool would be rejected" in x
        for x in lines
    ), lines


def test_capacity_type_label_is_allowed_on_node_pools(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[0]["labels"] = {"karpenter.sh/capacity-type": "spot"}
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    assert not any("nodePools[0].labels" in x for x in texts(tmp_path))


def test_warning_when_karpenter_cannot_see_the_pools_gpu_resource(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[1]["sharing"] = {"timeSlicing": {"replicas": 4}}
    alpha = tenant("alpha", quotas=[{"pool": "dev", "gpus": 8}])
    repo(tmp_path, [cluster(nodePools=pools)], [alpha])
    lines = texts(tmp_path)
    assert any(
        "warning: nodePools[1].sharing: Karpenter predicts nodes of pool dev to offer nvidia.com/gpu only, "
        "so pending pods that ask for nvidia.com/gpu.shared never make it launch a node" in x
        for x in lines
    ), lines
    assert not any("nodePools[0].sharing" in x for x in lines)  # exclusive: nvidia.com/gpu


# --- NFD ----------------------------------------------------------------------------------------


def test_node_feature_rule_exact(tmp_path: Path) -> None:
    found = objects(tmp_path)
    assert found[("NodeFeatureRule", None, "gpuplan-infer")] == {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": meta("gpuplan-infer", "-1"),
        "spec": {"rules": [{
            "name": "gpuplan pool infer",
            "labels": {"gpuplan.io/pool": "infer", "nvidia.com/mig.config": "gpuplan-7x1g.10gb"},
            "matchFeatures": [{
                "feature": "system.name",
                "matchExpressions": {"nodename": {"op": "InRegexp", "value": ["^(?:infer-[0-9]+)$", "^(?:inf-b-.*)$"]}},
            }],
            # The pool's (default) taint, which nfd-master applies with enableTaints.
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        }]},
    }  # fmt: skip


def test_node_feature_rules_for_static_pools_with_hostnames_only(tmp_path: Path) -> None:
    found = objects(tmp_path)
    assert sorted(k[2] for k in found if k[0] == "NodeFeatureRule") == [
        "gpuplan-a100",
        "gpuplan-infer",
        "gpuplan-shared",
    ]
    shared = found[("NodeFeatureRule", None, "gpuplan-shared")]["spec"]["rules"][0]["labels"]
    assert shared == {"gpuplan.io/pool": "shared", "nvidia.com/device-plugin.config": "shared"}


def test_no_node_feature_rules_without_gpu_operator_or_kueue(tmp_path: Path) -> None:
    components = {
        "volcano": {"version": "v1.15.1"},
        "karpenter": cluster()["components"]["karpenter"],
    }
    found = objects(tmp_path, clusters=[cluster(components=components)])
    assert not [k for k in found if k[0] == "NodeFeatureRule"]


def test_anchored_hostnames_match_whole_node_names() -> None:
    import re

    pattern = nfd.anchored("infer-[0-9]+")
    assert re.search(pattern, "infer-12")
    assert not re.search(pattern, "dgx-infer-12") and not re.search(pattern, "infer-12-old")
    assert re.search(nfd.anchored("a|b"), "b") and not re.search(nfd.anchored("a|b"), "ab")


def test_static_pool_selected_by_labels_only_gets_no_rule_and_a_warning(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    del pools[3]["hostnames"]
    pools[3]["labels"] = {"example.com/rack": "r7"}
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    lines = texts(tmp_path)
    assert any(
        "warning: nodePools[3].labels: pool shared selects its nodes by labels only, so gpuplan labels none of them: "
        "they must already carry nvidia.com/device-plugin.config=shared" in x
        for x in lines
    ), lines
    assert not (tmp_path / "output").exists()
    found = objects(tmp_path / "again", clusters=[cluster(nodePools=pools)])
    assert ("NodeFeatureRule", None, "gpuplan-shared") not in found
    # Declaring the labels (and the taints) the nodes carry silences it.
    pools[3]["labels"] |= {"nvidia.com/device-plugin.config": "shared"}
    pools[3]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    repo(tmp_path / "declared", [cluster(nodePools=pools)], [ALPHA, BETA])
    declared = texts(tmp_path / "declared")
    # What stays: nothing sets example.com/rack (no node group label among them), which its flavor selects.
    assert [x for x in declared if "nodePools[3]" in x and "[flavor-labels-unset]" not in x] == []
    assert any(
        "nodePools[3].labels: pool shared: its ResourceFlavor selects" in x for x in declared
    )


def test_nfd_label_keys(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[2]["labels"] = {
        "node-role.kubernetes.io/gpu": "",
        "fabric": "ib",
        "feature.node.kubernetes.io/x": "1",
    }
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    lines = texts(tmp_path)
    assert any(
        "error: nodePools[2].labels.node-role.kubernetes.io/gpu: nfd-master never sets labels in the kubernetes.io domain"
        in x
        for x in lines
    ), lines
    assert any(
        "warning: nodePools[2].labels.fabric: NFD puts unprefixed labels under feature.node.kubernetes.io/"
        in x
        for x in lines
    ), lines
    assert not any("feature.node.kubernetes.io/x:" in x for x in lines)


@pytest.mark.parametrize(
    ("regex", "problem"),
    [
        ("infer-[0-9]+", None), (r"dgx-\d{2}", None), ("(?P<rack>r[0-9])-n[0-9]", None), (r"a\+\+b", None),
        ("[*+]+x", None), ("(?!old)node-.*", "lookahead"), ("(?<=x)y", "lookbehind"), (r"(a)-\1", "backreferences"),
        ("a++", "possessive quantifiers"), ("(?>ab)", "atomic groups"), (r"node\Z", r"\Z (write \z or $)"),
    ],
)  # fmt: skip
def test_re2_problems(regex: str, problem: str | None) -> None:
    assert re2_problem(regex) == problem


def test_hostnames_go_cannot_compile_are_errors(tmp_path: Path) -> None:
    pools = cluster()["nodePools"]
    pools[2]["hostnames"] = ["infer-[0-9]+", "(?!old-)inf-.*"]
    repo(tmp_path, [cluster(nodePools=pools)], [ALPHA, BETA])
    assert any(
        "error: nodePools[2].hostnames[1]: NFD matches node names with Go's regexp (RE2), which has no lookahead"
        in x
        for x in texts(tmp_path)
    )


# --- Multus -------------------------------------------------------------------------------------


def nad(name: str, namespace: str, config: str, resource: str | None = None) -> dict[str, Any]:
    annotations = {"k8s.v1.cni.cncf.io/resourceName": resource} if resource else None
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": meta(name, "-2", namespace, annotations),
        "spec": {"config": config},
    }


def test_network_attachment_sriov_exact(tmp_path: Path) -> None:
    found = objects(tmp_path)
    config = (
        '{\n  "cniVersion": "0.3.1",\n  "ipam": {\n    "exclude": [\n      "10.10.0.0/28"\n    ],\n'
        '    "gateway": "10.10.0.1",\n    "range": "10.10.0.0/24",\n    "type": "whereabouts"\n  },\n'
        '  "name": "ib",\n  "type": "sriov"\n}'
    )
    assert found[("NetworkAttachmentDefinition", "alpha", "ib")] == nad(
        "ib", "alpha", config, "nvidia.com/sriov_ib"
    )


@pytest.mark.parametrize(
    ("key", "cni", "resource"),
    [
        (("alpha-jobs", "ipoib"), {
            "cniVersion": "0.3.1", "name": "ipoib", "type": "ipoib", "master": "ib0",
            "ipam": {"type": "whereabouts", "range": "10.11.0.0/24"},
        }, "rdma/hca_shared_devices_a"),
        (("beta", "mac"), {
            "cniVersion": "0.3.1", "name": "mac", "type": "macvlan", "master": "eth1", "mode": "bridge",
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.12.0.0/24", "gateway": "10.12.0.254"}]]},
        }, None),
        (("beta", "hostdev"), {
            "cniVersion": "0.3.1", "name": "hostdev", "type": "host-device", "device": "ens5f0",
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.13.0.0/26"}]]},
        }, None),
    ],
)  # fmt: skip
def test_network_attachment_of_each_type_exact(
    tmp_path: Path, key: tuple[str, str], cni: dict, resource: str | None
) -> None:
    namespace, name = key
    obj = objects(tmp_path)[("NetworkAttachmentDefinition", namespace, name)]
    assert obj == nad(name, namespace, json.dumps(cni, sort_keys=True, indent=2), resource)
    assert json.loads(obj["spec"]["config"]) == cni


def test_host_device_from_a_device_plugin_has_no_device_but_the_annotation(tmp_path: Path) -> None:
    networks = cluster()["networks"]
    networks[3] = {"name": "hostdev", "type": "host-device", "resourceName": "example.com/nic",
                   "ipam": {"type": "whereabouts", "range": "10.13.0.0/26"}, "pools": ["a100"]}  # fmt: skip
    obj = objects(tmp_path, clusters=[cluster(networks=networks)])[
        ("NetworkAttachmentDefinition", "beta", "hostdev")
    ]
    assert json.loads(obj["spec"]["config"]) == {
        "cniVersion": "0.3.1", "name": "hostdev", "type": "host-device",
        "ipam": {"type": "whereabouts", "range": "10.13.0.0/26"},
    }  # fmt: skip
    assert obj["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "example.com/nic"


def test_network_attachments_only_where_a_tenant_attaches_them(tmp_path: Path) -> None:
    found = objects(tmp_path)
    nads = sorted((k[1], k[2]) for k in found if k[0] == "NetworkAttachmentDefinition")
    assert nads == [
        ("alpha", "ib"), ("alpha", "ipoib"), ("alpha-jobs", "ib"), ("alpha-jobs", "ipoib"),
        ("beta", "hostdev"), ("beta", "mac"),
    ]  # fmt: skip


def test_config_is_built_from_a_dict_not_a_template() -> None:
    from gpuplan.model.cluster import Network

    network = Network.model_validate(
        {
            "name": "n",
            "type": "macvlan",
            "master": 'eth"1',
            "ipam": {"type": "whereabouts", "range": "10.0.0.0/24"},
            "pools": ["p"],
        },
        by_alias=True,
    )
    from gpuplan.components import REGISTRY

    text = multus.config_text(REGISTRY["multus"].newest(), network)  # type: ignore[arg-type]
    assert json.loads(text)["master"] == 'eth"1'  # quoting survives: json.dumps, not a template
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2)


# --- strict validity ------------------------------------------------------------------------------


def test_every_emitted_object_validates_strictly(tmp_path: Path, crds_dir: Path) -> None:
    repo(tmp_path, [cluster()], [ALPHA, BETA])
    result = compile_fleet(tmp_path, crds=crds_dir)
    assert not [d.text() for d in result.diagnostics if d.severity.value == "error"]
    validator = Validator(CrdIndex.load(crds_dir), "1.33")
    kinds = {"Queue", "NodePool", "NodeFeatureRule", "NetworkAttachmentDefinition"}
    mine = [m for m in result.manifests if m.kind in kinds]
    assert {m.kind for m in mine} == kinds
    for item in mine:
        assert validator.validate(item.obj) == [], item.path


def test_an_undeclared_field_would_be_caught(crds_dir: Path, tmp_path: Path) -> None:
    """The validator is strict for these kinds: a field the CRD lacks (Queue spec.state) fails."""
    found = objects(tmp_path)
    validator = Validator(CrdIndex.load(crds_dir), "1.33")
    queue = copy.deepcopy(found[("Queue", None, "alpha")])
    queue["spec"]["state"] = "Open"
    assert validator.validate(queue)
    pool = copy.deepcopy(found[("NodePool", None, "train")])
    pool["spec"]["template"]["spec"]["kubelet"] = {"maxPods": 110}  # v1beta1 field, gone in v1
    assert validator.validate(pool)


# --- wiring: NodePools / NFD rules <-> ResourceFlavors <-> GPU Operator ConfigMaps ---------------


def _rendered(root: Path, name: str) -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text())
        for p in sorted((root / "output" / name).rglob("*.yaml"))
        if p.name != "kustomization.yaml"
    ]


def _tolerated(taint: dict[str, str], tolerations: list[dict[str, str]]) -> bool:
    for toleration in tolerations:
        if toleration["key"] != taint["key"] or toleration.get("effect") != taint["effect"]:
            continue
        if toleration["operator"] == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def test_labels_flavors_and_configs_fit_together(tmp_path: Path) -> None:
    mps = cluster(
        name="mps", provider="azure",
        components={
            "gpuOperator": {"version": "v26.7.0", "driverVersion": "580.82.07", "migStrategy": "single"},
            "kueue": {"version": "v0.19.2"},
            "karpenter": {"version": "v1.6.2", "nodeClass": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "gpu", "azure": {}}},
        },
        nodePools=[
            {"name": "l4", "gpu": "L4", "gpusPerNode": 4, "cpu": 48, "memory": "180Gi", "nodes": {"count": 3},
             "hostnames": ["l4-[0-9]+"], "sharing": {"mps": {"replicas": 4}}},
            {"name": "nvl", "gpu": "H100-NVL-94GB", "gpusPerNode": 2, "cpu": 80, "memory": "600Gi", "nodes": {"count": 2},
             "hostnames": ["nvl-[0-9]+"], "sharing": {"mig": {"layout": {"1g.12gb": 7}}, "timeSlicing": {"replicas": 2}}},
            {"name": "t4", "gpu": "T4", "gpusPerNode": 1, "cpu": 4, "memory": "26Gi", "nodes": {"min": 0, "max": 5},
             "karpenter": {"instanceTypes": ["Standard_NC4as_T4_v3"], "capacityTypes": ["spot", "on-demand"]},
             "taints": [{"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}]},
        ],
        networks=[],
    )  # fmt: skip
    gamma = {"name": "gamma", "allocations": [{"cluster": "mps", "quotas": [
        {"pool": "l4", "gpus": 8}, {"pool": "nvl", "mig": {"1g.12gb": 8}}, {"pool": "t4", "gpus": 2}]}]}  # fmt: skip
    repo(tmp_path, [cluster(), mps], [ALPHA, BETA, gamma])
    result = run("render", "--root", str(tmp_path))
    assert result.code == 0, result.stderr
    inputs = {c["name"]: c for c in (cluster(), mps)}
    checked = 0
    for name, spec in inputs.items():
        objs = _rendered(tmp_path, name)
        flavors = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "ResourceFlavor"}
        node_pools = {
            o["metadata"]["name"]: o["spec"]["template"] for o in objs if o["kind"] == "NodePool"
        }
        rules = {}
        for o in objs:
            if o["kind"] == "NodeFeatureRule":
                (rule,) = o["spec"]["rules"]
                rules[rule["labels"]["gpuplan.io/pool"]] = rule["labels"]
        maps = {o["metadata"]["name"]: o["data"] for o in objs if o["kind"] == "ConfigMap"}
        mig_configs = set()
        if "gpuplan-mig-parted-config" in maps:
            mig_configs = set(
                yaml.safe_load(maps["gpuplan-mig-parted-config"]["config.yaml"])["mig-configs"]
            )
        plugin_configs = set(maps.get("gpuplan-device-plugin-config", {}))
        assert set(flavors) == {p["name"] for p in spec["nodePools"]}
        for pool in spec["nodePools"]:
            flavor = flavors[pool["name"]]
            autoscaled = "min" in pool["nodes"]
            assert (pool["name"] in node_pools) == autoscaled and (
                pool["name"] in rules
            ) != autoscaled
            labels = (
                node_pools[pool["name"]]["metadata"]["labels"]
                if autoscaled
                else rules[pool["name"]]
            )
            # The flavor selects only labels its labeller sets, with the same values.
            assert flavor["nodeLabels"].items() <= labels.items(), pool["name"]
            # The flavor tolerates exactly the taints the nodes get (the NodePool's, or the pool's).
            taints = (
                node_pools[pool["name"]]["spec"]["taints"]
                if autoscaled
                else pool.get(
                    "taints",
                    [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                )
            )
            assert all(_tolerated(t, flavor["tolerations"]) for t in taints), pool["name"]
            assert len(flavor["tolerations"]) == len(taints)
            # Config labels name configs that exist.
            if "nvidia.com/mig.config" in labels:
                assert labels["nvidia.com/mig.config"] in mig_configs, (pool["name"], mig_configs)
            if "nvidia.com/device-plugin.config" in labels:
                assert labels["nvidia.com/device-plugin.config"] in plugin_configs, (
                    pool["name"],
                    plugin_configs,
                )
            sharing = pool.get("sharing", {})
            assert ("nvidia.com/device-plugin.config" in labels) == bool(
                {"timeSlicing", "mps"} & set(sharing)
            )
            assert ("nvidia.com/mig.config" in labels) == (pool["gpu"] not in ("L40S", "L4", "T4"))
            checked += 1
    assert checked == 8


def _example_queues() -> list[dict[str, Any]]:
    """Return the resource entries of every ClusterQueue the example fleet emits."""
    inputs, _ = read_inputs(PROJECT)
    fleet, _ = build_fleet(inputs)
    queues = [m.obj for m in emit(fleet) if m.kind == "ClusterQueue"]
    return [
        e
        for q in queues
        for g in q["spec"]["resourceGroups"]
        for f in g["flavors"]
        for e in f["resources"]
    ]


def test_cluster_queue_entries_are_copies_of_what_emit_keeps() -> None:
    """Entries are kept per (resource, amount) and copied out: changing one changes no other, nor the next emit."""
    entries = _example_queues()
    assert len({id(e) for e in entries}) == len(entries) > 1
    for entry in entries:
        entry["nominalQuota"] = "changed"
    assert not [e for e in _example_queues() if e["nominalQuota"] == "changed"]


@pytest.mark.parametrize(("cloud_name", "tag"), [(None, "gpu"), ("prod-eks-1", "prod-eks-1")])
def test_the_node_class_discovers_subnets_by_karpenters_cluster_name(
    tmp_path: Path, cloud_name: str | None, tag: str
) -> None:
    data = cluster()
    if cloud_name:
        data["components"]["karpenter"]["clusterName"] = cloud_name
    root = repo(tmp_path / "repo", [data], [ALPHA, BETA])
    assert run("render", "--root", str(root)).code == 0
    [node_class] = [o for o in _rendered(root, "gpu") if o["kind"] == "EC2NodeClass"]
    spec = node_class["spec"]
    wanted = [{"tags": {"karpenter.sh/discovery": tag}}]
    assert spec["subnetSelectorTerms"] == spec["securityGroupSelectorTerms"] == wanted
