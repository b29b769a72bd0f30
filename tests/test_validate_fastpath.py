"""The fast path of a kind seen before gives the same problems as the full path, on bad objects too.

It differs from the full path in how it decides "nothing wrong": a schema refusing nulls in one pass
(gpuplan.validate.core), list-map keys checked in Python (gpuplan.validate.listmaps), simple CEL
rules proven in Python (gpuplan.validate.celfast) and a quick ClusterQueue webhook test
(gpuplan.validate.webhooks.plain_cluster_queue). Each of those may only ever say "fine" when the
full path would.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import cel
import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.validate import CrdIndex, Validator
from gpuplan.validate.cel import K8S_FUNCTIONS
from gpuplan.validate.celfast import compile_rule
from gpuplan.validate.core import core_schemas
from gpuplan.validate.listmaps import (
    ITEMS,
    VALUES,
    Trie,
    compile_unique,
    list_map_paths,
    unique_lists,
)
from gpuplan.validate.strict import LIST_MAP_KEYS
from gpuplan.validate.webhooks import plain_cluster_queue, validate_cluster_queue
from tests.test_validate_engine import changed
from tests.test_validate_nulls import _holds_null

K8S = "1.33"


# A ClusterQueue as gpuplan renders them: quotas as texts, no limits (plain_cluster_queue's shape).
QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "t1", "labels": {"app.kubernetes.io/managed-by": "gpuplan"}},
    "spec": {
        "cohortName": "all",
        "fairSharing": {"weight": "1"},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["t1"]}
            ]
        },
        "preemption": {
            "borrowWithinCohort": {"policy": "Never"},
            "reclaimWithinCohort": "Any",
            "withinClusterQueue": "LowerPriority",
        },
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": f"pool-{i}",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "24"},
                            {"name": "memory", "nominalQuota": "243200Mi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": str(i)},
                        ],
                    }
                    for i in range(3)
                ],
            }
        ],
    },
}


GROUP = "spec.resourceGroups.0"
FLAVOR = f"{GROUP}.flavors.0"
BAD_QUEUES = {
    "duplicate flavor": changed(QUEUE, f"{GROUP}.flavors.1.name", "pool-0"),
    "duplicate resource": changed(QUEUE, f"{FLAVOR}.resources.1.name", "cpu"),
    "resources out of order": changed(
        QUEUE,
        f"{FLAVOR}.resources",
        list(reversed(QUEUE["spec"]["resourceGroups"][0]["flavors"][0]["resources"])),
    ),
    "resource missing": changed(QUEUE, f"{FLAVOR}.resources.2", delete=True),
    # All resources in the covered order end to end, but one flavor has one too many: only
    # the count per flavor tells (and then the duplicate's list-map key and the webhook).
    "resources shifted between flavors": changed(
        changed(
            QUEUE,
            f"{FLAVOR}.resources",
            [
                *QUEUE["spec"]["resourceGroups"][0]["flavors"][0]["resources"],
                {"name": "cpu", "nominalQuota": "1"},
            ],
        ),
        f"{GROUP}.flavors.1.resources.0",
        delete=True,
    ),
    "negative quota": changed(QUEUE, f"{FLAVOR}.resources.0.nominalQuota", "-1"),
    "negative integer quota": changed(QUEUE, f"{FLAVOR}.resources.0.nominalQuota", -1),
    "negative borrowing": changed(QUEUE, f"{FLAVOR}.resources.0.borrowingLimit", "-1"),
    "borrowing without cohort": changed(
        changed(QUEUE, "spec.cohortName", delete=True),
        f"{FLAVOR}.resources.0.borrowingLimit",
        "1",
    ),
    "lending above nominal": changed(QUEUE, f"{FLAVOR}.resources.0.lendingLimit", "25"),
    "bad resource name": changed(QUEUE, f"{GROUP}.coveredResources.0", "CPU!"),
    "covered resource not a text": changed(QUEUE, f"{GROUP}.coveredResources.0", 7),
    "flavor name not a text": changed(QUEUE, f"{FLAVOR}.name", 7),
    "resource name not a text": changed(QUEUE, f"{FLAVOR}.resources.0.name", 7),
    "duplicate covered": changed(QUEUE, f"{GROUP}.coveredResources.1", "cpu"),
    "covered across groups": changed(
        QUEUE,
        "spec.resourceGroups",
        [
            *QUEUE["spec"]["resourceGroups"],
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "other", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
            },
        ],
    ),
    "negative weight": changed(QUEUE, "spec.fairSharing.weight", "-1"),
    "tiny weight": changed(QUEUE, "spec.fairSharing.weight", "1n"),
    "selector without values": changed(
        QUEUE, "spec.namespaceSelector.matchExpressions.0.values", []
    ),
    "selector bad value": changed(
        QUEUE, "spec.namespaceSelector.matchExpressions.0.values.0", "a b"
    ),
    "selector bad key": changed(QUEUE, "spec.namespaceSelector.matchExpressions.0.key", "-a"),
    "selector unknown operator": changed(
        QUEUE, "spec.namespaceSelector.matchExpressions.0.operator", "Gt"
    ),
    "selector Exists with values": changed(
        QUEUE, "spec.namespaceSelector.matchExpressions.0.operator", "Exists"
    ),
    "selector bad label": changed(QUEUE, "spec.namespaceSelector.matchLabels", {"a": "-b"}),
    "preference rule": changed(
        QUEUE, "spec.flavorFungibility.preference", "BorrowingOverPreemption"
    ),
    "reclaim rule": changed(
        changed(QUEUE, "spec.preemption.reclaimWithinCohort", "Never"),
        "spec.preemption.borrowWithinCohort.policy",
        "LowerPriority",
    ),
    # The rules on the defaulted object: reclaimWithinCohort and whenCanBorrow default to
    # Never and MayStopSearch.
    "reclaim rule by default": changed(
        changed(QUEUE, "spec.preemption.reclaimWithinCohort", delete=True),
        "spec.preemption.borrowWithinCohort.policy",
        "LowerPriority",
    ),
    "preference rule by default": changed(
        changed(QUEUE, "spec.flavorFungibility.preference", "BorrowingOverPreemption"),
        "spec.flavorFungibility.whenCanBorrow",
        delete=True,
    ),
    "a null": changed(QUEUE, f"{FLAVOR}.resources.0.nominalQuota", None),
    "unknown field": changed(QUEUE, f"{FLAVOR}.resources.0.extra", "x"),
    "unnamed": changed(QUEUE, "metadata.name", delete=True),
}


# Valid queues the gated fast schema refuses (or lets through) for the webhook's full rules.
GOOD_QUEUES = {
    "lending within nominal": changed(QUEUE, f"{FLAVOR}.resources.0.lendingLimit", "12"),
    "borrowing with a cohort": changed(QUEUE, f"{FLAVOR}.resources.0.borrowingLimit", "4"),
    "integer quota": changed(QUEUE, f"{FLAVOR}.resources.0.nominalQuota", 24),
    "signed quota": changed(QUEUE, f"{FLAVOR}.resources.0.nominalQuota", "+24"),
    "no cohort": changed(QUEUE, "spec.cohortName", delete=True),
    "selector Exists": changed(
        QUEUE,
        "spec.namespaceSelector.matchExpressions",
        [{"key": "kubernetes.io/metadata.name", "operator": "Exists"}],
    ),
    "selector matchLabels": changed(QUEUE, "spec.namespaceSelector", {"matchLabels": {"a": "b"}}),
    "no selector": changed(QUEUE, "spec.namespaceSelector", delete=True),
    # Defaults left to the API server: the gate requires them (restate.require_defaults).
    "no stop policy": changed(QUEUE, "spec.stopPolicy", delete=True),
    "no preemption": changed(QUEUE, "spec.preemption", delete=True),
    "no borrowing policy": changed(QUEUE, "spec.preemption.borrowWithinCohort", {}),
    "a preference": changed(
        changed(
            changed(QUEUE, "spec.flavorFungibility.preference", "BorrowingOverPreemption"),
            "spec.flavorFungibility.whenCanBorrow",
            "TryNextFlavor",
        ),
        "spec.flavorFungibility.whenCanPreempt",
        "TryNextFlavor",
    ),
    "reclaim never, borrowing never": changed(
        QUEUE, "spec.preemption.reclaimWithinCohort", "Never"
    ),
    "v1beta1": changed(
        changed(QUEUE, "apiVersion", "kueue.x-k8s.io/v1beta1"),
        "spec",
        {k if k != "cohortName" else "cohort": v for k, v in QUEUE["spec"].items()},
    ),
}
BAD_QUEUES["v1beta1 borrowing without cohort"] = changed(
    changed(GOOD_QUEUES["v1beta1"], "spec.cohort", delete=True),
    f"{FLAVOR}.resources.0.borrowingLimit",
    "1",
)


@pytest.mark.parametrize("name", sorted(GOOD_QUEUES))
def test_good_queues_off_the_plain_shape(crds: CrdIndex, name: str) -> None:
    good = GOOD_QUEUES[name]
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    assert warm.validate(good) == warm.validate(good) == []  # the full path, twice
    assert warm._plans
    assert warm.validate(good) == []  # the planned one


def test_a_plain_queue_is_plain(crds: CrdIndex) -> None:
    assert plain_cluster_queue(QUEUE)
    assert validate_cluster_queue(QUEUE) == []
    assert Validator(crds, K8S, cel=True, webhooks=True).validate(QUEUE) == []


@pytest.mark.parametrize("name", sorted(BAD_QUEUES))
def test_bad_queues_get_the_full_paths_problems(crds: CrdIndex, name: str) -> None:
    bad = BAD_QUEUES[name]
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    plain = GOOD_QUEUES["v1beta1"] if bad["apiVersion"].endswith("v1beta1") else QUEUE
    assert warm.validate(plain) == warm.validate(plain) == []  # seen twice: the kind has a plan
    assert warm._plans[(bad["apiVersion"], "ClusterQueue")].gated is not None
    expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(bad)
    assert expected, name  # each one is wrong somewhere
    assert warm.validate(bad) == expected
    if validate_cluster_queue(bad):
        assert not plain_cluster_queue(bad)
    # Without CEL the quick test alone stands for the flavors' resources (no count rule after it).
    warm = Validator(crds, K8S, webhooks=True)
    assert warm.validate(plain) == warm.validate(plain) == []
    assert warm.validate(bad) == Validator(crds, K8S, webhooks=True)._validate(bad)


def test_a_queue_of_another_apiversion_is_not_held_to_the_kinds_plan(crds: CrdIndex) -> None:
    # Plans are found by kind first; the apiVersion decides whether that plan applies.
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    assert warm.validate(QUEUE) == warm.validate(QUEUE) == []
    fresh = Validator(crds, K8S, cel=True, webhooks=True)
    for other in (
        GOOD_QUEUES["v1beta1"],
        BAD_QUEUES["v1beta1 borrowing without cohort"],
        changed(QUEUE, "apiVersion", "kueue.x-k8s.io/v9"),
    ):
        assert warm.validate(other) == fresh._validate(other)
    assert warm.validate(BAD_QUEUES["v1beta1 borrowing without cohort"])


_NAME_TEXT = st.text(alphabet="aZ0-_./\né", max_size=70) | st.sampled_from(
    ["a" * 63, "a" * 64, f"{'a' * 250}/b", f"{'a' * 252}/b", "a/b/c", "/a", "a/", "x.io/A_b-c.d"]
)


@given(_NAME_TEXT)
def test_the_gates_name_patterns_pass_only_what_the_webhook_passes(text: str) -> None:
    from gpuplan.validate.webhooks import (
        LABEL_VALUE_SCHEMA,
        QUALIFIED_NAME_SCHEMA,
        label_value_error,
        qualified_name_error,
    )

    if jsonschema_rs.Draft202012Validator(QUALIFIED_NAME_SCHEMA).is_valid(text):
        assert qualified_name_error(text) is None
    if jsonschema_rs.Draft202012Validator(LABEL_VALUE_SCHEMA).is_valid(text):
        assert label_value_error(text) is None
    # What gpuplan renders passes the gate (else every queue would take the slower path).
    assert jsonschema_rs.Draft202012Validator(QUALIFIED_NAME_SCHEMA).is_valid(
        "kubernetes.io/metadata.name"
    )


# --- list-map keys -----------------------------------------------------------------------------

SCHEMA_WITH_LISTS = {
    "type": "object",
    "properties": {
        "a": {"type": "array", LIST_MAP_KEYS: ["name"], "items": {"type": "object"}},
        "m": {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                LIST_MAP_KEYS: ["k", "v"],
                "items": {"type": "object"},
            },
        },
    },
}


def test_list_maps_found_by_their_paths() -> None:
    trie = list_map_paths(SCHEMA_WITH_LISTS)
    assert trie is not None
    assert unique_lists(
        {"a": [{"name": "x"}, {"name": "y"}], "m": {"q": [{"k": "1", "v": "2"}]}}, trie
    )
    assert not unique_lists({"a": [{"name": "x"}, {"name": "x"}]}, trie)
    assert not unique_lists({"m": {"q": [{"k": "1", "v": "2"}, {"k": "1", "v": "2"}]}}, trie)
    # Not strings: no verdict here (the keyword's careful walk decides).
    assert not unique_lists({"a": [{"name": 1}, {"name": 2}]}, trie)


def test_list_maps_elsewhere_keep_the_keyword() -> None:
    nested = {
        "type": "object",
        "anyOf": [{"properties": {"a": SCHEMA_WITH_LISTS["properties"]["a"]}}],
    }
    assert list_map_paths(nested) is None
    beside = {
        "type": "object",
        "properties": {"n": {"type": "string"}},
        "additionalProperties": SCHEMA_WITH_LISTS["properties"]["a"],
    }
    assert list_map_paths(beside) is None


def _shaped(rng: random.Random, trie: Trie, depth: int = 0) -> object:
    """A random value along a trie's paths: lists of entries with repeated, missing or odd keys."""
    checks, steps = trie
    roll = rng.random()
    if depth > 6 or roll < 0.08:
        return rng.choice([None, "x", 1, [], {}])
    if checks and (roll < 0.6 or not steps):
        keys = sorted({key for names, _, _ in checks for key in names})
        entries = [
            {
                key: rng.choice(["a", "b", "a", 1, True, None, ["a"]])
                for key in keys
                if rng.random() < 0.9
            }
            for _ in range(rng.randint(0, 4))
        ]
        return entries + [entries[0]] if entries and rng.random() < 0.2 else entries
    if ITEMS in steps and rng.random() < 0.5:
        return [_shaped(rng, steps[ITEMS], depth + 1) for _ in range(rng.randint(0, 3))]
    if VALUES in steps and rng.random() < 0.5:
        return {f"k{i}": _shaped(rng, steps[VALUES], depth + 1) for i in range(rng.randint(0, 3))}
    named = [step for step in steps if isinstance(step, str)]
    return {step: _shaped(rng, steps[step], depth + 1) for step in named if rng.random() < 0.8}


def test_written_list_checks_agree_with_the_generic_walk(crds: CrdIndex) -> None:
    rng = random.Random(20261124)
    tries = [list_map_paths(SCHEMA_WITH_LISTS)]
    for group, kind in crds.kinds():
        for crd in crds.lookup(group, kind):
            tries += [list_map_paths(version.json_schema) for version in crd.versions.values()]
    both = 0
    for trie in [t for t in tries if t is not None and t != ([], {})]:
        written = compile_unique(trie)
        assert written is not None
        for _ in range(40):
            value = _shaped(rng, trie)
            assert written(value) is unique_lists(value, trie), (trie, value)
            both += not written(value)
    assert len(tries) > 20 and both > 50  # refusals are exercised, not only passes


# --- schemas that refuse nulls ------------------------------------------------------------------

NULLABLE_SCHEMAS = [
    {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}},
        "additionalProperties": False,
    },
    {"type": "object"},  # free-form: nulls anywhere below
    {"properties": {"a": {"enum": ["x", None]}}},  # untyped root
    {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},  # Quantity's shape
    {"type": "array", "items": {"anyOf": [{"type": "null"}, {"type": "object"}]}},
    {
        "$ref": "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    },
    {"type": "object", "properties": {"a": {"not": {"type": "string"}}}},
]


# JSON values whose mapping keys are the schemas' own field names (else they rarely meet).
schema_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["", "x", "name"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "name", "labels", "b"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("schema", NULLABLE_SCHEMAS, ids=range(len(NULLABLE_SCHEMAS)))
@given(value=schema_values)
def test_without_nulls_accepts_exactly_the_null_free_values(schema: dict, value: object) -> None:
    core = core_schemas(K8S)
    plain = jsonschema_rs.Draft202012Validator(schema, registry=core.registry)
    fast = jsonschema_rs.Draft202012Validator(core.without_nulls(schema), registry=core.registry)
    assert fast.is_valid(value) == (plain.is_valid(value) and not _holds_null(value))


# --- CEL rules proven in Python -------------------------------------------------------------------


def _shipped_rules(crds: CrdIndex) -> list[str]:
    return sorted(
        {
            rule.rule
            for group, kind in crds.kinds()
            for crd in crds.lookup(group, kind)
            for version in crd.versions.values()
            for rule in version.cel_rules
        }
    )


def _value(rng: random.Random, names: list[str], literals: list[object], depth: int) -> object:
    """A random value shaped like what a rule reads: its field names, its literals, odd types."""
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return rng.choice([*literals, 0, 1, -1, 2, True, False, None, "", "x", "é", 1.0, 2**63])
    if roll < 0.6:
        return [_value(rng, names, literals, depth - 1) for _ in range(rng.randint(0, 3))]
    chosen = rng.sample(names, rng.randint(0, len(names)))
    return {name: _value(rng, names, literals, depth - 1) for name in chosen}


def test_proofs_never_pass_what_the_interpreter_fails(crds: CrdIndex) -> None:
    rng = random.Random(20261124)
    proven = 0
    for source in _shipped_rules(crds):
        proof = compile_rule(source, K8S_FUNCTIONS)
        if proof is None:
            continue
        program = cel.compile(source)
        names = sorted(set(re.findall(r"\.\s*([A-Za-z_]\w*)", source))) or ["a"]
        literals: list[object] = [s[1:-1] for s in re.findall(r"'[^'\\]*'|\"[^\"\\]*\"", source)]
        literals += [int(n) for n in re.findall(r"\b\d+\b", source)]
        for _ in range(150):
            value = _value(rng, names, literals, 4)
            if rng.random() < 0.6:
                value = {name: _value(rng, names, literals, 3) for name in names}
            try:
                mine = proof(value) is True
            except Exception:  # noqa: BLE001 - no proof, whatever the reason
                mine = False
            if not mine:
                continue
            proven += 1
            context = cel.Context(variables={"self": value}, functions=K8S_FUNCTIONS)
            assert program.execute(context) is True, (source, value)
    assert proven > 1000  # the proofs are exercised, not only compiled


@pytest.mark.parametrize(
    "source",
    [
        # Regexes outside the subset both dialects read alike: the interpreter decides.
        "self.x.matches('[[:alpha:]]')",  # a POSIX class to RE2, a set of characters to Python
        "self.x.matches('(?i)a')",
        "self.x.matches('a{2}')",
        "self.x.matches('a*+b')",  # possessive to Python 3.11, an invalid pattern to RE2
        "self.x.matches('a++')",
        "self.x.matches(self.y)",
        "double(self.x) > 0.0",
        "self.a + 1 == 2",
        "self == oldSelf",
        "1.5 < self.x",
        "'a\\'b' == self.x",
        "self.x // comment",
    ],
)
def test_rules_outside_the_subset_are_not_compiled(source: str) -> None:
    assert compile_rule(source) is None


@pytest.mark.parametrize(
    ("source", "value", "proven"),
    [
        ("self.a == 1", {"a": 1}, True),
        ("self.a == 1", {"a": True}, False),  # bool is no int for CEL
        ("self.a == 1", {"a": 1.0}, False),  # the interpreter's numeric equality decides
        ("self.a == 1", {}, False),  # no such key: a data error the interpreter words
        ("self.a > 1", {"a": 2**64}, False),  # beyond int64: the interpreter's own types
        ("!has(self.a) || self.a.size() > 1", {}, True),
        ("size(self.s) == 1", {"s": "é"}, False),  # the binding counts UTF-8 bytes
        ("self.all(x, x != '')", {"k": 1}, True),  # a map's keys
        ("self.exists(x, x == 'b')", ["a", "b"], True),
        ("self.filter(x, x.startsWith('a')).size() <= 1", ["ab", "b"], True),
        ("self.a[1] == 'y'", {"a": ["x", "y"]}, True),
        ("self.a[2] == 'y'", {"a": ["x", "y"]}, False),
        ("self.x in ['a', 'b'] ? self.y > 0 : true", {"x": "a", "y": 2}, True),
        ("self.x in ['a', 'b']", {"x": 1}, False),
        ("int(self.v[0]) >= 0", {"v": ["12"]}, True),
        ("int(self.v[0]) >= 0", {"v": [" 12"]}, False),  # Python's int() is laxer than CEL's
        ("int(self.v[0]) >= 0", {"v": ["1_2"]}, False),
        ("self.x in [self.y ? 'a' : 'b']", {"x": "a", "y": True}, True),
        ("!self.find('^([^/]+)').endsWith('karpenter.sh')", "example.com/x", True),
        ("self.split('@')[0] in ['al2023']", "al2023@latest", True),
        ("self.split('@')[0] in ['al2023']", 7, False),  # the library takes strings here
        ("self.x != 'a'", {"x": "b"}, True),  # a text against a string literal
        ("'a' != self.x", {"x": "b"}, True),
        ("self.x == 'a'", {"x": "a"}, True),
        ("self.x != 'a'", {"x": 1}, False),  # another type: the interpreter decides
        ("'a' != self.x", {"x": None}, False),
        ("(self.y ? 'a' : 'b') == self.x", {"x": "b", "y": False}, True),
        ("self.matches('^[a-zA-Z0-9]+@.+$')", "al2023@latest", True),
        ("self.matches('^[a-zA-Z0-9]+@.+$')", "al2023@", False),
        ("self.matches('^[a-zA-Z0-9]+@.+$')", "al2023@v1\n", False),  # Python's $ before a \n
        ("self.matches('^[a-zA-Z0-9]+@.+$')", 7, False),
        ("self.x.matches('b|c')", {"x": "abc"}, True),  # a match anywhere
    ],
)
def test_proofs(source: str, value: object, proven: bool) -> None:
    proof = compile_rule(source, K8S_FUNCTIONS)
    assert proof is not None
    try:
        result = proof(value) is True
    except Exception:  # noqa: BLE001 - no proof
        result = False
    assert result is proven
    if proven:
        context = cel.Context(variables={"self": value}, functions=K8S_FUNCTIONS)
        assert cel.compile(source).execute(context) is True


def test_a_kind_is_planned_when_seen_again(crds: CrdIndex) -> None:
    # One object of a kind is not worth compiling its fast schemas (`gpuplan validate FILE`).
    validator = Validator(crds, K8S, cel=True, webhooks=True)
    assert validator.validate(QUEUE) == []
    assert not validator._plans
    assert validator.validate(QUEUE) == []
    assert list(validator._plans) == [("kueue.x-k8s.io/v1beta2", "ClusterQueue")]


LOCAL_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "q", "namespace": "t1"},
    "spec": {"clusterQueue": "t1"},
}
WORKLOAD_PRIORITY = {  # cluster-scoped
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "WorkloadPriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t1"}}
CONDITION = {
    "type": "Active",
    "status": "True",
    "reason": "Ready",
    "message": "",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("obj", "wrong"),
    [
        (changed(LOCAL_QUEUE, "status", {"conditions": [CONDITION, CONDITION]}), True),
        (changed(LOCAL_QUEUE, "metadata.name", ""), True),
        (changed(LOCAL_QUEUE, "spec.clusterQueue", None), False),  # the API server drops the null
        (changed(LOCAL_QUEUE, "status", {"conditions": [CONDITION]}), False),
        (changed(LOCAL_QUEUE, "metadata.name", delete=True), True),
        (
            changed(
                changed(LOCAL_QUEUE, "metadata.name", delete=True), "metadata.generateName", "q-"
            ),
            False,
        ),
        (changed(LOCAL_QUEUE, "metadata", delete=True), True),
        (changed(LOCAL_QUEUE, "metadata.name", 7), True),
        (WORKLOAD_PRIORITY, False),
        (changed(WORKLOAD_PRIORITY, "metadata.namespace", "t1"), True),
        (changed(WORKLOAD_PRIORITY, "metadata.namespace", ""), False),
        (NAMESPACE, False),
        # The kind's plan is found by kind first: another apiVersion is not held to it.
        (changed(LOCAL_QUEUE, "apiVersion", "kueue.x-k8s.io/v9"), True),
        (changed(LOCAL_QUEUE, "apiVersion", "kueue.x-k8s.io/v1beta1"), False),
        (changed(changed(LOCAL_QUEUE, "apiVersion", "kueue.x-k8s.io/v1beta1"), "x", 1), True),
        (changed(LOCAL_QUEUE, "apiVersion", delete=True), True),
        (changed(NAMESPACE, "apiVersion", delete=True), True),
        (changed(NAMESPACE, "apiVersion", "v2"), True),
        (changed(NAMESPACE, "apiVersion", "/v1"), True),  # (the same group and version)
        (changed(WORKLOAD_PRIORITY, "apiVersion", "kueue.x-k8s.io/v1beta1"), False),
        (changed(WORKLOAD_PRIORITY, "apiVersion", "kueue.x-k8s.io/v9"), True),
        (changed(WORKLOAD_PRIORITY, "apiVersion", delete=True), True),
        (changed(WORKLOAD_PRIORITY, "kind", "workloadpriorityclass"), True),
        (changed(NAMESPACE, "kind", ["Namespace"]), True),
        (changed(NAMESPACE, "metadata.name", ""), True),
        (
            changed(
                changed(NAMESPACE, "metadata.name", delete=True), "metadata.generateName", "t-"
            ),
            False,
        ),
    ],
    ids=[
        "duplicate condition",
        "unnamed",
        "null",
        "one condition",
        "no name",
        "generateName",
        "no metadata",
        "name not a text",
        "cluster-scoped",
        "cluster-scoped with a namespace",
        "cluster-scoped with an empty namespace",
        "core kind",
        "another apiVersion",
        "another served apiVersion",
        "another served apiVersion, wrong",
        "no apiVersion",
        "core kind without apiVersion",
        "core kind of another apiVersion",
        "core kind of an odd apiVersion",
        "schema-only kind of another served apiVersion",
        "schema-only kind of another apiVersion",
        "schema-only kind without apiVersion",
        "schema-only kind of a kind in lower case",
        "unhashable kind",
        "core kind unnamed",
        "core kind generateName",
    ],
)
def test_a_schema_only_kind_words_objects_like_the_full_path(
    crds: CrdIndex, obj: dict, wrong: bool
) -> None:
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    like = {LOCAL_QUEUE["kind"]: LOCAL_QUEUE, WORKLOAD_PRIORITY["kind"]: WORKLOAD_PRIORITY}
    good = like.get(obj["kind"], NAMESPACE) if isinstance(obj["kind"], str) else NAMESPACE
    assert warm.validate(good) == warm.validate(good) == []
    assert warm._plans[(good["apiVersion"], good["kind"])].schema_only
    expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(obj)
    assert bool(expected) is wrong
    assert warm.validate(obj) == expected


# --- the proofs-only walk written out per CRD version (gpuplan.validate.celwalk) ----------------


def _mutated(rng: random.Random, obj: object, depth: int = 0) -> object:
    """A copy of ``obj`` with a few random changes: fields dropped, nulled, retyped, duplicated."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            roll = rng.random()
            if roll < 0.04:
                continue  # dropped (a default to apply, or a rule's has() turning false)
            out[key] = rng.choice([None, "", "x", 0, -1, True, [], {}]) if roll < 0.08 else value
            out[key] = _mutated(rng, out[key], depth + 1)
        return out
    if isinstance(obj, list):
        items = [_mutated(rng, item, depth + 1) for item in obj]
        if items and rng.random() < 0.1:
            items.append(items[0])
        if items and rng.random() < 0.05:
            items.pop(rng.randrange(len(items)))
        return items
    return obj


def test_written_walks_prove_only_what_the_interpreter_passes(crds: CrdIndex) -> None:
    from gpuplan.validate.cel import compiled_rules
    from tests.test_validate_cel import SAMPLES

    rng = random.Random(20261124)
    proven = written = 0
    for sample in [*SAMPLES, QUEUE, *GOOD_QUEUES.values()]:
        group, _, version = sample["apiVersion"].rpartition("/")
        for crd_version in crds.versions(group, version, sample["kind"]):
            rules = compiled_rules(crd_version)
            if rules.prove is None:
                continue
            written += 1
            for _ in range(60):
                obj = _mutated(rng, sample)
                try:
                    rules.prove(obj)
                except Exception:  # noqa: BLE001 - not proven here: the generic walks decide
                    continue
                proven += 1
                rules._defaulted_walk(rules.root, obj, "", None)  # the generic proofs agree
                rules.prove_first = False  # (on the instance: the interpreter alone)
                try:
                    assert rules.check(obj) == ([], []), (crd_version.crd.source, obj)
                finally:
                    del rules.prove_first
    assert written >= 5 and proven > 200  # exercised, not only compiled


def test_a_written_walk_leaves_out_nodes_with_nothing_to_prove() -> None:
    from gpuplan.validate.cel import _Node, _Rule
    from gpuplan.validate.celfast import Unsure
    from gpuplan.validate.celwalk import MissingDefault, compile_walk, proves_nothing
    from gpuplan.validate.crds import CelRule

    def rule(text: str, path: str = "spec.items[*]") -> _Rule:
        return _Rule(CelRule(path, text), None, proof=compile_rule(text))

    item = _Node(rules=[rule("self.x == 1")])
    root = _Node(props={"spec": _Node(props={"items": _Node(items=item)}, defaults={"d": 0})})
    walk = compile_walk(root)
    assert walk is not None
    walk({"spec": {"d": 0, "items": [{"x": 1}, None]}})
    with pytest.raises(Unsure):
        walk({"spec": {"d": 0, "items": [{"x": 2}]}})
    with pytest.raises(MissingDefault):
        walk({"spec": {"items": [{"x": 1}]}})
    assumed = compile_walk(root, frozenset({("spec.items[*]", "self.x == 1")}))
    # Every rule the caller's (proven on the defaulted object): no default matters any more.
    assert proves_nothing(assumed)
    other = rule("size(self.items) < 3", "spec")
    both = _Node(
        props={"spec": _Node(rules=[other], props={"items": _Node(items=item)}, defaults={"d": 0})}
    )
    assumed = compile_walk(both, frozenset({("spec.items[*]", "self.x == 1")}))
    assert assumed is not None and not proves_nothing(assumed)
    assumed({"spec": {"d": 0, "items": [{"x": 2}]}})  # the item's rule is the caller's
    with pytest.raises(MissingDefault):  # the default is still required for the other
        assumed({"spec": {"items": []}})
    with pytest.raises(Unsure):
        assumed({"spec": {"d": 0, "items": [{"x": 1}] * 3}})
    bare = _Node(props={"spec": _Node(props={"items": _Node(items=item)})})
    nothing = compile_walk(bare, frozenset({("spec.items[*]", "self.x == 1")}))
    assert nothing is not None and nothing({"spec": {"items": [{"x": 2}]}}) is None


def _reshuffled(rng: random.Random, queue: Any) -> Any:
    """A copy of a queue with resources moved, repeated or dropped between its flavors."""
    queue = copy.deepcopy(queue)
    lists = [
        flavor["resources"]
        for group in _list(_list(queue.get("spec", {}), "resourceGroups"), None)
        for flavor in _list(group, "flavors")
        if isinstance(flavor, dict) and isinstance(flavor.get("resources"), list)
    ]
    at = rng.randrange(len(lists)) if lists else 0
    if at + 1 < len(lists) and lists[at] and rng.random() < 0.4:
        lists[at + 1].insert(0, lists[at].pop())  # all names still in order end to end
        return queue
    for _ in range(rng.randint(0, 2)):
        if not lists:
            break
        source, target = rng.choice(lists), rng.choice(lists)
        if source:
            moved = source.pop(rng.randrange(len(source))) if rng.random() < 0.5 else source[0]
            target.insert(rng.randint(0, len(target)), moved)
    return queue


def _list(parent: Any, key: str | None) -> list:
    """parent[key] (or parent itself when key is None) when a list of mappings, else []."""
    found = parent.get(key) if key is not None and isinstance(parent, dict) else parent
    return [x for x in found if isinstance(x, dict)] if isinstance(found, list) else []


def test_the_quick_test_proves_the_rules_it_stands_for(crds: CrdIndex) -> None:
    from gpuplan.validate.webhooks import CLUSTER_QUEUE_RULES

    rng = random.Random(20261125)
    kept = 0
    for sample in [QUEUE, *GOOD_QUEUES.values(), *BAD_QUEUES.values()]:
        for _ in range(80):
            obj = _reshuffled(rng, _mutated(rng, sample) if rng.random() < 0.3 else sample)
            if not isinstance(obj.get("spec"), dict) or not plain_cluster_queue(obj):  # type: ignore[union-attr]
                continue
            groups = obj["spec"].get("resourceGroups") or []  # type: ignore[index]
            for group in groups:  # what the quick test stands for: each flavor lists them all
                for flavor in group["flavors"]:
                    names = [resource["name"] for resource in flavor["resources"]]
                    assert names == group["coveredResources"], obj
            for path, rule in CLUSTER_QUEUE_RULES:
                assert path == "spec.resourceGroups[*]"
                for item in groups:
                    context = cel.Context(variables={"self": item}, functions=K8S_FUNCTIONS)
                    assert cel.compile(rule).execute(context) is True, obj
                    kept += 1
    assert kept > 100
    group, version = "kueue.x-k8s.io", "v1beta2"
    found = {
        (rule.path_pattern, rule.rule)
        for crd_version in crds.versions(group, version, "ClusterQueue")
        for rule in crd_version.cel_rules
    }
    assert found >= CLUSTER_QUEUE_RULES  # the rules are the CRD's, to the character


@given(
    st.one_of(
        st.none(),
        st.dictionaries(
            st.sampled_from(["matchLabels", "matchExpressions"]),
            st.one_of(
                st.none(),
                st.dictionaries(st.sampled_from(["a", "b/c", "B!"]), st.sampled_from(["x", ""])),
                st.lists(
                    st.one_of(
                        st.none(),
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "key": st.sampled_from(["a", "x.io/b", "-bad", "", 7]),
                                "operator": st.sampled_from(["In", "NotIn", "Exists", "Gt", None]),
                                "values": st.one_of(
                                    st.none(),
                                    st.lists(
                                        st.sampled_from(["v", "", "a b", "-v", 3]), max_size=3
                                    ),
                                ),
                            },
                        ),
                    ),
                    max_size=3,
                ),
            ),
        ),
    )
)
def test_the_quick_selector_test_passes_only_good_selectors(selector: object) -> None:
    from gpuplan.validate.webhooks import _plain_selector, label_selector_problems

    assert _plain_selector(selector) == (label_selector_problems(selector, "") == [])


def test_a_device_class_is_never_decided_by_its_schema_alone(crds: CrdIndex) -> None:
    # Its selectors' CEL is compiled in Python (gpuplan.validate.deviceclass), on the full path.
    good = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
    }
    bad = changed(good, "spec.selectors.0.cel.expression", "device.driver == ")
    warm = Validator(crds, K8S, cel=True, webhooks=True)
    assert warm.validate(good) == warm.validate(good) == warm.validate(good) == []
    expected = Validator(crds, K8S, cel=True, webhooks=True)._validate(bad)
    assert expected and warm.validate(bad) == expected
