"""What a disruption is: a code with a severity, where, about what, what happens, and to whom.

Codes are stable names tools gate on (`gpuplan diff --fail-on CODE|SEVERITY`); the severity
says how bad the code is:

- `disruptive`: running work is stopped, evicted or moved, or nodes are drained or replaced;
- `risk`: nothing stops by itself, but the change loosens isolation or security, or rolls
  components a reviewer should know about;
- `error`: the change does what upstream forbids (a version bump that skips a required stop); a
  diff does not fail on it by itself (the PR comment must still be posted): `--fail-on error`
  gates it, and `gpuplan check --base REF` refuses it as an error at the version's line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpuplan.diff.objects import ObjectChange, ObjectKey, Side

ERROR, DISRUPTIVE, RISK = "error", "disruptive", "risk"
SEVERITIES = (ERROR, DISRUPTIVE, RISK)

# code -> (severity, heading in the markdown comment)
CODES: dict[str, tuple[str, str]] = {
    "upgrade-skip": (ERROR, "Upgrade skips a required release"),
    "mig-relayout": (DISRUPTIVE, "MIG relayout"),
    "driver-upgrade": (DISRUPTIVE, "GPU driver change"),
    "nodes-replaced": (DISRUPTIVE, "Nodes replaced"),
    "pool-removed": (DISRUPTIVE, "Pool removed"),
    "tenant-removed": (DISRUPTIVE, "Tenant removed"),
    "namespace-removed": (DISRUPTIVE, "Namespace removed"),
    "quota-cut": (DISRUPTIVE, "Quota cut"),
    "priority-lowered": (DISRUPTIVE, "Priority lowered"),
    "operator-removed": (DISRUPTIVE, "Operator removed"),
    "topology-changed": (DISRUPTIVE, "Topology levels changed or removed"),
    "gpu-operator-upgrade": (RISK, "GPU Operator components roll"),
    "chart-upgrade": (RISK, "Operator chart change"),
    "upgrade": (RISK, "Component upgrade"),
    "crd-changed": (RISK, "CRD change"),
    "priority-raised": (RISK, "Priority raised"),
    "takes-from-tenants": (RISK, "Can take from other tenants"),
    "psa-loosened": (RISK, "Pod Security loosened"),
    "rbac-widened": (RISK, "Owners and RBAC widened"),
    "isolation-off": (RISK, "Network isolation off"),
    "priority-ceiling-raised": (RISK, "Priority ceiling raised"),
    "renamed": (RISK, "Renamed"),
    "kai-queue-changed": (RISK, "KAI Queue changed"),
    "dra-changed": (RISK, "DRA class or claim template changed"),
    "admission-tightened": (RISK, "Admission tightened"),
    "admission-loosened": (RISK, "Admission loosened"),
}


@dataclass(frozen=True)
class Blast:
    """Who a disruption reaches: nodes, GPUs and tenants (None: not known from the objects)."""

    nodes: int | None = None
    gpus: int | None = None
    tenants: tuple[str, ...] = ()
    text: str = ""  # the figures in words, e.g. "up to 16 nodes (2 always on), up to 128 GPUs"

    def describe(self) -> str:
        """Return `16 nodes, 128 GPUs; tenants a, b` (what is known)."""
        parts = [self.text] if self.text else []
        if self.tenants:
            parts.append(
                ("tenant " if len(self.tenants) == 1 else "tenants ") + ", ".join(self.tenants)
            )
        return "; ".join(parts)


@dataclass(frozen=True, order=True)
class Disruption:
    """One disruptive or risky change: where, which code, about what, what happens, to whom."""

    scope: str
    code: str
    subject: str
    message: str
    blast: Blast = field(default_factory=Blast, compare=False)

    @property
    def severity(self) -> str:
        """Return the severity of the code."""
        return CODES[self.code][0]

    @property
    def title(self) -> str:
        """Return the heading of the code."""
        return CODES[self.code][1]

    @property
    def kind(self) -> str:
        """Return the code (the name this field had before codes and severities)."""
        return self.code


def dig(node: Any, *path: str) -> Any:
    """Return a nested field, or None when any step is missing."""
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def mapping(node: Any) -> dict[str, Any]:
    """Return a mapping, or an empty one for anything else."""
    return node if isinstance(node, dict) else {}


def listing(node: Any) -> list[Any]:
    """Return a list, or an empty one for anything else."""
    return node if isinstance(node, list) else []


def is_kind(key: ObjectKey, group: str, kind: str) -> bool:
    """Tell whether a key is of this API group and kind."""
    return key.group == group and key.kind == kind


def with_status(changes: list[ObjectChange], status: str) -> Iterator[ObjectKey]:
    """Yield the keys of the objects with this status."""
    return (c.key for c in changes if c.status == status)


def both(old: Side, new: Side, key: ObjectKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return an object as it was and as it is (empty mappings where missing)."""
    before, after = old.get(key), new.get(key)
    return (before.obj if before else {}), (after.obj if after else {})


class Facts(Protocol):
    """What each pool puts at stake (gpuplan.diff.blast.Facts): the blast radius of a change."""

    stacks: dict[tuple[str, str], tuple[str, str]]  # pools whose preinstalled GPU stack changes

    def pool(self, scope: str, pool: str, tenants: tuple[str, ...] | None = None) -> Blast: ...

    def cluster(self, scope: str) -> Blast: ...

    def some(self, scope: str, names: set[str]) -> Blast: ...

    def model(self, scope: str, pool: str) -> str | None: ...


@dataclass
class Context:
    """Both sides of a diff, the object changes between them, and what each pool puts at stake."""

    old: Side
    new: Side
    changes: list[ObjectChange]
    facts: Facts

    def changed(self) -> Iterator[ObjectKey]:
        """Yield the keys of the objects on both sides that differ (renamed ones at their new key)."""
        return (c.key for c in self.changes if c.status in ("changed", "renamed"))

    def removed(self) -> Iterator[ObjectKey]:
        """Yield the keys of the objects only the old side has."""
        return with_status(self.changes, "removed")


Rule = Callable[[Context], Iterator[Disruption]]
