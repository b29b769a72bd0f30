"""The resolved fleet: every reference followed, every pool's resources and every grant known."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from gpuplan.components import REGISTRY, Release, release_of
from gpuplan.diagnostics import Key, Located
from gpuplan.model.cluster import Cluster
from gpuplan.model.tenant import Allocation, Tenant
from gpuplan.pools import PoolPlan

# GPUs per node of common cloud instance types, for pools that leave gpusPerNode out.
# Source: AWS EC2 accelerated-computing instance type pages (P4, P5, P6, G4dn, G5, G6, G6e).
INSTANCE_GPUS = {
    "p4d.24xlarge": 8, "p4de.24xlarge": 8, "p5.48xlarge": 8, "p5e.48xlarge": 8, "p5en.48xlarge": 8,
    "p6-b200.48xlarge": 8, "g4dn.12xlarge": 4, "g4dn.metal": 8, "g5.12xlarge": 4, "g5.24xlarge": 4,
    "g5.48xlarge": 8, "g6.12xlarge": 4, "g6.24xlarge": 4, "g6.48xlarge": 8, "g6e.12xlarge": 4,
    "g6e.24xlarge": 4, "g6e.48xlarge": 8,
}  # fmt: skip


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
    grants: list[Grant] = field(default_factory=list)
    cache: dict[str, object] = field(
        default_factory=dict, repr=False
    )  # derived figures, computed once

    @property
    def spec(self) -> Allocation:
        """Return the allocation as written."""
        return self.tenant.model.allocations[self.index]

    @property
    def name(self) -> str:
        """Return the tenant's name (also the ClusterQueue's and Volcano Queue's name)."""
        return self.tenant.model.name

    @property
    def namespaces(self) -> list[str]:
        """Return the tenant's namespaces."""
        return self.tenant.model.namespace_names

    def loc(self, *rest: str | int) -> Key:
        """Return a location inside this allocation of the tenant file."""
        return ("allocations", self.index, *rest)

    def pools(self) -> list[PoolPlan]:
        """Return the pools this allocation has quota on, in cluster order."""
        seen = {g.pool.name: g.pool for g in self.grants}
        return [p for p in self.cluster.pools.values() if p.name in seen]

    def resources(self) -> list[str]:
        """Return the GPU resources this allocation has quota on, sorted."""
        return sorted({g.resource for g in self.grants})

    def cpu(self, kind: str = "nominal") -> dict[str, Fraction]:
        """Return cpu (cores) per pool for the nominal quota, or the borrowing or lending limit."""
        return self._per_pool(kind, "cpu")

    def memory(self, kind: str = "nominal") -> dict[str, Fraction]:
        """Return memory (bytes) per pool for the nominal quota, or the borrowing or lending limit."""
        return self._per_pool(kind, "memory")

    def _per_pool(self, kind: str, what: str) -> dict[str, Fraction]:
        """Derive cpu or memory from the GPU units, scaled to the tenant's explicit total if any."""
        key = f"{what}/{kind}"
        if key not in self.cache:
            factor, derived = self._factor(what), self._derived(kind, what)
            if factor != 1:  # the tenant states its own total
                derived = {pool: value * factor for pool, value in derived.items()}
            self.cache[key] = derived
        return dict(self.cache[key])  # type: ignore[call-overload]

    def _factor(self, what: str) -> Fraction:
        total = self.spec.cpu if what == "cpu" else self.spec.memory
        if total is None:
            return Fraction(1)
        default = sum(self._derived("nominal", what).values(), Fraction(0))
        return total / default if default else Fraction(0)

    def _derived(self, kind: str, what: str) -> dict[str, Fraction]:
        """Sum units x (cpu or memory per unit) per pool, exactly.

        A unit's share of a node is a fraction (a 1g.10gb instance of a 192-core, 8-GPU node is
        24/7 cores), so each pool's sum is kept over one common denominator, the multiple of
        its per-unit denominators: integer products and one Fraction per pool.
        """
        terms: dict[str, list[tuple[int, Fraction]]] = {}
        for grant in self.grants:
            units = {
                "nominal": grant.nominal,
                "borrowing": grant.borrowing,
                "lending": grant.lending,
            }[kind]
            per_unit = self.cluster.per_unit(grant.pool, what, grant.resource)
            terms.setdefault(grant.pool.name, []).append((units or 0, per_unit))
        out: dict[str, Fraction] = {}
        for pool, items in terms.items():
            common = math.lcm(*(share.denominator for _, share in items))
            numerator = sum(
                n * share.numerator * (common // share.denominator) for n, share in items
            )
            out[pool] = Fraction(numerator, common)
        return out

    def has_limit(self, kind: str) -> bool:
        """Tell whether any grant sets a borrowing or lending limit."""
        return any(getattr(g, kind) is not None for g in self.grants)


@dataclass(eq=False)
class ClusterPlan:
    """One cluster, its pools and the tenant allocations on it."""

    located: Located[Cluster]
    pools: dict[str, PoolPlan] = field(default_factory=dict)  # in the file's order (nodePools)
    allocations: list[AllocationPlan] = field(default_factory=list)
    cache: dict[str, object] = field(
        default_factory=dict, repr=False
    )  # derived figures, computed once

    @property
    def spec(self) -> Cluster:
        """Return the cluster as written."""
        return self.located.model

    @property
    def name(self) -> str:
        """Return the cluster's name."""
        return self.spec.name

    def release(self, component: str) -> Release | None:
        """Return the release of a registry component the cluster runs (None: not run, or an unknown version)."""
        return release_of(REGISTRY[component], self.spec)

    def nfd_labelled(self, pool: PoolPlan) -> bool:
        """Tell whether gpuplan labels a pool's nodes through NFD: a static pool with hostnames, labels wanted.

        A DRA pool always wants them: the DRA kubelet plugin runs only on nodes with its label (dra_labels).
        """
        components = self.spec.components
        wanted = components.gpu_operator is not None or components.kueue is not None
        wanted = wanted or pool.spec.dra is not None
        return wanted and not pool.karpenter_made and bool(pool.spec.hostnames)

    def per_unit(self, pool: PoolPlan, what: str, resource: str) -> Fraction:
        """Return the node cpu (cores) or memory (bytes) that goes with one unit of a pool's resource, computed once."""
        key = f"per-unit/{what}/{pool.name}/{resource}"
        found = self.cache.get(key)
        if found is None:
            per = pool.cpu_per_unit if what == "cpu" else pool.memory_per_unit
            found = self.cache[key] = per(resource)
        return found  # type: ignore[return-value]

    def cohort_root(self, cohort: str | None) -> str | None:
        """Return the root of a cohort's tree: Kueue lends across the whole tree."""
        parents = {c.name: c.parent for c in self.spec.cohorts}
        seen: set[str] = set()
        while cohort is not None and parents.get(cohort) is not None and cohort not in seen:
            seen.add(cohort)
            cohort = parents[cohort]
        return cohort


@dataclass
class Fleet:
    """Every cluster and tenant, resolved."""

    clusters: dict[str, ClusterPlan]
    tenants: dict[str, Located[Tenant]]
    files: list[str]
    base: dict[tuple[str, str, str, str], int] | None = None
    """With `check --base REF`: (cluster, pool, resource, tenant) -> nominal quota at REF, and
    (cluster, pool, resource, "") -> the pool's capacity there; None without a base."""
