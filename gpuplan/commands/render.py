"""`gpuplan render`: compile the fleet and write it, or with --check report what would change.

With the render cache (gpuplan.cache), unchanged inputs are answered from the last render's
record without loading anything, and after a change only the objects whose key changed are
validated, serialized and written. `render --watch` runs the same render after each change.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuplan.cache import store
from gpuplan.commands.options import Options, print_findings
from gpuplan.diagnostics import Diagnostic, has_errors
from gpuplan.exitcode import ExitCode
from gpuplan.runtime import timings
from gpuplan.runtime.timings import stage
from gpuplan.writer import safefs
from gpuplan.writer.tree import (
    Changes,
    OutputTree,
    WriteError,
    clean_stale,
    compare,
    read_tree,
    refuse_holding,
    render_files,
    write_tree,
)

if TYPE_CHECKING:
    from gpuplan.cache.record import RenderCache, Shown
    from gpuplan.pipeline import Compiled
    from gpuplan.runtime.watch import Watch
    from gpuplan.writer.safefs import Signature


@dataclass
class Recorded:
    """The findings of a render answered from the cache."""

    diagnostics: list[Diagnostic]
    notes: list[str] = field(default_factory=list)


def _scope(options: Options) -> tuple[str, ...]:
    """Return the output folders this run owns (all of them unless --cluster narrowed it)."""
    return tuple(f"{name}/" for name in options.clusters) + (
        ("argocd/",) if options.clusters else ()
    )


def _open_cache(options: Options) -> RenderCache | None:
    """Return the render cache of a full render (a --cluster render neither reads nor writes it)."""
    if options.clusters:
        return None
    from gpuplan.cache.record import RenderCache

    return RenderCache.open(options.root, options.out, options.crds)


def render_fleet(options: Options, check_only: bool = False, use_cache: bool = True) -> int:
    """Compile and write the fleet, or with check_only report what would change."""
    with store.disabled(not use_cache):
        with stage("render cache: input key and record"):
            cache = _open_cache(options)
        if cache is not None and cache.hit:
            code = _from_record(options, cache, check_only)
            if code is not None:
                return code
        return _render(options, check_only, cache)


def render_watch(options: Options, watch: Watch, use_cache: bool = True) -> int:
    """Render now and after every change of an input file; return the last run's code.

    Each run is the plain one-shot render (gpuplan.runtime.watch only decides when to run it).
    """
    from gpuplan.cache.key import INPUT_FOLDERS, crds_folder
    from gpuplan.runtime.watch import loop, stamps

    paths = [options.root / folder for folder in INPUT_FOLDERS]
    crds = crds_folder(options.crds)
    paths += [crds] if crds is not None else []

    def once() -> int:
        code = render_fleet(options, use_cache=use_cache)
        timings.report_run()
        return code

    return loop(lambda: stamps(paths), once, watch, options.fmt == "text", paths=paths)


def _unmanaged(
    options: Options, clusters: list[str], fail: bool, tree: OutputTree | None
) -> list[Diagnostic]:
    from gpuplan.overlay.unmanaged import unmanaged_files  # files nobody renders

    return unmanaged_files(options.output, clusters, _scope(options), fail, tree)


def _scan(options: Options, cache: RenderCache | None) -> OutputTree | None:
    """Scan the output once for the whole run, each file's lstat kept.

    The first bytes of a file whose lstat is the one the cache recorded (a file gpuplan wrote)
    are not read. None when the output cannot be scanned: each step then reports it its own way.
    """
    files = cache.files if cache is not None else {}

    def as_recorded(relative: str, st: os.stat_result) -> bool:
        entry = files.get(relative)
        return entry is not None and safefs.signature(st) == entry.signature

    try:
        return read_tree(options.output, known=as_recorded)
    except (WriteError, OSError):
        return None


def _from_record(options: Options, cache: RenderCache, check_only: bool) -> int | None:
    """Answer from the last render of the same inputs; None when a render must run after all."""
    from gpuplan.cache.output import as_recorded
    from gpuplan.cache.output import changes as recorded_changes

    shown = cache.shown() if options.fmt == "text" else None
    signatures = cache.signatures()
    seen: dict[str, Signature]
    tree: OutputTree | None
    try:
        refuse_holding(options.output, options.root)
        with stage("compare the output with the record"):
            if as_recorded(options.output, signatures):  # the common case, in one pass
                changes, seen, tree = Changes([], [], []), {}, None
            else:
                recorded = cache.recorded()
                if not cache.hit:  # its paths were damaged: no record after all
                    return None
                changes, seen, tree = recorded_changes(options.output, recorded)
    except (WriteError, OSError):
        return None  # the full render reports it in its own words
    if changes.any and not check_only:
        return None  # the bytes to write are not in the cache
    foreign = tree is not None and tree.foreign
    if shown is not None and not foreign:  # as recorded, and nothing to add
        failed = _print_shown(shown, options.strict)
    else:
        try:
            diagnostics, notes, clusters = cache.findings()
        except (KeyError, TypeError, ValueError):
            return None  # a damaged record: the render answers
        if tree is not None and foreign:
            diagnostics += _unmanaged(options, clusters, check_only and options.strict, tree)
        failed = print_findings(Recorded(diagnostics, notes), options)
    if failed:
        return ExitCode.FAILED
    if seen:
        cache.refresh(seen)
    if check_only:
        return _report_check(options, changes, len(signatures))
    clean_stale(options.output.absolute())
    _report_render(options, changes, len(signatures))
    return ExitCode.OK


def _print_shown(shown: Shown, strict: bool) -> bool:
    """Print recorded findings as print_findings prints them in text; tell whether they fail."""
    if shown.text:
        sys.stderr.write(shown.text)
    for note in shown.notes:
        sys.stderr.write(f"note: {note}\n")
    return shown.fails_strict if strict else shown.fails


def _report_check(options: Options, changes: Changes, count: int) -> int:
    # the output folder as the user names it: under the root, relative to it (output/...)
    folder = options.output
    if folder.is_relative_to(options.root):
        folder = folder.relative_to(options.root)
    for line in changes.lines(folder.as_posix()):
        sys.stderr.write(f"{line}\n")
    if changes.any:
        sys.stderr.write(f"{options.output} is stale: run `gpuplan render` and commit the result\n")
        return ExitCode.FAILED
    sys.stderr.write(f"{options.output} is up to date ({count} files)\n")
    return ExitCode.OK


def _report_render(options: Options, changes: Changes, count: int) -> None:
    counts = f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    sys.stderr.write(f"rendered {count} files into {options.output} ({counts})\n")


def _render(options: Options, check_only: bool, cache: RenderCache | None) -> int:
    """Compile, validate and write the fleet (objects the cache knows are neither proven nor written again)."""
    from gpuplan.pipeline import compile_fleet

    result = compile_fleet(
        options.root, options.clusters, options.crds, out=options.out, proven=cache
    )
    compiled = list(result.diagnostics)
    with stage("scan the output"):
        tree = _scan(options, cache)
    if result.fleet is not None:  # files nobody renders: Argo CD never applies them
        result.diagnostics += _unmanaged(
            options, list(result.fleet.clusters), check_only and options.strict, tree
        )
    if print_findings(result, options):
        return ExitCode.FAILED
    try:
        refuse_holding(options.output, options.root)
        with stage("serialize"):
            same = _same_on_disk(options, cache, result, tree) if cache is not None else set()
            files = render_files(result.manifests, reuse=same)
        with stage("compare with the output"):
            held = _held(cache, files, tree)
            changes = compare(options.output, files, _scope(options), same, tree, held)
        if check_only:
            code = _report_check(options, changes, len(result.manifests))
        elif changes.any:
            with stage("write (staged tree, swapped in)"):
                write_tree(options.output, files, _scope(options), same, seen=tree)
        else:
            clean_stale(options.output.absolute())  # a killed render's staging
    except WriteError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.FAILED
    if cache is not None and not has_errors(compiled):
        _record(options, cache, result, files, compiled, changes if check_only else None)
    if check_only:
        return code
    _report_render(options, changes, len(result.manifests))
    return ExitCode.OK


def _same_on_disk(
    options: Options, cache: RenderCache, result: Compiled, tree: OutputTree | None
) -> set[str]:
    """Return the files whose object is unchanged since the last render and still on disk as written."""
    from gpuplan.cache.output import same_files

    signatures = tree.signatures if tree is not None else None
    try:
        return same_files(options.output, cache.unchanged(result.manifests), signatures)[0]
    except OSError:
        return set()  # the full comparison reads and reports it


def _held(
    cache: RenderCache | None, files: dict[str, bytes], tree: OutputTree | None
) -> dict[str, str]:
    """Return the content hash of each file to write that is on disk as the record has it (by
    its lstat in this run's scan): compare needs not read it."""
    if cache is None or tree is None:
        return {}
    recorded, signatures = cache.files, tree.signatures
    held = {}
    for relative in files:
        entry = recorded.get(relative)
        if entry is not None and signatures.get(relative) == entry.signature:
            held[relative] = entry.content
    return held


def _record(
    options: Options,
    cache: RenderCache,
    result: Compiled,
    files: dict[str, bytes],
    compiled: list[Diagnostic],
    stale: Changes | None,
) -> None:
    """Record this render (with --check, only the files found as rendered get a signature)."""
    assert result.fleet is not None
    paths = [m.path for m in result.manifests]
    if stale is not None:
        differ = set(stale.added) | set(stale.changed)
        paths = [p for p in paths if p not in differ]
    with stage("render cache: save the record"):
        try:
            signatures = _signatures(options, paths)
        except OSError:
            return
        cache.save(
            result.manifests,
            files,
            signatures,
            (compiled, result.notes, sorted(result.fleet.clusters)),
        )


def _signatures(options: Options, paths: list[str]) -> dict[str, Signature]:
    """Return the signature (lstat) of each of the output's files."""
    from gpuplan.cache.output import stat_files

    return stat_files(options.output, paths)
