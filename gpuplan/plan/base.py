"""`check --base REF`: the quotas and pool capacities as they are at a git revision.

The inputs at REF are read from git's object store into a temporary folder, as `gpuplan diff`
does (the working tree, the index and HEAD are never touched), and resolved without checks:
only the figures are needed, to tell which quota changed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gpuplan.components import REGISTRY, chosen
from gpuplan.inputs.git import export_inputs, resolve
from gpuplan.inputs.sources import read_inputs
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.resolve import build_fleet


def base_fleet(root: Path, ref: str) -> Fleet | None:
    """Return the fleet as resolved at REF (None when REF holds no inputs).

    Raise UsageError when REF is no commit of the repository at root.
    """
    commit = resolve(root, ref)
    with tempfile.TemporaryDirectory(prefix="gpuplan-base-") as folder:
        if not export_inputs(root, commit, Path(folder)):
            return None
        inputs, _ = read_inputs(Path(folder))
        fleet, _ = build_fleet(inputs)
    return fleet


def namespace_owners(fleet: Fleet | None) -> dict[str, str] | None:
    """Return namespace -> tenant at the base (None without a base)."""
    if fleet is None:
        return None
    return {
        ns: name for name, tenant in fleet.tenants.items() for ns in tenant.model.namespace_names
    }


def base_releases(fleet: Fleet | None) -> dict[tuple[str, str], tuple[str, str]]:
    """Return (cluster, component) -> (version, line) of every version a cluster's file names at the
    base, and (cluster, "kubernetes") -> (its kubernetesVersion, "")."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for cluster in fleet.clusters.values() if fleet is not None else ():
        for name, component in REGISTRY.items():
            wanted = chosen(component, cluster.spec)
            if wanted is not None:
                out[(cluster.name, name)] = wanted
        out[(cluster.name, "kubernetes")] = (str(cluster.spec.kubernetes_version), "")
    return out


def base_quotas(fleet: Fleet | None) -> dict[tuple[str, str, str, str], int]:
    """Return (cluster, pool, resource, tenant) -> nominal, and (cluster, pool, resource, "") -> capacity, at the base."""
    out: dict[tuple[str, str, str, str], int] = {}
    for cluster in fleet.clusters.values() if fleet is not None else ():
        for pool in cluster.pools.values():
            for resource in pool.resources:
                out[(cluster.name, pool.name, resource, "")] = pool.capacity(resource)
        for alloc in cluster.allocations:
            for grant in alloc.grants:
                key = (cluster.name, grant.pool.name, grant.resource, alloc.name)
                out[key] = out.get(key, 0) + grant.nominal
    return out
