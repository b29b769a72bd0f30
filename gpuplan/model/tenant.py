"""The Tenant input file: namespaces, owners and GPU quotas per cluster."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from gpuplan.model.common import Model, Name, Quantity

SUBJECT = re.compile(r"^(group|user):[^\s]{1,253}$|^serviceaccount:[a-z0-9-]{1,63}:[a-z0-9.-]{1,253}$")


def _subject(value: Any) -> Any:
    if isinstance(value, str) and not SUBJECT.fullmatch(value):
        raise ValueError(
            f"{value[:80]!r} is not a subject: use group:NAME, user:NAME or serviceaccount:NAMESPACE:NAME"
        )
    return value


Subject = Annotated[str, BeforeValidator(_subject)]
Count = Annotated[int, Field(ge=0, le=10_000_000)]
Limit = Count | dict[str, Count]


class Quota(Model):
    """A tenant's quota on one pool: whole GPUs or shares (gpus), or MIG instances (mig)."""

    pool: Name
    gpus: Count | None = None
    """Whole GPUs (exclusive pools) or shares (time-sliced and MPS pools)."""
    mig: dict[str, Count] | None = Field(default=None, min_length=1)
    """MIG instances per profile, such as {1g.10gb: 14}."""
    borrowing_limit: Limit | None = None
    """Most the tenant may borrow from its cohort (a number for gpus, per profile for mig)."""
    lending_limit: Limit | None = None
    """Most of its quota the tenant lends to its cohort."""

    @model_validator(mode="after")
    def _one_unit(self) -> Quota:
        if (self.gpus is None) == (self.mig is None):
            raise ValueError("set gpus (whole GPUs or shares) or mig (instances per profile), not both")
        for field in ("borrowing_limit", "lending_limit"):
            limit = getattr(self, field)
            if self.gpus is not None and isinstance(limit, dict):
                raise ValueError(f"{_camel(field)} is a number on a gpus quota")
            if self.mig is not None and isinstance(limit, int):
                raise ValueError(f"{_camel(field)} is a mapping per MIG profile on a mig quota")
        return self


def _camel(field: str) -> str:
    head, *rest = field.split("_")
    return head + "".join(part.title() for part in rest)


class Allocation(Model):
    """What a tenant may use on one cluster."""

    cluster: Name
    cohort: Name | None = None
    """Kueue cohort; required for borrowing and lending."""
    weight: int | None = Field(default=None, ge=1, le=1_000_000)
    """Volcano queue weight and Kueue fair-sharing weight."""
    quotas: list[Quota] = Field(min_length=1)
    cpu: Quantity | None = None
    """Total cpu; default: each pool's cpu per GPU times the GPUs granted."""
    memory: Quantity | None = None
    """Total memory; default: each pool's memory per GPU times the GPUs granted."""
    max_gpus_per_pod: int | None = Field(default=None, ge=1, le=64)
    """Most whole GPUs one pod may ask for; default: the largest gpusPerNode granted."""
    networks: list[Name] = []


class Tenant(Model):
    """One team sharing the fleet (tenants/<name>.yaml)."""

    name: Name
    namespaces: list[Name] | None = Field(default=None, min_length=1)
    """Default: [name]."""
    owners: list[Subject] = []
    """RBAC subjects given admin in the namespaces: group:NAME, user:NAME, serviceaccount:NS:NAME."""
    pod_security: Literal["restricted", "baseline", "privileged"] = "restricted"
    network_isolation: bool = True
    priority_class: Name | None = None
    allocations: list[Allocation] = []

    @property
    def namespace_names(self) -> list[str]:
        """Return the tenant's namespaces (its name when none are given)."""
        return list(self.namespaces) if self.namespaces else [self.name]
