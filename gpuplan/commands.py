"""The subcommands as plain functions returning an exit code; only cli.main() exits."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from gpuplan.diagnostics import has_errors, ordered, render
from gpuplan.pipeline import Compiled, compile_fleet
from gpuplan.write import WriteError, clean_stale, compare, render_files, write_tree

OK, FAILED, USAGE, INTERNAL = 0, 1, 2, 3


@dataclass(frozen=True)
class Options:
    """What the flags asked for."""

    root: Path
    out: Path | None = None
    clusters: tuple[str, ...] = ()
    strict: bool = False
    fmt: str = "text"
    crds: Path | None = None

    @property
    def output(self) -> Path:
        """Return the output folder (default: <root>/output)."""
        return self.out if self.out is not None else self.root / "output"


def _report(result: Compiled, options: Options) -> bool:
    """Print the findings; return True when they fail the run."""
    found = ordered(result.diagnostics)
    text = render(found, options.fmt)
    if text:
        sys.stderr.write(text)
    if options.fmt == "text":
        for note in result.notes:
            sys.stderr.write(f"note: {note}\n")
    return has_errors(found, options.strict)


def check(options: Options) -> int:
    """Run everything render does except writing."""
    result = compile_fleet(options.root, options.clusters, options.crds)
    if _report(result, options):
        return FAILED
    if options.fmt == "text":
        sys.stderr.write(f"fleet is valid: {len(result.manifests)} objects\n")
    return OK


def _scope(options: Options) -> tuple[str, ...]:
    return tuple(f"{name}/" for name in options.clusters) + (("argocd/",) if options.clusters else ())


def render_fleet(options: Options, check_only: bool = False) -> int:
    """Compile and write the fleet, or with check_only report what would change."""
    result = compile_fleet(options.root, options.clusters, options.crds, out=options.out)
    if _report(result, options):
        return FAILED
    try:
        files = render_files(result.manifests)
        changes = compare(options.output, files, _scope(options))
        if check_only:
            for line in changes.lines():
                sys.stderr.write(f"{line}\n")
            if changes.any:
                sys.stderr.write(f"{options.output} is stale: run `gpuplan render` and commit the result\n")
                return FAILED
            sys.stderr.write(f"{options.output} is up to date ({len(files)} files)\n")
            return OK
        if changes.any:
            write_tree(options.output, files, _scope(options))
        else:
            clean_stale(options.output.absolute())  # a killed render's staging, even with nothing to write
    except WriteError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return FAILED
    counts = f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    sys.stderr.write(f"rendered {len(files)} files into {options.output} ({counts})\n")
    return OK


def schema(kind: str) -> int:
    """Print the JSON Schema of an input file kind."""
    from gpuplan.model import Cluster, Tenant

    model = {"cluster": Cluster, "tenant": Tenant}[kind]
    document = model.model_json_schema(by_alias=True)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return OK


def capacity(options: Options, cluster: str | None, fmt: str) -> int:
    """Print the capacity picture of the fleet (or one cluster)."""
    from gpuplan.capacity import as_json, as_markdown, as_text, capacity_rows

    result = compile_fleet(options.root, (cluster,) if cluster else (), options.crds, emit_output=False)
    if _report(result, Options(options.root, strict=False, fmt="text")) or result.fleet is None:
        return FAILED
    rows = capacity_rows(result.fleet, cluster)
    render_rows = {"text": as_text, "markdown": as_markdown, "json": as_json}[fmt]
    sys.stdout.write(render_rows(rows))
    return OK
