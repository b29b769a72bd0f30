"""`gpuplan report`: write the HTML page of the fleet's MIG layouts and capacity per tenant."""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan.commands.options import Options, print_findings
from gpuplan.diagnostics import Severity, ordered
from gpuplan.exitcode import ExitCode
from gpuplan.pipeline import compile_fleet
from gpuplan.views.html import DEFAULT_NAME, build_views, render_html


def write_report(root: Path, out: Path | None, cluster: str | None) -> int:
    """Write the HTML report of the fleet at root to out ('-': stdout); return the exit code.

    A fleet with errors is still drawn as far as it could be read (an overcommitted pool is
    exactly what one wants to see), with the errors listed on the page, and the exit code is 1.
    """
    result = compile_fleet(root, (cluster,) if cluster else (), emit_output=False)
    failed = print_findings(result, Options(root))
    if result.fleet is None or (cluster is not None and cluster not in result.fleet.clusters):
        return ExitCode.FAILED
    errors = [d.text() for d in ordered(result.diagnostics) if d.severity is Severity.ERROR]
    html = render_html(build_views(result.fleet, cluster), errors)
    code = ExitCode.FAILED if failed else ExitCode.OK
    if out is not None and str(out) == "-":
        sys.stdout.write(html)
        return code
    target = out if out is not None else root / DEFAULT_NAME
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {target}: {exc.strerror or exc}\n")
        return ExitCode.FAILED
    sys.stderr.write(
        f"wrote {target}{' (the fleet has errors: they are listed on the page)' if failed else ''}\n"
    )
    return code
