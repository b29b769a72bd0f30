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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuplan.components import REGISTRY, release_of
from gpuplan.diagnostics import Diagnostic, SourceFile, error, warning
from gpuplan.emit.meta import Manifest
from gpuplan.inputs.load import folder_entries, parse_file

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
    # The Configuration and scheduler configuration carry what the quotas rest on (gpuplan/emit/bootstrap/).
    "kueue": {
        "managerConfig.controllerManagerConfigYaml": "gpuplan renders Kueue's Configuration (tenant namespaces managed, fair sharing, integrations, feature gates): set kueue.frameworks in the cluster file instead",
    },
    "volcano": {
        "custom.scheduler_config_override": "gpuplan renders Volcano's scheduler configuration from the quota authority and the Queues it emits",
    },
    "karpenter": {},
    # Where the DRA kubelet plugin runs is where gpuplan turned the device plugin off (gpuplan/emit/bootstrap/dra_driver.py).
    "dra-driver": {
        "kubeletPlugin.nodeSelector": "gpuplan runs the DRA kubelet plugin on exactly the DRA pools' nodes, where it turns the device plugin off",
        "resources.gpus.enabled": "gpuplan's DeviceClasses, claim templates and quotas count the driver's GPU devices",
        "resourceApiVersion": "gpuplan writes its DRA objects in the resource.k8s.io version the cluster serves (v1, or components.draDriver.resourceApi) and pins the chart to it",
    },
}


@dataclass(frozen=True)
class ValuesOverride:
    """One values file: its cluster, component and parsed contents with positions."""

    cluster: str
    component: str
    source: SourceFile
    chart: str = ""  # the Helm chart the component is installed with

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
    folders, problems = folder_entries(root, FOLDER)
    for folder in folders:
        shown = f"{FOLDER}/{folder.name}"
        if not folder.is_dir():
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


def _charted(cluster: Any) -> dict[str, str]:
    """Return component name -> Helm chart name for the components a cluster installs with a chart."""
    charts = {}
    for name, component in REGISTRY.items():
        release = release_of(component, cluster)
        if release is not None and release.chart is not None:
            charts[name] = release.chart.name
    return charts


def _read_one(
    path: Path, shown: str, cluster: str, plan: Any
) -> tuple[ValuesOverride | None, list[Diagnostic]]:
    component, charts = path.stem, _charted(plan.spec)
    if component not in charts:
        why = (
            "is not a component"
            if component not in REGISTRY
            else f"is not installed with a Helm chart on cluster {cluster!r}"
        )
        message = f"{component!r} {why}: name the file after one of {', '.join(sorted(charts))}"
        return None, [error(shown, 1, 1, "", message)]
    source, problems = parse_file(path, shown)
    if source is None:
        return None, problems
    override = ValuesOverride(cluster, component, source, charts[component])
    return override, owned_problems(override)


def _helm_sources(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the Helm sources of an Argo CD Application (spec.source and spec.sources[])."""
    spec = obj.get("spec") or {}
    sources = [spec.get("source")] + list(spec.get("sources") or [])
    return [s for s in sources if isinstance(s, dict) and s.get("chart")]


def apply_values(
    manifests: list[Manifest], overrides: Mapping[tuple[str, str], ValuesOverride]
) -> tuple[list[Manifest], list[Diagnostic]]:
    """Merge each accepted override into the helm.valuesObject of the Applications installing its chart.

    An Argo CD Application installs a chart through spec.source (or spec.sources[]) with
    `chart` and `helm.valuesObject` (../shared/facts/upstream-components.md, Argo Application helm
    source). An override no Application of its cluster uses is a warning: it has no effect.
    """
    if not overrides:
        return manifests, []
    used: set[tuple[str, str]] = set()
    result = []
    for item in manifests:
        # Operator Applications are fleet-level files (argocd/<cluster>/) labelled with their cluster.
        owner = item.cluster or ((item.obj.get("metadata") or {}).get("labels") or {}).get(
            "gpuplan.io/cluster"
        )
        wanted = [o for o in overrides.values() if o.cluster == owner and not owned_problems(o)]
        if item.kind != "Application" or not wanted:
            result.append(item)
            continue
        obj, here = copy.deepcopy(item.obj), set()
        for source in _helm_sources(obj):
            for override in (o for o in wanted if o.chart == source["chart"]):
                helm = source.setdefault("helm", {})
                helm["valuesObject"] = merge_values(helm.get("valuesObject") or {}, override.values)
                here.add(override.source.path)
                used.add((override.cluster, override.component))
        result.append(
            replace(item, obj=obj, sources=tuple(sorted(set(item.sources) | here)))
            if here
            else item
        )
    unused = [
        warning(
            o.source.path,
            1,
            1,
            "",
            f"no Argo CD Application of cluster {o.cluster!r} installs the {o.chart} chart, so these values have no effect",
        )
        for key, o in sorted(overrides.items())
        if key not in used and not owned_problems(o)
    ]
    return result, unused
