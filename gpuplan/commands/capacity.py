"""`gpuplan capacity`: GPUs, schedulable units, quota per tenant and headroom per pool."""

from __future__ import annotations

import sys

from gpuplan.commands.options import Options, checked_fleet
from gpuplan.exitcode import ExitCode
from gpuplan.plan.headroom import as_json, as_markdown, as_text, capacity_rows, kai_queues
from gpuplan.plan.kai_quota import queue_tree


def capacity(options: Options, cluster: str | None, fmt: str) -> int:
    """Print the capacity picture of the fleet (or one cluster); return the exit code."""
    fleet = checked_fleet(options, cluster)
    if fleet is None:
        return ExitCode.FAILED
    rows = capacity_rows(fleet, cluster)
    queues = kai_queues(fleet, cluster)
    if fmt == "text":  # the KAI Queue trees after the pools
        trees = [
            queue_tree(c)
            for n, c in sorted(fleet.clusters.items())
            if cluster in (None, n) and c.release("kai-scheduler")
        ]
        sys.stdout.write(as_text(rows) + "".join("\n" + "\n".join(tree) + "\n" for tree in trees))
    else:
        sys.stdout.write({"markdown": as_markdown, "json": as_json}[fmt](rows, queues))
    return ExitCode.OK
