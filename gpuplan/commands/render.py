"""`gpuplan render`: compile the fleet and write it, or with --check report what would change.

With the render cache (gpuplan.cache), unchanged inputs are answered from the last render's
record without loading anything, and after a change only the objects whose key changed are
validated, serialized and written.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuplan import safefs, spare, timings, warm
from gpuplan.cache import store
from gpuplan.commands.common import Options, print_findings
from gpuplan.diagnostics import Diagnostic, has_errors
from gpuplan.exitcode import ExitCode
from gpuplan.timings import stage
from gpuplan.write import (
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
    from gpuplan.cache.watching import Held
    from gpuplan.commands.watch import Watch
    from gpuplan.pipeline import Compiled
    from gpuplan.safefs import Signature


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


def render_fleet(
    options: Options, check_only: bool = False, use_cache: bool = True, compile_now: bool = False
) -> int:
    """Compile and write the fleet, or with check_only report what would change.

    compile_now compiles even where the cache's record could answer (render --watch's first run,
    which reads and validates every input for the runs after it).
    """
    with store.disabled(not use_cache):
        with stage("render cache: input key and record"):
            cache = _open_cache(options)
        _keys[:] = [cache.key] if cache is not None else []
        if cache is not None and cache.hit and not compile_now:
            code = _from_record(options, cache, check_only)
            if code is not None:
                return code
        if cache is not None and not cache.hit and not warm.active():
            code = _from_watch(options, cache, check_only)
            if code is not None:
                return code
        return _render(options, check_only, cache)


_keys: list[str] = []  # the input key of this process's last render (render --watch tells it)
POLL = 0.02  # seconds between looks at a running watch's state
SEEN_WITHIN = 0.5  # seconds, beyond a watch's interval, for it to start a run of a change
WAIT_MOST = 120.0  # seconds a one-shot render waits for a watch in all


def _from_watch(options: Options, cache: RenderCache, check_only: bool) -> int | None:
    """Answer from the record of a running `render --watch` of the same repository once it has
    rendered these inputs (gpuplan.cache.watching); None, when it does not, to render here.

    The watch's state is read every POLL; each time it finishes a run, the cache is opened again
    (the inputs are read again: a save meanwhile is the watch's to render too). The render here
    goes ahead when the watch ends, when it finished a run of exactly these inputs and recorded
    none (its findings hold an error: they are printed from a render here), when it waits
    longer than its interval and SEEN_WITHIN without starting a run, when its state cannot be
    read for SEEN_WITHIN, or after WAIT_MOST.
    """
    import time

    from gpuplan.cache import watching

    home, slot = cache.home, cache.slot
    if not watching.running(home, slot):
        return None
    if options.fmt == "text":
        sys.stderr.write("note: waiting for the running `gpuplan render --watch` of this output\n")
    start, seen, waiting_since, unknown_since = time.monotonic(), -1, None, None
    while time.monotonic() - start < WAIT_MOST:
        told = watching.state(home, slot)
        if told is None:  # a watch that cannot tell its state (a full disk): not for long
            unknown_since = unknown_since or time.monotonic()
            if time.monotonic() - unknown_since > SEEN_WITHIN:
                return None
        else:
            unknown_since = None
        if told is not None and told.phase == watching.WAITING:
            if told.run != seen:  # a run finished: is its record this render's answer?
                seen = told.run
                cache = _open_cache(options) or cache
                if cache.hit:
                    return _from_record(options, cache, check_only)
                if told.key == cache.key:
                    return None  # rendered, and nothing recorded: its findings hold an error
                waiting_since = time.monotonic()
            elif (
                waiting_since is not None
                and time.monotonic() - waiting_since > told.interval + SEEN_WITHIN
            ):
                return None  # the watch does not see these inputs
        else:
            waiting_since = None
        time.sleep(POLL)
        if not watching.running(home, slot):
            return None
    return None


def check_from_record(options: Options) -> int | None:
    """Answer `render --check` from the render cache's record alone (gpuplan.quick); None, with
    nothing printed, when it cannot: render_fleet then runs."""
    with stage("render cache: input key and record"):
        cache = _open_cache(options)
    if cache is None or not cache.hit:
        return None
    return _from_record(options, cache, check_only=True)


def render_watch(options: Options, watch: Watch, use_cache: bool = True) -> int:
    """Render now and after every change of an input file, in one process; return the last code.

    The process keeps what does not change between runs (gpuplan.warm): its imports and compiled
    validators, and each unchanged input file as read and validated. Each run is a whole render
    (the checks see the whole fleet; only changed objects are validated and written, as with the
    cache); removing the old tree and recording the render wait until the result is printed.
    """
    from gpuplan.cache.key import INPUT_FOLDERS, crds_folder
    from gpuplan.commands.watch import loop, stamps

    paths = [options.root / folder for folder in INPUT_FOLDERS]
    crds = crds_folder(options.crds)
    paths += [crds] if crds is not None else []

    runs: list[int] = []
    held = _hold(options) if use_cache else None

    def once() -> int:
        if held is not None:
            held.running(watch.interval)
        code = render_fleet(options, use_cache=use_cache, compile_now=not runs)
        runs.append(code)
        timings.report_run()
        if held is not None:  # once the record is saved, before the spare's upkeep
            key = _keys[-1] if _keys else ""
            if not warm.later(functools.partial(held.waiting, key, watch.interval), first=True):
                held.waiting(key, watch.interval)
        return code

    def idle() -> None:
        warm.settle()
        timings.report_run()

    try:
        with warm.kept():
            return loop(lambda: stamps(paths), once, watch, options.fmt == "text", idle, paths)
    finally:
        spare.drop_all()  # the spare's files are its own: the record's signatures still hold
        if held is not None:
            held.release()


def _hold(options: Options) -> Held | None:
    """Take the render cache's watch lock of this output (a one-shot render then waits for this
    watch's runs instead of compiling beside it: gpuplan.cache.watching)."""
    from gpuplan.cache import watching

    home = store.cache_home()
    if home is None or options.clusters:
        return None
    return watching.Held.take(home, store.slot(options.root, options.output))


def _unmanaged(
    options: Options, clusters: list[str], fail: bool, tree: OutputTree | None
) -> list[Diagnostic]:
    from gpuplan.overlay.unmanaged import unmanaged_files  # files nobody renders

    return unmanaged_files(options.output, clusters, _scope(options), fail, tree)


def _scan(options: Options, cache: RenderCache | None) -> OutputTree | None:
    """Scan the output once for the whole run, each file's lstat kept.

    The first bytes of a file whose lstat is the one the cache recorded (a file gpuplan wrote)
    are not read. None when the output cannot be scanned: each step then reports it its own way.
    render --watch: when the output's spare proves that nothing changed since it recorded the
    output (gpuplan.spare.view), that record is the scan.
    """
    if warm.active():
        seen = spare.view(options.output)
        if seen is not None:
            return seen
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
    from gpuplan.cache.output import changes as recorded_changes

    shown = cache.shown() if options.fmt == "text" else None
    signatures = cache.signatures()
    seen: dict[str, Signature]
    tree: OutputTree | None
    try:
        refuse_holding(options.output, options.root)
        with stage("compare the output with the record"):
            if _as_recorded(options, signatures):  # the common case, in one pass
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


def _as_recorded(options: Options, signatures: dict[str, Signature]) -> bool:
    """Tell whether the output holds exactly the recorded files, each with its recorded lstat
    (gpuplan.cache.output.as_recorded); render --watch: from the spare's record of the output
    while its watch proves it still holds (gpuplan.spare.view), without a look at the files."""
    from gpuplan.cache.output import as_recorded

    seen = spare.view(options.output) if warm.active() else None
    if seen is not None:  # (a spare's record holds no link or special file)
        return seen.signatures == signatures
    return as_recorded(options.output, signatures)


def _print_shown(shown: Shown, strict: bool) -> bool:
    """Print recorded findings as print_findings prints them in text; tell whether they fail."""
    if shown.text:
        sys.stderr.write(shown.text)
    for note in shown.notes:
        sys.stderr.write(f"note: {note}\n")
    return shown.fails_strict if strict else shown.fails


def _report_check(options: Options, changes: Changes, count: int) -> int:
    for line in changes.lines():
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

    spare.swapped(options.output, None)  # an earlier run's, if its record was not saved

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
            clean_stale(
                options.output.absolute()
            )  # a killed render's staging, even with nothing to write
            warm.later(functools.partial(spare.ensure, options.output))
    except WriteError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.FAILED
    if cache is not None and not has_errors(compiled):
        record = functools.partial(
            _record, options, cache, result, files, compiled, changes if check_only else None
        )
        # render --watch records once the result is printed, after the removal of an old tree
        # that shares the output's inodes (it changes their ctime: write_tree puts that first)
        # and before the spare's upkeep, which does not touch the output's files
        if check_only or not warm.later(record, first=True):
            record()
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
    """Return the signature of each of the output's files: render --watch, as its write just
    swapped them in (gpuplan.spare.written_signatures), else by lstat."""
    from gpuplan.cache.output import stat_files

    known = spare.written_signatures(options.output) if warm.active() else None
    if known is not None:
        found = {p: known[p] for p in paths if p in known}
        if len(found) == len(paths):
            return found
    return stat_files(options.output, paths)
