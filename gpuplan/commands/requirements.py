"""`gpuplan requirements`: what the cloud's node groups must carry (IaC gpuplan does not write)."""

from __future__ import annotations

import sys

from gpuplan.commands.common import Options, print_findings
from gpuplan.exitcode import ExitCode
from gpuplan.pipeline import compile_fleet
from gpuplan.requirements import requirements as fleet_requirements


def requirements(options: Options, cluster: str | None, fmt: str = "text") -> int:
    """Print the node-group requirements of the fleet (or one cluster) once it checks; return the exit code."""
    result = compile_fleet(
        options.root, (cluster,) if cluster else (), options.crds, emit_output=False
    )
    if (
        print_findings(result, Options(options.root, strict=False, fmt="text"))
        or result.fleet is None
    ):
        return ExitCode.FAILED
    empty = "no node group needs anything set\n"
    sys.stdout.write(
        fleet_requirements(result.fleet, cluster, fmt) or (empty if fmt == "text" else "# " + empty)
    )
    return ExitCode.OK
