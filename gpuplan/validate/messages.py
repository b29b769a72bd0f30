"""jsonschema_rs errors as short Kubernetes-style problems: a field path and a message."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuplan.validate.strict import LIST_MAP_KEYS


@dataclass(frozen=True, order=True)
class Problem:
    """One schema violation: a Kubernetes field path ("" is the object) and a short message."""

    path: str
    message: str
    code: str = ""  # MISSING_CRD for a custom resource whose CRD is not known

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def problems_of(compiled: Any, obj: dict) -> list[Problem]:
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
    got = show(err.instance)
    if name == "AdditionalProperties":
        fields = ", ".join(f'"{f}"' for f in sorted(data["unexpected"]))
        return f"unknown field{'s' if len(data['unexpected']) > 1 else ''} {fields}"
    if name == "Required":
        return f'missing required field "{data["property"]}"'
    if name == "Enum":
        options = sorted(_plain(o) for o in data["options"])  # sorted: easier to scan
        return f"must be one of: {', '.join(options)} (got {got})"
    if name == "Constant":
        return f"must be {show(data['expected_value'])} (got {got})"
    if name == "Type":
        return f"must be {_types(data['types'])} (got {type_name(err.instance)})"
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
        return [Problem(path, f"must be {_types(types)} (got {type_name(err.instance)})")]
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
    return [Problem(path, f"does not match any allowed form (got {show(err.instance)})")]


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


def type_name(value: Any) -> str:
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


def show(value: Any, limit: int = 60) -> str:
    """A value shown in a message: JSON, truncated."""
    if isinstance(value, (dict, list)):
        return type_name(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: Any) -> str:
    """An enum option: bare when a string, JSON otherwise."""
    return value if isinstance(value, str) else show(value)
