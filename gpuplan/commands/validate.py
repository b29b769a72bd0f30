"""`gpuplan validate PATH...`: any manifests, checked the way the API server and webhooks would."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplan.commands.options import write_findings
from gpuplan.diagnostics import has_errors, with_code
from gpuplan.exitcode import ExitCode
from gpuplan.runtime.watch import Watch, loop
from gpuplan.validate.choose import UsageError, Validators, chosen_sets
from gpuplan.validate.core import UnknownKubernetesVersion, core_schemas, minor_version, newest
from gpuplan.validate.crds import CrdIndex, CrdLoadError
from gpuplan.validate.files import manifest_files, validate_paths


def validate(
    paths: list[Path],
    kubernetes_version: str | None,
    crds: Path | None,
    fmt: str,
    strict: bool,
    components: tuple[str, ...] = (),
    watch: Watch | None = None,
) -> int:
    """Validate manifest files and folders; return the exit code.

    Custom resources are checked against the shipped CRDs of the component versions chosen per
    folder (gpuplan.validate.choose); --crds or GPUPLAN_CRDS add kinds or replace shipped ones.
    With watch, validate again whenever a file changes, keeping the compiled validators.
    """
    env = os.environ.get("GPUPLAN_CRDS")
    crds = crds if crds is not None else (Path(env) if env else None)
    try:
        index = CrdIndex.load(crds) if crds is not None else None
    except (CrdLoadError, OSError) as exc:
        sys.stderr.write(f"error: cannot read the CRDs in {crds}: {exc}\n")
        return ExitCode.USAGE
    try:
        validators = Validators(
            minor_version(kubernetes_version or newest()), chosen_sets(list(components)), index
        )
        core_schemas(validators.kubernetes_version)
    except (UnknownKubernetesVersion, UsageError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.USAGE
    if watch is not None:
        return _watch(paths, validators, fmt, strict, watch)
    return _once(paths, validators, fmt, strict)


def _snapshot(paths: list[Path]) -> frozenset[tuple[Path, int, int]]:
    """Return each manifest file's modification time and size."""
    found = set()
    for path in manifest_files(paths):
        try:
            stat = path.stat()
        except OSError:  # removed between listing and stat: the next look sees it gone
            continue
        found.add((path, stat.st_mtime_ns, stat.st_size))
    return frozenset(found)


def _watch(paths: list[Path], validators: Validators, fmt: str, strict: bool, watch: Watch) -> int:
    """Validate now and after every change, polling modification times; return the last exit code."""

    def once() -> int:
        validators.forget_folders()  # a kustomization header may name other versions now
        return _once(paths, validators, fmt, strict)

    return loop(lambda: _snapshot(paths), once, watch, fmt == "text", paths=paths)


def _once(paths: list[Path], validators: Validators, fmt: str, strict: bool) -> int:
    """Validate the paths once with validators compiled before; print the findings; return the exit code."""
    docs, files, found, skipped = validate_paths(paths, validators, strict, _both)
    found = with_code(
        found, "manifest"
    )  # every finding of `validate` is about a manifest it was given
    write_findings(found, fmt)
    if fmt == "text":
        for rule in sorted(skipped):
            sys.stderr.write(
                f"note: CEL rule of {rule[0]} at {rule[1]} was not evaluated: {rule[2]}\n"
            )
        if not found:
            sys.stderr.write(f"{len(docs)} objects in {files} files are valid\n")
    return ExitCode.FAILED if has_errors(found, strict) else ExitCode.OK


def _both(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """Run two halves on two cores (imported only when there are many files to split)."""
    from gpuplan.runtime.workers import both

    return both(first, second)
