"""What a component module declares: its releases (facts per version, with sources), CRDs, emitter, checks.

A component module builds one `Component` and the registry (`gpuplan.components.REGISTRY`) lists it.
Emitters and checks are named as "module:function" / "module" strings and imported when used, so this
package imports neither `emit/` nor `check/` and both can read facts from it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chart:
    """The Helm chart that installs a release: repository (https:// or oci://), name and version."""

    repo: str
    name: str
    version: str


@dataclass(frozen=True)
class Release:
    """One supported upstream release and the facts gpuplan relies on for it.

    Component modules subclass this with typed facts (served apiVersions, fields and enum values added
    or removed, operand images...). `sources` names where each fact was checked: "owner/repo@tag:path".
    """

    version: str
    sources: tuple[str, ...]
    chart: Chart | None = None
    crds: str | None = None  # the shipped CRD set: gpuplan/crds/<component>/<crds>/ (None: ships none)


class UnknownVersion(ValueError):
    """A version gpuplan has no facts for; the message lists the known ones with a did-you-mean."""


@dataclass(frozen=True)
class Component:
    """A component gpuplan configures (and, where it has a chart, installs)."""

    name: str  # registry key, e.g. "kueue", "gpu-operator"
    field: str  # key under a cluster's `components:`, e.g. "kueue", "gpuOperator"
    releases: tuple[Release, ...]
    emitter: str | None = None  # "gpuplan.emit.kueue:emit"
    checks: tuple[str, ...] = ()  # modules under gpuplan.check registering this component's checks
    _by_version: Mapping[str, Release] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_version", {r.version: r for r in self.releases})

    @property
    def versions(self) -> tuple[str, ...]:
        """Return the supported versions, oldest first."""
        return tuple(r.version for r in self.releases)

    def release(self, version: str) -> Release:
        """Return the facts of one version, or raise UnknownVersion naming the known ones."""
        try:
            return self._by_version[version]
        except KeyError:
            raise UnknownVersion(unknown_version_message(self.name, version, self.versions)) from None


def unknown_version_message(component: str, version: str, known: tuple[str, ...]) -> str:
    """Return '<component> <version> is not supported (did you mean ...?); supported: ...'."""
    close = difflib.get_close_matches(version, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{component} {version} is not supported{hint}; supported versions: {', '.join(known)}"
