"""The pure parts of the overlay: JSON Patch (RFC 6902), strategic merge, owned fields, values merge."""

from __future__ import annotations

import pytest

from gpuplan.overlay.jsonpatch import PatchError, apply_json_patch
from gpuplan.overlay.owned import owned_changes
from gpuplan.overlay.strategic import MergeError, strategic_merge
from gpuplan.overlay.values import merge_values
from gpuplan.validate.references import check_references

# --- RFC 6902 ---------------------------------------------------------------------------------


def test_json_patch_operations_follow_rfc_6902() -> None:
    doc = {"a": {"b": 1, "c": [1, 2]}, "x~y": {"p/q": 0}}
    ops = [
        {"op": "add", "path": "/a/c/1", "value": 9},
        {"op": "add", "path": "/a/c/-", "value": 3},
        {"op": "replace", "path": "/a/b", "value": 2},
        {"op": "copy", "from": "/a/b", "path": "/d"},
        {"op": "move", "from": "/x~0y/p~1q", "path": "/e"},
        {"op": "remove", "path": "/x~0y"},
        {"op": "test", "path": "/e", "value": 0},
    ]
    assert apply_json_patch(doc, ops) == {"a": {"b": 2, "c": [1, 9, 2, 3]}, "d": 2, "e": 0}
    assert doc["a"]["c"] == [1, 2], "the input is not changed"


@pytest.mark.parametrize(
    ("op", "index", "field", "words"),
    [
        ({"op": "replace", "path": "/missing", "value": 1}, 0, "path", "'missing' does not exist"),
        ({"op": "remove", "path": "/a/5"}, 0, "path", "out of range"),
        ({"op": "test", "path": "/a/0", "value": 2}, 0, "path", "test failed"),
        ({"op": "frobnicate", "path": "/a"}, 0, "op", "op must be one of"),
        ({"op": "add", "path": "/a/01", "value": 1}, 0, "path", "not an array index"),
        ({"op": "add", "path": "a", "value": 1}, 0, "path", "starts with '/'"),
        ({"op": "add", "path": "/b"}, 0, "", "needs 'value'"),
        ({"op": "move", "from": "/a", "path": "/a/0"}, 0, "from", "its own children"),
    ],
)
def test_json_patch_failures_name_the_operation(
    op: dict, index: int, field: str, words: str
) -> None:
    with pytest.raises(PatchError) as caught:
        apply_json_patch({"a": [1]}, [op])
    assert (caught.value.index, caught.value.field) == (index, field)
    assert words in str(caught.value)


# --- strategic merge ----------------------------------------------------------------------------


def test_strategic_merge_maps_merge_nulls_delete_lists_replace() -> None:
    original = {"spec": {"a": 1, "b": {"c": 2, "d": 3}, "list": [1, 2]}}
    patch = {"spec": {"a": None, "b": {"c": 5}, "list": [7]}}
    assert strategic_merge(original, patch) == {"spec": {"b": {"c": 5, "d": 3}, "list": [7]}}
    assert original["spec"]["a"] == 1


def test_strategic_merge_lists_with_a_merge_key_merge_by_it() -> None:
    original = {"driver": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}}
    patch = {
        "driver": {
            "env": [
                {"name": "B", "value": "9"},
                {"name": "C", "value": "3"},
                {"name": "A", "$patch": "delete"},
            ]
        }
    }
    assert strategic_merge(original, patch) == {
        "driver": {"env": [{"name": "B", "value": "9"}, {"name": "C", "value": "3"}]}
    }


def test_strategic_merge_directives() -> None:
    original = {"m": {"a": 1, "b": 2}, "env": [{"name": "A"}, {"name": "B"}]}
    assert strategic_merge(original, {"m": {"$patch": "replace", "c": 3}}) == {
        "m": {"c": 3},
        "env": original["env"],
    }
    assert strategic_merge(original, {"m": {"$patch": "delete"}}) == {"env": original["env"]}
    assert strategic_merge(original, {"env": [{"$patch": "replace"}, {"name": "Z"}]})["env"] == [
        {"name": "Z"}
    ]


def test_strategic_merge_refuses_a_merge_list_item_without_its_key() -> None:
    with pytest.raises(MergeError) as caught:
        strategic_merge({"env": [{"name": "A"}]}, {"env": [{"value": "x"}]})
    assert caught.value.path == ("env", 0)
    with pytest.raises(MergeError):
        strategic_merge({}, {"m": {"$patch": "sideways"}})


# --- owned fields -------------------------------------------------------------------------------


def _queue() -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a", "labels": {"app.kubernetes.io/managed-by": "gpuplan"}},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}],
                        }
                    ],
                }
            ],
            "queueingStrategy": "BestEffortFIFO",
        },
    }


def test_owned_quota_and_selector_changes_are_found_with_why() -> None:
    before = _queue()
    after = strategic_merge(
        before,
        {"spec": {"namespaceSelector": {"$patch": "replace"}, "queueingStrategy": "StrictFIFO"}},
    )
    after["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "16"
    found = owned_changes(before, after)
    paths = [p for p, _ in found]
    assert ("spec", "namespaceSelector") in paths
    assert ("spec", "resourceGroups") in paths
    assert all("queueingStrategy" not in p for p in paths)
    assert any("quota figures" in why for _, why in found)


def test_a_free_field_is_not_owned() -> None:
    before = _queue()
    assert (
        owned_changes(
            before,
            strategic_merge(
                before,
                {
                    "spec": {"queueingStrategy": "StrictFIFO"},
                    "metadata": {"annotations": {"a": "b"}},
                },
            ),
        )
        == []
    )


@pytest.mark.parametrize(
    "label", ["gpuplan.io/pool", "nvidia.com/mig.config", "nvidia.com/device-plugin.config"]
)
def test_wiring_labels_are_owned_wherever_they_are(label: str) -> None:
    before = {
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": {"metadata": {"labels": {label: "x"}}}},
    }
    after = strategic_merge(before, {"spec": {"template": {"metadata": {"labels": {label: "y"}}}}})
    assert owned_changes(before, after)[0][0] == ("spec", "template", "metadata", "labels", label)
    as_requirement = {
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"requirements": [{"key": label, "operator": "In", "values": ["x"]}]},
    }
    changed = apply_json_patch(
        as_requirement, [{"op": "replace", "path": "/spec/requirements/0/values/0", "value": "y"}]
    )
    assert "wires nodes" in owned_changes(as_requirement, changed)[0][1]


def test_identity_is_owned() -> None:
    before = _queue()
    after = strategic_merge(before, {"metadata": {"name": "other"}})
    assert owned_changes(before, after)[0][0] == ("metadata", "name")


# --- Helm values ----------------------------------------------------------------------------------


def test_values_merge_like_helm_values_files() -> None:
    derived = {
        "clusterPolicy": {"deployCR": False},
        "driver": {"enabled": True, "args": ["a"]},
        "nfd": {"enabled": False},
    }
    override = {"driver": {"args": ["b"], "repository": "r"}, "nfd": None, "extra": 1}
    merged = merge_values(derived, override)
    assert merged == {
        "clusterPolicy": {"deployCR": False},
        "driver": {"enabled": True, "args": ["b"], "repository": "r"},
        "nfd": None,
        "extra": 1,
    }
    assert derived["driver"]["args"] == ["a"], "the derived values are not changed"


# --- NodePool -> node class reference -------------------------------------------------------------


def _pool(node_class: str) -> dict:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p5"},
        "spec": {"template": {"spec": {"nodeClassRef": ref}}},
    }


def _node_class(name: str) -> dict:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
    }


def test_a_node_pool_resolves_its_node_class_once_the_set_has_that_kind() -> None:
    assert check_references([_pool("gpu")]).problems == []  # node classes kept outside gpuplan
    assert check_references([_pool("gpu"), _node_class("gpu")]).problems == []
    [problem] = check_references([_pool("gpu"), _node_class("gpu-v2")]).problems
    assert (problem.kind, problem.path, problem.severity) == (
        "NodePool",
        "spec.template.spec.nodeClassRef.name",
        "error",
    )
    assert 'EC2NodeClass "gpu" does not exist (has: gpu-v2)' in problem.message
