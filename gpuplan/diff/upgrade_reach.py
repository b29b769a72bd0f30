"""What a bump changes beyond the CRDs: chart defaults the fleet does not set, metrics the fleet reads
that the new exporter lacks, and operand images that restart pods on the GPU nodes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpuplan.components.base import Release
from gpuplan.components.metrics import dcgm_metrics, dcgm_tag, kueue_metrics, kueue_tags
from gpuplan.components.values import chart_defaults, source
from gpuplan.diff.kinds import dig, mapping
from gpuplan.diff.objects import ObjectKey, Side

# Leaves that only say which image a chart runs: the upgrade itself, not a changed behaviour.
IMAGE_LEAVES = frozenset({"tag", "version", "digest", "sha", "appVersion", "image_tag_version"})
SHOWN = 12  # default changes named in a step's line; the rest fold into its details
# With clusterPolicy.deployCR=false (gpuplan renders the ClusterPolicy) the GPU Operator chart reads only
# these values: every `.Values.` path of its templates but clusterpolicy.yaml and gpucluster.yaml
# (NVIDIA/gpu-operator@v26.7.0:deployments/gpu-operator/templates/), and its NFD subchart's.
GPU_OPERATOR_READ = (
    "cdi.enabled", "cdi.nriPluginEnabled", "clusterPolicy.deployCR", "daemonsets.annotations",
    "daemonsets.labels", "daemonsets.tolerations", "dcgmExporter.config", "devicePlugin.config", "driver",
    "extraObjects", "fullnameOverride", "gdrcopy", "gds", "gpuCluster.deployCR", "migManager.config",
    "nameOverride", "nfd.enabled", "nfd.nodefeaturerules", "node-feature-discovery", "operator",
    "platform.openshift", "toolkit.enabled", "validator.image", "validator.repository", "validator.version",
)  # fmt: skip


def leaves(values: Any, prefix: str = "") -> dict[str, Any]:
    """Return path -> value of every leaf of a values tree (a list is one leaf)."""
    if isinstance(values, dict) and values:
        out: dict[str, Any] = {}
        for key, value in values.items():
            out |= leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    return {prefix: values} if prefix else {}


def _set_by(path: str, given: set[str]) -> bool:
    """Tell whether gpuplan's values set a path (or a tree above or below it)."""
    return any(path == g or path.startswith(g + ".") or g.startswith(path + ".") for g in given)


def default_changes(
    component: str, line: str, old: str, new: str, given: dict[str, Any]
) -> tuple[list[str], str] | None:
    """Return `path: old -> new` of every chart default that changes and gpuplan's values leave
    alone (image tags aside), and the sources; None when either release's defaults are not shipped."""
    before, after = chart_defaults(component, line, old), chart_defaults(component, line, new)
    if before is None or after is None:
        return None
    was, now, set_here = leaves(before), leaves(after), set(leaves(given))
    effective = now | leaves(given)
    read = _read_keys(component, given)
    out = []
    for path in sorted(was.keys() | now.keys()):
        if path.rsplit(".", 1)[-1] in IMAGE_LEAVES or _set_by(path, set_here):
            continue
        if read is not None and not any(path == r or path.startswith(r + ".") for r in read):
            continue  # a value only the template gpuplan turns off reads
        if path not in was and _off(now[path]):
            continue  # a new knob whose default is off or empty: nothing changes until it is set
        if _switched_off(path, effective):
            continue  # a part the fleet does not run: its defaults change nothing
        if was.get(path, _ABSENT) != now.get(path, _ABSENT):
            out.append(
                f"{path}: {_show(was.get(path, _ABSENT))} -> {_show(now.get(path, _ABSENT))}"
            )
    sources = f"{source(component, line, old)}, {source(component, line, new)}"
    return out, sources


_ABSENT = object()


def _read_keys(component: str, given: dict[str, Any]) -> tuple[str, ...] | None:
    """Return the value paths the chart still reads with gpuplan's values (None: all)."""
    if component == "gpu-operator" and dig(given, "clusterPolicy", "deployCR") is False:
        return GPU_OPERATOR_READ
    return None


def _off(value: Any) -> bool:
    return value is None or value is False or value in ("", {}, [])


SWITCHES = ("enabled", "enable")


def _switched_off(path: str, values: dict[str, Any]) -> bool:
    """Tell whether a part above the path is turned off (`<part>.enabled: false`) in effect."""
    parts = path.split(".")
    if values.get("enable" + parts[0][:1].upper() + parts[0][1:]) is False:
        return True  # Kueue's enableKueueViz: false turns off everything under kueueViz
    for end in range(1, len(parts)):
        prefix = ".".join(parts[:end])
        if (
            any(values.get(f"{prefix}.{s}") is False for s in SWITCHES)
            and parts[end] not in SWITCHES
        ):
            return True
    return False


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 60 else text[:59] + "…"


def application_values(obj: dict[str, Any]) -> dict[str, Any]:
    """Return the Helm values an Argo CD Application sets (valuesObject of its chart source)."""
    spec = mapping(obj.get("spec"))
    sources = [spec["source"]] if spec.get("source") else list(spec.get("sources") or [])
    out: dict[str, Any] = {}
    for item in sources:
        out |= mapping(dig(item, "helm", "valuesObject"))
    return out


# metrics


def metric_source(component: str, release: Release) -> str:
    """Return where a release's metric list was read (gpuplan/components/metrics/SOURCES.json)."""
    if component == "gpu-operator":
        tag = dcgm_tag(getattr(release, "operands", {})["dcgmExporter"].version)
        return f"NVIDIA/dcgm-exporter@{tag}:etc/dcp-metrics-included.csv"
    return f"kubernetes-sigs/kueue@{release.version}:site/content/en/docs/reference/metrics.md"


def metric_names(component: str, release: Release) -> set[str] | None:
    """Return the metrics a release's exporter publishes (DCGM for the GPU Operator, Kueue's own)."""
    if component == "gpu-operator":
        operands = getattr(release, "operands", {})
        if "dcgmExporter" not in operands:
            return None
        return set(dcgm_metrics(dcgm_tag(operands["dcgmExporter"].version)))
    if component == "kueue" and release.version in kueue_tags():
        return set(kueue_metrics(release.version))
    return None


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def readers(side: Side, scope: str, metrics: set[str]) -> dict[str, list[str]]:
    """Return metric -> the objects of a cluster whose queries read it (alert rules, dashboards,
    adapter rules, wherever they are emitted: every string of every object is searched)."""
    if not metrics:
        return {}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, metrics))) + r")\b")
    found: dict[str, set[str]] = {}
    for key, entry in side.items():
        if not _of_cluster(key, entry.obj, scope):
            continue
        for text in _strings(entry.obj):
            for match in pattern.finditer(text):
                found.setdefault(match.group(1), set()).add(key.label())
    return {m: sorted(found[m]) for m in sorted(found)}


def _of_cluster(key: ObjectKey, obj: dict[str, Any], scope: str) -> bool:
    labels = mapping(dig(obj, "metadata", "labels"))
    return key.scope == scope or labels.get("gpuplan.io/cluster") == scope


# operand images


def operand_changes(old: Release, new: Release) -> list[str]:
    """Return `part old -> new` of every GPU Operator operand image that changes (driver aside:
    the ClusterPolicy names the driver, gpuplan's cluster file picks it)."""
    before, after = getattr(old, "operands", {}), getattr(new, "operands", {})
    out = []
    for part in sorted(before.keys() | after.keys()):
        if part == "driver":
            continue
        was, now = before.get(part), after.get(part)
        if was != now:
            out.append(f"{part} {_image(was)} -> {_image(now)}")
    return out


def _image(image: Any) -> str:
    if image is None:
        return "none"
    return f"{image.image}:{image.version}"
