"""`gpuplan diff`: what a change does to the rendered fleet, as text, markdown or JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan.diff.gate import matching, parse_fail_on, usage_hint
from gpuplan.diff.markdown import marker
from gpuplan.diff.sides import FORMATS, InputErrors, from_folders, from_git
from gpuplan.exitcode import ExitCode
from gpuplan.inputs.git import UsageError, repository_path
from gpuplan.runtime.workers import both


def diff(
    *,
    root: Path,
    base: str | None,
    old_dir: Path | None,
    new_dir: Path | None,
    fmt: str,
    exit_code: bool,
    crds: Path | None,
    fail_on: tuple[str, ...] = (),
) -> int:
    """Print what changes between two rendered fleets; return the exit code."""
    wanted, unknown = parse_fail_on(fail_on)
    try:
        if unknown:
            raise UsageError(
                f"--fail-on {', '.join(unknown)}: not a code or severity; choose from {usage_hint()}"
            )
        _check_usage(base, old_dir, new_dir, fmt)
        if base is not None:
            result = from_git(root, base, crds, both)
        else:
            assert old_dir is not None and new_dir is not None
            result = from_folders(old_dir, new_dir)
    except UsageError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.USAGE
    except InputErrors:
        return ExitCode.FAILED
    result.marker = marker(repository_path(root if base is not None else (new_dir or root)))
    sys.stdout.write(FORMATS[fmt](result))
    gated = matching(result.disruptions, wanted)
    if gated:
        codes = ", ".join(dict.fromkeys(d.code for d in gated))
        sys.stderr.write(
            f"gpuplan diff: {len(gated)} finding{'' if len(gated) == 1 else 's'} match --fail-on ({codes})\n"
        )
        return ExitCode.FAILED
    return ExitCode.FAILED if exit_code and result.changes else ExitCode.OK


def _check_usage(base: str | None, old_dir: Path | None, new_dir: Path | None, fmt: str) -> None:
    """Raise UsageError unless exactly one of --base REF or OLD_DIR NEW_DIR is given."""
    folders = [d for d in (old_dir, new_dir) if d is not None]
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    if base is not None and folders:
        raise UsageError("give either --base REF or two folders OLD_DIR NEW_DIR, not both")
    if base is None and len(folders) != 2:
        raise UsageError(
            "give --base REF (compare with a git revision) or two folders OLD_DIR NEW_DIR"
        )
