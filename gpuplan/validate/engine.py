"""The Validator facade: one call per emitted object, short human problems back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

from gpuplan.validate.core import CoreSchemas, core_schemas, split_api_version
from gpuplan.validate.crds import LIST_MAP_KEYS, CrdIndex, CrdVersion
from gpuplan.validate.nulls import drop_nulls, prune_nulls

MISSING_CRD = "missing-crd"


@dataclass(frozen=True, order=True)
class Problem:
    """One schema violation: a Kubernetes field path ("" is the object) and a short message."""

    path: str
    message: str
    code: str = ""  # MISSING_CRD for a custom resource whose CRD is not known

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class _ListMapKeys:
    """jsonschema_rs keyword: x-kubernetes-list-type=map entries must have unique keys."""

    def __init__(self, parent_schema: dict, value: list[str], schema_path: Any):
        self.keys = value

    def validate(self, instance: Any) -> None:
        """Raise on the first entry repeating the key tuple of an earlier entry."""
        if not isinstance(instance, list):
            return
        seen: dict[str, int] = {}
        for i, item in enumerate(instance):
            if not isinstance(item, dict):
                continue
            key = json.dumps([item.get(k) for k in self.keys], sort_keys=True)
            if key in seen:
                shown = ", ".join(f"{k}={_show(item.get(k))}" for k in self.keys)
                # "<index>|" lets _translate point the Problem at the entry itself.
                raise ValueError(f"{i}|duplicate entry with {shown} (first at [{seen[key]}])")
            seen[key] = i


class Validator:
    """Validate emitted objects strictly: core kinds for one Kubernetes version, CRs by CRD.

    With ``crds=None`` custom resources are not checked; their (apiVersion, kind) are
    collected in ``skipped_kinds`` so the caller can say so once.

    ``cel=True`` also evaluates the CRDs' CEL rules (gpuplan.validate.cel; rules it
    cannot evaluate are listed in ``skipped_rules``); ``webhooks=True`` also applies the
    admission-webhook rules of Kueue (gpuplan.validate.webhooks), with or without CRDs.
    """

    def __init__(
        self,
        crds: CrdIndex | None,
        kubernetes_version: str,
        *,
        cel: bool = False,
        webhooks: bool = False,
        crds_label: str = "",
    ):
        self.crds = crds
        self.crds_label = (
            crds_label  # e.g. "kueue v0.14.4, nfd v0.19.0": named when a CRD is missing
        )
        self.core: CoreSchemas = core_schemas(kubernetes_version)
        self.kubernetes_version = self.core.version
        self.skipped_kinds: set[tuple[str, str]] = set()
        # CrdVersion hashes by identity (eq=False); the index keeps them alive.
        self._crd_compiled: dict[CrdVersion, Any] = {}
        self._cel: Any = None
        self._want_cel = cel  # the CEL package is imported on the first custom resource
        self.webhooks = webhooks

    def _cel_evaluator(self) -> Any:
        if self._cel is None and self._want_cel:
            from gpuplan.validate.cel import CelEvaluator

            self._cel = CelEvaluator()
        return self._cel

    @property
    def skipped_rules(self) -> list[Any]:
        """The CEL rules (SkippedRule) that could not be evaluated so far; [] without cel."""
        return self._cel.skipped if self._cel is not None else []

    def validate(self, obj: Any) -> list[Problem]:
        """All problems of one object, sorted by path; [] when valid (or skipped)."""
        if not isinstance(obj, dict):
            return [Problem("", f"must be an object (got {_type_name(obj)})")]
        head = _head_problems(obj)
        if head:
            return head
        api_version, kind = obj["apiVersion"], obj["kind"]
        group, version = split_api_version(api_version)
        try:
            if self.crds is not None and (group, kind) in self.crds:
                obj = self._pruned(obj, group, version, kind)
                problems = self._validate_custom(obj, group, version, kind)
            elif self.core.has_kind(group, kind):
                obj = drop_nulls(obj)
                problems = self._validate_core(obj, group, version, kind)
            elif self.crds is None and group not in self.core.groups:
                self.skipped_kinds.add((api_version, kind))
                return sorted(set(self._webhook_problems(obj)))
            elif group not in self.core.groups:
                return [self._missing_crd(api_version, kind)]
            else:
                return [Problem("", f"no schema for apiVersion {api_version} kind {kind}")]
        except (ValueError, TypeError) as exc:  # e.g. a non-string mapping key
            return [Problem("", f"not representable as JSON: {exc}")]
        return sorted(set(problems + _metadata_problems(obj) + self._webhook_problems(obj)))

    def _pruned(self, obj: dict, group: str, version: str, kind: str) -> dict:
        """The object as the API server validates it: nulls of non-nullable fields dropped."""
        candidates = self.crds.versions(group, version, kind) if self.crds is not None else []
        return prune_nulls(obj, candidates[0].schema) if candidates else obj

    def _missing_crd(self, api_version: str, kind: str) -> Problem:
        """The problem of a custom resource no known CRD defines: say how to supply one."""
        among = f" among the CRDs of {self.crds_label}" if self.crds_label else ""
        return Problem(
            "",
            f"no CustomResourceDefinition for kind {kind} (apiVersion "
            f"{api_version}){among}: give its CRD with --crds DIR or the "
            "GPUPLAN_CRDS environment variable",
            MISSING_CRD,
        )

    def _webhook_problems(self, obj: dict) -> list[Problem]:
        """The admission-webhook problems of one object, when asked for."""
        if not self.webhooks:
            return []
        from gpuplan.validate.webhooks import webhook_problems

        return webhook_problems(obj)

    def _validate_core(self, obj: dict, group: str, version: str, kind: str) -> list[Problem]:
        """Validate against the bundled core schema of this Kubernetes version."""
        compiled = self.core.validator(group, version, kind)
        if compiled is None:
            served = ", ".join(self.core.api_versions(group, kind))
            return [
                Problem(
                    "apiVersion",
                    f"apiVersion {obj['apiVersion']} is not served for "
                    f"kind {kind} in Kubernetes {self.kubernetes_version} "
                    f"(served: {served})",
                )
            ]
        return _errors(compiled, obj)

    def _validate_custom(self, obj: dict, group: str, version: str, kind: str) -> list[Problem]:
        """Validate against the CRD(s): valid when at least one candidate CRD accepts it."""
        assert self.crds is not None
        candidates = self.crds.versions(group, version, kind)
        if not candidates:
            served = ", ".join(self.crds.served_versions(group, kind))
            return [
                Problem(
                    "apiVersion",
                    f"apiVersion {obj['apiVersion']} is not served by the "
                    f"{kind} CRD (served: {served})",
                )
            ]
        first: list[Problem] | None = None
        for crd_version in candidates:
            compiled = self._compile(crd_version)
            problems = [compiled] if isinstance(compiled, Problem) else _errors(compiled, obj)
            if self._cel_evaluator() is not None:
                problems += self._cel.validate(obj, crd_version)
            if not problems:
                return _scope_problems(obj, crd_version)
            first = problems if first is None else first
        return (first or []) + _scope_problems(obj, candidates[0])

    def _compile(self, crd_version: CrdVersion) -> Any:
        """Compile one CRD version once; a schema the validator rejects becomes a Problem."""
        compiled = self._crd_compiled.get(crd_version)
        if compiled is None:
            try:
                compiled = jsonschema_rs.Draft202012Validator(
                    crd_version.json_schema,
                    registry=self.core.registry,
                    validate_formats=True,
                    ignore_unknown_formats=True,
                    keywords={LIST_MAP_KEYS: _ListMapKeys},
                )
            except (ValueError, jsonschema_rs.ReferencingError) as exc:
                compiled = Problem(
                    "",
                    f"the {crd_version.crd.kind} CRD in "
                    f"{crd_version.crd.source} cannot be compiled: {exc}",
                )
            self._crd_compiled[crd_version] = compiled
        return compiled


def _head_problems(obj: dict) -> list[Problem]:
    """apiVersion and kind decide the schema, so they must be non-empty strings."""
    problems = []
    for name in ("apiVersion", "kind"):
        value = obj.get(name)
        if value is None:
            problems.append(Problem("", f'missing required field "{name}"'))
        elif not isinstance(value, str) or not value:
            problems.append(Problem(name, f"must be a non-empty string (got {_show(value)})"))
    return problems


def _metadata_problems(obj: dict) -> list[Problem]:
    """The API server requires metadata.name or metadata.generateName."""
    meta = obj.get("metadata")
    if meta is None:
        return [Problem("", 'missing required field "metadata"')]
    if isinstance(meta, dict) and not meta.get("name") and not meta.get("generateName"):
        # kubectl create sends generateName and the API server picks the name.
        return [Problem("metadata", 'missing required field "name"')]
    return []


def _scope_problems(obj: dict, crd_version: CrdVersion) -> list[Problem]:
    """The API server silently drops metadata.namespace of cluster-scoped objects."""
    meta = obj.get("metadata")
    if crd_version.crd.scope == "Cluster" and isinstance(meta, dict) and meta.get("namespace"):
        return [
            Problem(
                "metadata.namespace", f"must not be set: {crd_version.crd.kind} is cluster-scoped"
            )
        ]
    return []


def _errors(compiled: Any, obj: dict) -> list[Problem]:
    """Translate every jsonschema_rs error of ``obj`` to Problems."""
    if compiled.is_valid(obj):  # the fast path: is_valid stops at nothing to report
        return []
    problems: list[Problem] = []
    for err in compiled.iter_errors(obj):
        problems.extend(_translate(err))
    return problems


def _translate(err: Any) -> list[Problem]:
    """One jsonschema_rs ValidationError as Problems (oneOf/anyOf may expand to several)."""
    kind = err.kind
    name = type(kind).__name__
    path = field_path(err.instance_path, err.evaluation_path)
    if name in ("AnyOf", "OneOfNotValid"):
        return _translate_alternatives(err, path)
    if name == "Custom" and kind.as_dict().get("keyword") == LIST_MAP_KEYS:
        index, _, message = str(kind.as_dict().get("message", "")).partition("|")
        return [Problem(f"{path}[{index}]", message)]
    return [Problem(path, _message(name, kind, err))]


def _message(name: str, kind: Any, err: Any) -> str:
    """The short human message for one non-composite error kind."""
    data = kind.as_dict()
    got = _show(err.instance)
    if name == "AdditionalProperties":
        fields = ", ".join(f'"{f}"' for f in sorted(data["unexpected"]))
        return f"unknown field{'s' if len(data['unexpected']) > 1 else ''} {fields}"
    if name == "Required":
        return f'missing required field "{data["property"]}"'
    if name == "Enum":
        options = sorted(_plain(o) for o in data["options"])  # sorted: easier to scan
        return f"must be one of: {', '.join(options)} (got {got})"
    if name == "Constant":
        return f"must be {_show(data['expected_value'])} (got {got})"
    if name == "Type":
        return f"must be {_types(data['types'])} (got {_type_name(err.instance)})"
    simple: dict[str, Callable[[], str]] = {
        "Pattern": lambda: f"must match {data['pattern']} (got {got})",
        "MinLength": lambda: f"must be at least {data['limit']} characters long (got {got})",
        "MaxLength": lambda: f"must be at most {data['limit']} characters long",
        "MinItems": lambda: f"must have at least {data['limit']} item(s)",
        "MaxItems": lambda: f"must have at most {data['limit']} item(s)",
        "MinProperties": lambda: f"must have at least {data['limit']} entries",
        "MaxProperties": lambda: f"must have at most {data['limit']} entries",
        "Minimum": lambda: f"must be >= {data['limit']} (got {got})",
        "Maximum": lambda: f"must be <= {data['limit']} (got {got})",
        "ExclusiveMinimum": lambda: f"must be > {data['limit']} (got {got})",
        "ExclusiveMaximum": lambda: f"must be < {data['limit']} (got {got})",
        "MultipleOf": lambda: f"must be a multiple of {data['multiple_of']} (got {got})",
        "UniqueItems": lambda: "must not contain duplicate items",
        "Format": lambda: f"must be a valid {data['format']} (got {got})",
        "Custom": lambda: str(data.get("message", err.message)),
        "OneOfMultipleValid": lambda: f"matches more than one allowed form (got {got})",
        "FalseSchema": lambda: "is not allowed here",
    }
    return simple[name]() if name in simple else err.message


def _translate_alternatives(err: Any, path: str) -> list[Problem]:
    """anyOf/oneOf: merge pure type mismatches, else report the closest alternative."""
    branches = [list(b) for b in err.kind.context]
    if branches and all(
        len(b) == 1
        and type(b[0].kind).__name__ == "Type"
        and list(b[0].instance_path) == list(err.instance_path)
        for b in branches
    ):
        types = [t for b in branches for t in b[0].kind.as_dict()["types"]]
        return [Problem(path, f"must be {_types(types)} (got {_type_name(err.instance)})")]
    # The closest alternative is one whose type matched: its errors are deeper or
    # of another kind. With none, fall back to the validator's own sentence.
    matched = [
        b
        for b in branches
        if not any(
            type(e.kind).__name__ == "Type" and list(e.instance_path) == list(err.instance_path)
            for e in b
        )
    ]
    if len(matched) == 1:
        return [p for e in matched[0] for p in _translate(e)]
    return [Problem(path, f"does not match any allowed form (got {_show(err.instance)})")]


# Keywords followed in an evaluation path by a property name or an index that is
# NOT an instance step; and keywords that step into the instance.
_NAMED = {
    "properties",
    "patternProperties",
    "prefixItems",
    "allOf",
    "anyOf",
    "oneOf",
    "dependentSchemas",
    "$defs",
    "definitions",
}
_MAP_STEP = {"additionalProperties", "unevaluatedProperties"}
_ITEM_STEP = {"items", "unevaluatedItems", "additionalItems", "contains"}


def field_path(instance_path: Any, evaluation_path: Any) -> str:
    """Render an instance path Kubernetes style: spec.hard[nvidia.com/gpu], items[0].name."""
    steps = _step_kinds(list(evaluation_path))
    parts = list(instance_path)
    out = ""
    for i, part in enumerate(parts):
        kind = steps[i] if len(steps) == len(parts) else None
        if (
            isinstance(part, int)
            or kind == "item"
            or kind == "map"
            or (kind is None and not _identifier(part))
        ):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _step_kinds(tokens: list[Any]) -> list[str]:
    """For each instance step in an evaluation path: "prop", "map" or "item"."""
    kinds: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "properties" and i + 1 < len(tokens):
            kinds.append("prop")
            i += 2
            continue
        if token in ("patternProperties", "prefixItems") and i + 1 < len(tokens):
            kinds.append("map" if token == "patternProperties" else "item")
            i += 2
            continue
        if token in _NAMED:
            i += 2
            continue
        if token in _MAP_STEP:
            kinds.append("map")
        elif token in _ITEM_STEP:
            kinds.append("item")
        i += 1
    return kinds


def _identifier(part: Any) -> bool:
    """Whether a key renders as .key (a field name) rather than [key] (a map key)."""
    return isinstance(part, str) and part.replace("_", "a").isalnum() and not part[:1].isdigit()


def _types(types: list[str]) -> str:
    """ "integer or string" from a JSON Schema type list; null is noise in core schemas."""
    names = [t for t in dict.fromkeys(types) if t != "null"] or ["null"]
    return " or ".join(names)


def _type_name(value: Any) -> str:
    """The JSON type name of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    """A value shown in a message: JSON, truncated."""
    if isinstance(value, (dict, list)):
        return _type_name(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: Any) -> str:
    """An enum option: bare when a string, JSON otherwise."""
    return value if isinstance(value, str) else _show(value)
