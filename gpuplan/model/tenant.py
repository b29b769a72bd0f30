"""The Tenant input file: namespaces, owners and GPU quotas per cluster."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

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
    """A GPU pool of the allocation's cluster (nodePools[].name)."""
    gpus: Count | None = None
    """Whole GPUs (exclusive pools) or shares (time-sliced and MPS pools)."""
    mig: dict[str, Count] | None = Field(default=None, min_length=1)
    """MIG instances per profile, such as {1g.10gb: 14}."""
    borrowing_limit: Limit | None = None
    """Most the tenant may borrow from its cohort (a number for gpus, per profile for mig)."""
    lending_limit: Limit | None = None
    """Most of its quota the tenant lends to its cohort."""

    @field_validator("borrowing_limit", "lending_limit")
    @classmethod
    def _limit_matches_unit(cls, limit: Limit | None, info: ValidationInfo) -> Limit | None:
        if info.data.get("gpus") is not None and isinstance(limit, dict):
            raise ValueError("must be a number on a gpus quota")
        if info.data.get("mig") is not None and isinstance(limit, int):
            raise ValueError("must be a mapping per MIG profile on a mig quota, such as {1g.10gb: 7}")
        return limit

    @model_validator(mode="after")
    def _one_unit(self) -> Quota:
        if (self.gpus is None) == (self.mig is None):
            raise ValueError("set gpus (whole GPUs or shares) or mig (instances per profile), not both")
        return self


class Allocation(Model):
    """What a tenant may use on one cluster."""

    cluster: Name
    """The cluster this allocation is on (a file in clusters/)."""
    cohort: Name | None = None
    """Kueue cohort; required for borrowing and lending."""
    weight: int | None = Field(default=None, ge=1, le=1_000_000)
    """Volcano queue weight and Kueue fair-sharing weight."""
    quotas: list[Quota] = Field(min_length=1)
    """The tenant's quota on each GPU pool it uses (at least one)."""
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
    """Tenant name, equal to the file's stem."""
    namespaces: list[Name] | None = Field(default=None, min_length=1)
    """The tenant's namespaces, unique across tenants; default: [name]."""
    owners: list[Subject] = []
    """RBAC subjects given admin in the namespaces: group:NAME, user:NAME, serviceaccount:NS:NAME."""
    pod_security: Literal["restricted", "baseline", "privileged"] = "restricted"
    """Pod Security Standard enforced in the namespaces: restricted (default), baseline or privileged."""
    network_isolation: bool = True
    """Deny ingress from other tenants' namespaces (a NetworkPolicy); default true."""
    priority_class: Name | None = None
    """Default priority class of the tenant's workloads, and the highest its pods may use."""
    allocations: list[Allocation] = []
    """What the tenant may use, one entry per cluster it runs on."""

    @property
    def namespace_names(self) -> list[str]:
        """Return the tenant's namespaces (its name when none are given)."""
        return list(self.namespaces) if self.namespaces else [self.name]
