"""The subcommands, one module each, as plain functions returning an exit code; only cli.main() exits.

render, check, validate, diff, capacity, report, schema and init live in gpuplan/commands/<name>.py;
the engines they drive stay in their stages (pipeline, validate/, diff/, report, capacity).
"""

from __future__ import annotations

from typing import Any

from gpuplan.exitcode import ExitCode

# The names this package had as one module, kept so older imports still work.
OK, FAILED, USAGE, INTERNAL = ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE, ExitCode.INTERNAL

__all__ = ["FAILED", "INTERNAL", "OK", "USAGE", "ExitCode", "Options", "render_fleet"]


def __getattr__(name: str) -> Any:
    """Import Options and render_fleet on first use: `validate` must not load the pipeline."""
    if name == "Options":
        from gpuplan.commands.options import Options

        return Options
    if name == "render_fleet":
        from gpuplan.commands.render import render_fleet

        return render_fleet
    raise AttributeError(f"module 'gpuplan.commands' has no attribute {name!r}")
