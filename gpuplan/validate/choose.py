"""Which component versions, hence which shipped CRDs, each folder of manifests is validated against.

A folder gpuplan rendered says so in its kustomization.yaml (`# Components: kueue=v0.14.4 ...`);
`--component NAME=VERSION` overrides it; anything neither names uses the newest shipped set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gpuplan.crds import UnknownCrdSet, index_for, parse_components, set_for, shipped_sets
from gpuplan.diagnostics import Diagnostic, error
from gpuplan.validate.crds import CrdIndex
from gpuplan.validate.engine import Validator

HEADER = re.compile(r"^#\s*Components:\s*(.*)$", re.M)
# Components installing the same kinds: naming one drops the others' CRDs (the AWS provider's
# NodePool restricts karpenter.k8s.aws labels, the core one does not).
FAMILIES = (("karpenter", "karpenter-provider-aws", "karpenter-provider-azure"),)


class UsageError(ValueError):
    """A --component value names no shipped component or version."""


def chosen_sets(items: list[str]) -> dict[str, str]:
    """Parse --component values into component -> shipped set; raise UsageError when unknown."""
    try:
        wanted = parse_components(items)
    except ValueError as exc:
        raise UsageError(f"--component {exc}") from None
    return {name: _set(name, version) for name, version in wanted.items()}


def _set(component: str, version: str) -> str:
    """The shipped set of one named component version, or UsageError."""
    if component not in shipped_sets():
        raise UsageError(
            f"--component {component}: gpuplan ships no CRDs of that component "
            f"(known: {', '.join(sorted(shipped_sets()))})"
        )
    try:
        return set_for(component, version)
    except UnknownCrdSet as exc:
        raise UsageError(f"--component {component}={version}: {exc}") from None


def header_sets(kustomization: Path) -> tuple[dict[str, str], list[Diagnostic]]:
    """Return the component sets a rendered folder's header names (and problems reading it)."""
    try:
        text = kustomization.read_text(encoding="utf-8-sig")
    except OSError:
        return {}, []
    m = HEADER.search(text)
    if m is None:
        return {}, []
    line = text.count("\n", 0, m.start()) + 1
    found: dict[str, str] = {}
    problems: list[Diagnostic] = []
    try:
        named = parse_components(m.group(1).split())
    except ValueError as exc:
        return {}, [error(str(kustomization), line, 1, "", f"Components header: {exc}")]
    for name, version in named.items():
        try:
            found[name] = set_for(name, version) if name in shipped_sets() else version
        except UnknownCrdSet as exc:
            problems.append(error(str(kustomization), line, 1, "", f"Components header: {exc}"))
    return {k: v for k, v in found.items() if k in shipped_sets()}, problems


def nearest_kustomization(folder: Path) -> Path | None:
    """Return the kustomization.yaml of a folder or of the nearest folder above it that has one.

    A file given on its own (output/dgx-onprem/kueue/x.yaml) still gets its cluster's versions.
    """
    for candidate in (folder, *folder.absolute().parents):
        if (candidate / "kustomization.yaml").is_file():
            return candidate / "kustomization.yaml"
    return None


def combined(header: Mapping[str, str], flags: Mapping[str, str]) -> dict[str, str]:
    """Newest shipped sets, replaced by the header's, replaced by the flags'."""
    named = {**header, **flags}
    sets = {name: versions[-1] for name, versions in shipped_sets().items() if versions}
    for family in FAMILIES:
        if any(member in named for member in family):
            for member in family:
                sets.pop(member, None)
    sets.update(named)
    return sets


class Validators:
    """One Validator per distinct set of component versions, chosen per folder."""

    def __init__(self, kubernetes_version: str, flags: Mapping[str, str], extra: CrdIndex | None):
        self.kubernetes_version = kubernetes_version
        self.flags = dict(flags)
        self.extra = extra
        self.problems: list[Diagnostic] = []
        self._by_sets: dict[tuple[tuple[str, str], ...], Validator] = {}
        self._by_unit: dict[str, Validator] = {}

    def for_unit(self, unit: str) -> Validator:
        """Return the Validator of a folder (a cluster folder or a path given on the command line)."""
        found = self._by_unit.get(unit)
        if found is None:
            kustomization = nearest_kustomization(Path(unit))
            header, problems = header_sets(kustomization) if kustomization else ({}, [])
            self.problems += problems
            found = self._validator(combined(header, self.flags), named={**header, **self.flags})
            self._by_unit[unit] = found
        return found

    def _validator(self, sets: dict[str, str], named: Mapping[str, str]) -> Validator:
        key = tuple(sorted(sets.items()))
        found = self._by_sets.get(key)
        if found is None:
            label = (
                ", ".join(f"{k} {v}" for k, v in sorted(named.items()))
                or "the newest shipped releases"
            )
            found = Validator(
                index_for(sets, self.extra),
                self.kubernetes_version,
                cel=True,
                webhooks=True,
                crds_label=label,
                kueue=sets.get("kueue"),
            )
            self._by_sets[key] = found
        return found

    def forget_folders(self) -> None:
        """Choose each folder's versions afresh (its header may have changed); keep the compiled Validators."""
        self._by_unit.clear()
        self.problems = []

    def all(self) -> list[Validator]:
        """Every Validator made so far."""
        return list(self._by_sets.values())
