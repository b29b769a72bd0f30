"""The capacity picture: per pool the GPUs, schedulable units, grants, headroom, overcommit."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from gpuplan.fleet import ClusterPlan, Fleet
from gpuplan.pools import PoolPlan

BAR = 20


@dataclass(frozen=True)
class TenantShare:
    """One tenant's grant of one resource of a pool."""

    tenant: str
    nominal: int
    borrowing_limit: int | None  # None: unlimited within the cohort (or no cohort)
    cohort: str | None


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
    always_on: int  # units at nodes.min (or count)
    tenants: list[TenantShare] = field(default_factory=list)

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


def _rows_of(cluster: ClusterPlan, pool: PoolPlan) -> list[ResourceRow]:
    nodes = str(pool.nodes_most) if not pool.spec.nodes.autoscaled else f"{pool.nodes_least}-{pool.nodes_most}"
    rows = []
    for resource in pool.resources:
        row = ResourceRow(cluster.name, pool.name, pool.model.name, pool.mode, nodes, pool.nodes_most * pool.gpus_per_node, resource, pool.capacity(resource), pool.capacity(resource, at_least=True))
        for alloc in cluster.allocations:
            for grant in alloc.grants:
                if grant.pool is pool and grant.resource == resource:
                    row.tenants.append(TenantShare(alloc.name, grant.nominal, grant.borrowing, alloc.spec.cohort))
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
    return "[" + "#" * filled + "." * (BAR - filled) + "]" + (" !" if fraction > 1 else "")


def _tenants_text(row: ResourceRow) -> str:
    parts = []
    for share in row.tenants:
        limit = "" if share.borrowing_limit is None else f" (+{share.borrowing_limit})"
        parts.append(f"{share.tenant} {share.nominal}{limit}")
    return ", ".join(parts) or "-"


HEAD = ("cluster", "pool", "gpu", "sharing", "nodes", "gpus", "resource", "capacity", "granted", "headroom", "over", "use", "tenants (nominal (+borrowing limit))")


def _cells(row: ResourceRow) -> tuple[str, ...]:
    use = f"{_bar(row.utilisation)} {row.utilisation:4.0%}"
    return (row.cluster, row.pool, row.gpu, row.mode, row.nodes, str(row.physical_gpus), row.resource, str(row.capacity), str(row.granted), str(row.headroom), str(row.overcommit), use, _tenants_text(row))


def as_text(rows: list[ResourceRow]) -> str:
    """Return an aligned table a person reads at a glance."""
    table = [HEAD] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEAD))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in table]
    return "\n".join(lines) + "\n"


def as_markdown(rows: list[ResourceRow]) -> str:
    """Return a markdown table (pull requests, wikis)."""
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in _cells(row)]
        cells[11] = f"`{cells[11]}`"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(rows: list[ResourceRow]) -> str:
    """Return the rows as JSON, with the derived figures included."""
    out = []
    for row in rows:
        item = asdict(row)
        item |= {"granted": row.granted, "headroom": row.headroom, "overcommit": row.overcommit, "utilisation": round(row.utilisation, 4)}
        out.append(item)
    return json.dumps(out, indent=2, sort_keys=True) + "\n"
