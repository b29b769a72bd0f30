"""Tests of Kueue's admission-webhook rules (gpuplan.validate.webhooks); no CRDs needed."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest

from gpuplan.validate import Problem, Validator, webhook_problems
from gpuplan.validate.webhooks import (
    label_value_error,
    qualified_name_error,
    signed_quantity,
    validate_cluster_queue,
    validate_cohort,
    validate_resource_flavor,
)

K8S = "1.33"
RG = "spec.resourceGroups"


def cluster_queue(version: str = "v1beta2") -> dict:
    """A valid ClusterQueue with two resource groups."""
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohortName" if version == "v1beta2" else "cohort": "gpu",
            "namespaceSelector": {
                "matchLabels": {"gpuplan.io/tenant": "team-a"},
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}
                ],
            },
            "fairSharing": {"weight": "1"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "96"},
                                {"name": "memory", "nominalQuota": "1Ti"},
                            ],
                        }
                    ],
                },
                {
                    "coveredResources": ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": 8,
                                    "borrowingLimit": 0,
                                    "lendingLimit": 8,
                                },
                                {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "0"},
                            ],
                        },
                        {
                            "name": "a100",
                            "resources": [
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": "4",
                                    "lendingLimit": "2",
                                },
                                {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 14},
                            ],
                        },
                    ],
                },
            ],
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": "prov", "onFlavors": ["h100"]}]
            },
        },
    }


def cohort() -> dict:
    """A valid Cohort with a parent."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "gpu"},
        "spec": {
            "parentName": "org",
            "fairSharing": {"weight": "0.5"},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": 16,
                                    "borrowingLimit": 8,
                                    "lendingLimit": 32,
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    }


def resource_flavor() -> dict:
    """A valid ResourceFlavor."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {
            "nodeLabels": {"gpuplan.io/pool": "h100", "nvidia.com/gpu.product": ""},
            "nodeTaints": [
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "value": "x", "effect": "NoExecute"},
            ],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists"},
                {"operator": "Exists"},
            ],
        },
    }


def edit(obj: dict, change) -> dict:
    """A deep copy of ``obj`` after ``change(spec)``."""
    out = copy.deepcopy(obj)
    change(out["spec"])
    return out


def gpu_resources(spec: dict, flavor: int = 0) -> list[dict]:
    """The resources of one flavor of the GPU group."""
    return spec["resourceGroups"][1]["flavors"][flavor]["resources"]


# --- valid objects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [cluster_queue(), cluster_queue("v1beta1"), cohort(), resource_flavor()],
    ids=lambda o: o["kind"] + o["apiVersion"],
)
def test_valid_objects_pass(obj: dict) -> None:
    assert webhook_problems(obj) == []


def test_other_kinds_have_no_webhook() -> None:
    local_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "a"},
        "spec": {"clusterQueue": "@"},
    }
    assert webhook_problems(local_queue) == []
    other = {**cluster_queue(), "apiVersion": "example.com/v1"}
    other["spec"]["resourceGroups"][0]["coveredResources"][0] = "@cpu"
    assert webhook_problems(other) == []
    assert webhook_problems(["not", "an", "object"]) == []


# --- ClusterQueue: one wrong thing each ---------------------------------------------------


def test_resources_out_of_order() -> None:
    def swap(spec: dict) -> None:
        resources = gpu_resources(spec, 1)
        resources.reverse()

    assert validate_cluster_queue(edit(cluster_queue(), swap)) == [
        Problem(
            f"{RG}[1].flavors[1].resources[0].name",
            'must match the name in coveredResources[0] ("nvidia.com/gpu"), in the same '
            'order (got "nvidia.com/mig-1g.10gb")',
        ),
        Problem(
            f"{RG}[1].flavors[1].resources[1].name",
            'must match the name in coveredResources[1] ("nvidia.com/mig-1g.10gb"), in the '
            'same order (got "nvidia.com/gpu")',
        ),
    ]


def test_flavor_misses_a_covered_resource() -> None:
    def drop(spec: dict) -> None:
        gpu_resources(spec, 1).pop()

    assert validate_cluster_queue(edit(cluster_queue(), drop)) == [
        Problem(
            f"{RG}[1].flavors[1].resources",
            "must list exactly the coveredResources (nvidia.com/gpu, nvidia.com/mig-1g.10gb): "
            "missing nvidia.com/mig-1g.10gb",
        )
    ]


def test_flavor_has_a_resource_not_covered() -> None:
    def rename(spec: dict) -> None:
        gpu_resources(spec, 0)[1]["name"] = "nvidia.com/mig-2g.20gb"

    problems = validate_cluster_queue(edit(cluster_queue(), rename))
    assert [p.path for p in problems] == [
        f"{RG}[1].flavors[0].resources",
        f"{RG}[1].flavors[0].resources[1].name",
    ]
    assert "not covered nvidia.com/mig-2g.20gb" in problems[0].message


def test_lending_limit_above_nominal_quota() -> None:
    def lend(spec: dict) -> None:
        gpu_resources(spec, 1)[0]["lendingLimit"] = "5"

    assert validate_cluster_queue(edit(cluster_queue(), lend)) == [
        Problem(
            f"{RG}[1].flavors[1].resources[0].lendingLimit",
            'must be less than or equal to the nominalQuota ("5" > "4")',
        )
    ]


def test_lending_limit_compares_quantities_not_text() -> None:
    def lend(spec: dict) -> None:
        spec["resourceGroups"][0]["flavors"][0]["resources"][1]["lendingLimit"] = "1024Gi"

    assert validate_cluster_queue(edit(cluster_queue(), lend)) == []  # 1024Gi == 1Ti

    def more(spec: dict) -> None:
        spec["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "96001m"

    assert [p.path for p in validate_cluster_queue(edit(cluster_queue(), more))] == [
        f"{RG}[0].flavors[0].resources[0].lendingLimit"
    ]


def test_resource_in_two_groups() -> None:
    def duplicate(spec: dict) -> None:
        spec["resourceGroups"][1]["coveredResources"][1] = "cpu"
        gpu_resources(spec, 0)[1]["name"] = "cpu"
        gpu_resources(spec, 1)[1]["name"] = "cpu"

    assert validate_cluster_queue(edit(cluster_queue(), duplicate)) == [
        Problem(
            f"{RG}[1].coveredResources[1]",
            f'duplicate resource "cpu": already covered at {RG}[0].coveredResources[0]',
        )
    ]


def test_flavor_in_two_groups() -> None:
    def duplicate(spec: dict) -> None:
        spec["resourceGroups"][1]["flavors"][1]["name"] = "default"

    assert validate_cluster_queue(edit(cluster_queue(), duplicate)) == [
        Problem(
            f"{RG}[1].flavors[1].name", f'duplicate flavor "default": already in {RG}[0].flavors[0]'
        )
    ]


def test_invalid_resource_name() -> None:
    def bad(spec: dict) -> None:
        spec["resourceGroups"][0]["coveredResources"][0] = "@cpu"
        spec["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = "@cpu"

    [problem] = validate_cluster_queue(edit(cluster_queue(), bad))
    assert problem.path == f"{RG}[0].coveredResources[0]"
    assert problem.message.startswith("must be a qualified name") and '"@cpu"' in problem.message


@pytest.mark.parametrize("field", ["nominalQuota", "borrowingLimit", "lendingLimit"])
@pytest.mark.parametrize("value", [-1, "-1", "-500m", "-0.5Gi"])
def test_negative_quota(field: str, value) -> None:
    def negative(spec: dict) -> None:
        resource = gpu_resources(spec, 0)[0]
        resource[field] = value
        if field == "nominalQuota":
            del resource["lendingLimit"]  # else also above the (negative) nominal quota

    problems = validate_cluster_queue(edit(cluster_queue(), negative))
    where = f"{RG}[1].flavors[0].resources[0].{field}"
    assert Problem(where, f"must not be negative (got {value!r})".replace("'", '"')) in problems
    assert {p.path for p in problems} == {where}


def test_zero_quotas_and_limits_are_fine() -> None:
    def zero(spec: dict) -> None:
        gpu_resources(spec, 0)[0].update(nominalQuota=0, borrowingLimit="0", lendingLimit="0")

    assert validate_cluster_queue(edit(cluster_queue(), zero)) == []


@pytest.mark.parametrize("field", ["borrowingLimit", "lendingLimit"])
def test_limits_need_a_cohort(field: str) -> None:
    def no_cohort(spec: dict) -> None:
        del spec["cohortName"]
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    resource.pop("borrowingLimit", None)
                    resource.pop("lendingLimit", None)
        gpu_resources(spec, 1)[0][field] = 1

    assert validate_cluster_queue(edit(cluster_queue(), no_cohort)) == [
        Problem(f"{RG}[1].flavors[1].resources[0].{field}", "must be nil when cohort is empty")
    ]


def test_v1beta1_cohort_field_counts() -> None:
    def no_cohort(spec: dict) -> None:
        del spec["cohort"]

    assert [
        p.message for p in validate_cluster_queue(edit(cluster_queue("v1beta1"), no_cohort))
    ] == ["must be nil when cohort is empty"] * 3


@pytest.mark.parametrize(
    "weight,message",
    [
        ("-1", 'must not be negative (got "-1")'),
        (-2, "must not be negative (got -2)"),
        (
            "1n",
            (
                "must be 0 or greater than 1n: a smaller weight collapses to zero in fair sharing "
                '(got "1n")'
            ),
        ),
        ("0.0000000001", None),
    ],
)
def test_fair_sharing_weight_rejected(weight, message) -> None:
    def set_weight(spec: dict) -> None:
        spec["fairSharing"]["weight"] = weight

    [problem] = validate_cluster_queue(edit(cluster_queue(), set_weight))
    assert problem.path == "spec.fairSharing.weight"
    assert message is None or problem.message == message


@pytest.mark.parametrize("weight", [0, "0", "2n", "1u", "1m", "0.5", 1, "1e-8"])
def test_fair_sharing_weight_accepted(weight) -> None:
    def set_weight(spec: dict) -> None:
        spec["fairSharing"]["weight"] = weight

    assert validate_cluster_queue(edit(cluster_queue(), set_weight)) == []


def _groups(groups: int, flavors: int, resources: int) -> list[dict]:
    """Resource groups of distinct flavors and resources."""
    out = []
    for g in range(groups):
        covered = [f"example.com/r{g}-{r}" for r in range(resources)]
        out.append(
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": f"f{g}-{f}",
                        "resources": [{"name": n, "nominalQuota": 1} for n in covered],
                    }
                    for f in range(flavors)
                ],
            }
        )
    return out


@pytest.mark.parametrize(
    "groups,flavors,resources,path,message",
    [
        (5, 52, 1, RG, "must have at most 256 flavors in total (got 260)"),
        (5, 1, 52, RG, "must have at most 256 coveredResources in total (got 260)"),
        (
            1,
            9,
            64,
            f"{RG}[0]",
            ("must have at most 512 flavor resources (flavors x resources) (got 576)"),
        ),
    ],
)
def test_size_limits(groups, flavors, resources, path, message) -> None:
    def big(spec: dict) -> None:
        spec["resourceGroups"] = _groups(groups, flavors, resources)
        del spec["admissionChecksStrategy"]

    assert validate_cluster_queue(edit(cluster_queue(), big)) == [Problem(path, message)]


@pytest.mark.parametrize("groups,flavors,resources", [(4, 64, 1), (4, 1, 64), (1, 8, 64)])
def test_size_limits_at_the_limit(groups, flavors, resources) -> None:
    def big(spec: dict) -> None:
        spec["resourceGroups"] = _groups(groups, flavors, resources)
        del spec["admissionChecksStrategy"]

    assert validate_cluster_queue(edit(cluster_queue(), big)) == []


def test_namespace_selector() -> None:
    def bad_key(spec: dict) -> None:
        spec["namespaceSelector"]["matchLabels"] = {"-team": "a"}

    [problem] = validate_cluster_queue(edit(cluster_queue(), bad_key))
    assert problem.path == "spec.namespaceSelector.matchLabels[-team]"
    assert problem.message.startswith("label key must be a qualified name")

    def no_values(spec: dict) -> None:
        spec["namespaceSelector"]["matchExpressions"][0]["values"] = []

    assert validate_cluster_queue(edit(cluster_queue(), no_values)) == [
        Problem(
            "spec.namespaceSelector.matchExpressions[0].values",
            "must be non-empty when operator is In",
        )
    ]

    def exists_with_values(spec: dict) -> None:
        spec["namespaceSelector"]["matchExpressions"][0]["operator"] = "Exists"

    assert [p.path for p in validate_cluster_queue(edit(cluster_queue(), exists_with_values))] == [
        "spec.namespaceSelector.matchExpressions[0].values"
    ]


def test_admission_check_on_unknown_flavor() -> None:
    def unknown(spec: dict) -> None:
        spec["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] = ["h100", "b200"]

    assert validate_cluster_queue(edit(cluster_queue(), unknown)) == [
        Problem(
            "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]",
            'must name a flavor of this ClusterQueue\'s resourceGroups (got "b200")',
        )
    ]


def test_malformed_values_are_left_to_the_schema() -> None:
    def odd(spec: dict) -> None:
        gpu_resources(spec, 0)[0]["nominalQuota"] = "eight"
        spec["resourceGroups"].append("not a group")
        spec["fairSharing"] = {"weight": True}

    assert validate_cluster_queue(edit(cluster_queue(), odd)) == []
    assert validate_cluster_queue({"kind": "ClusterQueue", "spec": []}) == []


# --- Cohort ---------------------------------------------------------------------------------


def test_cohort_may_lend_more_than_nominal() -> None:
    assert validate_cohort(cohort()) == []  # lendingLimit 32 > nominalQuota 16


@pytest.mark.parametrize("field", ["borrowingLimit", "lendingLimit"])
def test_cohort_limits_need_a_parent(field: str) -> None:
    def orphan(spec: dict) -> None:
        del spec["parentName"]
        resource = spec["resourceGroups"][0]["flavors"][0]["resources"][0]
        resource.pop("lendingLimit" if field == "borrowingLimit" else "borrowingLimit")

    assert validate_cohort(edit(cohort(), orphan)) == [
        Problem(f"{RG}[0].flavors[0].resources[0].{field}", "must be nil when parent is empty")
    ]


def test_cohort_shares_the_resource_group_rules() -> None:
    def bad(spec: dict) -> None:
        spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "-1"
        spec["fairSharing"]["weight"] = "-1"

    assert [p.path for p in validate_cohort(edit(cohort(), bad))] == [
        "spec.fairSharing.weight",
        f"{RG}[0].flavors[0].resources[0].nominalQuota",
    ]


def test_cohort_has_no_size_limits() -> None:
    def big(spec: dict) -> None:
        spec["resourceGroups"] = _groups(5, 52, 1)
        del spec["parentName"]

    assert validate_cohort(edit(cohort(), big)) == []


# --- ResourceFlavor --------------------------------------------------------------------


def test_invalid_node_label_key() -> None:
    def bad(spec: dict) -> None:
        spec["nodeLabels"]["@abc"] = "x"

    [problem] = validate_resource_flavor(edit(resource_flavor(), bad))
    assert problem.path == "spec.nodeLabels[@abc]"
    assert problem.message.startswith("label key must be a qualified name")


def test_invalid_node_label_value() -> None:
    def bad(spec: dict) -> None:
        spec["nodeLabels"]["gpuplan.io/pool"] = "h100 sxm"

    [problem] = validate_resource_flavor(edit(resource_flavor(), bad))
    assert problem.path == "spec.nodeLabels[gpuplan.io/pool]"
    assert problem.message.startswith("label value must be a label value")


def test_duplicate_taint() -> None:
    def bad(spec: dict) -> None:
        spec["nodeTaints"][1]["effect"] = "NoSchedule"

    assert validate_resource_flavor(edit(resource_flavor(), bad)) == [
        Problem(
            "spec.nodeTaints[1]",
            'duplicate taint with key "nvidia.com/gpu" and effect "NoSchedule" (first at [0])',
        )
    ]


def test_taint_key_and_value() -> None:
    def bad(spec: dict) -> None:
        spec["nodeTaints"][0]["key"] = "nvidia.com/"
        spec["nodeTaints"][1]["value"] = "-x"

    assert [p.path for p in validate_resource_flavor(edit(resource_flavor(), bad))] == [
        "spec.nodeTaints[0].key",
        "spec.nodeTaints[1].value",
    ]


def test_toleration_key() -> None:
    def bad(spec: dict) -> None:
        spec["tolerations"][0]["key"] = "Upper.Case/gpu"

    [problem] = validate_resource_flavor(edit(resource_flavor(), bad))
    assert problem.path == "spec.tolerations[0].key"
    assert "prefix" in problem.message


# --- helpers and the Validator hook -------------------------------------------------------


@pytest.mark.parametrize(
    "name,ok",
    [
        ("cpu", True),
        ("nvidia.com/gpu", True),
        ("a.b-c_d", True),
        ("x" * 63, True),
        ("@cpu", False),
        ("", False),
        ("x" * 64, False),
        ("/gpu", False),
        ("nvidia.com/", False),
        ("Nvidia.com/gpu", False),
        ("a/b/c", False),
        ("-a", False),
        (8, False),
    ],
)
def test_qualified_name(name, ok: bool) -> None:
    assert (qualified_name_error(name) is None) == ok


@pytest.mark.parametrize(
    "value,ok",
    [
        ("", True),
        ("h100", True),
        ("a.b_c-d", True),
        ("x" * 64, False),
        ("a b", False),
        ("-a", False),
    ],
)
def test_label_value(value: str, ok: bool) -> None:
    assert (label_value_error(value) is None) == ok


@pytest.mark.parametrize(
    "value,expected",
    [
        (8, Fraction(8)),
        ("-1", Fraction(-1)),
        ("+2", Fraction(2)),
        ("500m", Fraction(1, 2)),
        ("-1Mi", Fraction(-(2**20))),
        ("1ki", None),
        (0.5, Fraction(1, 2)),
        ("eight", None),
        (True, None),
        ("-", None),
        (None, None),
        ("1E", Fraction(10**18)),  # the exa suffixes (not an exponent without digits)
        ("-1.5Ei", Fraction(-3 * 2**59)),
        ("1e3E", None),
        ("E", None),
        ("2e3", Fraction(2000)),
    ],
)
def test_signed_quantity(value, expected) -> None:
    assert signed_quantity(value) == expected


def test_validator_runs_webhooks_when_asked() -> None:
    bad = edit(cluster_queue(), lambda spec: gpu_resources(spec, 1).reverse())
    assert Validator(None, K8S).validate(bad) == []
    paths = [p.path for p in Validator(None, K8S, webhooks=True).validate(bad)]
    assert paths == [
        f"{RG}[1].flavors[1].resources[0].name",
        f"{RG}[1].flavors[1].resources[1].name",
    ]


def test_validator_with_crds_cel_and_webhooks(crds_dir) -> None:
    from gpuplan.validate import CrdIndex

    validator = Validator(CrdIndex.load(crds_dir), K8S, cel=True, webhooks=True)
    for obj in (cluster_queue(), cluster_queue("v1beta1"), cohort(), resource_flavor()):
        assert validator.validate(obj) == [], obj["kind"]
    lend = edit(cluster_queue(), lambda spec: gpu_resources(spec, 1)[0].update(lendingLimit=9))
    assert validator.validate(lend) == [
        Problem(
            f"{RG}[1].flavors[1].resources[0].lendingLimit",
            'must be less than or equal to the nominalQuota (9 > "4")',
        )
    ]
