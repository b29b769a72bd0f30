"""The CEL rules of Kueue's ClusterQueue CRD restated as JSON Schema, in its gated schema.

A ClusterQueue the gated schema (webhooks.cluster_queue_gate) and the quick test pass still had
its CRD's CEL rules proven in Python (celwalk), about 1 us a queue. Three of the four rules are
simple enough for JSON Schema, so the gate states them too and Rust decides them in the pass it
makes anyway; the fourth (each flavor lists as many resources as its group covers) is the quick
test's own (webhooks.CLUSTER_QUEUE_RULES). With all four so proven, no CEL walk is left.

The API server evaluates the rules on the object with its defaults applied. So the gate first
requires every field the CRD gives a default: an object it accepts is its own defaulted form,
and a restatement holding on it holds where the rule is evaluated. Each restatement implies its
rule (it is stricter where that is simpler); an object it refuses is refused by the gate, and
takes the full path as before.

The rules, in kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml
@ v0.19.2 (both served versions; v1beta1 names the cohort ``cohort``). A CRD whose rule differs
in any character is not assumed: its rule stays in the CEL walk.
"""

from __future__ import annotations

import copy
from typing import Any

# "borrowingLimit must be nil when cohort is empty": the gate's if/else on the cohort already
# holds every queue without one to resources without a borrowingLimit.
SPEC_RULE = (
    "!has(self.{cohort}) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
    "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true"
)
PREFERENCE_RULE = (
    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
    "self.whenCanPreempt == 'TryNextFlavor')"
)
RECLAIM_RULE = (
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
    "self.borrowWithinCohort.policy != 'Never')"
)

_TRY_NEXT = {"const": "TryNextFlavor"}
# No preference, or both choices TryNextFlavor.
PREFERENCE_SCHEMA: list[dict[str, Any]] = [
    {"not": {"required": ["preference"]}},
    {
        "required": ["whenCanBorrow", "whenCanPreempt"],
        "properties": {"whenCanBorrow": _TRY_NEXT, "whenCanPreempt": _TRY_NEXT},
    },
]
# A reclaim policy other than Never, or no borrowWithinCohort, or its policy Never: each makes
# one operand of the rule's && false (CEL's && is false then, whatever the others give).
RECLAIM_SCHEMA: list[dict[str, Any]] = [
    {
        "required": ["reclaimWithinCohort"],
        "properties": {"reclaimWithinCohort": {"type": "string", "not": {"const": "Never"}}},
    },
    {"not": {"required": ["borrowWithinCohort"]}},
    {
        "required": ["borrowWithinCohort"],
        "properties": {
            "borrowWithinCohort": {
                "type": "object",
                "required": ["policy"],
                "properties": {"policy": {"const": "Never"}},
            }
        },
    },
]


def restate_queue_rules(
    gated: dict[str, Any], openapi: dict[str, Any]
) -> frozenset[tuple[str, str]]:
    """Restate the rules in the gated schema (null-free); the (path, rule) pairs it now proves.

    ``openapi``: the CRD version's openAPIV3Schema, for its defaults. Nothing is proven when
    the schemas are not laid out as Kueue's, or a default has no place to be required.
    """
    try:
        spec = gated["properties"]["spec"]
        fields = spec["properties"]
        cohort = next(name for name in ("cohortName", "cohort") if name in fields)
        fungibility, preemption = fields["flavorFungibility"], fields["preemption"]
        if "else" not in spec or not require_defaults(gated, openapi):
            return frozenset()
    except (KeyError, TypeError, StopIteration):
        return frozenset()
    _also(fungibility, PREFERENCE_SCHEMA)
    _also(preemption, RECLAIM_SCHEMA)
    return frozenset(
        {
            ("spec", SPEC_RULE.format(cohort=cohort)),
            ("spec.flavorFungibility", PREFERENCE_RULE),
            ("spec.preemption", RECLAIM_RULE),
        }
    )


def require_defaults(schema: dict[str, Any], openapi: dict[str, Any]) -> bool:
    """Require, in ``schema``, every field ``openapi`` gives a default; False where one has no place."""
    fields = openapi.get("properties")
    if isinstance(fields, dict):
        defaulted = sorted(name for name, sub in fields.items() if "default" in sub)
        own = schema.get("properties")
        if defaulted and not (isinstance(own, dict) and all(name in own for name in defaulted)):
            return False
        if defaulted:
            schema["required"] = sorted({*schema.get("required", []), *defaulted})
        for name, sub in fields.items():
            if isinstance(sub, dict) and not _required_below(own, name, sub):
                return False
    for key in ("items", "additionalProperties"):
        sub = openapi.get(key)
        if isinstance(sub, dict) and ("default" in sub or not _required_below(schema, key, sub)):
            return False
    return True


def _required_below(schema: Any, key: str, openapi: dict[str, Any]) -> bool:
    """require_defaults on schema[key]; True when ``openapi`` has no default below it."""
    if isinstance(schema, dict) and isinstance(schema.get(key), dict):
        return require_defaults(schema[key], openapi)
    return not _has_default(openapi)


def _has_default(openapi: Any) -> bool:
    """Whether an OpenAPI schema node gives a default anywhere below it."""
    if isinstance(openapi, dict):
        return any(
            "default" in sub or _has_default(sub)
            for sub in (openapi.get("properties") or {}).values()
            if isinstance(sub, dict)
        ) or any(_has_default(openapi.get(key)) for key in ("items", "additionalProperties"))
    return False


def _also(node: dict[str, Any], branches: list[dict[str, Any]]) -> None:
    """Add "any of ``branches``" (a copy) to a schema node."""
    if "anyOf" in node:
        node["allOf"] = [*node.get("allOf", []), {"anyOf": copy.deepcopy(branches)}]
    else:
        node["anyOf"] = copy.deepcopy(branches)
