"""The capacity picture: per pool the GPUs, schedulable units, grants, headroom, overcommit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.plan.kai_quota import QueueRow, queue_rows
from gpuplan.plan.pools import PoolPlan

BAR = 10


@dataclass(frozen=True)
class TenantShare:
    """One tenant's grant of one resource of a pool."""

    tenant: str
    nominal: int
    borrowing_limit: int | None  # None: unlimited within the cohort (or no cohort)
    cohort: str | None
    lending_limit: int | None = None  # None: lends all its idle nominal quota to the cohort

    def borrowing(self) -> str:
        """Return what the tenant may borrow, in words: `up to 16`, `unlimited`, `none (no cohort)`."""
        if self.cohort is None:
            return "none (no cohort)"
        return "unlimited" if self.borrowing_limit is None else f"up to {self.borrowing_limit}"

    def lending(self) -> str:
        """Return what the tenant lends to its cohort: `up to 8`, `all idle`, or `-` without a cohort."""
        if self.cohort is None:
            return "-"
        return "all idle" if self.lending_limit is None else f"up to {self.lending_limit}"


@dataclass
class ResourceRow:
    """One resource of one pool: capacity, what is granted, what is left."""

    cluster: str
    pool: str
    gpu: str
    mode: str
    nodes: str
    physical_gpus: int
    resource: str
    capacity: int  # units at nodes.max (or count)
    always_on: int  # units always there: a static pool's count (Karpenter keeps no minimum)
    tenants: list[TenantShare] = field(default_factory=list)
    autoscaler: str | None = None  # karpenter or cluster-autoscaler; None for a static pool
    # Nodes always there: count, or a Cluster Autoscaler pool's nodes.min (kept up); Karpenter: 0.
    always_on_nodes: int = 0
    device_class: str | None = None  # DRA pools: the DeviceClass whose devices the resource counts

    @property
    def kept_up(self) -> str:
        """Return ` (1 always on)` for a Cluster Autoscaler pool, whose min is kept up (Karpenter's is not)."""
        if self.autoscaler != "cluster-autoscaler":
            return ""
        return f" ({self.always_on_nodes} always on)"

    @property
    def label(self) -> str:
        """Return the resource as the text report names it: a DRA pool's DeviceClass, else the resource."""
        return f"DeviceClass {self.device_class}" if self.device_class else self.resource

    @property
    def granted(self) -> int:
        """Return the sum of nominal quotas."""
        return sum(t.nominal for t in self.tenants)

    @property
    def headroom(self) -> int:
        """Return units not granted to anyone (never negative)."""
        return max(self.capacity - self.granted, 0)

    @property
    def overcommit(self) -> int:
        """Return units granted beyond capacity (zero when the pool fits)."""
        return max(self.granted - self.capacity, 0)

    @property
    def utilisation(self) -> float:
        """Return granted / capacity (0 for an empty pool)."""
        return self.granted / self.capacity if self.capacity else 0.0


def _autoscaler(pool: PoolPlan) -> str | None:
    nodes = pool.spec.nodes
    if not nodes.autoscaled:
        return None
    return "cluster-autoscaler" if nodes.by_cluster_autoscaler else "karpenter"


def _rows_of(cluster: ClusterPlan, pool: PoolPlan) -> list[ResourceRow]:
    nodes = (
        str(pool.nodes_most)
        if not pool.spec.nodes.autoscaled
        else f"{pool.spec.nodes.least}-{pool.nodes_most}"  # Karpenter: as stated, none always on; Cluster Autoscaler: min kept
    )
    rows = []
    for resource in pool.resources:
        row = ResourceRow(
            cluster.name,
            pool.name,
            pool.model.name,
            pool.mode,
            nodes,
            pool.nodes_most * pool.gpus_per_node,
            resource,
            pool.capacity(resource),
            pool.capacity(resource, at_least=True),
            autoscaler=_autoscaler(pool),
            always_on_nodes=pool.nodes_least,
        )
        found = pool.resources[resource].device_class
        row.device_class = found.name if found is not None else None
        for alloc in cluster.allocations:
            for grant in alloc.grants:
                if grant.pool is pool and grant.resource == resource:
                    share = TenantShare(
                        alloc.name, grant.nominal, grant.borrowing, alloc.spec.cohort, grant.lending
                    )
                    row.tenants.append(share)
        rows.append(row)
    return rows


def capacity_rows(fleet: Fleet, cluster: str | None = None) -> list[ResourceRow]:
    """Return a row per (cluster, pool, resource), in cluster and pool order."""
    rows: list[ResourceRow] = []
    for name in sorted(fleet.clusters):
        if cluster is None or name == cluster:
            plan = fleet.clusters[name]
            for pool in plan.pools.values():
                rows.extend(_rows_of(plan, pool))
    return rows


def _bar(fraction: float) -> str:
    filled = min(BAR, round(fraction * BAR))
    return "[" + "#" * filled + "." * (BAR - filled) + "]" + ("!" if fraction > 1 else " ")


def _tenants_text(row: ResourceRow) -> str:
    """Return `team-a 16 (borrows up to 16, lends up to 8), team-b 32 (borrows unlimited, ...)`."""
    parts = []
    for share in row.tenants:
        parts.append(
            f"{share.tenant} {share.nominal} (borrows {share.borrowing()}, lends {share.lending()})"
        )
    return ", ".join(parts) or "-"


WIDTH = 120  # the text form fits a 120-column terminal
HEAD = (
    "resource / tenant",
    "capacity",
    "granted",
    "headroom",
    "over",
    "use",
    "may borrow",
    "lends",
)
NUMBERS = {1, 2, 3, 4}


def _clip(line: str) -> str:
    """Return a line cut to WIDTH columns (an ellipsis says it was cut)."""
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _pool_line(row: ResourceRow) -> str:
    """Return `  l40s-od: L40S, exclusive, 1-6 nodes (1 always on), 24 GPUs` (always on: Cluster Autoscaler)."""
    nodes = f"{row.nodes} node{'' if row.nodes == '1' else 's'}{row.kept_up}"
    dra = ", DRA" if row.device_class else ""
    return _clip(f"  {row.pool}: {row.gpu}, {row.mode}{dra}, {nodes}, {row.physical_gpus} GPUs")


def _table_rows(row: ResourceRow) -> list[tuple[str, ...]]:
    """Return the resource's figures, then one row per tenant: its nominal quota, borrowing and lending."""
    use = f"{_bar(row.utilisation)} {row.utilisation:4.0%}"
    out: list[tuple[str, ...]] = [
        (
            row.label,
            str(row.capacity),
            str(row.granted),
            str(row.headroom),
            str(row.overcommit),
            use,
            "",
            "",
        )
    ]
    for share in row.tenants:
        out.append(
            (
                "  " + share.tenant,
                "",
                str(share.nominal),
                "",
                "",
                "",
                share.borrowing(),
                share.lending(),
            )
        )
    return out


def _aligned(table: list[tuple[str, ...]]) -> list[str]:
    """Return the rows of one cluster aligned: text columns left, numbers right."""
    widths = [max(len(line[i]) for line in table) for i in range(len(HEAD))]
    out = []
    for line in table:
        cells = [
            c.rjust(widths[i]) if i in NUMBERS else c.ljust(widths[i]) for i, c in enumerate(line)
        ]
        out.append(_clip(("    " + "  ".join(cells)).rstrip()))
    return out


def as_text(rows: list[ResourceRow]) -> str:
    """Return per cluster and pool each resource's figures and each tenant's share, in 120 columns."""
    lines: list[str] = []
    for cluster in dict.fromkeys(r.cluster for r in rows):
        mine = [r for r in rows if r.cluster == cluster]
        table = [HEAD] + [line for r in mine for line in _table_rows(r)]
        aligned = iter(_aligned(table))
        lines += ([""] if lines else []) + [f"cluster {cluster}", next(aligned)]
        pool = None
        for row in mine:
            if row.pool != pool:
                lines.append(_pool_line(row))
                pool = row.pool
            lines += [next(aligned) for _ in range(1 + len(row.tenants))]
    return "\n".join(lines) + "\n"


MARKDOWN_HEAD = (
    "cluster",
    "pool",
    "gpu",
    "sharing",
    "nodes",
    "gpus",
    "resource",
    "capacity",
    "granted",
    "headroom",
    "over",
    "use",
    "tenants: nominal (may borrow, lends)",
)


def _cells(row: ResourceRow) -> tuple[str, ...]:
    use = f"{_bar(row.utilisation).strip()} {row.utilisation:4.0%}"
    return (
        row.cluster,
        row.pool,
        row.gpu,
        row.mode,
        row.nodes + row.kept_up,
        str(row.physical_gpus),
        row.resource,
        str(row.capacity),
        str(row.granted),
        str(row.headroom),
        str(row.overcommit),
        use,
        _tenants_text(row),
    )


QUEUE_HEAD = ("cluster", "KAI queue", "parent", "gpu quota / limit", "cpu quota / limit (cores)",
              "memory quota / limit", "over-quota weight")  # fmt: skip


def _queue_cells(row: QueueRow) -> tuple[str, ...]:
    figures = tuple(row.cell(r) for r in ("gpu", "cpu", "memory"))
    return (row.cluster, row.queue, row.parent or "-", *figures, str(row.over_quota_weight))


def as_markdown(rows: list[ResourceRow], queues: Sequence[QueueRow] = ()) -> str:
    """Return a markdown table (pull requests, wikis), then the KAI Queues' table when there are any."""
    lines = ["| " + " | ".join(MARKDOWN_HEAD) + " |", "|" + "---|" * len(MARKDOWN_HEAD)]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in _cells(row)]
        cells[11] = f"`{cells[11]}`"
        lines.append("| " + " | ".join(cells) + " |")
    if queues:
        lines += [
            "",
            "KAI Scheduler Queues (-1: unlimited; every figure is -1 where another scheduler enforces the quotas):",
            "",
        ]
        lines += ["| " + " | ".join(QUEUE_HEAD) + " |", "|" + "---|" * len(QUEUE_HEAD)]
        lines += ["| " + " | ".join(_queue_cells(q)) + " |" for q in queues]
    return "\n".join(lines) + "\n"


def _row_json(row: ResourceRow) -> dict[str, Any]:
    item = asdict(row)
    item |= {
        "granted": row.granted,
        "headroom": row.headroom,
        "overcommit": row.overcommit,
        "utilisation": round(row.utilisation, 4),
    }
    for tenant, share in zip(item["tenants"], row.tenants):
        tenant["borrowing"] = share.borrowing()  # "unlimited" said in words, not only a null
    return item


def as_json(rows: list[ResourceRow], queues: Sequence[QueueRow] = ()) -> str:
    """Return {"pools": the rows with their derived figures, "kai_queues": the KAI Queue trees} as JSON."""
    document = {
        "pools": [_row_json(row) for row in rows],
        "kai_queues": [asdict(q) for q in queues],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def kai_queues(fleet: Fleet, cluster: str | None = None) -> list[QueueRow]:
    """Return the KAI Queues of every cluster that runs KAI Scheduler (or of one), in tree order."""
    return [
        row
        for name, plan in sorted(fleet.clusters.items())
        if cluster in (None, name) and plan.release("kai-scheduler") is not None
        for row in queue_rows(plan)
    ]
