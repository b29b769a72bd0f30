"""Kueue's validating admission webhooks, offline: what the API server's schema lets through
but Kueue's webhook denies (HTTP 403) for ClusterQueue, Cohort and ResourceFlavor.

The rules are those of shared/facts/kueue-admission-rules.md (Kueue v0.19.2,
pkg/webhooks/clusterqueue_webhook.go, cohort_webhook.go, resourceflavor_webhook.go,
common.go), in gpuplan's words. v1beta1 objects get the same checks: Kueue converts them
to v1beta2 before its webhook sees them (v1beta1 ClusterQueues name their cohort
``spec.cohort`` instead of ``spec.cohortName``).

Left out on purpose:
- rules the CRDs' CEL rules already enforce (preemption reclaim/borrow, flavorFungibility
  preference): gpuplan.validate.cel. (borrowingLimit without a cohort is both: it is
  kept here, at the resource's own path, because lendingLimit needs the same check);
- the ConcurrentAdmissionPolicy rules (alpha feature gate, off by default) and the
  update-only rules (immutability, legacy onFlavors).

Pure functions over dicts; malformed values (a quota that is no quantity, a list where
an object belongs) are left to the schema layer and skipped here.

For the validator's fast path, ``plain_for`` gives a quick test that a ClusterQueue of the
usual shape has no webhook problem (a few passes in C over all its resources), with a schema
``gate`` that lets Rust refuse what the test would otherwise look at resource by resource. The
test only ever says "nothing to find"; anything else runs the rules above.
"""

from __future__ import annotations

import copy
import json
import math
import operator
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from itertools import chain, repeat
from typing import Any, NamedTuple

from gpuplan.components.kueue import on_flavors_rule
from gpuplan.model.names import DNS1123_SUBDOMAIN, LABEL_NAME, LABEL_VALUE
from gpuplan.model.quantity import QuantityError, parse_quantity
from gpuplan.validate.listmaps import ITEMS
from gpuplan.validate.messages import Problem
from gpuplan.validate.restate import restate_queue_rules

GROUP = "kueue.x-k8s.io"
MAX_FLAVORS = 256  # flavors across all resource groups of a ClusterQueue
MAX_COVERED_RESOURCES = 256  # coveredResources across all resource groups of a ClusterQueue
MAX_FLAVOR_RESOURCES = 512  # sum of len(resources) over the flavors of one resource group
WEIGHT_THRESHOLD = Fraction(1, 10**9)  # 1n: a positive fair-sharing weight must exceed it

_SET_OPERATORS = ("In", "NotIn")
_EXISTS_OPERATORS = ("Exists", "DoesNotExist")


# --- names, labels and quantities --------------------------------------------------------


def qualified_name_error(value: Any) -> str | None:
    """Why ``value`` is not a qualified name (label-key syntax), or None when it is."""
    if not isinstance(value, str):
        return f"must be a string (got {_show(value)})"
    return _qualified_name_error(value)


@lru_cache(maxsize=4096)
def _qualified_name_error(value: str) -> str | None:
    """qualified_name_error of a string, once per string: resource names repeat in every queue."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return (
            "must be a qualified name: its prefix before '/' must be a lowercase DNS "
            f"subdomain of at most 253 characters (got {_show(value)})"
        )
    if not name or len(name) > 63 or not LABEL_NAME.fullmatch(name):
        return (
            "must be a qualified name such as cpu or nvidia.com/gpu: at most 63 letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit, after an "
            f"optional DNS prefix and '/' (got {_show(value)})"
        )
    return None


def label_value_error(value: Any) -> str | None:
    """Why ``value`` is not a label value, or None when it is ("" is one)."""
    if not isinstance(value, str):
        return f"must be a string (got {_show(value)})"
    return _label_value_error(value)


@lru_cache(maxsize=4096)
def _label_value_error(value: str) -> str | None:
    """label_value_error of a string, once per string: selectors repeat the same values."""
    if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
        return (
            "must be a label value: at most 63 letters, digits, '-', '_' or '.', starting "
            f"and ending with a letter or digit (got {_show(value)})"
        )
    return None


def signed_quantity(value: Any) -> Fraction | None:
    """The exact value of a Kubernetes quantity that may carry a sign; None if none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value)) if math.isfinite(value) else None
    return _signed_text(value) if isinstance(value, str) else None


@lru_cache(maxsize=4096)
def _signed_text(value: str) -> Fraction | None:
    """signed_quantity of text, once per text: fleets repeat the same few quantities."""
    text = value.strip()
    sign = -1 if text.startswith("-") else 1
    body = text[1:] if text[:1] in "+-" and text else text
    try:
        return sign * parse_quantity(body)
    except QuantityError:
        return None


# --- resource groups (ClusterQueue and Cohort) -------------------------------------------


def resource_group_problems(
    groups: Any, path: str, *, has_parent: bool, parent_word: str, lending_within_nominal: bool
) -> list[Problem]:
    """The webhook rules shared by ClusterQueue and Cohort resource groups."""
    if not isinstance(groups, list):
        return []
    problems: list[Problem] = []
    seen_resources: dict[str, str] = {}
    seen_flavors: dict[str, str] = {}
    for i, group in enumerate(groups):
        if not isinstance(group, dict):
            continue
        group_path = f"{path}[{i}]"
        covered = _list(group.get("coveredResources"))
        for j, name in enumerate(covered):
            where = f"{group_path}.coveredResources[{j}]"
            error = qualified_name_error(name)
            if error:
                problems.append(Problem(where, error))
            if isinstance(name, str) and name in seen_resources:
                problems.append(
                    Problem(
                        where,
                        f'duplicate resource "{name}": already covered at {seen_resources[name]}',
                    )
                )
            elif isinstance(name, str):
                seen_resources[name] = where
        for j, flavor in enumerate(_list(group.get("flavors"))):
            if not isinstance(flavor, dict):
                continue
            flavor_path = f"{group_path}.flavors[{j}]"
            problems += _flavor_problems(
                flavor, covered, flavor_path, has_parent, parent_word, lending_within_nominal
            )
            name = flavor.get("name")
            if isinstance(name, str) and name in seen_flavors:
                if not seen_flavors[name].startswith(f"{group_path}."):  # same group: schema's
                    problems.append(
                        Problem(
                            f"{flavor_path}.name",
                            f'duplicate flavor "{name}": already in {seen_flavors[name]}',
                        )
                    )
            elif isinstance(name, str):
                seen_flavors[name] = flavor_path
    return problems


def _flavor_problems(
    flavor: dict,
    covered: list,
    path: str,
    has_parent: bool,
    parent_word: str,
    lending_within_nominal: bool,
) -> list[Problem]:
    """Order, exact set and quota values of one flavor's resources."""
    problems = []
    resources = [r for r in _list(flavor.get("resources")) if isinstance(r, dict)]
    names = [r.get("name") for r in resources]
    if names != covered and sorted(map(str, names)) != sorted(map(str, covered)):
        missing = [str(c) for c in covered if c not in names]
        extra = [str(n) for n in names if n not in covered]
        detail = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"not covered {', '.join(extra)}" if extra else "",
            )
            if part
        )
        problems.append(
            Problem(
                f"{path}.resources",
                "must list exactly the coveredResources "
                f"({', '.join(map(str, covered))}){': ' + detail if detail else ''}",
            )
        )
    for k, resource in enumerate(resources[: len(covered)]):
        if resource.get("name") == covered[k] and _plain_quota(resource):
            continue  # the usual entry: nothing below can fail
        where = f"{path}.resources[{k}]"
        if resource.get("name") != covered[k]:
            problems.append(
                Problem(
                    f"{where}.name",
                    f"must match the name in coveredResources[{k}] "
                    f"({_show(covered[k])}), in the same order (got "
                    f"{_show(resource.get('name'))})",
                )
            )
        problems += _quota_problems(
            resource, where, has_parent, parent_word, lending_within_nominal
        )
    return problems


def _quota_problems(
    resource: dict, path: str, has_parent: bool, parent_word: str, lending_within_nominal: bool
) -> list[Problem]:
    """No negative quota; limits need a cohort/parent; lendingLimit <= nominalQuota."""
    problems = []
    for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        value = resource.get(field)
        if value is None:
            continue
        # Parsed only when it may be negative: a ClusterQueue has hundreds of quotas.
        amount = signed_quantity(value) if _signed(value) else None
        if amount is not None and amount < 0:
            problems.append(
                Problem(f"{path}.{field}", f"must not be negative (got {_show(value)})")
            )
        if field != "nominalQuota" and not has_parent:
            problems.append(Problem(f"{path}.{field}", f"must be nil when {parent_word} is empty"))
    nominal_text, lending_text = resource.get("nominalQuota"), resource.get("lendingLimit")
    if not lending_within_nominal or nominal_text is None or lending_text is None:
        return problems
    nominal, lending = signed_quantity(nominal_text), signed_quantity(lending_text)
    if nominal is not None and lending is not None and lending > nominal:
        problems.append(
            Problem(
                f"{path}.lendingLimit",
                "must be less than or equal to the "
                f"nominalQuota ({_show(lending_text)} > {_show(nominal_text)})",
            )
        )
    return problems


def _plain_quota(resource: dict) -> bool:
    """Whether a quota entry is a nominalQuota alone that cannot be negative (nothing to check)."""
    if resource.get("borrowingLimit") is not None or resource.get("lendingLimit") is not None:
        return False
    return not _signed(resource.get("nominalQuota"))


def _signed(value: Any) -> bool:
    """Whether a quota value may be below zero (a number below 0 or text starting with "-")."""
    if isinstance(value, str):
        return "-" in value and value.lstrip().startswith("-")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0


def fair_sharing_problems(spec: dict, path: str) -> list[Problem]:
    """fairSharing.weight: not negative, and 0 or above 1n (smaller weights collapse)."""
    fair = spec.get("fairSharing")
    if not isinstance(fair, dict) or fair.get("weight") is None:
        return []
    weight = fair["weight"]
    error = _weight_error(weight) if type(weight) is str else _weight_error_of(weight)
    return [Problem(f"{path}.fairSharing.weight", error)] if error else []


@lru_cache(maxsize=1024)
def _weight_error(text: str) -> str | None:
    """_weight_error_of a text, once per text: every queue of a fleet has one of a few weights."""
    return _weight_error_of(text)


def _weight_error_of(value: Any) -> str | None:
    """Why a fair-sharing weight is refused, or None."""
    weight = signed_quantity(value)
    if weight is None:
        return None
    if weight < 0:
        return f"must not be negative (got {_show(value)})"
    if 0 < weight <= WEIGHT_THRESHOLD:
        return (
            "must be 0 or greater than 1n: a smaller weight collapses to "
            f"zero in fair sharing (got {_show(value)})"
        )
    return None


# --- ClusterQueue ---------------------------------------------------------------------


def validate_cluster_queue(obj: dict, on_flavors: bool = True) -> list[Problem]:
    """The webhook problems of one ClusterQueue (v1beta1 or v1beta2); on_flavors: the release has that rule."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    cohort = spec.get("cohortName") or spec.get("cohort")
    groups = spec.get("resourceGroups")
    if _plain_groups(groups):
        problems = []
    else:
        problems = resource_group_problems(
            groups,
            "spec.resourceGroups",
            has_parent=bool(cohort),
            parent_word="cohort",
            lending_within_nominal=True,
        )
        problems += _size_problems(groups)
    problems += fair_sharing_problems(spec, "spec")
    problems += label_selector_problems(spec.get("namespaceSelector"), "spec.namespaceSelector")
    if on_flavors:
        problems += _on_flavor_problems(spec, groups)
    return sorted(set(problems))


def plain_cluster_queue(obj: dict, gated: bool = False) -> bool:
    """Whether validate_cluster_queue(obj) is [] for a ClusterQueue of the usual shape.

    True also says that the flavors of every resource group, and the resources of every flavor,
    have distinct string names: the keys of both list-map lists (CLUSTER_QUEUE_LISTS).
    ``gated``: the object passed cluster_queue_gate's schema, so its quotas and its namespace
    selector need no look.
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return False
    groups = spec.get("resourceGroups")
    return _plain_groups(groups, gated) and plain_spec(spec, groups, gated)


def plain_spec(spec: dict, groups: Any, gated: bool) -> bool:
    """plain_cluster_queue beside the resource groups: weight, selector, admission-check flavors."""
    fair = spec.get("fairSharing")
    weight = fair.get("weight") if type(fair) is dict else None
    return (
        (weight is None or not fair_sharing_problems(spec, "spec"))
        and (gated or _plain_selector(spec.get("namespaceSelector")))
        and ("admissionChecksStrategy" not in spec or not _on_flavor_problems(spec, groups))
    )


def _plain_selector(selector: Any) -> bool:
    """Whether label_selector_problems(selector) is []: quickly for the usual expressions."""
    if type(selector) is dict and not selector.get("matchLabels"):
        expressions = selector.get("matchExpressions")
        if expressions is None or (
            type(expressions) is list and all(map(_plain_expression, expressions))
        ):
            return True
    return not label_selector_problems(selector, "")


def _plain_expression(expression: Any) -> bool:
    """Whether a matchExpressions entry is `key In/NotIn [values]` with a good key and values."""
    if type(expression) is not dict or expression.get("operator") not in _SET_OPERATORS:
        return False
    key, values = expression.get("key"), expression.get("values")
    return (
        type(key) is str
        and type(values) is list
        and bool(values)
        and _qualified_name_error(key) is None
        and set(map(type, values)) <= _TEXT
        and not any(map(_label_value_error, values))  # (None, or why not)
    )


# The list-map lists (path -> keys) whose names plain_cluster_queue finds distinct.
CLUSTER_QUEUE_LISTS: dict[tuple[str | int, ...], tuple[str, ...]] = {
    ("spec", "resourceGroups", ITEMS, "flavors"): ("name",),
    ("spec", "resourceGroups", ITEMS, "flavors", ITEMS, "resources"): ("name",),
}


# The CEL rules of Kueue's ClusterQueue CRD (path, rule) that plain_cluster_queue's True proves:
# each flavor lists its group's coveredResources, so as many of them
# (kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml @ v0.19.2,
# both served versions). A CRD whose rule differs in any character is not assumed.
CLUSTER_QUEUE_RULES = frozenset(
    {
        (
            "spec.resourceGroups[*]",
            "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
        )
    }
)


_NAME = operator.itemgetter("name")
_QUOTA = operator.itemgetter("nominalQuota")
_FLAVORS = operator.itemgetter("flavors")
_COVERED = operator.itemgetter("coveredResources")
_RESOURCES = operator.itemgetter("resources")
_QUOTA_ONLY = {2}  # the length of {name, nominalQuota}
_LIST = {list}
_TEXT = {str}


def cluster_queue_gate(schema: dict) -> dict | None:
    """A ClusterQueue schema also refusing what plain_cluster_queue would look at resource by resource.

    That is a lendingLimit, a borrowingLimit without a cohort, or a quota that may be negative:
    the quantity pattern loses its leading "-" and integers get a minimum of 0, so the schema
    decides them in Rust, in the pass it makes anyway, at no extra cost; and a namespace
    selector other than `key In/NotIn [values]` expressions of good names (_gate_selector).
    None when the schema has not the shape of Kueue's (then plain_cluster_queue looks at every
    resource and the selector).
    """
    gated = copy.deepcopy(schema)
    try:
        spec = gated["properties"]["spec"]
        groups = spec["properties"]["resourceGroups"]["items"]["properties"]
        resources = groups["flavors"]["items"]["properties"]["resources"]["items"]["properties"]
        for field in ("nominalQuota", "borrowingLimit"):
            quota = resources[field]
            if not quota["pattern"].startswith(_SIGNED_PREFIX):
                return None
            quota["pattern"] = _UNSIGNED_PREFIX + quota["pattern"].removeprefix(_SIGNED_PREFIX)
            quota["minimum"] = 0  # (for integers; a text is held to the pattern)
        # The types the quick test then takes for granted (Kueue's CRD declares them too).
        listed = spec["properties"]["resourceGroups"]
        flavors = groups["flavors"]
        for node, kind in [
            (listed, "array"),
            (listed["items"], "object"),
            (groups["coveredResources"], "array"),
            (flavors, "array"),
            (flavors["items"], "object"),
            (flavors["items"]["properties"]["resources"], "array"),
            (flavors["items"]["properties"]["resources"]["items"], "object"),
        ]:
            node["type"] = kind
        groups["coveredResources"]["items"] = {
            **groups["coveredResources"]["items"],
            "type": "string",
        }
        flavors["items"]["properties"]["name"]["type"] = "string"
        resources["name"]["type"] = "string"
        _gate_selector(spec["properties"]["namespaceSelector"])
    except (KeyError, TypeError, AttributeError):
        return None
    resources["lendingLimit"] = False
    no_borrowing: dict[str, Any] = {"not": {"required": ["borrowingLimit"]}}
    for key in ("resources", "flavors", "resourceGroups"):
        no_borrowing = {"properties": {key: {"items": no_borrowing}}}
    # v1beta2 names the cohort cohortName, v1beta1 cohort (one of them is in the schema).
    cohort = next((name for name in ("cohortName", "cohort") if name in spec["properties"]), None)
    if cohort is None or any(key in spec for key in ("if", "then", "else")):
        return None
    # if/else on spec itself: anyOf walks every resource even when the queue has a cohort, and
    # any allOf there costs jsonschema_rs a second look at the whole spec.
    spec["if"] = {"required": [cohort], "properties": {cohort: {"minLength": 1}}}
    spec["else"] = no_borrowing
    return gated


def _gate_selector(selector: dict) -> None:
    """Hold a LabelSelector schema to what label_selector_problems finds nothing in.

    `key In/NotIn [values]` expressions of a qualified-name key and label values, and no
    matchLabels: the selectors queues usually have (gpuplan renders one per tenant). Others are
    refused here, so that the webhook's rules look at them.
    """
    expression = selector["properties"]["matchExpressions"]["items"]
    fields = expression["properties"]
    fields["key"] = {**fields["key"], "type": "string", **QUALIFIED_NAME_SCHEMA}
    fields["operator"] = {**fields["operator"], "type": "string", "enum": list(_SET_OPERATORS)}
    values = fields["values"]
    fields["values"] = {
        **values,
        "type": "array",
        "minItems": 1,
        "items": {**values["items"], "type": "string", **LABEL_VALUE_SCHEMA},
    }
    expression["type"] = "object"
    expression["required"] = sorted({*expression.get("required", []), "key", "operator", "values"})
    selector["properties"]["matchLabels"] = {
        **selector["properties"]["matchLabels"],
        "maxProperties": 0,
    }


# What qualified_name_error and label_value_error pass, as JSON Schema (ECMAScript patterns;
# a qualified name of at most 253 characters has a prefix of at most 251: stricter, not looser).
QUALIFIED_NAME_SCHEMA = {
    "maxLength": 253,
    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
}
LABEL_VALUE_SCHEMA = {"maxLength": 63, "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}


# Kueue's quantity pattern starts with an optional sign (kueue.x-k8s.io_clusterqueues.yaml).
_SIGNED_PREFIX = "^(\\+|-)?"
_UNSIGNED_PREFIX = "^(\\+)?"


def _plain_groups(groups: Any, gated: bool = False) -> bool:
    """Whether ClusterQueue resource groups are of the usual shape, where no group rule can fail.

    The usual shape: every flavor lists exactly its group's coveredResources, in order, each with
    a nominalQuota text without a sign and nothing else; resource and flavor names are distinct
    strings, resource names qualified names; the totals within Kueue's limits. Decided with a
    few passes in C over all the resources at once (a ClusterQueue has hundreds), where walking
    them in Python costs more than the schema validation. False is no verdict: the full rules run.
    """
    if not isinstance(groups, list):
        return groups is None
    try:
        covered = list(map(_COVERED, groups))
        flavors = list(map(_FLAVORS, groups))
        # (Gated: the schema typed them, and the names below, as its gate requires.)
        if not gated and (set(map(type, covered)) - _LIST or set(map(type, flavors)) - _LIST):
            return False
        all_flavors = flavors[0] if len(flavors) == 1 else list(chain.from_iterable(flavors))
        listed = list(map(_RESOURCES, all_flavors))
        # Each flavor lists as many resources as its group covers (CLUSTER_QUEUE_RULES), and
        # all names end to end are the groups' coveredResources, repeated per flavor: so each
        # flavor lists exactly its group's, in order, distinct (CLUSTER_QUEUE_LISTS).
        if list(map(len, listed)) != _counts(covered, flavors) or list(
            map(_NAME, chain.from_iterable(listed))
        ) != _expected(covered, flavors):
            return False  # another order or set: the full rules
        # Ungated: no limit beside the quota, and every quota a text without a sign.
        if not gated:
            resources = list(chain.from_iterable(listed))
            if set(map(len, resources)) != _QUOTA_ONLY or "-" in "".join(map(_QUOTA, resources)):
                return False
        flavor_names = set(map(_NAME, all_flavors))
    except (KeyError, TypeError):  # TypeError: a quota that is no text, among others
        return False
    names = covered[0] if len(covered) == 1 else list(chain.from_iterable(covered))
    return (
        (gated or (set(map(type, flavor_names)) <= _TEXT and set(map(type, names)) <= _TEXT))
        and not any(map(_qualified_name_error, names))  # (None, or why not)
        and len(set(names)) == len(names)
        and len(flavor_names) == len(all_flavors)
        and len(all_flavors) <= MAX_FLAVORS
        and len(names) <= MAX_COVERED_RESOURCES
        and max(map(operator.mul, map(len, covered), map(len, flavors)), default=0)
        <= MAX_FLAVOR_RESOURCES
    )


def _counts(covered: list[list], flavors: list[list]) -> list[int]:
    """How many resources each flavor lists in the usual shape: its group's coveredResources."""
    if len(covered) == 1:  # (most queues: no chain of one)
        return [len(covered[0])] * len(flavors[0])
    return list(chain.from_iterable(map(repeat, map(len, covered), map(len, flavors))))


def _expected(covered: list[list], flavors: list[list]) -> list:
    """The resource names of all flavors end to end, in the usual shape."""
    if len(covered) == 1:
        return covered[0] * len(flavors[0])
    return list(chain.from_iterable(map(operator.mul, covered, map(len, flavors))))


def _size_problems(groups: Any) -> list[Problem]:
    """The ClusterQueue-only totals: flavors, covered resources, combinations per group."""
    groups = [g for g in _list(groups) if isinstance(g, dict)]
    problems = []
    flavors = sum(len(_list(g.get("flavors"))) for g in groups)
    if flavors > MAX_FLAVORS:
        problems.append(
            Problem(
                "spec.resourceGroups",
                f"must have at most {MAX_FLAVORS} flavors in total (got {flavors})",
            )
        )
    covered = sum(len(_list(g.get("coveredResources"))) for g in groups)
    if covered > MAX_COVERED_RESOURCES:
        problems.append(
            Problem(
                "spec.resourceGroups",
                f"must have at most "
                f"{MAX_COVERED_RESOURCES} coveredResources in total (got {covered})",
            )
        )
    for i, group in enumerate(groups):
        pairs = sum(
            len(_list(f.get("resources")))
            for f in _list(group.get("flavors"))
            if isinstance(f, dict)
        )
        if pairs > MAX_FLAVOR_RESOURCES:
            problems.append(
                Problem(
                    f"spec.resourceGroups[{i}]",
                    f"must have at most "
                    f"{MAX_FLAVOR_RESOURCES} flavor resources (flavors x "
                    f"resources) (got {pairs})",
                )
            )
    return problems


def _on_flavor_problems(spec: dict, groups: Any) -> list[Problem]:
    """admissionChecksStrategy rules may only name flavors of this ClusterQueue."""
    strategy = spec.get("admissionChecksStrategy")
    if not isinstance(strategy, dict):
        return []
    flavors = {
        f.get("name")
        for g in _list(groups)
        if isinstance(g, dict)
        for f in _list(g.get("flavors"))
        if isinstance(f, dict)
    }
    problems = []
    for i, check in enumerate(_list(strategy.get("admissionChecks"))):
        if not isinstance(check, dict):
            continue
        for j, name in enumerate(_list(check.get("onFlavors"))):
            if name not in flavors:
                problems.append(
                    Problem(
                        f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                        "must name a flavor of this "
                        f"ClusterQueue's resourceGroups (got {_show(name)})",
                    )
                )
    return problems


def label_selector_problems(selector: Any, path: str) -> list[Problem]:
    """A LabelSelector's label keys and values, and operator/values pairs."""
    if not isinstance(selector, dict):
        return []
    problems = []
    labels = selector.get("matchLabels")
    for key, value in labels.items() if isinstance(labels, dict) else []:
        problems += _label_problems(key, value, f"{path}.matchLabels[{key}]")
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        if not isinstance(expr, dict):
            continue
        where = f"{path}.matchExpressions[{i}]"
        error = qualified_name_error(expr.get("key"))
        if error:
            problems.append(Problem(f"{where}.key", error))
        operator, values = expr.get("operator"), _list(expr.get("values"))
        if operator in _SET_OPERATORS and not values:
            problems.append(
                Problem(f"{where}.values", f"must be non-empty when operator is {operator}")
            )
        elif operator in _EXISTS_OPERATORS and values:
            problems.append(
                Problem(f"{where}.values", f"must be empty when operator is {operator}")
            )
        elif operator is not None and operator not in _SET_OPERATORS + _EXISTS_OPERATORS:
            problems.append(
                Problem(
                    f"{where}.operator",
                    f"must be one of: DoesNotExist, Exists, In, NotIn (got {_show(operator)})",
                )
            )
        for j, value in enumerate(values):
            error = label_value_error(value)
            if error:
                problems.append(Problem(f"{where}.values[{j}]", error))
    return problems


# --- Cohort -------------------------------------------------------------------------------


def validate_cohort(obj: dict) -> list[Problem]:
    """The webhook problems of one Cohort: no lendingLimit <= nominalQuota, no size limits."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    problems = resource_group_problems(
        spec.get("resourceGroups"),
        "spec.resourceGroups",
        has_parent=bool(spec.get("parentName")),
        parent_word="parent",
        lending_within_nominal=False,
    )
    return sorted(set(problems + fair_sharing_problems(spec, "spec")))


# --- ResourceFlavor -------------------------------------------------------------------------


def validate_resource_flavor(obj: dict) -> list[Problem]:
    """The webhook problems of one ResourceFlavor: labels, taints and toleration keys."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    problems = []
    labels = spec.get("nodeLabels")
    for key, value in labels.items() if isinstance(labels, dict) else []:
        problems += _label_problems(key, value, f"spec.nodeLabels[{key}]")
    seen: dict[tuple[Any, Any], int] = {}
    for i, taint in enumerate(_list(spec.get("nodeTaints"))):
        if not isinstance(taint, dict):
            continue
        where = f"spec.nodeTaints[{i}]"
        error = qualified_name_error(taint.get("key"))
        if error:
            problems.append(Problem(f"{where}.key", error))
        if taint.get("value") is not None:
            error = label_value_error(taint["value"])
            if error:
                problems.append(Problem(f"{where}.value", error))
        pair = (_hashable(taint.get("key")), _hashable(taint.get("effect")))
        if pair in seen:
            problems.append(
                Problem(
                    where,
                    f"duplicate taint with key {_show(pair[0])} and "
                    f"effect {_show(pair[1])} (first at [{seen[pair]}])",
                )
            )
        else:
            seen[pair] = i
    for i, toleration in enumerate(_list(spec.get("tolerations"))):
        if isinstance(toleration, dict) and toleration.get("key"):
            error = qualified_name_error(toleration["key"])
            if error:
                problems.append(Problem(f"spec.tolerations[{i}].key", error))
    return sorted(set(problems))


def _label_problems(key: Any, value: Any, path: str) -> list[Problem]:
    """One label: a qualified-name key and a label value."""
    problems = []
    error = qualified_name_error(key)
    if error:
        problems.append(Problem(path, f"label key {error}"))
    error = label_value_error(value)
    if error:
        problems.append(Problem(path, f"label value {error}"))
    return problems


# --- dispatch ------------------------------------------------------------------------------

WEBHOOKS: dict[str, Callable[[dict], list[Problem]]] = {
    "ClusterQueue": validate_cluster_queue,
    "Cohort": validate_cohort,
    "ResourceFlavor": validate_resource_flavor,
}


def webhook_problems(obj: Any, kueue: str | None = None) -> list[Problem]:
    """The Kueue webhook problems of any object; [] for kinds without a Kueue webhook.

    kueue: the Kueue release the object goes to (None: the newest), for rules only some releases have.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("apiVersion"), str):
        return []
    check = webhook_for(obj["apiVersion"], obj.get("kind"), kueue)
    return check(obj) if check is not None else []


def _cluster_queue_before_on_flavors(obj: dict) -> list[Problem]:
    return validate_cluster_queue(obj, on_flavors=False)


def webhook_for(
    api_version: str, kind: Any, kueue: str | None = None
) -> Callable[[dict], list[Problem]] | None:
    """The webhook check of one apiVersion and kind on a Kueue release; None for kinds without a Kueue webhook."""
    if api_version.rpartition("/")[0] != GROUP:
        return None
    if kind == "ClusterQueue" and not on_flavors_rule(kueue):
        return _cluster_queue_before_on_flavors
    return WEBHOOKS.get(kind)


class Plain(NamedTuple):
    """A quick "no webhook problem" test of a kind (see plain_cluster_queue)."""

    check: Callable[[dict, bool], bool]  # (object, passed the gate's schema?) -> nothing to find
    lists: dict[tuple[str | int, ...], tuple[str, ...]]  # list-map lists it finds distinct
    gate: Callable[[dict], dict | None]  # the kind's schema refusing what check then skips
    rules: frozenset[tuple[str, str]]  # CEL rules (path, rule) its True proves to pass
    # Restates CEL rules in the gate's schema (null-free, in place): the (path, rule) it proves.
    restate: Callable[[dict, dict], frozenset[tuple[str, str]]]


def plain_for(api_version: str, kind: Any) -> Plain | None:
    """The quick test of one apiVersion and kind; None for kinds without one."""
    if kind == "ClusterQueue" and api_version.rpartition("/")[0] == GROUP:
        return Plain(
            plain_cluster_queue,
            CLUSTER_QUEUE_LISTS,
            cluster_queue_gate,
            CLUSTER_QUEUE_RULES,
            restate_queue_rules,
        )
    return None


def forget_texts() -> None:
    """Drop the verdicts kept per text (names, label values, quantities, weights)."""
    for cached in (_qualified_name_error, _label_value_error, _signed_text, _weight_error):
        cached.cache_clear()


def _list(value: Any) -> list:
    """``value`` when it is a list, else []."""
    return value if isinstance(value, list) else []


def _hashable(value: Any) -> Any:
    """A dict key for any JSON value."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value)


def _show(value: Any) -> str:
    """A value shown in a message, JSON style."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
