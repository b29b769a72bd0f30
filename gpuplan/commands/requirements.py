"""`gpuplan requirements`: what the cloud's node groups must carry (IaC gpuplan does not write)."""

from __future__ import annotations

import sys

from gpuplan.commands.options import Options, checked_fleet
from gpuplan.exitcode import ExitCode
from gpuplan.requirements import requirements as fleet_requirements


def requirements(options: Options, cluster: str | None, fmt: str = "text") -> int:
    """Print the node-group requirements of the fleet (or one cluster) once it checks; return the exit code."""
    fleet = checked_fleet(options, cluster)
    if fleet is None:
        return ExitCode.FAILED
    empty = "no node group needs anything set\n"
    sys.stdout.write(
        fleet_requirements(fleet, cluster, fmt) or (empty if fmt == "text" else "# " + empty)
    )
    return ExitCode.OK
