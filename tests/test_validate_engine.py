"""Tests of the offline strict schema validation engine (gpuplan.validate)."""

from __future__ import annotations

import copy
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gpuplan.validate import (
    CelRule,
    CoreSchemas,
    CrdIndex,
    Problem,
    UnknownKubernetesVersion,
    Validator,
    newest,
    strictify,
)
from gpuplan.validate.engine import MISSING_CRD

K8S = "1.33"


@pytest.fixture(scope="module")
def validator(crds: CrdIndex) -> Validator:
    """A Validator with the upstream CRDs (conftest's crds: the shipped ones)."""
    return Validator(crds, K8S)


@pytest.fixture(scope="module")
def core_only() -> Validator:
    """A Validator without CRDs (needs nothing from the environment)."""
    return Validator(None, K8S)


def meta(name: str, namespace: str | None = None) -> dict:
    """Minimal metadata."""
    m = {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpuplan"}}
    if namespace:
        m["namespace"] = namespace
    return m


CLUSTER_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": meta("team-a"),
    "spec": {
        "cohortName": "gpu",
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "96"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4},
                        ],
                    },
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 64},
                            {"name": "nvidia.com/gpu", "nominalQuota": 4},
                        ],
                    },
                ],
            }
        ],
    },
}
RESOURCE_FLAVOR = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": meta("h100"),
    "spec": {
        "nodeLabels": {"gpuplan.io/pool": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
}
LOCAL_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": meta("default", "team-a"),
    "spec": {"clusterQueue": "team-a"},
}
VOLCANO_QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": meta("team-a"),
    "spec": {"weight": 2, "reclaimable": True, "capability": {"nvidia.com/gpu": 8, "cpu": "64"}},
}
NODE_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": meta("h100"),
    "spec": {
        "template": {
            "metadata": {"labels": {"gpuplan.io/pool": "h100"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["p5.48xlarge"],
                    }
                ],
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            },
        },
        "limits": {"nvidia.com/gpu": 128},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"},
    },
}
NODE_FEATURE_RULE = {
    "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
    "kind": "NodeFeatureRule",
    "metadata": meta("gpu"),
    "spec": {
        "rules": [
            {
                "name": "nvidia gpu",
                "labels": {"gpuplan.io/gpu": "true"},
                "matchFeatures": [
                    {
                        "feature": "pci.device",
                        "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}},
                    }
                ],
            }
        ]
    },
}
NAD = {
    "apiVersion": "k8s.cni.cncf.io/v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": meta("ib0", "team-a"),
    "spec": {"config": '{"cniVersion": "0.3.1", "type": "ipoib", "master": "ib0"}'},
}
APPLICATION = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": meta("h100", "argocd"),
    "spec": {
        "project": "default",
        "source": {
            "repoURL": "https://git.example.com/fleet.git",
            "path": "clusters/h100",
            "targetRevision": "main",
        },
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
    },
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("team-a")}
RESOURCE_QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": meta("gpu", "team-a"),
    "spec": {"hard": {"requests.nvidia.com/gpu": "8", "limits.cpu": 64}},
}
LIMIT_RANGE = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": meta("defaults", "team-a"),
    "spec": {
        "limits": [
            {
                "type": "Container",
                "default": {"cpu": "1", "memory": "2Gi"},
                "max": {"nvidia.com/gpu": 8},
            }
        ]
    },
}
NETWORK_POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": meta("isolate", "team-a"),
    "spec": {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"podSelector": {"matchLabels": {"team": "a"}}}],
                "ports": [{"port": 8080}, {"port": "http", "protocol": "TCP"}],
            }
        ],
    },
}
ROLE_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": meta("team-a-admins", "team-a"),
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
    "subjects": [{"kind": "Group", "name": "team-a", "apiGroup": "rbac.authorization.k8s.io"}],
}
PRIORITY_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": meta("gpu-high"),
    "value": 1000,
    "preemptionPolicy": "PreemptLowerPriority",
    "description": "training",
}
CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": meta("mig-parted", "gpu-operator"),
    "data": {"config.yaml": "version: v1\n"},
}

CUSTOM = [
    CLUSTER_QUEUE,
    RESOURCE_FLAVOR,
    LOCAL_QUEUE,
    VOLCANO_QUEUE,
    NODE_POOL,
    NODE_FEATURE_RULE,
    NAD,
    APPLICATION,
]
CORE = [
    NAMESPACE,
    RESOURCE_QUOTA,
    LIMIT_RANGE,
    NETWORK_POLICY,
    ROLE_BINDING,
    PRIORITY_CLASS,
    CONFIG_MAP,
]


def changed(obj: dict, path: str, value=..., delete: bool = False) -> dict:
    """A deep copy of ``obj`` with one dotted path (ints index lists) set or deleted."""
    out = copy.deepcopy(obj)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = out
    for p in parents:
        node = node[p]
    if delete:
        del node[last]
    else:
        node[last] = value
    return out


def kid(obj: dict) -> str:
    """Test id."""
    return f"{obj['kind']}"


# --- valid objects ---------------------------------------------------------------------


@pytest.mark.parametrize("obj", CUSTOM, ids=kid)
def test_valid_custom_resources_pass(validator: Validator, obj: dict) -> None:
    assert validator.validate(obj) == []


@pytest.mark.parametrize("obj", CORE, ids=kid)
def test_valid_core_objects_pass(core_only: Validator, obj: dict) -> None:
    assert core_only.validate(obj) == []


# --- one thing wrong, flagged at the right path ---------------------------------------


def test_unknown_field_at_spec_level(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "spec.foo", 1)
    assert validator.validate(bad) == [Problem("spec", 'unknown field "foo"')]


def test_unknown_field_deeply_nested(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "spec.resourceGroups.0.flavors.1.resources.1.nominalQouta", 4)
    assert validator.validate(bad) == [
        Problem("spec.resourceGroups[0].flavors[1].resources[1]", 'unknown field "nominalQouta"')
    ]


def test_unknown_fields_are_all_named(validator: Validator) -> None:
    bad = changed(changed(APPLICATION, "spec.source.foo", 1), "spec.source.bar", 2)
    assert validator.validate(bad) == [Problem("spec.source", 'unknown fields "bar", "foo"')]


def test_unknown_field_in_core_object_nested(core_only: Validator) -> None:
    bad = changed(NETWORK_POLICY, "spec.ingress.0.from.0.podSelector.matchLabel", {"a": "b"})
    assert core_only.validate(bad) == [
        Problem("spec.ingress[0].from[0].podSelector", 'unknown field "matchLabel"')
    ]


def pick(request: pytest.FixtureRequest, obj: dict) -> Validator:
    """core_only for core objects (needs no CRDs), else the CRD validator."""
    return request.getfixturevalue("core_only" if obj in CORE else "validator")


@pytest.mark.parametrize("obj", [CLUSTER_QUEUE, CONFIG_MAP], ids=kid)
def test_unknown_top_level_field(request: pytest.FixtureRequest, obj: dict) -> None:
    assert pick(request, obj).validate(changed(obj, "extra", True)) == [
        Problem("", 'unknown field "extra"')
    ]


def test_missing_required_field(validator: Validator) -> None:
    bad = changed(APPLICATION, "spec.destination", delete=True)
    assert validator.validate(bad) == [Problem("spec", 'missing required field "destination"')]


def test_missing_required_nested_in_list(validator: Validator) -> None:
    bad = changed(
        CLUSTER_QUEUE, "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota", delete=True
    )
    assert validator.validate(bad) == [
        Problem(
            "spec.resourceGroups[0].flavors[0].resources[0]",
            'missing required field "nominalQuota"',
        )
    ]


def test_missing_required_core(core_only: Validator) -> None:
    bad = changed(ROLE_BINDING, "roleRef", delete=True)
    assert core_only.validate(bad) == [Problem("", 'missing required field "roleRef"')]


def test_required_field_with_default_may_be_omitted(validator: Validator) -> None:
    # NodePool budgets[].nodes is required but defaulted ("10%") by the API server.
    obj = changed(NODE_POOL, "spec.disruption.budgets", [{"reasons": ["Empty"]}])
    assert validator.validate(obj) == []


def test_missing_name_and_metadata(validator: Validator) -> None:
    assert validator.validate(changed(LOCAL_QUEUE, "metadata.name", delete=True)) == [
        Problem("metadata", 'missing required field "name"')
    ]
    assert validator.validate(changed(NAMESPACE, "metadata", delete=True)) == [
        Problem("", 'missing required field "metadata"')
    ]


def test_wrong_enum(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "spec.queueingStrategy", "Fifo")
    assert validator.validate(bad) == [
        Problem("spec.queueingStrategy", 'must be one of: BestEffortFIFO, StrictFIFO (got "Fifo")')
    ]


def test_wrong_type(validator: Validator) -> None:
    bad = changed(VOLCANO_QUEUE, "spec.weight", "high")
    assert validator.validate(bad) == [Problem("spec.weight", "must be integer (got string)")]


def test_wrong_type_core(core_only: Validator) -> None:
    bad = changed(PRIORITY_CLASS, "value", "1000")
    assert core_only.validate(bad) == [Problem("value", "must be integer (got string)")]


@pytest.mark.parametrize("quota", [8, "8", "500m", "1Gi"])
def test_int_or_string_accepts_both(validator: Validator, quota) -> None:
    ok = changed(CLUSTER_QUEUE, "spec.resourceGroups.0.flavors.0.resources.1.nominalQuota", quota)
    assert validator.validate(ok) == []


def test_int_or_string_rejects_other_types(validator: Validator) -> None:
    path = "spec.resourceGroups.0.flavors.0.resources.1.nominalQuota"
    where = "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"
    assert validator.validate(changed(CLUSTER_QUEUE, path, True)) == [
        Problem(where, "must be integer or string (got boolean)")
    ]
    assert [p.path for p in validator.validate(changed(CLUSTER_QUEUE, path, "eight"))] == [where]


def test_core_int_or_string(core_only: Validator) -> None:
    bad = changed(NETWORK_POLICY, "spec.ingress.0.ports.0.port", 80.5)
    assert core_only.validate(bad) == [
        Problem("spec.ingress[0].ports[0].port", "must be string or integer (got number)")
    ]


def test_unserved_api_version(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "apiVersion", "kueue.x-k8s.io/v1alpha9")
    assert validator.validate(bad) == [
        Problem(
            "apiVersion",
            "apiVersion kueue.x-k8s.io/v1alpha9 is not served by the ClusterQueue CRD "
            "(served: v1beta1, v1beta2)",
        )
    ]


def test_unserved_core_api_version(core_only: Validator) -> None:
    bad = changed(PRIORITY_CLASS, "apiVersion", "scheduling.k8s.io/v1alpha1")
    [problem] = core_only.validate(bad)
    assert problem.path == "apiVersion" and "served: scheduling.k8s.io/v1" in problem.message


def test_unknown_kind(validator: Validator, core_only: Validator) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w")}
    [problem] = validator.validate(widget)  # a custom resource without CRD: the user supplies it
    assert (
        problem.code == MISSING_CRD and "kind Widget (apiVersion example.com/v1)" in problem.message
    )
    assert "--crds DIR" in problem.message and "GPUPLAN_CRDS" in problem.message
    core_widget = {"apiVersion": "v1", "kind": "Widget", "metadata": meta("w")}
    assert core_only.validate(core_widget) == [
        Problem("", "no schema for apiVersion v1 kind Widget")
    ]


@pytest.mark.parametrize("obj", [LOCAL_QUEUE, RESOURCE_QUOTA], ids=kid)
def test_label_value_must_be_string(request: pytest.FixtureRequest, obj: dict) -> None:
    bad = changed(obj, "metadata.labels.gpus", 8)
    assert pick(request, obj).validate(bad) == [
        Problem("metadata.labels[gpus]", "must be string (got integer)")
    ]


def test_metadata_of_custom_resource_is_strict_object_meta(validator: Validator) -> None:
    bad = changed(LOCAL_QUEUE, "metadata.owner", "me")
    assert validator.validate(bad) == [Problem("metadata", 'unknown field "owner"')]


def test_map_keys_render_in_brackets(core_only: Validator) -> None:
    bad = changed(RESOURCE_QUOTA, "spec.hard", {"requests.nvidia.com/gpu": [8]})
    assert core_only.validate(bad) == [
        Problem("spec.hard[requests.nvidia.com/gpu]", "must be string or number (got array)")
    ]


def test_list_map_keys_must_be_unique(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "spec.resourceGroups.0.flavors.1.name", "h100")
    assert validator.validate(bad) == [
        Problem(
            "spec.resourceGroups[0].flavors[1]", 'duplicate entry with name="h100" (first at [0])'
        )
    ]


def test_namespace_on_cluster_scoped_custom_resource(validator: Validator) -> None:
    bad = changed(CLUSTER_QUEUE, "metadata.namespace", "team-a")
    assert validator.validate(bad) == [
        Problem("metadata.namespace", "must not be set: ClusterQueue is cluster-scoped")
    ]


def test_custom_resources_skipped_without_crds(core_only: Validator) -> None:
    fresh = Validator(None, K8S)
    assert fresh.validate(CLUSTER_QUEUE) == []
    assert fresh.validate(changed(CLUSTER_QUEUE, "spec.foo", 1)) == []
    assert fresh.skipped_kinds == {("kueue.x-k8s.io/v1beta2", "ClusterQueue")}


def test_missing_api_version_or_kind(core_only: Validator) -> None:
    assert core_only.validate({"kind": "ConfigMap", "metadata": meta("x")}) == [
        Problem("", 'missing required field "apiVersion"')
    ]
    assert core_only.validate(["not", "an", "object"]) == [
        Problem("", "must be an object (got array)")
    ]


# --- CRD index ----------------------------------------------------------------------


def test_duplicate_crds_are_kept_in_path_order(crds: CrdIndex, validator: Validator) -> None:
    pools = crds.lookup("karpenter.sh", "NodePool")
    assert [p.source.parent.name for p in pools] == ["karpenter", "karpenter-provider-aws"]
    assert crds.scope("karpenter.sh", "NodePool") == "Cluster"
    assert validator.validate(changed(NODE_POOL, "spec.template.spec.bogus", 1)) == [
        Problem("spec.template.spec", 'unknown field "bogus"')
    ]


def test_index_contents(crds: CrdIndex) -> None:
    assert ("kueue.x-k8s.io", "ClusterQueue") in crds
    assert crds.served_versions("kueue.x-k8s.io", "ClusterQueue") == ["v1beta1", "v1beta2"]
    assert crds.scope("kueue.x-k8s.io", "LocalQueue") == "Namespaced"
    # 21 kinds in ../shared/crds; the shipped sets add KAI Scheduler's Topology
    assert len(crds.kinds()) in (21, 22)


def test_cel_rules_are_kept(crds: CrdIndex) -> None:
    rules = crds.cel_rules("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
    assert all(isinstance(r, CelRule) for r in rules)
    by_path = {r.path_pattern: r for r in rules}
    rg = by_path["spec.resourceGroups[*]"]
    assert "size(self.coveredResources)" in rg.rule
    assert rg.message == "flavors must have the same number of resources as the coveredResources"
    assert crds.cel_rules("kueue.x-k8s.io", "v9", "ClusterQueue") == []


def test_load_multi_document_and_ignores_other_kinds(tmp_path: Path) -> None:
    crd = _widget_crd(
        {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
        }
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "all.yaml").write_text(
        yaml.safe_dump_all(
            [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, crd]
        )
    )
    (tmp_path / "README.md").write_text("not a CRD")
    index = CrdIndex.load(tmp_path)
    assert index.kinds() == [("example.com", "Widget")]


# --- strictification (synthetic CRDs, no environment needed) ------------------------


def _widget_crd(schema: dict) -> dict:
    """A one-version Widget CRD around ``schema``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


@pytest.fixture()
def widget(tmp_path: Path) -> Validator:
    """A Validator for a synthetic CRD exercising every Kubernetes extension."""
    spec = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "nullable": True, "minimum": 0, "exclusiveMinimum": True},
            "port": {"x-kubernetes-int-or-string": True},
            "mode": {"type": "string", "enum": ["A", "B"], "nullable": True},
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": {"type": "string"}},
            },
            "closed": {"type": "object"},
            "sizes": {"type": "object", "additionalProperties": {"type": "integer"}},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "when": {"type": "string", "format": "date-time"},
            "odd": {"type": "string", "format": "gpuplan-unknown-format"},
            "wait": {"type": "string", "format": "duration"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        },
    }
    (tmp_path / "widget.yaml").write_text(
        yaml.safe_dump(_widget_crd({"type": "object", "properties": {"spec": spec}}))
    )
    return Validator(CrdIndex.load(tmp_path), K8S)


def _w(**spec) -> dict:
    """A Widget object."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": meta("w", "ns"),
        "spec": spec,
    }


def test_strict_extensions_accept(widget: Validator) -> None:
    ok = _w(
        count=None,
        port="http",
        mode=None,
        free={"known": "x", "anything": [1]},
        closed={},
        sizes={"a": 1},
        when="2026-01-02T03:04:05Z",
        odd="whatever",
        wait="1h30m",
        tags=["a", "b"],
        template={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"any": "thing"},
        },
    )
    assert widget.validate(ok) == []
    assert widget.validate(_w(port=8080, count=1)) == []


def test_strict_extensions_reject(widget: Validator) -> None:
    assert widget.validate(_w(count=0)) == [Problem("spec.count", "must be > 0 (got 0)")]
    assert widget.validate(_w(port=[1])) == [
        Problem("spec.port", "must be integer or string (got array)")
    ]
    assert widget.validate(_w(free={"known": 1})) == [
        Problem("spec.free.known", "must be string (got integer)")
    ]
    assert widget.validate(_w(closed={"x": 1})) == [Problem("spec.closed", 'unknown field "x"')]
    assert widget.validate(_w(sizes={"a": "1"})) == [
        Problem("spec.sizes[a]", "must be integer (got string)")
    ]
    assert widget.validate(_w(template={"kind": "Pod", "metadata": {"bogus": 1}})) == [
        Problem("spec.template", 'missing required field "apiVersion"'),
        Problem("spec.template.metadata", 'unknown field "bogus"'),
    ]
    assert widget.validate(_w(when="yesterday")) == [
        Problem("spec.when", 'must be a valid date-time (got "yesterday")')
    ]
    assert widget.validate(_w(tags=["a", "a"])) == [
        Problem("spec.tags", "must not contain duplicate items")
    ]


def test_strictify_keeps_schema_additional_properties() -> None:
    out = strictify({"type": "object", "additionalProperties": {"type": "string"}})
    assert out == {"type": "object", "additionalProperties": {"type": "string"}}
    assert (
        strictify({"type": "object", "properties": {"a": {"type": "string"}}})[
            "additionalProperties"
        ]
        is False
    )
    assert strictify({"type": "object"})["additionalProperties"] is False
    # Inside anyOf only value validations: closing there would reject the parent's fields.
    inner = strictify(
        {
            "type": "object",
            "properties": {"a": {}, "b": {}},
            "anyOf": [{"properties": {"a": {"type": "string"}}}],
        }
    )
    assert "additionalProperties" not in inner["anyOf"][0]


# --- core schemas -----------------------------------------------------------------------


def test_core_schema_versions() -> None:
    assert newest() == CoreSchemas.newest()
    assert CoreSchemas("v1.33.2").folder.name == "v1.33.0-local-strict"
    with pytest.raises(UnknownKubernetesVersion, match=r"available: 1\.\d+, "):
        CoreSchemas("1.99")


AGREEMENT = [
    (NAMESPACE, True),
    (RESOURCE_QUOTA, True),
    (LIMIT_RANGE, True),
    (NETWORK_POLICY, True),
    (ROLE_BINDING, True),
    (PRIORITY_CLASS, True),
    (CONFIG_MAP, True),
    (changed(CONFIG_MAP, "data.n", 1), False),
    (changed(RESOURCE_QUOTA, "spec.hard.cpu", True), False),
    (changed(ROLE_BINDING, "roleRef", delete=True), False),
    (changed(NETWORK_POLICY, "spec.policyTypes", "Ingress"), False),
    (changed(LIMIT_RANGE, "spec.limits.0.maxx", {}), False),
    (changed(PRIORITY_CLASS, "value", 1.5), False),
    (changed(NAMESPACE, "spec", {"finalizers": ["kubernetes"]}), True),
    (changed(NAMESPACE, "metadata.labels.x", None), True),
]


@pytest.mark.parametrize("obj,valid", AGREEMENT)
def test_agrees_with_kubernetes_validate(core_only: Validator, obj: dict, valid: bool) -> None:
    try:
        kubernetes_validate.validate(obj, K8S, strict=True)
        theirs = True
    except kubernetes_validate.ValidationError:
        theirs = False
    ours = core_only.validate(obj) == []
    assert (ours, theirs) == (valid, valid)


# --- the planned path (a kind seen before) words every object like the full path -------------


def _variants(obj: dict) -> list[dict]:
    """``obj`` unchanged, with a null, an unknown field, a wrong type and no metadata name."""
    out = [obj, {**obj, "spec": None}]
    for key, value in (("labels", None), ("name", None), ("name", ""), ("bogus", 1)):
        out.append({**obj, "metadata": {**obj["metadata"], key: value}})
    if isinstance(obj.get("spec"), dict):
        first = next(iter(obj["spec"]))
        out.append({**obj, "spec": {**obj["spec"], first: None}})
        out.append({**obj, "spec": {**obj["spec"], first: [True]}})
        out.append({**obj, "spec": {**obj["spec"], "unknownField": "x"}})
    out.append({**obj, "metadata": {**obj["metadata"], "namespace": "x"}})
    out.append({k: v for k, v in obj.items() if k != "metadata"})
    return out


@pytest.mark.parametrize(
    "obj",
    [NAMESPACE, RESOURCE_QUOTA, LIMIT_RANGE, CLUSTER_QUEUE, RESOURCE_FLAVOR, NODE_POOL],
    ids=lambda o: o["kind"],
)
def test_planned_path_equals_full_path(crds: CrdIndex, obj: dict) -> None:
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    assert warm.validate(obj) == warm.validate(obj) == []  # seen twice: the kind has a plan
    assert warm._plans
    for variant in _variants(obj):
        cold = Validator(crds, K8S, cel=True, webhooks=True)
        assert warm.validate(variant) == cold._validate(variant), variant


def test_list_map_keys_compare_like_json(crds: CrdIndex) -> None:
    from gpuplan.validate.listmaps import ListMapKeys

    keys = ListMapKeys({}, ["name", "port"], None)
    keys.validate([{"name": "a", "port": 1}, {"name": "a", "port": 1.0}])  # 1 and 1.0 differ
    keys.validate([{"name": "a", "port": 1}, {"name": "a", "port": True}])
    keys.validate([{"name": "a", "port": 1}, {"name": "a", "port": "1"}])
    with pytest.raises(ValueError, match=r"^1\|duplicate entry with name=\"a\", port=1 "):
        keys.validate([{"name": "a", "port": 1}, {"name": "a", "port": 1}])
    with pytest.raises(ValueError, match=r"^1\|"):
        keys.validate([{"name": {"x": [1]}}, {"name": {"x": [1]}}])
