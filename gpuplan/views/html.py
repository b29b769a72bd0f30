"""The HTML report (`gpuplan report`): one self-contained HTML page with the MIG layouts and capacity of the fleet.

The page is drawn from the resolved fleet (no manifests are emitted): per cluster, every
distinct MIG layout of each MIG pool as an SVG of the GPU's memory slices with each instance
at its placed start slot, and per pool and resource a stacked bar of each tenant's nominal
quota against the capacity. Inline CSS and SVG only: it opens offline and can be attached to
a ticket or published as a CI artifact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jinja2 import Environment, PackageLoader

from gpuplan import __version__
from gpuplan.gpus.mig import gpu_ranges, layout_text, place
from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.plan.headroom import ResourceRow, capacity_rows
from gpuplan.plan.kai_quota import QueueRow, queue_rows
from gpuplan.plan.pools import PoolPlan

DEFAULT_NAME = "gpuplan-report.html"
TEMPLATE = "report.html.j2"

# Tenant colours: saturated hues (Tableau 10 without its red, pink and grey, which would read as
# overcommit, near-overcommit and headroom), plus a dark navy for an eighth tenant.
TENANT_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#9c755f",
    "#1f3a5f",
)
HEADROOM = "#d5d5d5"
OVERCOMMIT = "#d62728"
# MIG instance fill by compute slices, so equal-sized instances look alike across GPU models: a
# blue-grey ramp, so an instance is never taken for a tenant (saturated) or for overcommit (red).
PROFILE_COLOURS = {1: "#f1f3f5", 2: "#e1e5e9", 3: "#d0d6db", 4: "#c3cad0", 7: "#b6bec5"}

CELL = 96  # px per memory slice: instances are drawn to scale
PAD = 8
SLICE_TOP = 20  # room for the slice numbers above the grid
ROW = 56
BAR_WIDTH = 640
BAR_HEIGHT = 26
OVER_BAND = 9  # px at the bottom of a bar that mark overcommit, below the tenants' labels
CHAR = 7  # approximate px per character at the label font size (to decide what fits)


@dataclass(frozen=True)
class Instance:
    """One MIG instance drawn at its start slot."""

    profile: str
    start: int
    size: int
    x: int
    width: int
    colour: str
    detail: str  # second label line, e.g. "3/7 compute"


@dataclass
class LayoutPicture:
    """One distinct MIG layout of a pool, with the GPUs that carry it."""

    text: str
    gpus: str
    slices: int
    width: int
    height: int
    instances: list[Instance] = field(default_factory=list)
    usage: str = ""
    problem: str = ""  # set when the layout cannot be placed (never for a checked fleet)

    @property
    def grid_x(self) -> list[int]:
        """Return the x of every memory-slice boundary."""
        return [PAD + i * CELL for i in range(self.slices + 1)]


@dataclass(frozen=True)
class Segment:
    """One part of a capacity bar."""

    label: str
    x: float
    width: float
    colour: str
    title: str
    show_label: bool
    y: float = 0.0
    height: float = BAR_HEIGHT


@dataclass
class CapacityBar:
    """One resource of one pool: the tenants' nominal quota against the capacity."""

    row: ResourceRow
    segments: list[Segment]
    capacity_x: float
    always_on_x: float | None
    label_y: float
    width: int = BAR_WIDTH
    height: int = BAR_HEIGHT

    @property
    def unlabelled(self) -> list[Segment]:
        """Return the segments too narrow for their label: the key under the bar names them."""
        return [s for s in self.segments if not s.show_label]


@dataclass
class PoolView:
    """A node pool: what it is, its MIG layouts and its capacity bars."""

    name: str
    gpu: str
    mode: str
    size: str  # nodes x GPUs per node = physical GPUs
    note: str
    layouts: list[LayoutPicture]
    bars: list[CapacityBar]


@dataclass
class ClusterView:
    """One cluster's section of the page."""

    name: str
    provider: str
    kubernetes_version: str
    components: list[str]
    priority_classes: list[tuple[str, int, str]]
    tenants: list[tuple[str, str]]  # (name, colour) of the tenants with an allocation here
    pools: list[PoolView]
    kai_queues: list[QueueRow] = field(default_factory=list)  # tree order, where KAI Scheduler runs


def layout_picture(pool: PoolPlan, layout: dict[str, int], gpus: tuple[int, ...]) -> LayoutPicture:
    """Return the picture of one layout on one GPU of the pool's model."""
    geometry = pool.model.mig
    assert geometry is not None
    every = gpus == tuple(range(pool.gpus_per_node))
    where = "every GPU" if every else f"GPU{'s' if len(gpus) > 1 else ''} {gpu_ranges(gpus)}"
    slices = geometry.memory_slices
    picture = LayoutPicture(
        layout_text(layout),
        f"{where} of each node",
        slices,
        2 * PAD + slices * CELL,
        SLICE_TOP + ROW + PAD,
    )
    placed = place(pool.model, layout)
    if not placed.ok:
        picture.problem = placed.message
        return picture
    compute = memory = 0
    for name, start in placed.slots:
        profile = geometry.profile(name)
        assert profile is not None
        compute += profile.compute_slices
        memory += profile.size
        colour = PROFILE_COLOURS.get(profile.compute_slices, "#bbbbbb")
        detail = f"{profile.compute_slices}/{geometry.compute_slices} compute"
        picture.instances.append(
            Instance(
                name, start, profile.size, PAD + start * CELL, profile.size * CELL, colour, detail
            )
        )
    picture.usage = f"{compute} of {geometry.compute_slices} compute slices, {memory} of {slices} memory slices used"
    return picture


def pool_layouts(pool: PoolPlan) -> list[LayoutPicture]:
    """Return one picture per distinct MIG layout of a pool (layouts on several GPU groups merged)."""
    if pool.model.mig is None:
        return []
    merged: dict[str, tuple[dict[str, int], list[int]]] = {}
    for gpus, layout in pool.mig_layouts:
        entry = merged.setdefault(layout_text(layout), (layout, []))
        entry[1].extend(gpus)
    return [layout_picture(pool, layout, tuple(sorted(gpus))) for layout, gpus in merged.values()]


def capacity_bar(row: ResourceRow, colours: dict[str, str]) -> CapacityBar:
    """Return the stacked bar of one resource: tenants, then headroom (grey) or overcommit (red)."""
    scale = BAR_WIDTH / max(row.capacity, row.granted, 1)
    segments = []
    x = 0.0
    for share in row.tenants:
        if share.nominal <= 0:
            continue
        width = share.nominal * scale
        label = f"{share.tenant} {share.nominal}"
        title = f"{share.tenant}: {share.nominal} {row.resource}"
        segments.append(
            Segment(label, x, width, colours[share.tenant], title, width >= len(label) * CHAR + 8)
        )
        x += width
    capacity_x = row.capacity * scale
    if row.headroom:
        label = f"headroom {row.headroom}"
        width = row.headroom * scale
        segments.append(
            Segment(
                label,
                x,
                width,
                HEADROOM,
                f"{row.headroom} not granted",
                width >= len(label) * CHAR + 8,
            )
        )
    if row.overcommit:
        label = f"over {row.overcommit}"
        width = row.overcommit * scale
        title = f"{row.overcommit} granted beyond the capacity of {row.capacity}"
        # A band at the bottom only, so the tenants granted beyond the capacity stay visible above it.
        band = Segment(
            label, capacity_x, width, OVERCOMMIT, title, False, BAR_HEIGHT - OVER_BAND, OVER_BAND
        )
        segments.append(band)
    always_on = row.always_on * scale if row.always_on < row.capacity else None
    label_y = (BAR_HEIGHT - (OVER_BAND if row.overcommit else 0)) / 2
    return CapacityBar(row, segments, capacity_x, always_on, label_y)


def _components(cluster: ClusterPlan) -> list[str]:
    """Return the cluster's components with their versions."""
    parts = cluster.spec.components
    out = []
    if parts.gpu_operator is not None:
        out.append(
            f"GPU Operator {parts.gpu_operator.version} (MIG strategy {parts.gpu_operator.mig_strategy})"
        )
    for label, item in (
        ("Kueue", parts.kueue),
        ("Volcano", parts.volcano),
        ("Karpenter", parts.karpenter),
        ("KAI Scheduler", parts.kai),
        # Only aws installs the chart; AKS and GKE run their own autoscaler.
        (
            "Cluster Autoscaler chart",
            parts.cluster_autoscaler if cluster.spec.provider == "aws" else None,
        ),
    ):
        if item is not None:
            out.append(f"{label} {item.version}")
    return out


def _size(pool: PoolPlan) -> str:
    """Return the pool's size, e.g. '2-16 nodes (autoscaled) x 8 GPUs = 128 GPUs at most'."""
    nodes = pool.spec.nodes
    total = pool.nodes_most * pool.gpus_per_node
    if nodes.by_cluster_autoscaler:
        # The Cluster Autoscaler keeps the node group's minimum up; Karpenter keeps none (PoolPlan.nodes_least).
        kept = f"Cluster Autoscaler, {nodes.least} always on"
        count, most = f"{nodes.least}\u2013{nodes.most} nodes ({kept})", " at most"
    elif nodes.autoscaled:
        count, most = f"{nodes.least}\u2013{nodes.most} nodes (autoscaled)", " at most"
    else:
        count, most = f"{nodes.most} node{'' if nodes.most == 1 else 's'}", ""
    return f"{count} \u00d7 {pool.gpus_per_node} GPUs = {total} GPUs{most}"


def _note(pool: PoolPlan) -> str:
    """Return how a shared pool's units relate to its GPUs (empty when not shared)."""
    sharing = pool.spec.sharing
    if (
        pool.spec.dra is not None
    ):  # DRA: whole devices of DeviceClasses, shared by one claim's consumers
        shared = (
            f", {pool.mode} among the consumers of one claim"
            if pool.mode not in ("exclusive", "mig")
            else ""
        )
        return f"allocated by DRA{shared}"
    if sharing.replicas > 1:
        what = "MIG instance" if pool.mode.startswith("mig") else "GPU"
        return f"each {what} shared {sharing.replicas} ways ({pool.mode})"
    return ""


def cluster_view(
    cluster: ClusterPlan, rows: list[ResourceRow], colours: dict[str, str]
) -> ClusterView:
    """Return the view of one cluster: its components, priority classes, pools and bars."""
    pools = []
    for pool in cluster.pools.values():
        bars = [
            capacity_bar(r, colours)
            for r in rows
            if r.cluster == cluster.name and r.pool == pool.name
        ]
        pools.append(
            PoolView(
                pool.name,
                pool.model.name,
                pool.mode,
                _size(pool),
                _note(pool),
                pool_layouts(pool),
                bars,
            )
        )
    classes = [(p.name, p.value, p.description or "") for p in cluster.spec.priority_classes]
    tenants = sorted({a.name for a in cluster.allocations})
    return ClusterView(
        cluster.name,
        cluster.spec.provider,
        cluster.spec.kubernetes_version,
        _components(cluster),
        classes,
        [(t, colours[t]) for t in tenants],
        pools,
        queue_rows(cluster) if cluster.release("kai-scheduler") is not None else [],
    )


def tenant_colours(fleet: Fleet) -> dict[str, str]:
    """Return a colour per tenant, the same on every cluster of the page."""
    return {
        name: TENANT_COLOURS[i % len(TENANT_COLOURS)]
        for i, name in enumerate(sorted(fleet.tenants))
    }


def build_views(fleet: Fleet, cluster: str | None = None) -> list[ClusterView]:
    """Return the views of every cluster (or one), in name order."""
    rows = capacity_rows(fleet, cluster)
    colours = tenant_colours(fleet)
    names = sorted(n for n in fleet.clusters if cluster is None or n == cluster)
    return [cluster_view(fleet.clusters[n], rows, colours) for n in names]


def environment() -> Environment:
    """Return the jinja2 environment of the report (HTML autoescaped)."""
    return Environment(
        loader=PackageLoader("gpuplan", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(
    clusters: list[ClusterView], errors: list[str] | None = None, title: str = "gpuplan report"
) -> str:
    """Return the report page for these cluster views (and the fleet's errors, if any)."""
    page = environment().get_template(TEMPLATE)
    legend = {"headroom": HEADROOM, "overcommit": OVERCOMMIT}
    geometry = {"top": SLICE_TOP, "row": ROW, "cell": CELL}
    return page.render(
        title=title,
        clusters=clusters,
        errors=errors or [],
        version=__version__,
        legend=legend,
        **geometry,
    )
