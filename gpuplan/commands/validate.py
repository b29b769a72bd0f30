"""`gpuplan validate PATH...`: any manifests, checked the way the API server and webhooks would."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gpuplan.diagnostics import has_errors, render
from gpuplan.exitcode import ExitCode
from gpuplan.validate.command import validate_paths
from gpuplan.validate.core import UnknownKubernetesVersion, newest
from gpuplan.validate.crds import CrdIndex, CrdLoadError
from gpuplan.validate.engine import Validator


def validate(paths: list[Path], kubernetes_version: str | None, crds: Path | None, fmt: str, strict: bool) -> int:
    """Validate manifest files and folders; return the exit code."""
    env = os.environ.get("GPUPLAN_CRDS")
    crds = crds if crds is not None else (Path(env) if env else None)
    try:
        index = CrdIndex.load(crds) if crds is not None else None
    except (CrdLoadError, OSError) as exc:
        sys.stderr.write(f"error: cannot read the CRDs in {crds}: {exc}\n")
        return ExitCode.USAGE
    try:
        validator = Validator(index, kubernetes_version or newest(), cel=True, webhooks=True)
    except UnknownKubernetesVersion as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.USAGE
    docs, files, found, skipped = validate_paths(paths, validator)
    sys.stderr.write(render(found, fmt))
    if fmt == "text":
        if index is None:
            sys.stderr.write("note: custom resources were not validated against CRDs: set --crds DIR or GPUPLAN_CRDS\n")
        for rule in sorted(skipped):
            sys.stderr.write(f"note: CEL rule of {rule[0]} at {rule[1]} was not evaluated: {rule[2]}\n")
        if not found:
            sys.stderr.write(f"{len(docs)} objects in {files} files are valid\n")
    return ExitCode.FAILED if has_errors(found, strict) else ExitCode.OK
