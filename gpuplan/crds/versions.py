"""Which shipped CRD set a cluster uses: component versions from its spec, a header or flags.

Kept free of the validation engine so the emitters can name the versions in a header cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent
# Emitted for every cluster whatever its `components:` say (NodeFeatureRules, NetworkAttachment-
# Definitions); their CRDs come from the newest shipped set.
CLUSTER_ALWAYS = ("nfd", "multus")
FLEET_COMPONENTS = ("argo-cd",)  # the Argo CD Applications live in the fleet-level folder
# A cluster's `components:` key -> the shipped component, for keys the registry does not list.
_FIELDS = {
    "gpuOperator": "gpu-operator",
    "kueue": "kueue",
    "volcano": "volcano",
    "karpenter": "karpenter",
    "monitoring": "prometheus-operator",
    "kai": "kai-scheduler",
}
# Karpenter's NodePool CRD differs per provider (the AWS one restricts karpenter.k8s.aws labels),
# so the provider's own CRDs are used, chosen by the node class group.
_KARPENTER_PROVIDERS = {
    "karpenter.k8s.aws": "karpenter-provider-aws",
    "karpenter.azure.com": "karpenter-provider-azure",
}
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_PAIR = re.compile(r"([a-z0-9][a-z0-9-]*)=(\S+)")


class UnknownCrdSet(ValueError):
    """gpuplan ships no CRDs for a component version."""

    def __init__(self, component: str, version: str):
        shipped = shipped_sets().get(component)
        known = (
            f"shipped: {', '.join(shipped)}"
            if shipped
            else (f"known components: {', '.join(sorted(shipped_sets()))}")
        )
        super().__init__(
            f"gpuplan ships no CRDs for {component} {version} ({known}); give them "
            "with --crds DIR or GPUPLAN_CRDS"
        )
        self.component = component
        self.version = version


def version_key(version: str) -> tuple[int, ...]:
    """Sort key of a release version ("v1.10.2" after "v1.9.0")."""
    m = _VERSION.match(version)
    return tuple(int(p) for p in m.groups()) if m else (0, 0, 0)


@cache
def shipped_sets() -> dict[str, tuple[str, ...]]:
    """Return component -> shipped versions, oldest first."""
    found: dict[str, tuple[str, ...]] = {}
    for folder in sorted(DATA.iterdir()):
        if folder.is_dir() and folder.name not in ("LICENSES", "__pycache__"):
            versions = [v.name for v in folder.iterdir() if v.is_dir()]
            found[folder.name] = tuple(sorted(versions, key=version_key))
    return found


def newest(component: str) -> str:
    """Return the newest shipped version of a component."""
    return shipped_sets()[component][-1]


def set_for(component: str, version: str) -> str:
    """Return the shipped set for a component version: the same release, else its newest patch.

    Raise UnknownCrdSet when no release of that minor is shipped.
    """
    shipped = shipped_sets().get(component, ())
    if version in shipped:
        return version
    minor = version_key(version)[:2]
    same = [v for v in shipped if version_key(v)[:2] == minor and _VERSION.match(version)]
    if same:
        return same[-1]
    raise UnknownCrdSet(component, version)


def _shipped_set(component: str, version: str, known_only: bool) -> str | None:
    """set_for, or None for a version without a shipped set when ``known_only``."""
    try:
        return set_for(component, version)
    except UnknownCrdSet:
        if known_only:
            return None
        raise


def _from_registry(spec: Any, known_only: bool) -> tuple[dict[str, str], set[str]]:
    """Return the CRD sets the component registry gives a cluster, and the fields it covers."""
    from gpuplan.components import REGISTRY, release_of

    found: dict[str, str] = {}
    covered: set[str] = set()
    for component in REGISTRY.values():
        if getattr(component, "scope", "cluster") != "cluster":
            continue
        covered.add(component.field)
        release = release_of(component, spec)
        key = component.crd_set(release) if release is not None else None
        if key is not None:
            name, _, version = key.partition("/")
            chosen = _shipped_set(name, version, known_only)
            if chosen is not None:
                found[name] = chosen
    return found, covered


def cluster_components(spec: Any, known_only: bool = False) -> dict[str, str]:
    """Return shipped component -> CRD set for one cluster spec (gpuplan.model.Cluster).

    The component registry says which release, hence which set, a cluster runs; a `components:`
    key it does not list yet is read directly (the set of that version, else of its minor).
    Raise UnknownCrdSet for a version without a shipped set, or with ``known_only`` leave it out.
    """
    found, covered = _from_registry(spec, known_only)
    for field, component in _FIELDS.items():
        settings = getattr(spec.components, _snake(field), None)
        if field in covered or settings is None:
            continue
        if component == "karpenter":
            group = getattr(getattr(settings, "node_class", None), "group", "")
            component = _KARPENTER_PROVIDERS.get(group, component)
        chosen = _shipped_set(component, settings.version, known_only)
        if chosen is not None:
            found[component] = chosen
    for component in CLUSTER_ALWAYS:
        found.setdefault(component, newest(component))
    return found


def fleet_components() -> dict[str, str]:
    """Return component -> CRD set of the fleet-level objects (Argo CD Applications)."""
    return {component: newest(component) for component in FLEET_COMPONENTS}


def header_line(components: dict[str, str]) -> str:
    """Return the `Components:` comment naming the versions a folder was rendered for."""
    return "Components: " + " ".join(f"{k}={v}" for k, v in sorted(components.items()))


def parse_components(items: Iterable[str]) -> dict[str, str]:
    """Parse "kueue=v0.14.4" items (a header line's words or --component values).

    Raise ValueError naming a malformed item.
    """
    found: dict[str, str] = {}
    for item in items:
        m = _PAIR.fullmatch(item.strip())
        if not m:
            raise ValueError(f"{item!r} is not COMPONENT=VERSION (e.g. kueue=v0.14.4)")
        found[m.group(1)] = m.group(2)
    return found


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)
