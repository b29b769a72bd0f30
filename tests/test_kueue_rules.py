"""Kueue's admission rules (../shared/facts/kueue-admission-rules.md) against what gpuplan emits.

Rules an input can break are checks with their own tests (tests/test_checks.py). The rest are
impossible by construction; RULES says why for each, and the tests prove it on every fleet the
repository renders (the example fleet and every golden case): Kueue's schema, CEL rules and
webhook rules find nothing, and the structural properties behind each rule hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuplan.validate import CrdIndex, Validator, webhook_problems
from tests.conftest import PROJECT

CASES = sorted((PROJECT / "tests" / "cases").glob("*/expected"))
RULES = {
    "flavors per resource group (1-64)": "one flavor per pool with quota; check_resource_group_size",
    "covered resources in the same order in every flavor": "every flavor lists covered_resources() in one order",
    "a resource in at most one group": "gpuplan emits exactly one resource group per ClusterQueue",
    "a flavor in at most one group": "one group, and a pool appears once per allocation (duplicate quota error)",
    "each flavor has exactly the covered resources": "zero quota where a pool has none of a resource",
    "limits need a cohort": "check_limits_need_cohort on the input",
    "lendingLimit <= nominalQuota": "check_lending_within_nominal; cpu/memory limits derive from GPU limits",
    "no negative quotas": "quota fields are >= 0 in the model",
    "fair-sharing weight > 1n": "weight is an integer >= 1 in the model",
    "qualified resource names": "resource names come from the device plugin's naming, '+me' refused",
    "ResourceFlavor <= 8 labels and tolerations": "check_flavor_size",
    "namespaceSelector valid": "In over DNS-1123 namespace names, never empty",
    "reclaimWithinCohort Never with borrowWithinCohort": "borrowWithinCohort.policy is always Never",
}


def _kueue_objects() -> list[dict]:
    out = []
    for folder in [PROJECT / "output", *CASES]:
        for path in sorted(folder.rglob("*.yaml")):
            obj = yaml.safe_load(path.read_text())
            if str(obj.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
                out.append(obj)
    return out


def test_every_rule_left_to_a_check_names_a_registered_check() -> None:
    import re

    from gpuplan.check.registry import CHECKS

    registered = {fn.__name__ for fn in CHECKS}
    named = {name for reason in RULES.values() for name in re.findall(r"check_\w+", reason)}
    assert named and named <= registered, named - registered


def test_no_webhook_rule_fires_on_anything_gpuplan_renders() -> None:
    objects = _kueue_objects()
    assert {o["kind"] for o in objects} >= {
        "ClusterQueue",
        "ResourceFlavor",
        "LocalQueue",
        "Cohort",
        "WorkloadPriorityClass",
    }
    assert {
        (o["kind"], o["metadata"]["name"]): webhook_problems(o)
        for o in objects
        if webhook_problems(o)
    } == {}


def test_no_schema_or_cel_rule_fires_on_anything_gpuplan_renders(crds_dir: Path) -> None:
    validator = Validator(CrdIndex.load(crds_dir), "1.33", cel=True, webhooks=True)
    problems = {(o["kind"], o["metadata"]["name"]): validator.validate(o) for o in _kueue_objects()}
    assert {k: v for k, v in problems.items() if v} == {}
    assert not validator.skipped_rules


@pytest.mark.parametrize(
    "queue",
    [o for o in _kueue_objects() if o["kind"] == "ClusterQueue"],
    ids=lambda o: o["metadata"]["name"],
)
def test_cluster_queue_structure(queue: dict) -> None:
    groups = queue["spec"]["resourceGroups"]
    assert len(groups) == 1
    covered = groups[0]["coveredResources"]
    assert covered[:2] == ["cpu", "memory"] and len(set(covered)) == len(covered)
    names = [f["name"] for f in groups[0]["flavors"]]
    assert len(set(names)) == len(names)
    for flavor in groups[0]["flavors"]:
        assert [r["name"] for r in flavor["resources"]] == covered
    assert queue["spec"]["namespaceSelector"]["matchExpressions"][0]["values"]
