"""Each disruption and risk code of `gpuplan diff`: found from the objects, with its blast radius."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.components.upgrades import RequiredStop
from gpuplan.diff.analyse import analyse
from gpuplan.diff.blast import Facts, PoolFacts
from gpuplan.diff.kinds import CODES, Disruption
from gpuplan.diff.objects import Entry, Side, key_of
from gpuplan.diff.upgrade import Bumped, Upstream
from tests.conftest import run


def side(*objects: dict[str, Any], scope: str = "c1") -> Side:
    return {
        key_of(o, scope, "f.yaml"): Entry(key_of(o, scope, "f.yaml"), o, "f.yaml") for o in objects
    }


FACTS = Facts({
    ("c1", "p1"): PoolFacts(4, 4, 32, "H100-SXM5-80GB", ("team-a",)),
    ("c1", "p2"): PoolFacts(16, 2, 128, "H100-SXM5-80GB", ("team-a", "team-b")),
})  # fmt: skip


def found(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Disruption]:
    return analyse("old", "new", side(*old), side(*new), [], FACTS).disruptions


def codes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    return [d.code for d in found(old, new)]


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a copy of obj with the dotted path set (None deletes it)."""
    out = copy.deepcopy(obj)
    *head, last = path.split(".")
    node = out
    for part in head:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return out


def k(api: str, kind: str, name: str, namespace: str | None = None, **body: Any) -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **body}


# nodes


def node_pool(pool: str, mig: str | None = None, **spec: Any) -> dict[str, Any]:
    labels = {"gpuplan.io/pool": pool} | ({"nvidia.com/mig.config": mig} if mig else {})
    template = {
        "metadata": {"labels": labels},
        "spec": {
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["p5.48xlarge"],
                }
            ],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
        },
    }
    return k(
        "karpenter.sh/v1",
        "NodePool",
        pool,
        spec={"template": template, "limits": {"nodes": "16", "nvidia.com/gpu": "128"}} | spec,
    )


def nfd_rule(pool: str, mig: str) -> dict[str, Any]:
    rule = {
        "name": f"gpuplan pool {pool}",
        "labels": {"gpuplan.io/pool": pool, "nvidia.com/mig.config": mig},
    }
    return k(
        "nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule", f"gpuplan-{pool}", spec={"rules": [rule]}
    )


def mig_parted(configs: dict[str, Any]) -> dict[str, Any]:
    return k(
        "v1",
        "ConfigMap",
        "gpuplan-mig-parted-config",
        "gpu-operator",
        data={"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": configs})},
    )


PER_GPU_OLD = [
    {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
    {
        "devices": [4, 5, 6, 7],
        "mig-enabled": True,
        "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    },
]
PER_GPU_NEW = [
    {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
    {"devices": [2, 3, 4, 5, 6, 7], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
]


def test_mig_relayout_shows_profile_counts_per_gpu_and_the_pools_nodes() -> None:
    old = [
        nfd_rule("p1", "gpuplan-per-gpu-aaaa"),
        mig_parted({"gpuplan-per-gpu-aaaa": PER_GPU_OLD}),
    ]
    new = [
        nfd_rule("p1", "gpuplan-per-gpu-bbbb"),
        mig_parted({"gpuplan-per-gpu-bbbb": PER_GPU_NEW}),
    ]
    [relayout] = found(old, new)
    assert relayout.code == "mig-relayout" and relayout.severity == "disruptive"
    assert (
        "GPUs 0–3: 2x3g.40gb; GPUs 4–7: 2x1g.10gb + 1x2g.20gb + 1x3g.40gb -> GPUs 0–1: 2x3g.40gb; GPUs 2–7: 1x7g.80gb"
        in relayout.message
    )
    assert "gpuplan-per-gpu" not in relayout.message  # layouts, not config-name hashes
    assert (relayout.blast.nodes, relayout.blast.gpus, relayout.blast.tenants) == (
        4,
        32,
        ("team-a",),
    )
    assert relayout.blast.describe() == "4 nodes, 32 GPUs; tenant team-a"


def test_a_renamed_mig_config_with_the_same_layout_is_no_relayout() -> None:
    old = [nfd_rule("p1", "a"), mig_parted({"a": PER_GPU_OLD})]
    new = [nfd_rule("p1", "b"), mig_parted({"b": PER_GPU_OLD})]
    assert "mig-relayout" not in codes(old, new)


def cluster_policy(
    driver: str = "580.82.07", auto: bool = True, toolkit: str = "v1.17.8"
) -> dict[str, Any]:
    upgrade = {"autoUpgrade": auto, "maxParallelUpgrades": 1, "maxUnavailable": "25%"}
    spec = {
        "driver": {
            "enabled": True,
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": driver,
            "upgradePolicy": upgrade,
        },
        "toolkit": {
            "enabled": True,
            "repository": "nvcr.io/nvidia/k8s",
            "image": "container-toolkit",
            "version": toolkit,
        },
    }
    return k("nvidia.com/v1", "ClusterPolicy", "cluster-policy", spec=spec)


def test_a_driver_bump_rolls_every_gpu_node_of_the_cluster() -> None:
    [bump] = found([cluster_policy()], [cluster_policy("580.95.05")])
    assert (bump.code, bump.severity) == ("driver-upgrade", "disruptive")
    assert (
        "GPU driver 580.82.07 -> 580.95.05" in bump.message
        and "rolls every GPU node (1 at a time" in bump.message
        and "evicted" in bump.message
    )
    assert (bump.blast.nodes, bump.blast.gpus, bump.blast.tenants) == (
        20,
        160,
        ("team-a", "team-b"),
    )
    assert bump.blast.text == "up to 20 nodes (6 always on), up to 160 GPUs in 2 pools"
    [held] = found([cluster_policy(auto=False)], [cluster_policy("580.95.05", auto=False)])
    assert "autoUpgrade is off" in held.message


def test_an_nvidia_driver_bump_reaches_its_pool() -> None:
    def driver(version: str) -> dict[str, Any]:
        return k(
            "nvidia.com/v1alpha1",
            "NVIDIADriver",
            "gpuplan-p1",
            spec={
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": version,
                "nodeSelector": {"gpuplan.io/pool": "p1"},
            },
        )

    [bump] = found([driver("570.1")], [driver("580.2")])
    assert (
        bump.code == "driver-upgrade"
        and "on pool p1" in bump.message
        and "rolls the pool's nodes" in bump.message
    )
    assert (bump.blast.nodes, bump.blast.gpus) == (4, 32)


def test_a_toolkit_change_rolls_the_gpu_operator_daemonsets() -> None:
    [roll] = found([cluster_policy()], [cluster_policy(toolkit="v1.18.0")])
    assert (roll.code, roll.severity) == ("gpu-operator-upgrade", "risk")
    assert (
        "toolkit v1.17.8 -> v1.18.0" in roll.message
        and "container runtime" in roll.message
        and roll.blast.nodes == 20
    )


def application(revision: str, values: str = "a: 1") -> dict[str, Any]:
    source = {
        "repoURL": "https://helm.ngc.nvidia.com/nvidia",
        "chart": "gpu-operator",
        "targetRevision": revision,
        "helm": {"values": values},
    }
    return k(
        "argoproj.io/v1alpha1", "Application", "gpu-operator", "argocd", spec={"source": source}
    )


def test_an_operator_chart_upgrade_and_a_values_change() -> None:
    # a supported release moves: its upgrade plan replaces the bare chart change
    [upgrade] = found([application("v26.3.0")], [application("v26.7.0")])
    assert upgrade.code == "upgrade" and "gpu-operator v26.3.0 -> v26.7.0" in upgrade.message
    # a chart version gpuplan has no facts of stays a chart change
    [unknown] = found([application("v26.3.0")], [application("v99.0.0")])
    assert unknown.code == "chart-upgrade" and "gpu-operator v26.3.0 -> v99.0.0" in unknown.message
    [values] = found([application("v26.7.0")], [application("v26.7.0", "a: 2")])
    assert values.code == "chart-upgrade" and "values change" in values.message


def test_a_bump_over_a_release_upstream_requires_is_an_error() -> None:
    stop = RequiredStop("gpu-operator", "v26.3.1", "test stop", "test source")
    source = Upstream(stops=lambda *_: [stop])
    old, new = side(application("v26.3.0")), side(application("v26.7.0"))
    result = analyse("old", "new", old, new, [], FACTS, Bumped(source=source))
    [skip] = [d for d in result.disruptions if d.code == "upgrade-skip"]
    assert skip.severity == "error" and "skips v26.3.1" in skip.message
    assert result.disruptions[0] is skip  # errors first


def test_a_crd_change_or_removal() -> None:
    crd = k(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "widgets.example.com",
        spec={"versions": [{"name": "v1"}]},
    )
    assert codes([crd], [changed(crd, "spec.versions", [{"name": "v2"}])]) == ["crd-changed"]
    [gone] = found([crd], [])
    assert gone.code == "crd-changed" and "deletes every widgets.example.com object" in gone.message


def test_a_node_template_change_replaces_a_karpenter_pools_nodes() -> None:
    old = node_pool("p2")
    new = changed(
        old,
        "spec.template.spec.nodeClassRef",
        {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-v2"},
    )
    [drift] = found([old], [new])
    assert (drift.code, drift.severity, drift.subject) == ("nodes-replaced", "disruptive", "p2")
    assert "nodeClassRef" in drift.message and "drains and replaces them" in drift.message
    assert drift.blast.text == "up to 16 nodes (2 always on), up to 128 GPUs"
    held = {"budgets": [{"nodes": "0", "reasons": ["Drifted"]}]}
    [drift] = found(
        [changed(old, "spec.disruption", held)], [changed(new, "spec.disruption", held)]
    )
    assert "allows 0 Drifted nodes" in drift.message
    assert (
        codes([old], [changed(old, "spec.limits", {"nodes": "8"})]) == []
    )  # limits are not hashed: no drift


def flavor(pool: str) -> dict[str, Any]:
    return k(
        "kueue.x-k8s.io/v1beta2",
        "ResourceFlavor",
        pool,
        spec={"nodeLabels": {"gpuplan.io/pool": pool}},
    )


def queue(
    name: str, quotas: dict[str, tuple[str, str | None, str | None]], cohort: str = "shared"
) -> dict[str, Any]:
    """A ClusterQueue with nvidia.com/gpu (nominal, borrowingLimit, lendingLimit) per flavor."""
    flavors = []
    for pool, (nominal, borrow, lend) in quotas.items():
        resource = (
            {"name": "nvidia.com/gpu", "nominalQuota": nominal}
            | ({"borrowingLimit": borrow} if borrow else {})
            | ({"lendingLimit": lend} if lend else {})
        )
        flavors.append({"name": pool, "resources": [resource]})
    return k(
        "kueue.x-k8s.io/v1beta2",
        "ClusterQueue",
        name,
        spec={
            "cohortName": cohort,
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": flavors}],
        },
    )


def namespace(name: str, tenant: str, level: str = "restricted") -> dict[str, Any]:
    labels = {"gpuplan.io/tenant": tenant, "pod-security.kubernetes.io/enforce": level}
    return k("v1", "Namespace", name) | {
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"},
        }
    }


def quota(namespace_name: str, gpus: str) -> dict[str, Any]:
    return k(
        "v1",
        "ResourceQuota",
        namespace_name,
        namespace_name,
        spec={"hard": {"requests.nvidia.com/gpu": gpus}},
    )


def test_removing_a_pool_a_tenant_and_a_namespace() -> None:
    old = [
        flavor("p1"),
        node_pool("p1"),
        queue("team-a", {"p1": ("8", None, None)}),
        namespace("team-a", "team-a"),
        quota("team-a", "8"),
    ]
    new = [namespace("team-a", "team-a")]
    by_code = {d.code: d for d in found(old, new)}
    assert {"pool-removed", "tenant-removed"} - set(by_code) == set()
    assert (
        by_code["pool-removed"].blast.nodes == 4
        and "Karpenter drains and deletes" in by_code["pool-removed"].message
    )
    assert (
        by_code["tenant-removed"].blast.tenants == ("team-a",)
        and "8 GPU units" in by_code["tenant-removed"].blast.text
    )
    [gone] = found([namespace("team-a", "team-a"), quota("team-a", "8")], [])
    assert (
        gone.code == "namespace-removed"
        and "Argo CD keeps the namespace" in gone.message
        and gone.blast.tenants == ("team-a",)
    )


def test_a_quota_cut_names_its_cause_the_tenants_own_change() -> None:
    old = [
        queue("team-a", {"p1": ("8", None, None)}),
        namespace("team-a", "team-a"),
        quota("team-a", "8"),
    ]
    new = [
        queue("team-a", {"p1": ("4", None, None)}),
        namespace("team-a", "team-a"),
        quota("team-a", "4"),
    ]
    messages = [d.message for d in found(old, new)]
    assert any(
        "nvidia.com/gpu on pool p1 8 -> 4 (cause: tenant team-a's own quota)" in m for m in messages
    )
    assert any(
        "quota cut in namespace team-a of tenant team-a" in m
        and "(cause: tenant team-a's own quota)" in m
        for m in messages
    )


def test_a_quota_cut_on_an_untouched_tenant_names_the_lender() -> None:
    lender_before = queue("team-b", {"p1": ("16", None, "8")})
    lender_after = queue("team-b", {"p1": ("16", None, "0")})
    borrower = queue("team-a", {"p1": ("8", None, None)})
    old = [borrower, lender_before, namespace("team-a", "team-a"), quota("team-a", "16")]
    new = [borrower, lender_after, namespace("team-a", "team-a"), quota("team-a", "8")]
    [cut] = found(old, new)
    assert (cut.code, cut.blast.tenants) == ("quota-cut", ("team-a",))
    assert "cause: a lender's change (team-b lends 8 -> 0 on pool p1)" in cut.message


def test_a_quota_cut_from_a_capacity_change() -> None:
    borrower = queue("team-a", {"p1": ("8", None, None)})
    old = [borrower, node_pool("p1"), namespace("team-a", "team-a"), quota("team-a", "16")]
    new = [
        borrower,
        changed(node_pool("p1"), "spec.limits", {"nodes": "8", "nvidia.com/gpu": "64"}),
        namespace("team-a", "team-a"),
        quota("team-a", "8"),
    ]
    [cut] = found(old, new)
    assert "cause: a capacity change (pool p1's capacity 128 -> 64 GPUs)" in cut.message


def test_priority_lowered_is_disruptive_and_raised_is_a_risk() -> None:
    def priority(value: int) -> dict[str, Any]:
        return k("scheduling.k8s.io/v1", "PriorityClass", "prod") | {"value": value}

    [lowered] = found([priority(1000)], [priority(100)])
    [raised] = found([priority(100)], [priority(1000)])
    assert (lowered.code, lowered.severity) == ("priority-lowered", "disruptive")
    assert (raised.code, raised.severity) == (
        "priority-raised",
        "risk",
    ) and "100 -> 1000" in raised.message


def test_pod_security_loosened_only_towards_privileged() -> None:
    [loose] = found([namespace("ns", "team-a")], [namespace("ns", "team-a", "privileged")])
    assert (loose.code, loose.severity, loose.blast.tenants) == (
        "psa-loosened",
        "risk",
        ("team-a",),
    )
    assert "restricted -> privileged" in loose.message
    assert (
        codes([namespace("ns", "team-a", "baseline")], [namespace("ns", "team-a", "restricted")])
        == []
    )


def binding(role: str, *subjects: str) -> dict[str, Any]:
    subject = [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": s} for s in subjects
    ]
    return k(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "tenant-owners",
        "ns",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        subjects=subject,
    )


def test_owners_added_or_a_stronger_role_widen_rbac() -> None:
    ns = namespace("ns", "team-a")
    [more] = found([ns, binding("admin", "a")], [ns, binding("admin", "a", "b")])
    assert (
        more.code == "rbac-widened"
        and "Group/b gains admin" in more.message
        and more.blast.tenants == ("team-a",)
    )
    [stronger] = found([ns, binding("view", "a")], [ns, binding("admin", "a")])
    assert "the role grows view -> admin" in stronger.message
    assert (
        codes([ns, binding("admin", "a", "b")], [ns, binding("admin", "a")]) == []
    )  # fewer owners: tighter


def isolation(extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    peers = [{"namespaceSelector": {"matchLabels": {"a": "b"}}}] + (extra or [])
    return k(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "tenant-isolation",
        "ns",
        spec={"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]},
    )


def test_network_isolation_off_or_widened() -> None:
    ns = namespace("ns", "team-a")
    [off] = found([ns, isolation()], [ns])
    assert (off.code, off.severity) == (
        "isolation-off",
        "risk",
    ) and "every pod of the cluster can reach" in off.message
    [wider] = found([ns, isolation()], [ns, isolation([{"namespaceSelector": {}}])])
    assert "admits more ingress" in wider.message
    assert "isolation-off" not in codes(
        [ns, isolation()], []
    )  # the namespace goes too: a removal, not a loosening


def test_the_priority_ceiling_raised() -> None:
    def ceiling(*classes: str) -> dict[str, Any]:
        scope = {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": list(classes)}
            ]
        }
        return k(
            "v1",
            "ResourceQuota",
            "priority-ceiling",
            "ns",
            spec={"hard": {"pods": "0"}, "scopeSelector": scope},
        )

    ns = namespace("ns", "team-a")
    [gone] = found([ns, ceiling("production")], [ns])
    assert gone.code == "priority-ceiling-raised" and "priority class production" in gone.message
    [narrower] = found([ns, ceiling("production", "critical")], [ns, ceiling("critical")])
    assert "production" in narrower.message and "critical" not in narrower.message


def test_a_pool_rename_is_a_rename_not_a_removal_and_its_nodepool_is_replaced() -> None:
    old = [flavor("p2"), node_pool("p2"), queue("team-a", {"p2": ("8", None, None)})]
    new = [flavor("p9"), node_pool("p9"), queue("team-a", {"p9": ("8", None, None)})]
    result = analyse("old", "new", side(*old), side(*new), [], FACTS)
    assert [(d.code, d.subject) for d in result.disruptions] == [
        ("nodes-replaced", "p9"),
        ("renamed", "pool p2"),
    ]
    assert result.disruptions[0].blast.nodes == 16  # the old pool's nodes are the ones replaced
    assert [(r.entity, r.old, r.new) for r in result.renames] == [("pool", "p2", "p9")]


def test_every_code_has_a_test_here() -> None:
    text = Path(__file__).read_text()
    assert [code for code in CODES if f'"{code}"' not in text] == []


def test_fail_on_a_code_or_severity_exits_1(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "ns.yaml").write_text(yaml.safe_dump(namespace("ns", "team-a")))
    (new / "ns.yaml").write_text(yaml.safe_dump(namespace("ns", "team-a", "privileged")))
    base = ["diff", str(old), str(new), "--format", "json"]
    assert run(*base).code == 0
    assert run(*base, "--fail-on", "disruptive").code == 0
    for gate in (
        ("--fail-on", "risk"),
        ("--fail-on", "psa-loosened"),
        ("--fail-on", "quota-cut,psa-loosened"),
        ("--fail-on", "quota-cut", "--fail-on", "risk"),
    ):
        result = run(*base, *gate)
        assert result.code == 1, gate
        assert "1 finding match --fail-on (psa-loosened)" in result.stderr
        assert (
            yaml.safe_load(result.stdout)["disruptions"][0]["code"] == "psa-loosened"
        )  # the report is still printed
    bad = run(*base, "--fail-on", "psa-loose")
    assert bad.code == 2 and "psa-loose: not a code or severity" in bad.stderr and bad.stdout == ""


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_known_severity(code: str) -> None:
    assert CODES[code][0] in ("error", "disruptive", "risk")


def test_the_docs_list_every_code_with_its_severity() -> None:
    page = (Path(__file__).parent.parent / "docs/how-to/review-a-pull-request.md").read_text()
    listed: dict[str, str] = {}  # code -> severity, from the rows `| `a`, `b` | severity | ... |`
    for row in re.findall(r"^\| (`[^|]+) \| (\w+) \|", page, re.MULTILINE):
        listed |= dict.fromkeys(re.findall(r"`([^`]+)`", row[0]), row[1])
    assert {code: severity for code, (severity, _) in CODES.items()} == listed


def test_a_driver_version_change_with_the_driver_off_or_in_nvidia_drivers_rolls_nothing() -> None:
    def policy(version: str, **driver: Any) -> dict[str, Any]:
        out = cluster_policy(version)
        out["spec"]["driver"] |= driver
        return out

    assert codes([policy("580.82.07", enabled=False)], [policy("580.95.05", enabled=False)]) == []
    assert (
        codes(
            [policy("580.82.07", useNvidiaDriverCRD=True)],
            [policy("580.95.05", useNvidiaDriverCRD=True)],
        )
        == []
    )
    assert codes([policy("580.82.07", enabled=False)], [policy("580.82.07", enabled=True)]) == [
        "driver-upgrade"
    ]


def test_an_operator_chart_change_is_reported_on_its_cluster() -> None:
    old = application("v26.3.0")
    old["metadata"]["labels"] = {"gpuplan.io/cluster": "c1"}
    new = changed(old, "spec.source.targetRevision", "v26.7.0")
    [upgrade] = analyse(
        "old", "new", side(old, scope="argocd"), side(new, scope="argocd"), [], FACTS
    ).disruptions
    assert (upgrade.scope, upgrade.blast.nodes) == ("c1", 20)


def test_an_operator_application_removed() -> None:
    kept = application("v26.7.0")
    [gone] = found([kept], [])
    assert (gone.code, gone.severity) == (
        "operator-removed",
        "disruptive",
    ) and "stays, unmanaged" in gone.message
    cascading = changed(kept, "metadata.finalizers", ["resources-finalizer.argocd.argoproj.io"])
    [gone] = found([cascading], [])
    assert "deletes the release" in gone.message


# scheduling: KAI Queue trees, Topologies, DRA objects


def kai_queue(
    name: str, parent: str | None = None, gpu: int = 8, limit: int = 16, weight: int = 1
) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentQueue": parent} if parent else {}
    spec["resources"] = {
        "gpu": {"quota": gpu, "limit": limit, "overQuotaWeight": weight},
        "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": weight},
        "memory": {"quota": -1, "limit": -1, "overQuotaWeight": weight},
    }
    return k("scheduling.run.ai/v2", "Queue", name, spec=spec)


def test_a_kai_quota_or_limit_cut_is_a_quota_cut_and_other_moves_are_named_per_queue() -> None:
    tree = [kai_queue("llm", gpu=64, limit=-1), kai_queue("pretrain", "llm", 48, 64)]
    cut = [kai_queue("llm", gpu=64, limit=-1), kai_queue("pretrain", "llm", 32, 64)]
    [finding] = found(tree, cut)
    assert (finding.code, finding.subject, finding.blast.tenants) == (
        "quota-cut",
        "pretrain",
        ("pretrain",),
    )
    assert finding.message.startswith(
        "quota cut for KAI Queue pretrain: gpu quota 48 -> 32: KAI may reclaim what its workloads use"
    )
    # An unlimited limit that gets a figure is a cut too; a weight and a raise are not.
    capped = [kai_queue("llm", gpu=64, limit=128), kai_queue("pretrain", "llm", 56, 64, weight=3)]
    findings = {(d.code, d.subject): d for d in found(tree, capped)}
    assert set(findings) == {("quota-cut", "llm"), ("kai-queue-changed", "pretrain")}
    assert (
        "KAI parent Queue llm: gpu limit unlimited -> 128" in findings[("quota-cut", "llm")].message
    )
    assert findings[("quota-cut", "llm")].blast.tenants == (
        "pretrain",
    )  # the parent reaches its leaves
    moved = findings[("kai-queue-changed", "pretrain")].message
    assert moved.endswith(
        "gpu quota 48 -> 56, overQuotaWeight 1 -> 3: the share of idle GPUs each queue gets changes"
    )
    assert findings[("kai-queue-changed", "pretrain")].severity == "risk"


def test_a_kai_queue_moved_to_another_parent_and_a_parent_removed() -> None:
    old = [
        kai_queue("llm"),
        kai_queue("research"),
        kai_queue("nlp", "llm"),
        kai_queue("cv", "research"),
    ]
    new = [kai_queue("llm"), kai_queue("nlp", "llm"), kai_queue("cv", "llm")]
    findings = [
        (d.code, d.subject, d.message.split(":")[0] + ":" + d.message.split(":")[1])
        for d in found(old, new)
    ]
    assert ("kai-queue-changed", "cv", "KAI Queue cv: parent research -> llm") in findings
    assert any(
        code == "kai-queue-changed" and subject == "research" for code, subject, _ in findings
    )
    assert not any(code == "tenant-removed" for code, _, _ in findings)  # a parent is a cohort's


def test_a_kai_leaf_queue_removed_is_a_tenant_removed() -> None:
    [finding] = found(
        [kai_queue("llm"), kai_queue("nlp", "llm"), kai_queue("cv", "llm")],
        [kai_queue("llm"), kai_queue("nlp", "llm")],
    )
    assert (finding.code, finding.subject) == ("tenant-removed", "cv")
    assert "Queue/cv deleted" in finding.message


def topology(group: str, name: str, *labels: str) -> dict[str, Any]:
    api = {"kueue.x-k8s.io": "kueue.x-k8s.io/v1beta2", "kai.scheduler": "kai.scheduler/v1alpha1"}[
        group
    ]
    return k(api, "Topology", name, spec={"levels": [{"nodeLabel": label} for label in labels]})


@pytest.mark.parametrize("group", ["kueue.x-k8s.io", "kai.scheduler"])
def test_topology_levels_are_immutable_so_a_change_means_delete_and_create(group: str) -> None:
    old = topology(group, "p2", "example.com/rack", "kubernetes.io/hostname")
    new = topology(group, "p2", "example.com/block", "example.com/rack", "kubernetes.io/hostname")
    [finding] = found([old], [new])
    assert finding.code == "topology-changed" and finding.severity == "disruptive"
    assert (
        "levels example.com/rack > kubernetes.io/hostname -> example.com/block > example.com/rack > kubernetes.io/hostname"
        in finding.message
    )
    assert "deleted and created again" in finding.message
    assert finding.blast.nodes == 16  # the pool the Topology is named after
    [gone] = found([old], [])
    assert gone.code == "topology-changed" and "is removed" in gone.message
    assert found([], [old]) == []  # a Topology added changes nothing that runs
    assert found([old], [changed(old, "metadata.labels", {"a": "b"})]) == []  # levels unchanged


def test_device_classes_and_claim_templates_are_named_by_kind() -> None:
    device_class = k(
        "resource.k8s.io/v1",
        "DeviceClass",
        "gpu.example.com",
        spec={"selectors": [{"cel": {"expression": "true"}}]},
    )
    template = k(
        "resource.k8s.io/v1", "ResourceClaimTemplate", "one-gpu", "team-a",
        spec={"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
    )  # fmt: skip
    stricter = changed(
        device_class,
        "spec.selectors",
        [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
    )
    two = changed(
        template,
        "spec.spec.devices.requests",
        [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}],
    )
    findings = {d.subject: d for d in found([device_class, template], [stricter, two])}
    assert {d.code for d in findings.values()} == {"dra-changed"}
    assert findings["DeviceClass/gpu.example.com"].message.startswith(
        "DeviceClass/gpu.example.com is changed (spec.selectors): claims allocated from now on"
    )
    assert "spec is immutable" in findings["ResourceClaimTemplate/team-a/one-gpu"].message
    [gone] = found([device_class], [])
    assert gone.code == "dra-changed" and "no longer be allocated" in gone.message
    assert found([], [device_class]) == []


def test_the_example_kai_cluster_diff_names_its_queue_and_topology_changes(tmp_path: Path) -> None:
    from tests.conftest import copy_example
    from tests.test_diff import edit_yaml

    root = copy_example(tmp_path / "repo")
    assert run("render", "--root", str(root), "--out", str(tmp_path / "old")).code == 0

    def pretrain(tenant: dict[str, Any]) -> None:
        tenant["allocations"][0]["weight"] = 4
        tenant["allocations"][0]["quotas"][0]["gpus"] = 80  # gb200-nvl72 88 -> 80

    def block_and_rack(cluster: dict[str, Any]) -> None:
        pool = next(p for p in cluster["nodePools"] if p["name"] == "dgx-b200")
        pool["labels"]["example.com/rack"] = "r07"
        pool["topology"].insert(1, {"level": "rack", "nodeLabel": "example.com/rack"})

    edit_yaml(root / "tenants/llm-pretrain.yaml", pretrain)
    edit_yaml(root / "clusters/gb200-train.yaml", block_and_rack)
    rendered = run("render", "--root", str(root), "--out", str(tmp_path / "new"))
    assert rendered.code == 0, rendered.stderr
    result = run("diff", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "json")
    found = {(d["code"], d["subject"]): d for d in yaml.safe_load(result.stdout)["disruptions"]}
    assert {k for k in found if k[1] in ("llm-pretrain", "dgx-b200")} == {
        (
            "quota-cut",
            "llm-pretrain",
        ),  # the leaf Queue's gpu quota 104 -> 96 (and the ClusterQueue-free cluster's quotas)
        ("kai-queue-changed", "llm-pretrain"),  # overQuotaWeight 3 -> 4
        ("topology-changed", "dgx-b200"),
    }
    assert "gpu quota 104 -> 96" in found[("quota-cut", "llm-pretrain")]["message"]
    assert ": overQuotaWeight 3 -> 4:" in found[("kai-queue-changed", "llm-pretrain")]["message"]
    assert (
        "KAI Topology dgx-b200 levels example.com/superpod-su > kubernetes.io/hostname -> example.com/superpod-su > example.com/rack > kubernetes.io/hostname"
        in found[("topology-changed", "dgx-b200")]["message"]
    )


def test_a_flavor_that_names_a_topology_cannot_change_in_place() -> None:
    pinned = changed(flavor("p2"), "spec.topologyName", "p2")
    [finding] = found([pinned], [changed(pinned, "spec.tolerations", [])])
    assert finding.code == "topology-changed" and finding.subject == "p2"
    assert (
        "names Topology p2, which makes its spec immutable, and tolerations changes"
        in finding.message
    )
    [dropped] = found([pinned], [flavor("p2")])  # the pool leaves topology-aware scheduling
    assert "topologyName changes" in dropped.message
    assert found([flavor("p2")], [pinned]) == []  # naming a Topology for the first time is allowed


# admission policies


def vap(table: str, *rules: str) -> dict[str, Any]:
    spec = {
        "variables": [{"name": "queuesByNamespace", "expression": table}],
        "validations": [{"expression": r} for r in rules or ("true",)],
    }
    return k("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "queues", spec=spec)


def vap_binding(*actions: str) -> dict[str, Any]:
    spec = {"policyName": "queues", "validationActions": list(actions)}
    return k(
        "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "queues", spec=spec
    )


def test_admission_tightened_and_loosened_name_the_tenants_they_reach() -> None:
    ns = [
        changed(k("v1", "Namespace", "a"), "metadata.labels", {"gpuplan.io/tenant": "team-a"}),
        changed(k("v1", "Namespace", "b"), "metadata.labels", {"gpuplan.io/tenant": "team-b"}),
    ]
    table = vap("{'a': ['default', 'batch'], 'b': ['default']}")
    [deny] = found([*ns, table, vap_binding("Warn", "Audit")], [*ns, table, vap_binding("Deny")])
    assert (deny.code, deny.blast.tenants) == ("admission-tightened", ("team-a", "team-b"))
    [warn] = found([*ns, table, vap_binding("Deny")], [*ns, table, vap_binding("Warn")])
    assert warn.code == "admission-loosened" and "no longer denies" in warn.message
    fewer = vap("{'a': ['default'], 'b': ['default']}")
    [cut] = found([*ns, table, vap_binding("Deny")], [*ns, fewer, vap_binding("Deny")])
    assert (cut.code, cut.blast.tenants) == ("admission-tightened", ("team-a",))
    assert cut.message == "policy queues refuses more (batch) in a"
    [grown] = found([*ns, fewer, vap_binding("Deny")], [*ns, table, vap_binding("Deny")])
    assert (grown.code, grown.blast.tenants) == ("admission-loosened", ("team-a",))
    assert found([*ns, table, vap_binding("Audit")], [*ns, fewer, vap_binding("Audit")]) == []


def test_a_queue_that_may_take_more_from_its_cohort_names_the_others() -> None:
    old = [queue("a", {"p1": ("8", "4", None)}), queue("b", {"p1": ("8", None, None)})]
    wider = changed(old[0], "spec.preemption", {"reclaimWithinCohort": "Any"})
    unlimited = queue("a", {"p1": ("8", None, None)})
    for new in (wider, unlimited, changed(old[0], "spec.fairSharing", {"weight": "2"})):
        [finding] = [d for d in found(old, [new, old[1]]) if d.code == "takes-from-tenants"]
        assert finding.blast.tenants == ("b",) and finding.severity == "risk"
    assert "takes-from-tenants" not in codes(
        old, [changed(old[0], "spec.fairSharing", {"weight": "0.5"}), old[1]]
    )
