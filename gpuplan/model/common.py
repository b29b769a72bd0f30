"""Shared building blocks of the input models: base config, names, quantities, versions."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from gpuplan.model.names import DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_NAME, LABEL_VALUE
from gpuplan.model.quantity import QuantityError, parse_quantity, quantity_text

VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.-]+)?$")


def matching(pattern: re.Pattern[str], what: str) -> Any:
    """Return a validator that refuses a string unless it is wholly `pattern` (strings reach YAML and JSON)."""

    def check(value: Any) -> Any:
        if isinstance(value, str) and not pattern.fullmatch(value):
            raise ValueError(f"{value[:80]!r} is not {what}")
        return value

    return BeforeValidator(check)


class Model(BaseModel):
    """Base of every input model: camelCase keys, unknown keys rejected, strict types."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
    )


def _dns_label(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string (a DNS-1123 label)")
    if not DNS1123_LABEL.fullmatch(value):
        raise ValueError(
            f"{value[:80]!r} is not a DNS-1123 label: lower-case letters, digits and '-', "
            "at most 63 characters, starting and ending with a letter or digit"
        )
    return value


Name = Annotated[
    str,
    BeforeValidator(_dns_label),
    WithJsonSchema({"type": "string", "pattern": DNS1123_LABEL.pattern, "maxLength": 63}),
]


def is_label_key(key: str) -> bool:
    """Tell whether `key` is a valid Kubernetes label key (optional DNS prefix, then a name)."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return bool(name) and len(name) <= 63 and bool(LABEL_NAME.fullmatch(name))


def _label_key(value: Any) -> str:
    if not isinstance(value, str) or not is_label_key(value):
        raise ValueError(f"{str(value)[:80]!r} is not a valid Kubernetes label key")
    return value


def _label_value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("must be a string")
    text = str(value)
    if len(text) > 63 or not LABEL_VALUE.fullmatch(text):
        raise ValueError(f"{text[:80]!r} is not a valid Kubernetes label value")
    return text


LabelKey = Annotated[str, BeforeValidator(_label_key), WithJsonSchema({"type": "string"})]
LabelValue = Annotated[
    str, BeforeValidator(_label_value), WithJsonSchema({"type": "string", "maxLength": 63})
]


def _quantity(value: Any) -> Fraction:
    if isinstance(value, Fraction):
        return value
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


Quantity = Annotated[
    Fraction,
    BeforeValidator(_quantity),
    PlainSerializer(quantity_text, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "string",
                    "pattern": r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[numkMGTPE]i?)?$",
                },
                {"type": "number", "minimum": 0},
            ],
            "description": "Kubernetes quantity: 500m, 64, 2000Gi, 2Ti",
        }
    ),
]


def _version(value: Any) -> str:
    if not isinstance(value, str) or not VERSION.fullmatch(value):
        raise ValueError(f"{str(value)[:40]!r} is not a version such as v0.19.2 (quote it in YAML)")
    return value


Version = Annotated[
    str, BeforeValidator(_version), WithJsonSchema({"type": "string", "pattern": VERSION.pattern})
]


def version_tuple(version: str) -> tuple[int, int, int]:
    """Return (major, minor, patch) of a version string such as `v0.19.2` or `1.33`."""
    match = VERSION.fullmatch(version)
    if match is None:
        raise ValueError(version)
    return int(match[1]), int(match[2]), int(match[3] or 0)


CODE = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"


class Ignore(Model):
    """A warning accepted where it stands (on a cluster, pool, tenant or allocation), and why."""

    code: str = Field(pattern=CODE, max_length=63)
    """The warning's code, shown in [brackets] after each diagnostic, such as pool-capacity-autoscaled."""
    reason: str = Field(min_length=1, max_length=1024)
    """Why the warning is accepted; listed with the warning in `--format json`."""


class Resources(Model):
    """An amount of cpu and memory (either may be left out)."""

    cpu: Quantity | None = None
    """Cores, such as 500m or 2."""
    memory: Quantity | None = None
    """Bytes, such as 512Mi or 4Gi."""


class Requests(Model):
    """Default requests: the namespace ResourceQuota constrains cpu and memory, so both always get one."""

    cpu: Quantity = parse_quantity("100m")
    """Cores; default 100m."""
    memory: Quantity = parse_quantity("256Mi")
    """Bytes; default 256Mi."""


class ContainerDefaults(Model):
    """What a container that states no cpu or memory gets (the namespace LimitRange defaults)."""

    requests: Requests = Requests()
    """Default requests; default {cpu: 100m, memory: 256Mi}."""
    limits: Resources = Resources()
    """Default limits; default none: a container stating a request above a default limit (and no
    limit of its own) would be rejected by the API server."""

    @model_validator(mode="after")
    def _request_within_limit(self) -> ContainerDefaults:
        for what in ("cpu", "memory"):
            request, limit = getattr(self.requests, what), getattr(self.limits, what)
            if limit is not None and request > limit:
                raise ValueError(
                    f"the default {what} request {request} is above the default {what} limit {limit}"
                )
        return self
