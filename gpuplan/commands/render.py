"""`gpuplan render`: compile the fleet and write it, or with --check report what would change."""

from __future__ import annotations

import sys

from gpuplan.commands.common import Options, print_findings
from gpuplan.exitcode import ExitCode
from gpuplan.overlay.unmanaged import unmanaged_files
from gpuplan.pipeline import compile_fleet
from gpuplan.write import WriteError, clean_stale, compare, refuse_holding, render_files, write_tree


def _scope(options: Options) -> tuple[str, ...]:
    """Return the output folders this run owns (all of them unless --cluster narrowed it)."""
    return tuple(f"{name}/" for name in options.clusters) + (
        ("argocd/",) if options.clusters else ()
    )


def render_fleet(options: Options, check_only: bool = False) -> int:
    """Compile and write the fleet, or with check_only report what would change."""
    result = compile_fleet(options.root, options.clusters, options.crds, out=options.out)
    if result.fleet is not None:  # files nobody renders: Argo CD never applies them
        fail = check_only and options.strict
        result.diagnostics += unmanaged_files(
            options.output, result.fleet.clusters, _scope(options), fail
        )
    if print_findings(result, options):
        return ExitCode.FAILED
    try:
        refuse_holding(options.output, options.root)
        files = render_files(result.manifests)
        changes = compare(options.output, files, _scope(options))
        if check_only:
            for line in changes.lines():
                sys.stderr.write(f"{line}\n")
            if changes.any:
                sys.stderr.write(
                    f"{options.output} is stale: run `gpuplan render` and commit the result\n"
                )
                return ExitCode.FAILED
            sys.stderr.write(f"{options.output} is up to date ({len(files)} files)\n")
            return ExitCode.OK
        if changes.any:
            write_tree(options.output, files, _scope(options))
        else:
            clean_stale(
                options.output.absolute()
            )  # a killed render's staging, even with nothing to write
    except WriteError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.FAILED
    counts = f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    sys.stderr.write(f"rendered {len(files)} files into {options.output} ({counts})\n")
    return ExitCode.OK
