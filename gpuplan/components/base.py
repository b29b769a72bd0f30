"""What a component module declares: its releases (facts per version, with sources), CRDs, emitter, checks.

A component module builds one `Component` and the registry (`gpuplan.components.REGISTRY`) lists it.
Emitters and checks are named as "module:function" / "module" strings and imported when used, so this
package imports neither `emit/` nor `check/` and both can read facts from it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any


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
    # The shipped CRD set: gpuplan/crds/<component>/<crds>/, or gpuplan/crds/<crds>/ when it holds a "/"
    # (a set kept under another folder, "karpenter-provider-aws/v1.14.1"); None: ships none.
    crds: str | None = None
    line: str = ""  # the release line, for a component with several ("aws", "azure" for Karpenter)


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
    line_field: str | None = (
        None  # the cluster field that picks a release line ("provider" for Karpenter)
    )
    # False: the key under `components:` is optional and only pins a version; without it the newest
    # release is the one in use (NFD, Multus: whether they run follows from the rest of the file).
    configured: bool = True
    scope: str = "cluster"  # "cluster": emitter(cluster) per cluster; "fleet": emitter(fleet, output_path) once
    _by_version: Mapping[tuple[str, str], Release] = dataclass_field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_version", {(r.line, r.version): r for r in self.releases})

    @property
    def versions(self) -> tuple[str, ...]:
        """Return the supported versions, oldest first (of every line)."""
        return tuple(r.version for r in self.releases)

    @property
    def lines(self) -> tuple[str, ...]:
        """Return the release lines, in the order their first release is listed."""
        return tuple(dict.fromkeys(r.line for r in self.releases))

    def versions_of(self, line: str = "") -> tuple[str, ...]:
        """Return the supported versions of one release line, oldest first."""
        return tuple(r.version for r in self.releases if r.line == line)

    def newest(self, line: str = "") -> Release:
        """Return the newest supported release of a line."""
        return [r for r in self.releases if r.line == line][-1]

    def crd_set(self, release: Release) -> str | None:
        """Return the shipped CRD set of a release, relative to gpuplan/crds/ ("kueue/v0.19.2")."""
        if release.crds is None:
            return None
        return release.crds if "/" in release.crds else f"{self.name}/{release.crds}"

    def release(self, version: str, line: str = "") -> Release:
        """Return the facts of one version, or raise UnknownVersion naming the known ones."""
        try:
            return self._by_version[(line, version)]
        except KeyError:
            name = f"{self.name} ({line})" if line else self.name
            raise UnknownVersion(
                unknown_version_message(name, version, self.versions_of(line))
            ) from None


def unknown_version_message(component: str, version: str, known: tuple[str, ...]) -> str:
    """Return '<component> <version> is not supported (did you mean ...?); supported: ...'."""
    close = closest_version(version, known)
    hint = f" (did you mean {close!r}?)" if close else ""
    return f"{component} {version} is not supported{hint}; supported versions: {', '.join(known)}"


def closest_version(version: str, known: tuple[str, ...]) -> str | None:
    """Return the newest known release of the same minor, else the most similar version string."""
    minor = version.removeprefix("v").split(".")[:2]
    same = [k for k in known if k.removeprefix("v").split(".")[:2] == minor]
    if same:
        return same[-1]
    close = difflib.get_close_matches(version, known, n=1, cutoff=0.6)
    return close[0] if close else None


def load(target: str) -> Any:
    """Import "package.module:attribute" (an emitter) and return the attribute."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
