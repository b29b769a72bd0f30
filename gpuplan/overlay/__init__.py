"""What users add to the fleet beside the model: own manifests, patches, Helm values overrides.

- extra/<cluster>/**/*.yaml: own objects, written to output/<cluster>/extra/ and listed in the
  cluster's kustomization (gpuplan.overlay.extras);
- patches/<cluster>/*.yaml: strategic-merge or JSON6902 patches to generated objects
  (gpuplan.overlay.patches), never to the fields gpuplan's proofs rest on (gpuplan.overlay.owned);
- values/<cluster>/<component>.yaml: Helm values merged over the derived values of an operator
  chart (gpuplan.overlay.values).

All of it is applied after emit and before validation, so what is written is proved like the
rest; a problem is reported at the user's own file:line:col.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile
from gpuplan.emit.argocd import kustomization
from gpuplan.model.manifest import Manifest
from gpuplan.overlay.extras import FOLDER as EXTRA_FOLDER
from gpuplan.overlay.extras import Extra, collisions, read_extras
from gpuplan.overlay.patches import FOLDER as PATCH_FOLDER
from gpuplan.overlay.patches import Patch, apply_patches, patch_position, read_patches
from gpuplan.overlay.values import FOLDER as VALUES_FOLDER
from gpuplan.overlay.values import ValuesOverride, apply_values, read_overrides
from gpuplan.plan.fleet import Fleet
from gpuplan.validate.locate import problem_path, split_path

FOLDERS = (
    EXTRA_FOLDER,
    PATCH_FOLDER,
    VALUES_FOLDER,
)  # input folders besides clusters/ and tenants/
NODE_CLASS_REF = "spec.template.spec.nodeClassRef"


@dataclass
class Overlay:
    """What the overlay did, to place each later finding at the user's file that caused it."""

    extras: dict[str, SourceFile] = field(default_factory=dict)  # output path -> own manifest
    patched: dict[str, list[Patch]] = field(default_factory=dict)  # output path -> patches applied
    clusters: dict[str, SourceFile] = field(default_factory=dict)  # cluster name -> its input file
    values: dict[tuple[str, str], ValuesOverride] = field(
        default_factory=dict
    )  # (cluster, component)

    def place(
        self, item: Manifest, path: str, message: str, severity: Severity
    ) -> Diagnostic | None:
        """Return the finding at the input that caused it, or None when gpuplan's output is at fault."""
        where = f"{item.kind}/{item.name}" + (f" {path}" if path else "")
        pointed = problem_path(path, message)
        unknown = pointed != path
        if item.path in self.extras:
            return _at(self.extras[item.path], _key(pointed), where, message, severity, unknown)
        if item.path in self.patched:
            patch, key = _blamed_patch(self.patched[item.path], _key(pointed))
            return _at(
                patch.source, key, where, f"{message} (with this patch applied)", severity, unknown
            )
        if (
            item.kind == "NodePool"
            and path.startswith(NODE_CLASS_REF)
            and item.cluster in self.clusters
        ):
            return _at(
                self.clusters[item.cluster],
                ("components", "karpenter", "nodeClass", "name"),
                where,
                message,
                severity,
                False,
            )
        return None


def _key(path: str) -> Key:
    return tuple(int(p) if p.isdigit() else p for p in split_path(path))


def _at(
    source: SourceFile, key: Key, where: str, message: str, severity: Severity, at_key: bool
) -> Diagnostic:
    line, col = source.position(key, at_key) if key else (1, 1)
    return Diagnostic(source.path, line, col, severity, where, message)


def _blamed_patch(patches: list[Patch], path: Key) -> tuple[Patch, Key]:
    """Return the last patch that sets the field (else the last patch) and where in it."""
    for patch in reversed(patches):
        key = patch_position(patch, path)
        if (patch.json and key != ("jsonPatch",)) or (
            not patch.json and _sets(patch.source.data, key)
        ):
            return patch, key
    return patches[-1], ()


def _sets(data: object, key: Key) -> bool:
    """Tell whether a strategic patch holds the first step of a field path."""
    return (
        bool(key)
        and isinstance(data, dict)
        and key[0] in data
        and key[0] not in ("apiVersion", "kind")
    )


def _overlay(
    fleet: Fleet,
    extras: list[Extra],
    applied: dict[str, list[Patch]],
    values: dict[tuple[str, str], ValuesOverride],
) -> Overlay:
    return Overlay(
        {e.manifest.path: e.source for e in extras},
        applied,
        {n: c.located.source for n, c in fleet.clusters.items()},
        values,
    )


def apply_overlay(
    root: Path, fleet: Fleet, manifests: list[Manifest], output: str = "output"
) -> tuple[list[Manifest], Overlay, list[Diagnostic]]:
    """Add own manifests and apply patches to the emitted manifests; read values overrides."""
    extras, problems = read_extras(root, fleet.clusters)
    patches, found = read_patches(root, fleet.clusters)
    values, more = read_overrides(root, fleet.clusters)
    problems += found + more
    if (
        not extras
        and not patches
        and not values
        and len({m.path for m in manifests}) == len(manifests)
    ):  # nothing to add or apply, and each object has a path of its own: all stand as emitted
        return list(manifests), _overlay(fleet, [], {}, {}), problems
    emitted = {m.cluster for m in manifests if m.cluster}
    extras = [e for e in extras if e.manifest.cluster in emitted]
    patches = [p for p in patches if p.cluster in emitted]
    values = {key: v for key, v in values.items() if key[0] in emitted}
    generated = [m for m in manifests if not m.path.endswith("/kustomization.yaml")]
    claims = {t.source.path: t for t in fleet.tenants.values()}
    problems += collisions(extras, generated, output, claims)
    generated, found = apply_values(generated, values)
    problems += found
    patched, applied, found = apply_patches(patches, generated)
    problems += found
    overlay = _overlay(fleet, extras, applied, values)
    if not extras:
        by_path = {m.path: m for m in patched}
        return [by_path.get(m.path, m) for m in manifests], overlay, problems
    combined = patched + [e.manifest for e in extras]
    per_cluster: dict[str, list[Manifest]] = {}
    for item in combined:
        per_cluster.setdefault(item.cluster or "", []).append(item)
    combined += [
        kustomization(fleet.clusters[name], per_cluster.get(name, [])) for name in sorted(emitted)
    ]
    combined += [
        m for m in manifests if m.path.endswith("/kustomization.yaml") and m.cluster is None
    ]
    return sorted(combined, key=lambda m: m.path), overlay, problems
