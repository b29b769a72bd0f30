"""Helm values overrides for the operator charts: values/<cluster>/<component>.yaml over the derived values.

The merge is Helm's own for several values files (`helm -f derived.yaml -f override.yaml`):
mappings merge key by key, scalars and lists are replaced, and a null is kept, so Helm deletes
that key from the chart's defaults (helm/helm v3.9.0 pkg/cli/values/options.go, mergeMaps;
helm.sh/docs/chart_template_guide/values_files, "Deleting a default key").

Some values decide what gpuplan proves and must stay as derived (OWNED_VALUES); an override
that sets one of them is an error saying why, at its file:line:col.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.diagnostics import Diagnostic, SourceFile, error
from gpuplan.load import parse

FOLDER = "values"
CLUSTER_POLICY_WHY = "gpuplan renders and proves the ClusterPolicy itself (MIG strategy, mig-parted and device-plugin configs): the chart must not create its own"

# Values per chart that gpuplan owns, with why. GPU Operator chart v26.7.0 renders its own
# ClusterPolicy unless clusterPolicy.deployCR=false, and a GPUCluster with gpuCluster.deployCR
# (../shared/facts/upstream-components.md, deployments/gpu-operator/values.yaml).
OWNED_VALUES: dict[str, dict[str, str]] = {
    "gpu-operator": {
        "clusterPolicy.deployCR": CLUSTER_POLICY_WHY,
        "gpuCluster.deployCR": CLUSTER_POLICY_WHY,
    },
    "kueue": {},
    "volcano": {},
    "karpenter": {},
}
# The component names used in file names, by the key under a cluster's `components:`.
COMPONENT_FIELDS = {
    "gpu-operator": "gpuOperator",
    "kueue": "kueue",
    "volcano": "volcano",
    "karpenter": "karpenter",
}


@dataclass(frozen=True)
class ValuesOverride:
    """One values file: its cluster, component and parsed contents with positions."""

    cluster: str
    component: str
    source: SourceFile

    @property
    def values(self) -> dict[str, Any]:
        """Return the override's values."""
        return dict(self.source.data)


def merge_values(derived: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return the derived values with the override merged over them, as Helm merges values files."""
    out = copy.deepcopy(dict(derived))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def owned_problems(override: ValuesOverride) -> list[Diagnostic]:
    """Return an error for each owned value the override sets (or a mapping that holds one)."""
    owned = OWNED_VALUES.get(override.component, {})
    problems = []
    for dotted, why in sorted(owned.items()):
        parts = tuple(dotted.split("."))
        node: Any = override.source.data
        for depth, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
            if depth == len(parts) - 1 or not isinstance(node, dict):
                problems.append(
                    override.source.diagnostic(
                        parts[: depth + 1], f"{dotted} is owned by gpuplan: {why}", at_key=True
                    )
                )
                break
    return problems


def values_for(
    component: str, derived: Mapping[str, Any], override: ValuesOverride | None
) -> dict[str, Any]:
    """Return the values an operator Application installs: derived, with an accepted override merged."""
    if override is None or owned_problems(override):
        return copy.deepcopy(dict(derived))
    assert override.component == component
    return merge_values(derived, override.values)


def read_overrides(
    root: Path, clusters: Mapping[str, Any]
) -> tuple[dict[tuple[str, str], ValuesOverride], list[Diagnostic]]:
    """Read values/<cluster>/<component>.yaml for every cluster; check names and owned values."""
    found: dict[tuple[str, str], ValuesOverride] = {}
    problems: list[Diagnostic] = []
    base = root / FOLDER
    if not base.is_dir():
        return found, problems
    for folder in sorted(base.iterdir(), key=lambda p: p.name):
        shown = f"{FOLDER}/{folder.name}"
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        if folder.name not in clusters:
            problems.append(
                error(
                    shown,
                    0,
                    0,
                    "",
                    f"no cluster named {folder.name!r}: values/ holds one folder per cluster",
                )
            )
            continue
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.suffix in (".yaml", ".yml") and not path.name.startswith("."):
                item, more = _read_one(
                    path, f"{shown}/{path.name}", folder.name, clusters[folder.name]
                )
                problems += more
                if item is not None:
                    found[(item.cluster, item.component)] = item
    return found, problems


def _read_one(
    path: Path, shown: str, cluster: str, plan: Any
) -> tuple[ValuesOverride | None, list[Diagnostic]]:
    component = path.stem
    if component not in COMPONENT_FIELDS:
        return None, [
            error(
                shown,
                1,
                1,
                "",
                f"no component named {component!r}: name the file after one of {', '.join(sorted(COMPONENT_FIELDS))}",
            )
        ]
    if getattr(plan.spec.components, _attribute(COMPONENT_FIELDS[component]), None) is None:
        return None, [
            error(
                shown,
                1,
                1,
                "",
                f"{component} is not enabled on cluster {cluster!r}: its values would install nothing",
            )
        ]
    if path.is_symlink() or not path.is_file():
        return None, [error(shown, 1, 1, "", "not a regular file (symlinks are not followed)")]
    source, problems = parse(shown, path.read_bytes())
    if source is None:
        return None, problems
    override = ValuesOverride(cluster, component, source)
    return override, owned_problems(override)


def _attribute(field: str) -> str:
    """Return the model attribute of a `components:` key (gpuOperator -> gpu_operator)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in field)
