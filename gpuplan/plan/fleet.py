"""The resolved fleet: every reference followed, every pool's resources and every grant known."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

from gpuplan.components import REGISTRY, Release, release_of
from gpuplan.diagnostics import Key, Located
from gpuplan.inputs.sources import NodeImage
from gpuplan.model.cluster import Cluster
from gpuplan.model.tenant import Allocation, Tenant
from gpuplan.plan.pools import NODE_GROUP_LABELS, PoolPlan

# GPUs per node of common cloud instance types, for pools that leave gpusPerNode out.
# Source: AWS EC2 accelerated-computing instance type pages (P4, P5, P6, G4dn, G5, G6, G6e).
INSTANCE_GPUS = {
    "p4d.24xlarge": 8, "p4de.24xlarge": 8, "p5.48xlarge": 8, "p5e.48xlarge": 8, "p5en.48xlarge": 8,
    "p6-b200.48xlarge": 8, "g4dn.12xlarge": 4, "g4dn.metal": 8, "g5.12xlarge": 4, "g5.24xlarge": 4,
    "g5.48xlarge": 8, "g6.12xlarge": 4, "g6.24xlarge": 4, "g6.48xlarge": 8, "g6e.12xlarge": 4,
    "g6e.24xlarge": 4, "g6e.48xlarge": 8,
}  # fmt: skip

Ratio = tuple[int, int]  # an exact value as (numerator, denominator), not reduced


@dataclass
class Grant:
    """Units of one resource of one pool granted to one tenant allocation."""

    pool: PoolPlan
    resource: str
    nominal: int
    borrowing: int | None
    lending: int | None
    loc: Key  # the quota value in the tenant file
    owner: AllocationPlan = field(repr=False, compare=False)


@dataclass(eq=False)
class AllocationPlan:
    """One tenant's allocation on one cluster, resolved."""

    tenant: Located[Tenant]
    index: int
    cluster: ClusterPlan
    grants: list[Grant] = field(
        default_factory=list, repr=False
    )  # per pool and resource (gpuplan.plan.resolve)
    # a figure derived from the plan, computed once: each key is the one module's that sets it,
    # never a way to hand data from one module (or stage) to another
    cache: dict[str, object] = field(default_factory=dict, repr=False)
    # (cpu | memory, nominal | borrowing | lending) -> per pool, exact: made once, by exact()
    _exact: dict[tuple[str, str], dict[str, Ratio]] = field(default_factory=dict, repr=False)
    _fractions: dict[tuple[str, str], dict[str, Fraction]] = field(default_factory=dict, repr=False)

    @cached_property
    def spec(self) -> Allocation:
        """Return the allocation as written (looked up once: it is read for every figure)."""
        return self.tenant.model.allocations[self.index]

    @property
    def name(self) -> str:
        """Return the tenant's name (also the ClusterQueue's and Volcano Queue's name)."""
        return self.tenant.model.name

    @property
    def sources(self) -> tuple[str, str]:
        """Return the files its objects come from: its tenant's, then its cluster's."""
        return (self.tenant.source.path, self.cluster.located.source.path)

    @property
    def namespaces(self) -> list[str]:
        """Return the tenant's namespaces."""
        return self.tenant.model.namespace_names

    def loc(self, *rest: str | int) -> Key:
        """Return a location inside this allocation of the tenant file."""
        return ("allocations", self.index, *rest)

    def pools(self) -> list[PoolPlan]:
        """Return the pools this allocation has quota on, in cluster order (from the grants)."""
        return list(self._pools)

    @cached_property
    def _pools(self) -> tuple[PoolPlan, ...]:
        seen = {g.pool.name for g in self.grants}
        return tuple(p for p in self.cluster.pools.values() if p.name in seen)

    def resources(self) -> list[str]:
        """Return the GPU resources this allocation has quota on, sorted (from the grants)."""
        return list(self._resources)

    @cached_property
    def _resources(self) -> tuple[str, ...]:
        return tuple(sorted({g.resource for g in self.grants}))

    def cpu(self, kind: str = "nominal") -> dict[str, Fraction]:
        """Return cpu (cores) per pool for the nominal quota, or the borrowing or lending limit."""
        return self._per_pool(kind, "cpu")

    def memory(self, kind: str = "nominal") -> dict[str, Fraction]:
        """Return memory (bytes) per pool for the nominal quota, or the borrowing or lending limit."""
        return self._per_pool(kind, "memory")

    def _per_pool(self, kind: str, what: str) -> dict[str, Fraction]:
        """Return the exact sums of exact() as Fractions, made once (by this method alone)."""
        found = self._fractions.get((what, kind))
        if found is None:
            found = {pool: Fraction(n, d) for pool, (n, d) in self.exact(kind, what).items()}
            self._fractions[(what, kind)] = found
        return dict(found)

    def exact(self, kind: str, what: str) -> dict[str, Ratio]:
        """Return cpu (cores) or memory (bytes) per pool as exact, unreduced (numerator, denominator) pairs.

        What cpu() and memory() return as Fractions, for callers that only round it (entitlements):
        integer pairs cost a fraction of what a Fraction does, and there is one per pool of every
        allocation. Derived from the GPU units, scaled to the tenant's explicit total if any.
        """
        found = self._exact.get((what, kind))
        if found is None:
            cpu, memory = self._derived(kind)
            self._exact[("cpu", kind)] = self._scaled("cpu", cpu)
            self._exact[("memory", kind)] = self._scaled("memory", memory)
            found = self._exact[(what, kind)]
        return found

    def _scaled(self, what: str, derived: dict[str, Ratio]) -> dict[str, Ratio]:
        """Scale cpu or memory per pool to the tenant's explicit total, if it states one."""
        total = self.spec.cpu if what == "cpu" else self.spec.memory
        if total is None:
            return derived
        nominal = self._derived("nominal")[0 if what == "cpu" else 1]
        default = sum((Fraction(n, d) for n, d in nominal.values()), Fraction(0))
        factor = total / default if default else Fraction(0)
        if factor == 1:  # the total its quotas give anyway
            return derived
        up, down = factor.numerator, factor.denominator
        return {pool: (n * up, d * down) for pool, (n, d) in derived.items()}

    def _derived(self, kind: str) -> tuple[dict[str, Ratio], dict[str, Ratio]]:
        """Sum units x (cpu, memory per unit) per pool, exactly: cpu (cores) and memory (bytes).

        A unit's share of a node is a fraction (a 1g.10gb instance of a 192-core, 8-GPU node is
        24/7 cores), so each pool's sum is kept over one common denominator, the multiple of
        its per-unit denominators: integer products only.
        """
        cpu: dict[str, Ratio] = {}
        memory: dict[str, Ratio] = {}
        unit_ratios = self.cluster.unit_ratios
        for grant in self.grants:
            units = (
                grant.nominal
                if kind == "nominal"
                else grant.borrowing
                if kind == "borrowing"
                else grant.lending
            ) or 0
            pool = grant.pool.name
            (cpu_n, cpu_d), (memory_n, memory_d) = unit_ratios(grant.pool, grant.resource)
            if pool not in cpu:  # a pool's first grant (most pools have one)
                cpu[pool] = (units * cpu_n, cpu_d)
                memory[pool] = (units * memory_n, memory_d)
            else:
                cpu[pool] = _plus(cpu[pool], units * cpu_n, cpu_d)
                memory[pool] = _plus(memory[pool], units * memory_n, memory_d)
        return cpu, memory

    def has_limit(self, kind: str) -> bool:
        """Tell whether any grant sets a borrowing or lending limit."""
        return any(getattr(g, kind) is not None for g in self.grants)


@dataclass(eq=False)
class ClusterPlan:
    """One cluster, its pools and the tenant allocations on it."""

    located: Located[Cluster]
    pools: dict[str, PoolPlan] = field(default_factory=dict)  # in the file's order (nodePools)
    allocations: list[AllocationPlan] = field(default_factory=list)
    # a figure derived from the plan, computed once: each key is the one module's that sets it,
    # never a way to hand data from one module (or stage) to another
    cache: dict[str, object] = field(default_factory=dict, repr=False)
    _releases: dict[str, Release | None] = field(default_factory=dict, repr=False)  # release()
    units: dict[tuple[str, str], tuple[Ratio, Ratio]] = field(
        default_factory=dict, repr=False
    )  # (pool, resource) -> the cpu and memory one unit brings (unit_ratios)
    # node class name -> the OS its image runs, for the own node classes in extra/<cluster>/
    node_images: dict[str, NodeImage] = field(default_factory=dict, repr=False)

    @property
    def spec(self) -> Cluster:
        """Return the cluster as written."""
        return self.located.model

    @property
    def name(self) -> str:
        """Return the cluster's name."""
        return self.spec.name

    def release(self, component: str) -> Release | None:
        """Return the release of a registry component the cluster runs (None: not run, or an unknown version).

        Found once per component (each tenant allocation's objects ask for it).
        """
        if component not in self._releases:
            self._releases[component] = release_of(REGISTRY[component], self.spec)
        return self._releases[component]

    @cached_property
    def _cohort_parents(self) -> dict[str, str | None]:
        return {c.name: c.parent for c in self.spec.cohorts}

    def node_class(self, name: str) -> str | None:
        """Return the node class a pool's nodes launch from, None when Karpenter does not make them."""
        pool = self.pools.get(name)
        karpenter = self.spec.components.karpenter
        if pool is None or not pool.karpenter_made or karpenter is None:
            return None
        own = pool.spec.karpenter.node_class if pool.spec.karpenter is not None else None
        return own or karpenter.node_class.name

    def unset_labels(self) -> list[tuple[Key, str, dict[str, str], int]]:
        """Return the pools whose Kueue flavor selects labels nothing sets: no NodePool, NFD rule or node group.

        Each as (the labels' key in the cluster file, "pool <name>" or "CPU pool <name>", the labels,
        the node count): a CPU pool, or a GPU pool selected by labels alone, without the provider's
        node-group label among them (on-prem there is none). Someone must label those nodes by hand.
        """
        group = NODE_GROUP_LABELS.get(self.spec.provider)
        if self.spec.components.kueue is None:
            return []
        out: list[tuple[Key, str, dict[str, str], int]] = []
        for index, cpu in enumerate(self.spec.cpu_pools):
            if group not in cpu.labels:
                out.append(
                    (
                        ("cpuPools", index, "labels"),
                        f"CPU pool {cpu.name}",
                        dict(cpu.labels),
                        cpu.nodes.most,
                    )
                )
        for pool in self.pools.values():
            labels = pool.selector_labels
            if pool.label_selected and group not in labels:
                out.append(
                    (
                        ("nodePools", pool.index, "labels"),
                        f"pool {pool.name}",
                        labels,
                        pool.spec.nodes.most,
                    )
                )
        return out

    def nfd_labelled(self, pool: PoolPlan) -> bool:
        """Tell whether gpuplan labels a pool's nodes through NFD: a static pool with hostnames, labels wanted.

        A DRA pool always wants them: the DRA kubelet plugin runs only on nodes with its label (dra_labels).
        """
        components = self.spec.components
        wanted = components.gpu_operator is not None or components.kueue is not None
        wanted = wanted or pool.spec.dra is not None
        return wanted and not pool.karpenter_made and bool(pool.spec.hostnames)

    def unit_ratios(self, pool: PoolPlan, resource: str) -> tuple[Ratio, Ratio]:
        """Return the node cpu (cores) and memory (bytes) that go with one unit of a pool's resource,
        each as (numerator, denominator), computed once."""
        key = (pool.name, resource)
        found = self.units.get(key)
        if found is None:
            cpu, memory = pool.cpu_per_unit(resource), pool.memory_per_unit(resource)
            found = (cpu.numerator, cpu.denominator), (memory.numerator, memory.denominator)
            self.units[key] = found
        return found

    def cohort_root(self, cohort: str | None) -> str | None:
        """Return the root of a cohort's tree: Kueue lends across the whole tree."""
        parents = self._cohort_parents
        seen: set[str] = set()
        while cohort is not None and parents.get(cohort) is not None and cohort not in seen:
            seen.add(cohort)
            cohort = parents[cohort]
        return cohort


def _plus(total: Ratio, numerator: int, denominator: int) -> Ratio:
    """Add numerator / denominator to an exact sum, over the multiple of the two denominators."""
    if total[1] == denominator:
        return (total[0] + numerator, denominator)
    common = math.lcm(total[1], denominator)
    return (total[0] * (common // total[1]) + numerator * (common // denominator), common)


@dataclass
class Fleet:
    """Every cluster and tenant, resolved."""

    clusters: dict[str, ClusterPlan]
    tenants: dict[str, Located[Tenant]]
    files: list[str]
    base: dict[tuple[str, str, str, str], int] | None = None
    """With `check --base REF`: (cluster, pool, resource, tenant) -> nominal quota at REF, and
    (cluster, pool, resource, "") -> the pool's capacity there; None without a base."""
