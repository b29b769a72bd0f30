"""Files in output/ that gpuplan neither generated nor copied: no kustomization lists them, so
Argo CD never applies them. `render` warns; `render --check --strict` fails."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.overlay.extras import FOLDER as EXTRA_FOLDER
from gpuplan.writer.tree import OutputTree, WriteError, in_scope, read_tree

CODE = "unmanaged-file"


def where_it_belongs(relative: str, clusters: Collection[str]) -> str:
    """Return where a foreign file of the output folder belongs, as advice."""
    cluster, _, rest = relative.partition("/")
    if cluster in clusters and rest and relative.endswith((".yaml", ".yml")):
        return f"to have Argo CD apply it, move it to {EXTRA_FOLDER}/{cluster}/{rest} (gpuplan then validates it and lists it in the kustomization)"
    return f"gpuplan owns this folder: keep other files outside it (your own manifests go in {EXTRA_FOLDER}/<cluster>/)"


def unmanaged_files(
    out: Path,
    clusters: Collection[str],
    scope: tuple[str, ...] = (),
    fail: bool = False,
    tree: OutputTree | None = None,
) -> list[Diagnostic]:
    """Return a finding for each file under `out` that gpuplan did not write (an error with `fail`).

    `tree` is the output as this run already scanned it, else it is scanned here.
    """
    try:
        foreign = (tree if tree is not None else read_tree(out)).foreign
    except (WriteError, OSError):
        return []  # an unreadable output is the writer's to report
    severity = Severity.ERROR if fail else Severity.WARNING
    return [
        Diagnostic(
            str(out / relative),
            0,
            0,
            severity,
            "",
            f"not written by gpuplan, so no kustomization lists it and Argo CD never applies it; {where_it_belongs(relative, clusters)}",
            CODE,
        )
        for relative in foreign
        if in_scope(relative, scope)
    ]
