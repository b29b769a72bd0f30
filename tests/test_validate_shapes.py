"""ClusterQueue schemas specialised per shape (gpuplan.validate.shapes) pass only what the full path passes.

A shape's schema takes over from the gated schema and the quick test's name comparison once the
shape has been seen often enough; every verdict must stay the full path's, words and all.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.validate import CrdIndex, Validator
from gpuplan.validate import shapes as shapes_module
from gpuplan.validate.shapes import (
    MAX_SHAPES,
    SIGHTINGS,
    USUAL_WEIGHT,
    queue_shape,
    specialised_queue,
)
from gpuplan.validate.webhooks import (
    plain_cluster_queue,
    signed_quantity,
    validate_cluster_queue,
)
from tests.test_validate_engine import changed
from tests.test_validate_fastpath import (
    BAD_QUEUES,
    CONDITION,
    FLAVOR,
    GOOD_QUEUES,
    QUEUE,
    _mutated,
    _reshuffled,
)

K8S = "1.33"
GROUP_PATH = "spec.resourceGroups.0"


def _shaped(crds: CrdIndex, *samples: dict, webhooks_only: bool = False) -> Validator:
    """A validator that has seen each sample (its shape) often enough to compile the shape's schema."""
    warm = Validator(crds, K8S, cel=not webhooks_only, webhooks=True)
    for sample in samples:
        for _ in range(SIGHTINGS + 1):
            warm.validate(sample)
    return warm


def _plan_shapes(warm: Validator, obj: dict) -> Any:
    return warm._plans[(obj["apiVersion"], "ClusterQueue")].shapes


def test_a_shape_gets_its_schema_once_seen_often_enough(crds: CrdIndex) -> None:
    # The first two sights take the full path (the second plans the kind): not counted.
    for seen, compiled in ((SIGHTINGS, False), (SIGHTINGS + 1, True)):
        warm = Validator(crds, K8S, cel=True, webhooks=True)
        for _ in range(seen):
            assert warm.validate(QUEUE) == []
        assert (_plan_shapes(warm, QUEUE).validator(QUEUE) is not None) is compiled


@pytest.mark.parametrize("name", sorted(BAD_QUEUES))
def test_bad_queues_of_a_known_shape_get_the_full_paths_problems(crds: CrdIndex, name: str) -> None:
    bad = BAD_QUEUES[name]
    plain = GOOD_QUEUES["v1beta1"] if bad["apiVersion"].endswith("v1beta1") else QUEUE
    for webhooks_only in (False, True):
        warm = _shaped(crds, plain, bad, webhooks_only=webhooks_only)
        assert _plan_shapes(warm, plain).validator(plain) is not None
        fresh = Validator(crds, K8S, cel=not webhooks_only, webhooks=True)
        expected = fresh._validate(bad)
        assert expected or webhooks_only, name
        assert warm.validate(bad) == expected
        # Right after a run of the plain shape: tried on that shape's schema first.
        for _ in range(shapes_module._STREAK + 1):
            assert warm.validate(plain) == []
        assert _plan_shapes(warm, plain)._streak >= shapes_module._STREAK
        assert warm.validate(bad) == expected


@pytest.mark.parametrize("name", sorted(GOOD_QUEUES))
def test_good_queues_of_a_known_shape_pass(crds: CrdIndex, name: str) -> None:
    good = GOOD_QUEUES[name]
    warm = _shaped(crds, QUEUE, good)
    assert warm.validate(good) == []
    for _ in range(shapes_module._STREAK + 1):  # (tried on QUEUE's shape's schema first)
        assert warm.validate(QUEUE) == []
    assert warm.validate(good) == []


def test_only_usual_names_get_a_schema(crds: CrdIndex) -> None:
    gated: dict[str, Any] = {"properties": {"spec": {"properties": {"resourceGroups": {}}}}}
    a = ("a",)
    for shape in [
        ((("cpu", "cpu"), a),),  # a resource twice
        ((("cpu",), a), (("cpu",), ("b",))),  # in two groups
        ((("CPU!",), a),),  # no qualified name
        (((7,), a),),
        (((), a),),  # a group covering nothing
        ((tuple(f"r{i}" for i in range(257)), a),),  # more than Kueue allows
        ((("cpu",), ("a", "a")),),  # a flavor twice
        ((("cpu",), a), (("memory",), a)),  # in two groups
        ((("cpu",), (7,)),),
        ((("cpu",), tuple(f"f{i}" for i in range(257))),),  # more flavors than Kueue allows
        ((("a", "b", "c"), tuple(f"f{i}" for i in range(171))),),  # 513 flavor resources
    ]:
        assert specialised_queue(gated, shape) is None, shape
    assert specialised_queue({}, ((("cpu",), a),)) is None  # not laid out as Kueue's schema
    assert queue_shape(changed(QUEUE, "spec.resourceGroups", [])) is None
    assert queue_shape(changed(QUEUE, "spec.resourceGroups", "x")) is None
    assert queue_shape(changed(QUEUE, "spec.resourceGroups.0", "x")) is None
    warm = _shaped(crds, QUEUE)
    for unhashable in (
        changed(QUEUE, "spec.resourceGroups.0.coveredResources.0", {"a": 1}),
        changed(QUEUE, f"{GROUP_PATH}.flavors.0.name", ["pool-0"]),
    ):
        assert _plan_shapes(warm, QUEUE).validator(unhashable) is None
        expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(unhashable)
        assert warm.validate(unhashable) == expected


def test_shapes_are_compiled_for_so_many_kinds_of_queue_at_most(
    crds: CrdIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shapes_module, "SIGHTINGS", 1)
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    warm.validate(QUEUE), warm.validate(QUEUE)
    found = 0
    for i in range(MAX_SHAPES + 5):
        queue = changed(QUEUE, "spec.resourceGroups.0.coveredResources.0", f"r{i}")
        for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
            flavor["resources"][0]["name"] = f"r{i}"
        assert warm.validate(queue) == []
        found += _plan_shapes(warm, queue).validator(queue) is not None
    assert found == MAX_SHAPES  # (QUEUE's two sights took the full path: no shape of its own)


def test_a_shapes_schema_passes_only_what_the_gate_and_quick_test_pass(crds: CrdIndex) -> None:
    rng = random.Random(20261124)
    samples = [QUEUE, *GOOD_QUEUES.values(), *BAD_QUEUES.values()]
    warm = _shaped(crds, QUEUE, GOOD_QUEUES["v1beta1"])
    fresh = Validator(crds, K8S, cel=True, webhooks=True)
    accepted = 0
    for sample in samples:
        for _ in range(60):
            obj: Any = _reshuffled(rng, _mutated(rng, sample) if rng.random() < 0.3 else sample)
            if rng.random() < 0.2:  # the names of a flavor's resources renamed or retyped
                obj = _renamed(rng, obj)
            assert warm.validate(obj) == fresh._validate(obj), obj
            api_version = obj.get("apiVersion")
            plan = (
                warm._plans.get((api_version, "ClusterQueue")) if type(api_version) is str else None
            )
            shaped = plan.shapes.validator(obj) if plan is not None else None
            if shaped is None or not shaped.is_valid(obj):
                continue
            accepted += 1
            assert plan.gated.is_valid(obj), obj
            assert plain_cluster_queue(obj, True), obj
            assert validate_cluster_queue(obj) == [], obj
    assert accepted > 50  # exercised, not only compiled


def _renamed(rng: random.Random, queue: Any) -> Any:
    """A copy of a queue with one resource of one flavor renamed (or its name retyped)."""
    queue = copy.deepcopy(queue)
    try:
        resources = rng.choice(rng.choice(queue["spec"]["resourceGroups"])["flavors"])["resources"]
        rng.choice(resources)["name"] = rng.choice(["gpu", "cpu", "memory", 7, None, "x/"])
    except (KeyError, TypeError, IndexError):
        pass
    return queue


def test_a_flavor_twice_in_a_known_shape_is_found(crds: CrdIndex) -> None:
    warm = _shaped(crds, QUEUE)
    second = changed(
        QUEUE,
        "spec.resourceGroups",
        [
            *QUEUE["spec"]["resourceGroups"],
            {
                "coveredResources": ["example.com/x"],
                "flavors": [
                    {
                        "name": "pool-0",
                        "resources": [{"name": "example.com/x", "nominalQuota": "1"}],
                    }
                ],
            },
        ],
    )
    warm = _shaped(
        crds, QUEUE, second, changed(second, "spec.resourceGroups.1.flavors.0.name", "x")
    )
    assert _plan_shapes(warm, second).validator(second) is None  # a flavor twice: no schema
    expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(second)
    assert expected and warm.validate(second) == expected
    lending = changed(second, f"{FLAVOR}.resources.0.lendingLimit", "30")
    assert warm.validate(lending) == Validator(crds, K8S, cel=True, webhooks=True)._validate(
        lending
    )


# The fields the restated rules read (gpuplan.validate.restate), and values for them.
_RULE_FIELDS = {
    "spec.flavorFungibility.preference": ["BorrowingOverPreemption", "PreemptionOverBorrowing"],
    "spec.flavorFungibility.whenCanBorrow": ["MayStopSearch", "TryNextFlavor"],
    "spec.flavorFungibility.whenCanPreempt": ["MayStopSearch", "TryNextFlavor"],
    "spec.preemption.reclaimWithinCohort": ["Never", "LowerPriority", "Any"],
    "spec.preemption.borrowWithinCohort.policy": ["Never", "LowerPriority"],
    "spec.preemption.borrowWithinCohort": [{}],
    "spec.cohortName": ["all"],
    f"{FLAVOR}.resources.0.borrowingLimit": ["1"],
}


def test_the_gate_proves_the_rules_it_restates(crds: CrdIndex) -> None:
    from gpuplan.validate.cel import compiled_rules

    rng = random.Random(20261126)
    warm = _shaped(crds, QUEUE)
    plan = warm._plans[(QUEUE["apiVersion"], "ClusterQueue")]
    assert plan.cel_free  # every rule of the CRD proven by the gate and the quick test
    rules = compiled_rules(plan.crd_version)
    fresh = Validator(crds, K8S, cel=True, webhooks=True)
    gated = 0
    for _ in range(400):
        obj = copy.deepcopy(QUEUE)
        for path, values in _RULE_FIELDS.items():
            roll = rng.random()
            if roll < 0.12:
                obj = _without(obj, path)
            elif roll < 0.5:
                obj = _with(obj, path, rng.choice(values))
        assert warm.validate(obj) == fresh._validate(obj), obj
        if not (plan.gated.is_valid(obj) and plain_cluster_queue(obj, True)):
            continue
        gated += 1
        rules.prove_first = False  # (on the instance: the interpreter alone)
        try:
            assert rules.check(obj) == ([], []), obj
        finally:
            del rules.prove_first
    assert gated > 40


def _without(obj: dict, path: str) -> dict:
    """``obj`` without the field at ``path``, if it is there."""
    try:
        return changed(obj, path, delete=True)
    except (KeyError, TypeError):
        return obj


def _with(obj: dict, path: str, value: Any) -> dict:
    """``obj`` with the field at ``path`` set, if its parent is there."""
    try:
        return changed(obj, path, copy.deepcopy(value))
    except (KeyError, TypeError):
        return obj


def test_the_gate_requires_every_default() -> None:
    from gpuplan.validate.restate import require_defaults

    openapi = {
        "properties": {
            "spec": {
                "properties": {
                    "a": {"default": 1},
                    "b": {"items": {"properties": {"c": {"default": "x"}, "d": {}}}},
                    "e": {},
                }
            }
        }
    }
    schema: dict[str, Any] = {
        "properties": {
            "spec": {
                "required": ["e"],
                "properties": {
                    "a": {},
                    "b": {"items": {"properties": {"c": {}, "d": {}}}},
                    "e": {},
                },
            }
        }
    }
    assert require_defaults(schema, openapi)
    spec = schema["properties"]["spec"]
    assert spec["required"] == ["a", "e"]
    assert spec["properties"]["b"]["items"]["required"] == ["c"]
    # A default with no place to be required in the JSON Schema: the gate proves nothing.
    assert not require_defaults({"properties": {"spec": {"properties": {}}}}, openapi)
    assert not require_defaults({"properties": {"spec": {}}}, openapi)
    assert not require_defaults({}, {"items": {"default": {}}})


@given(
    st.from_regex(r"\A[-+]?[0-9]{0,3}(\.[0-9]{0,12})?([KMGTPE]i|[numkMGTPE]|e-?[0-9]{1,2})?\Z")
    | st.sampled_from(["0", "0.", "1n", "2n", "0.000000001", "0.0000000011", "1u", "01", ".5"])
)
def test_the_usual_weights_are_weights_the_webhook_takes(text: str) -> None:
    from gpuplan.validate.webhooks import _weight_error_of

    if jsonschema_rs.Draft202012Validator(USUAL_WEIGHT).is_valid(text):
        assert _weight_error_of(text) is None, text
        assert signed_quantity(text) is not None, text


_CHECKS = "spec.admissionChecksStrategy"


@pytest.mark.parametrize(
    ("obj", "wrong"),
    [
        (
            changed(QUEUE, _CHECKS, {"admissionChecks": [{"name": "c", "onFlavors": ["pool-1"]}]}),
            False,
        ),
        (
            changed(QUEUE, _CHECKS, {"admissionChecks": [{"name": "c", "onFlavors": ["nope"]}]}),
            True,
        ),
        (changed(QUEUE, _CHECKS, {"admissionChecks": [{"name": "c"}, {"name": "c"}]}), True),
        (changed(QUEUE, "status", {"conditions": [CONDITION]}), False),
        (changed(QUEUE, "status", {"conditions": [CONDITION, CONDITION]}), True),
        (changed(QUEUE, "spec.fairSharing.weight", "0"), False),
        (changed(QUEUE, "spec.fairSharing.weight", 0), False),
        (changed(QUEUE, "spec.fairSharing.weight", 2), False),
        (changed(QUEUE, "spec.fairSharing.weight", -2), True),
        (changed(QUEUE, "spec.fairSharing.weight", "0.5"), False),  # (not the usual: the rules)
        (changed(QUEUE, "spec.fairSharing.weight", "1u"), False),
        (changed(QUEUE, "spec.fairSharing.weight", "0.0000000001"), True),
        (changed(QUEUE, "spec.fairSharing.weight", "1e-10"), True),
        (changed(QUEUE, "spec.fairSharing.weight", "1E"), False),  # (not the usual: the rules)
        (changed(QUEUE, "spec.fairSharing.weight", "-1Ei"), True),
    ],
    ids=[
        "admission check on a flavor",
        "admission check on no flavor",
        "admission check twice",
        "status",
        "status with a condition twice",
        "weight 0",
        "integer weight 0",
        "integer weight",
        "negative integer weight",
        "weight below 1",
        "weight of 1u",
        "weight below 1n",
        "weight below 1n in exponent",
        "weight in exa",
        "negative weight in exbi",
    ],
)
def test_fields_off_the_usual_shape_get_the_full_paths_verdict(
    crds: CrdIndex, obj: dict, wrong: bool
) -> None:
    warm = _shaped(crds, QUEUE)
    assert _plan_shapes(warm, obj).validator(obj) is not None  # the same shape
    expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(obj)
    assert bool(expected) is wrong
    assert warm.validate(obj) == expected


def test_runs_and_changes_of_shape_keep_the_full_paths_verdicts(crds: CrdIndex) -> None:
    # The schema of the queues before is tried first (shapes._STREAK in a row): an object of
    # another shape, or a bad one of the same shape, must still get the full path's verdict.
    other = changed(QUEUE, "spec.resourceGroups.0.coveredResources", ["cpu", "memory"])
    for flavor in other["spec"]["resourceGroups"][0]["flavors"]:
        flavor["resources"] = flavor["resources"][:2]
    samples = [QUEUE, other, *(BAD_QUEUES[name] for name in sorted(BAD_QUEUES)[:12])]
    warm = _shaped(crds, QUEUE, other)
    fresh = Validator(crds, K8S, cel=True, webhooks=True)
    rng = random.Random(20261127)
    guessed = 0
    for _ in range(300):
        obj = rng.choice(samples[:2]) if rng.random() < 0.7 else rng.choice(samples)
        shapes = _plan_shapes(warm, QUEUE)
        guessed += shapes._streak >= shapes_module._STREAK
        assert warm.validate(obj) == fresh._validate(obj), obj
    assert guessed > 20
