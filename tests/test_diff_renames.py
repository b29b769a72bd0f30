"""Renames of pools, tenants and networks: paired, their references followed, real changes kept."""

from __future__ import annotations

import json
from typing import Any

from gpuplan.diff.analyse import analyse
from gpuplan.diff.renames import align, substitute
from tests.test_diff_rules import FACTS, flavor, k, namespace, queue, side


def network(name: str, namespace_name: str, cidr: str = "192.168.20.0/24") -> dict[str, Any]:
    config = json.dumps(
        {
            "cniVersion": "0.3.1",
            "name": name,
            "type": "sriov",
            "ipam": {"type": "whereabouts", "range": cidr},
        },
        indent=2,
    )
    return k(
        "k8s.cni.cncf.io/v1",
        "NetworkAttachmentDefinition",
        name,
        namespace_name,
        spec={"config": config},
    )


def diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Any:
    return analyse("old", "new", side(*old), side(*new), [], FACTS)


def test_a_network_rename_in_every_namespace_is_one_rename() -> None:
    result = diff(
        [network("ib-net", "a"), network("ib-net", "b")],
        [network("ib-fabric", "a"), network("ib-fabric", "b")],
    )
    [rename] = result.renames
    assert (rename.entity, rename.old, rename.new, len(rename.objects)) == (
        "network",
        "ib-net",
        "ib-fabric",
        2,
    )
    assert [(c.status, c.real_fields) for c in result.changes] == [("renamed", []), ("renamed", [])]
    assert [d.code for d in result.disruptions] == ["renamed"]


def test_a_rename_with_a_real_change_lists_the_change() -> None:
    result = diff([network("ib-net", "a")], [network("ib-fabric", "a", "10.0.0.0/24")])
    [change] = result.changes
    assert (
        change.status == "renamed"
        and change.renamed_from is not None
        and change.renamed_from.name == "ib-net"
    )
    assert [(f.path, f.old, f.new) for f in change.real_fields] == [
        ("spec.config.ipam.range", "192.168.20.0/24", "10.0.0.0/24")
    ]
    assert [f.path for f in change.fields if f.reference] == ["metadata.name", "spec.config.name"]


def test_a_tenant_rename_with_a_quota_change_is_a_rename_plus_the_cut() -> None:
    old = [queue("team-a", {"p1": ("8", None, None)}), namespace("team-a", "team-a")]
    new = [queue("team-x", {"p1": ("4", None, None)}), namespace("team-a", "team-x")]
    result = diff(old, new)
    assert [(r.entity, r.old, r.new) for r in result.renames] == [("tenant", "team-a", "team-x")]
    codes = [d.code for d in result.disruptions]
    assert "tenant-removed" not in codes and codes.count("quota-cut") == 1
    namespace_change = next(c for c in result.changes if c.key.kind == "Namespace")
    assert [f.reference for f in namespace_change.fields] == [
        True
    ]  # the tenant label follows the rename; the namespace keeps its name


def test_objects_too_different_are_a_removal_and_an_addition() -> None:
    old = [flavor("p1"), queue("team-a", {"p1": ("8", None, None)})]
    other = k(
        "kueue.x-k8s.io/v1beta2",
        "ResourceFlavor",
        "p7",
        spec={
            "nodeLabels": {"gpuplan.io/pool": "p7", "zone": "b"},
            "tolerations": [{"key": "x", "operator": "Exists"}],
        },
    )
    result = diff(old, [other, queue("team-a", {"p7": ("8", None, None)})])
    assert result.renames == []
    assert "pool-removed" in [d.code for d in result.disruptions]


def test_substitution_is_by_whole_words_and_align_takes_only_what_then_matches() -> None:
    names = {"team-a": "team-x"}
    assert (
        substitute("team-a team-ab xteam-a team-a.yaml", names)
        == "team-x team-ab xteam-a team-x.yaml"
    )
    old = {"keep": "ns/team-a-batch/quota-team-a.yaml", "other": "team-a", "real": 1}
    new = {"keep": "ns/team-a-batch/quota-team-x.yaml", "other": "team-x", "real": 2}
    assert align(old, new, names) == {"keep": new["keep"], "other": "team-x", "real": 1}
