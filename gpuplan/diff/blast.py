"""The blast radius of a disruption: how many nodes and GPUs a pool has, and whose quota is there.

With `--base` both sides are compiled, so the figures come from the fleet itself (static pools
count their nodes exactly, even when `hostnames` are patterns). Two rendered folders carry
less: a Karpenter NodePool's `limits` give its most nodes and GPUs, a static pool's node count
is not in any object, and the tenants are read from the ClusterQueues' nominal quotas.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplan.diff.kinds import Blast, dig, is_kind, listing, mapping
from gpuplan.diff.objects import Side
from gpuplan.model.quantity import QuantityError, parse_quantity
from gpuplan.plan.drivers import STACK_ANNOTATION, pool_drivers, stack_text
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.headroom import capacity_rows
from gpuplan.plan.pools import GPU, POOL_LABEL

KARPENTER = "karpenter.sh"
KUEUE = "kueue.x-k8s.io"
PoolKey = tuple[str, str]  # cluster, pool


@dataclass(frozen=True)
class PoolFacts:
    """What one pool puts at stake."""

    nodes: int | None  # the most nodes (None: not known)
    least: int | None  # the nodes always there (autoscaled pools), else == nodes
    gpus: int | None  # physical GPUs at the most nodes
    model: str | None  # the GPU model, e.g. H100-SXM5-80GB
    tenants: tuple[str, ...]  # tenants with a nominal quota on the pool
    stack: str | None = None  # a preinstalled GPU stack: the driver the image ships, and the OS


@dataclass
class Facts:
    """Per (cluster, pool) what it puts at stake; both sides merged, the old side first."""

    pools: dict[PoolKey, PoolFacts]
    stacks: dict[PoolKey, tuple[str, str]] = field(default_factory=dict)  # preinstalled, changed

    def pool(self, scope: str, pool: str, tenants: tuple[str, ...] | None = None) -> Blast:
        """Return the blast radius of a change that reaches every node of a pool."""
        facts = self.pools.get((scope, pool))
        if facts is None:
            return Blast(tenants=tenants or ())
        return Blast(
            facts.nodes,
            facts.gpus,
            facts.tenants if tenants is None else tenants,
            _figures([facts]),
        )

    def cluster(self, scope: str) -> Blast:
        """Return the blast radius of a change that reaches every GPU node of a cluster."""
        return self.some(scope, {p for s, p in self.pools if s == scope})

    def some(self, scope: str, names: set[str]) -> Blast:
        """Return the blast radius of a change that reaches every node of these pools."""
        pools = [f for (s, p), f in sorted(self.pools.items()) if s == scope and p in names]
        tenants = tuple(sorted({t for f in pools for t in f.tenants}))
        nodes = _total([f.nodes for f in pools])
        gpus = _total([f.gpus for f in pools])
        text = _figures(pools)
        if pools:
            text += f" in {len(pools)} pool{'' if len(pools) == 1 else 's'}"
        return Blast(nodes, gpus, tenants, text)

    def model(self, scope: str, pool: str) -> str | None:
        """Return the GPU model of a pool, if known."""
        facts = self.pools.get((scope, pool))
        return facts.model if facts else None


def _total(values: list[int | None]) -> int | None:
    """Return the sum, or None when any part is unknown."""
    return (
        None
        if not values or any(v is None for v in values)
        else sum(v for v in values if v is not None)
    )


def _figures(pools: list[PoolFacts]) -> str:
    """Return `2 nodes, 16 GPUs` or `up to 16 nodes (2 always on), up to 128 GPUs`."""
    nodes, gpus = _total([p.nodes for p in pools]), _total([p.gpus for p in pools])
    least = _total([p.least for p in pools])
    if nodes is None:
        return "node count not known from the manifests"
    autoscaled = least != nodes  # None: a Karpenter pool read from its limits
    upto = "up to " if autoscaled else ""
    text = f"{upto}{nodes} node{'' if nodes == 1 else 's'}"
    if autoscaled and least is not None:
        text += f" ({least} always on)"
    if gpus is not None:
        text += f", {upto}{gpus} GPU{'' if gpus == 1 else 's'}"
    return text


def from_fleet(fleet: Fleet | None) -> dict[PoolKey, PoolFacts]:
    """Return the facts of every pool of a compiled fleet."""
    out: dict[PoolKey, PoolFacts] = {}
    if fleet is None:
        return out
    tenants: dict[PoolKey, set[str]] = {}
    for row in capacity_rows(fleet):
        tenants.setdefault((row.cluster, row.pool), set()).update(
            s.tenant for s in row.tenants if s.nominal > 0
        )
    for name, plan in fleet.clusters.items():
        drivers = {d.pool: d for d in pool_drivers(plan)}
        for pool in plan.pools.values():
            key = (name, pool.name)
            driver = drivers.get(pool.name)
            stack = stack_text(driver) if driver is not None else None
            out[key] = PoolFacts(
                pool.nodes_most,
                pool.nodes_least,
                pool.nodes_most * pool.gpus_per_node,
                pool.model.name,
                tuple(sorted(tenants.get(key, ()))),
                stack,
            )
    return out


def _count(value: object) -> int | None:
    """Return a quantity as a whole number, or None."""
    try:
        amount = parse_quantity(str(value))
    except QuantityError:
        return None
    return int(amount) if amount == int(amount) else None


def from_objects(side: Side) -> dict[PoolKey, PoolFacts]:
    """Return what the objects alone tell about each pool (Karpenter limits, Kueue quotas, the
    preinstalled stack a ResourceFlavor's annotation states)."""
    tenants: dict[PoolKey, set[str]] = {}
    pools: dict[PoolKey, tuple[int | None, int | None]] = {}
    stacks: dict[PoolKey, str] = {}
    for key, entry in side.items():
        if is_kind(key, KUEUE, "ResourceFlavor"):
            pool = str(mapping(dig(entry.obj, "spec", "nodeLabels")).get(POOL_LABEL) or key.name)
            pools.setdefault((key.scope, pool), (None, None))
            stack = mapping(dig(entry.obj, "metadata", "annotations")).get(STACK_ANNOTATION)
            if stack:
                stacks[(key.scope, pool)] = str(stack)
        elif is_kind(key, KARPENTER, "NodePool"):
            pool = str(
                mapping(dig(entry.obj, "spec", "template", "metadata", "labels")).get(POOL_LABEL)
                or key.name
            )
            limits = mapping(dig(entry.obj, "spec", "limits"))
            pools[(key.scope, pool)] = (_count(limits.get("nodes")), _count(limits.get(GPU)))
        elif is_kind(key, KUEUE, "ClusterQueue"):
            for group in listing(dig(entry.obj, "spec", "resourceGroups")):
                for flavor in listing(dig(group, "flavors")):
                    if any(
                        _count(dig(r, "nominalQuota"))
                        for r in listing(dig(flavor, "resources"))
                        if str(dig(r, "name")) not in ("cpu", "memory")
                    ):
                        tenants.setdefault((key.scope, str(dig(flavor, "name"))), set()).add(
                            key.name
                        )
    keys = pools.keys() | tenants.keys()
    return {
        k: PoolFacts(
            pools.get(k, (None, None))[0],
            None,
            pools.get(k, (None, None))[1],
            None,
            tuple(sorted(tenants.get(k, ()))),
            stacks.get(k),
        )
        for k in keys
    }


def merged(old: dict[PoolKey, PoolFacts], new: dict[PoolKey, PoolFacts]) -> Facts:
    """Return the facts of both sides: a pool as it was (what the change reaches), else as it is."""
    stacks = {
        k: (str(old[k].stack), str(new[k].stack))
        for k in old.keys() & new.keys()
        if old[k].stack and new[k].stack and old[k].stack != new[k].stack
    }
    return Facts(new | old, stacks)
