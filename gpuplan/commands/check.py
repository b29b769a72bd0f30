"""`gpuplan check`: everything render does except writing."""

from __future__ import annotations

import sys

from gpuplan.commands.options import Options, print_findings
from gpuplan.exitcode import ExitCode
from gpuplan.inputs.git import UsageError
from gpuplan.inputs.snapshot import UnsafeTree
from gpuplan.pipeline import Compiled, compile_fleet


def check(options: Options) -> int:
    """Run everything render does except writing; return the exit code."""
    try:
        result = compile_fleet(options.root, options.clusters, options.crds, base=options.base)
    except UsageError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.USAGE
    except UnsafeTree as exc:  # a hostile tree at --base: nothing of it was written
        sys.stderr.write(f"error: the inputs at --base {options.base} are refused:\n")
        print_findings(Compiled(None, diagnostics=exc.diagnostics), options)
        return ExitCode.FAILED
    if print_findings(result, options):
        return ExitCode.FAILED
    if options.fmt == "text":
        sys.stderr.write(f"fleet is valid: {len(result.manifests)} objects\n")
    return ExitCode.OK
