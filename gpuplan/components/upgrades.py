"""What upstream says about moving between releases: required stops and the actions a bump must take.

Facts only, each with its source ("owner/repo@tag:path", or a release note's address). The PR comment's
upgrade plan (`gpuplan.diff.upgrade`) reads them through `steps` and `notes_between`; the CRD, chart
value, metric and image differences it computes itself from what gpuplan ships per release.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Component


@dataclass(frozen=True)
class UpgradeNote:
    """An action upstream documents for a bump that crosses `version` (old < version <= new)."""

    component: str  # registry name: "kueue", "karpenter", ...
    version: str  # the release that brings it
    action: str  # what the platform team must do, in gpuplan's own words
    source: str  # where upstream says so
    required: bool = True  # upstream marks it "ACTION REQUIRED" / an urgent upgrade note
    line: str = ""  # the release line, for a component with several ("aws", "azure")


@dataclass(frozen=True)
class RequiredStop:
    """A release a bump must stop at: from below `version` to above it, upgrade to `version` first."""

    component: str
    version: str
    why: str
    source: str
    line: str = ""


NOTES: tuple[UpgradeNote, ...] = ()
STOPS: tuple[RequiredStop, ...] = ()


def version_key(version: str) -> tuple[int, ...]:
    """Return a release's numbers for ordering ("v0.14.4" -> (0, 14, 4)); a suffix after "-" is ignored."""
    core = version.removeprefix("v").split("-", 1)[0]
    return tuple(int(part) for part in core.split(".") if part.isdigit())


def notes_between(component: Component, line: str, old: str, new: str) -> list[UpgradeNote]:
    """Return the notes of the releases a bump from `old` to `new` crosses (old < v <= new), oldest first."""
    low, high = version_key(old), version_key(new)
    found = [
        n
        for n in NOTES
        if n.component == component.name and n.line == line and low < version_key(n.version) <= high
    ]
    return sorted(found, key=lambda n: version_key(n.version))


def steps(component: Component, line: str, old: str, new: str) -> list[RequiredStop]:
    """Return the releases a bump from `old` to `new` must stop at on the way (old < v < new), oldest first."""
    low, high = version_key(old), version_key(new)
    found = [
        s
        for s in STOPS
        if s.component == component.name and s.line == line and low < version_key(s.version) < high
    ]
    return sorted(found, key=lambda s: version_key(s.version))
