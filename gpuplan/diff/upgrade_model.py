"""The shapes of an upgrade plan: where upstream's facts come from, what a bump is, its hops and steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpuplan.components import upgrades as upstream
from gpuplan.components.base import Component, Release
from gpuplan.diff.kinds import Blast
from gpuplan.diff.objects import ObjectKey

Notes = Callable[[Component, str, str, str], list[upstream.UpgradeNote]]
Stops = Callable[[Component, str, str, str], list[upstream.RequiredStop]]


@dataclass(frozen=True)
class Upstream:
    """Where upstream's stops and notes come from (gpuplan.components.upgrades by default)."""

    notes: Notes = upstream.notes_between
    stops: Stops = upstream.steps


UPSTREAM = Upstream()  # the shipped facts


@dataclass(frozen=True)
class Bumped:
    """What a plan needs beyond the two sides' objects (from the compiled fleets, with --base)."""

    held: dict[tuple[str, str], str] = field(default_factory=dict)
    """(cluster, component) -> the release the base runs but gpuplan does not render (its objects
    were rendered at the new release)."""
    kubernetes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """cluster -> (old, new) kubernetesVersion."""
    source: Upstream = UPSTREAM


NONE = Bumped()


@dataclass(frozen=True)
class Step:
    """One thing a hop does: its kind, one line, the details that fold, its sources and reach."""

    kind: str  # action, crds, crd-install, api, defaults, images, metrics
    text: str
    details: tuple[str, ...] = ()
    source: str = ""
    blast: Blast = field(default_factory=Blast)
    action: bool = False  # the platform team must act (before the sync, or before a later one)


@dataclass(frozen=True)
class Hop:
    """One release-to-release move of a bump."""

    old: str
    new: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Plan:
    """A component's (or Kubernetes') bump on one cluster, hop by hop."""

    scope: str
    component: str
    line: str
    old: str
    new: str
    application: str
    blast: Blast
    stops: tuple[upstream.RequiredStop, ...]
    hops: tuple[Hop, ...]
    note: str = ""  # how the sides were rendered, when not at the bump's own releases

    @property
    def identical(self) -> bool:
        """Tell whether the two releases ship the same CRDs, chart defaults and images: nothing but
        the controller's own image changes, and upstream's notes (if any) are the only steps."""
        return not self.stops and all(s.kind == "action" for h in self.hops for s in h.steps)

    @property
    def notes(self) -> int:
        """Return how many steps are upstream's notes."""
        return sum(1 for h in self.hops for s in h.steps if s.kind == "action")

    @property
    def title(self) -> str:
        """Return `kueue v0.14.4 -> v0.19.2` (with the release line)."""
        line = f" ({self.line})" if self.line else ""
        return f"{self.component}{line} {self.old} -> {self.new}"


@dataclass(frozen=True)
class Bump:
    """A component release change found on an Application."""

    scope: str
    component: Component
    line: str
    old: Release
    new: Release
    application: ObjectKey
    held: bool = False  # the base runs `old` but was rendered at a release gpuplan renders
