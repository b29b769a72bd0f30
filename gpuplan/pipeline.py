"""The compiler's stages end to end: load -> model -> check -> emit -> validate (no writing)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from gpuplan.check import known_codes, run_checks
from gpuplan.check.ignores import accept, unknown_codes, unused
from gpuplan.check.ignores import rules as ignore_rules
from gpuplan.diagnostics import Diagnostic, error, has_errors, with_code
from gpuplan.emit import emit
from gpuplan.emit.bootstrap import installs as graph
from gpuplan.emit.bootstrap.roots import complete_projects
from gpuplan.inputs.sources import read_inputs
from gpuplan.model.manifest import Manifest
from gpuplan.overlay import Overlay, apply_overlay
from gpuplan.overlay.extras import read_extras
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.resolve import build_fleet
from gpuplan.runtime.timings import stage
from gpuplan.validate import CrdIndex, CrdLoadError
from gpuplan.validate.prove import Installs, Proven, verify
from gpuplan.writer.tree import output_path as output_path  # re-exported: commands use pipeline.*

CRDS_ENV = "GPUPLAN_CRDS"


@dataclass
class Compiled:
    """What a compile produced: the fleet, its manifests and every finding."""

    fleet: Fleet | None
    manifests: list[Manifest] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overlay: Overlay | None = None  # own manifests, patches and values applied (gpuplan.overlay)


def crds_folder(option: Path | None) -> Path | None:
    """Return the CRD folder from --crds or GPUPLAN_CRDS, if any."""
    if option is not None:
        return option
    value = os.environ.get(CRDS_ENV)
    return Path(value) if value else None


def _crds_problem(crds: Path | None) -> list[Diagnostic]:
    if crds is not None and not crds.is_dir():
        return [
            error(str(crds), 0, 0, "", f"the CRD folder does not exist (from --crds or {CRDS_ENV})")
        ]
    return []


@lru_cache(maxsize=8)
def load_crds(folder: Path) -> CrdIndex:
    """Load (once per process) the CRDs of a folder."""
    return CrdIndex.load(folder)


def _cluster_objects(root: Path, fleet: Fleet, where: str) -> Callable[[str], list[Manifest]]:
    """Return name -> a cluster's generated and own objects (for the AppProject of a partial render)."""
    extras = read_extras(root, fleet.clusters)[0]
    return lambda name: (
        emit(fleet, (name,), where) + [e.manifest for e in extras if e.manifest.cluster == name]
    )


def compile_fleet(
    root: Path,
    clusters: tuple[str, ...] = (),
    crds: Path | None = None,
    emit_output: bool = True,
    out: Path | None = None,
    verify_output: bool = True,
    base: str | None = None,
    proven: Proven | None = None,
) -> Compiled:
    """Load, resolve, check, emit and validate the fleet of a repository.

    verify_output=False skips proving the emitted objects (diff does: it shows what changes,
    render and check in CI prove it). base, a git revision, lets the checks tell which quota
    changed (raises gpuplan.inputs.git.UsageError when it names no commit). proven (gpuplan.cache) names
    objects already proven valid, whose schema validation is skipped.
    """
    with stage("read inputs"):
        inputs, found = read_inputs(root)
    found = with_code(found, "input")
    at_base, owners = None, None
    if base is not None:
        from gpuplan.plan import base as gitbase  # git only when asked for

        at_base = gitbase.base_fleet(root, base)
        owners = gitbase.namespace_owners(at_base)  # a namespace clash is blamed on the newer file
    with stage("build the model"):
        fleet, more = build_fleet(inputs, owners)
    if base is not None:
        fleet.base = gitbase.base_quotas(at_base)
    found += with_code(more, "resolve")
    with stage("checks"):
        found += run_checks(fleet)
    entries = ignore_rules(fleet)
    found = accept(found, entries) + unknown_codes(entries, known_codes())
    result = Compiled(fleet, diagnostics=found)
    unknown = [c for c in clusters if c not in fleet.clusters]
    for name in unknown:
        result.diagnostics.append(error("clusters", 0, 0, "", f"--cluster {name}: no such cluster"))
    if has_errors(found) or unknown or not emit_output:
        return result
    folder = crds_folder(crds)
    result.diagnostics += _crds_problem(folder)
    if has_errors(result.diagnostics):
        return result
    where = output_path(root, out)
    with stage("emit"):
        result.manifests = emit(fleet, clusters, where)
    with stage("own manifests and patches"):
        result.manifests, result.overlay, more = apply_overlay(root, fleet, result.manifests, where)
        result.manifests = complete_projects(
            fleet, result.manifests, _cluster_objects(root, fleet, where) if clusters else None
        )
    result.diagnostics += with_code(more, "input")
    if has_errors(more):
        return result
    if verify_output:
        with stage("validate"):
            proofs = validate_manifests(result, folder, where, proven)
        result.diagnostics = accept(result.diagnostics + with_code(proofs, "output"), entries)
    if (
        verify_output and not clusters and not has_errors(result.diagnostics)
    ):  # stale only once everything ran
        result.diagnostics += unused(result.diagnostics, entries, known_codes())
    return result


def validate_manifests(
    result: Compiled, crds: Path | None, where: str = "output", proven: Proven | None = None
) -> list[Diagnostic]:
    """Prove every emitted object (schemas, CEL, webhooks, references) before anything is written.

    Each cluster is checked against the shipped CRDs of its own component versions; the CRDs of
    ``crds`` (--crds or GPUPLAN_CRDS) add kinds or replace the shipped ones of a kind.
    """
    assert result.fleet is not None
    try:
        index = load_crds(crds.absolute()) if crds is not None else None
    except (CrdLoadError, OSError) as exc:
        return [error(str(crds), 0, 0, "", f"cannot read the CRDs: {exc}")]
    fleet = result.fleet
    installs = Installs(
        graph.installs(fleet),
        graph.cluster_kinds(fleet),
        {name: graph.external(cluster) for name, cluster in fleet.clusters.items()},
    )
    problems, notes = verify(
        result.manifests,
        fleet,
        index,
        installs,
        where,
        result.overlay.place if result.overlay else None,
        proven,
    )
    result.notes.extend(notes + _own_prometheus_notes(fleet))
    return problems


def _own_prometheus_notes(fleet: Fleet) -> list[str]:
    """Say which clusters' Prometheus Operator CRDs are taken as present (prometheus.install: existing)."""
    notes = []
    for name, cluster in sorted(fleet.clusters.items()):
        monitoring = cluster.spec.components.monitoring
        if monitoring is not None and monitoring.prometheus.install == "existing":
            notes.append(
                f"cluster {name}: the monitoring.coreos.com CRDs are taken as the cluster's own "
                "(components.monitoring.prometheus.install: existing): no Application installs them, so "
                "the deployment graph and the Argo CD sync simulation do not wait on them"
            )
    return notes
