"""What the commands share: the options the flags asked for, and how findings are printed."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gpuplan.diagnostics import Diagnostic, has_errors, ordered, render
from gpuplan.runtime.watch import Watch as Watch  # --watch, --interval, --max-cycles

if TYPE_CHECKING:
    from gpuplan.plan.fleet import Fleet


class Findings(Protocol):
    """What a run found (pipeline.Compiled, or a render answered from the cache)."""

    diagnostics: list[Diagnostic]
    notes: list[str]


@dataclass(frozen=True)
class Options:
    """What the flags asked for."""

    root: Path
    out: Path | None = None
    clusters: tuple[str, ...] = ()
    strict: bool = False
    fmt: str = "text"
    crds: Path | None = None
    base: str | None = None
    """`check --base REF`: the git revision whose quotas a capacity overrun is compared with."""

    @property
    def output(self) -> Path:
        """Return the output folder (default: <root>/output)."""
        return self.out if self.out is not None else self.root / "output"


def write_findings(found: list[Diagnostic], fmt: str) -> None:
    """Write findings: JSON is the command's result (stdout), text and github are diagnostics (stderr)."""
    text = render(found, fmt)
    if text:
        (sys.stdout if fmt == "json" else sys.stderr).write(text)


def print_findings(result: Findings, options: Options) -> bool:
    """Print the findings (write_findings); return True when they fail the run."""
    found = ordered(result.diagnostics)
    write_findings(found, options.fmt)
    if options.fmt == "text":
        for note in result.notes:
            sys.stderr.write(f"note: {note}\n")
    return has_errors(found, options.strict)


def checked_fleet(options: Options, cluster: str | None) -> Fleet | None:
    """Compile the fleet (or one cluster) without output and print its findings as text.

    Returns the fleet, or None when it has errors: what `capacity` and `requirements` report on.
    """
    from gpuplan.pipeline import compile_fleet  # not at import: `validate` loads this module

    result = compile_fleet(
        options.root, (cluster,) if cluster else (), options.crds, emit_output=False
    )
    if (
        print_findings(result, Options(options.root, strict=False, fmt="text"))
        or result.fleet is None
    ):
        return None
    return result.fleet
