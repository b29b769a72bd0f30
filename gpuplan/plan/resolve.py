"""Resolve the fleet: follow every reference, place every MIG layout, turn quotas into grants.

The result is the model of gpuplan.plan.fleet; every problem found on the way is a diagnostic at
the file, line and column of the input that causes it.
"""

from __future__ import annotations

import difflib
from collections.abc import Set as AbstractSet

from gpuplan.components import REGISTRY, UnknownVersion, chosen, namespaces_of
from gpuplan.diagnostics import Diagnostic, Key, Located
from gpuplan.gpus import catalog
from gpuplan.gpus.mig import place
from gpuplan.inputs.sources import Inputs
from gpuplan.model.cluster import Cluster
from gpuplan.model.tenant import Quota, Tenant
from gpuplan.plan.fleet import INSTANCE_GPUS, AllocationPlan, ClusterPlan, Fleet, Grant
from gpuplan.plan.pools import NODE_GROUP_LABELS, PoolPlan, build_pool


def _guess(name: str, known: list[str]) -> str:
    match = difflib.get_close_matches(name, known, n=1)
    if match:
        return f" (did you mean {match[0]!r}?)"
    return f"; known: {', '.join(known)}" if known else ""


def _duplicates(located: Located[Cluster], field_name: str, items: list) -> list[Diagnostic]:
    seen: set[str] = set()
    problems = []
    for index, item in enumerate(items):
        if item.name in seen:
            problems.append(
                located.at(field_name, index, "name", message=f"duplicate name {item.name!r}")
            )
        seen.add(item.name)
    return problems


def _gpus_per_node(located: Located[Cluster], index: int) -> tuple[int | None, list[Diagnostic]]:
    pool = located.model.node_pools[index]
    if pool.gpus_per_node is not None:
        return pool.gpus_per_node, []
    types = pool.karpenter.instance_types if pool.karpenter else []
    counts = {INSTANCE_GPUS.get(t) for t in types}
    if len(counts) == 1 and None not in counts:
        return counts.pop(), []
    message = "gpusPerNode is required: gpuplan cannot derive it from the instance types"
    return None, [located.at("nodePools", index, message=message, key=True)]


def _mig_problems(located: Located[Cluster], plan: PoolPlan) -> list[Diagnostic]:
    pool = plan.spec
    mig = pool.sharing.mig
    base: Key = ("nodePools", plan.index, "sharing", "mig")
    if mig is None:
        return []
    if plan.model.mig is None:
        return [located.at(*base, message=f"{plan.model.name} does not support MIG")]
    problems = []
    if mig.devices is not None:
        problems.extend(_device_coverage(located, plan))
        layouts = [(base + ("devices", i, "layout"), d.layout) for i, d in enumerate(mig.devices)]
    else:
        layouts = [(base + ("layout",), mig.layout or {})]
    for loc, layout in layouts:
        result = place(plan.model, layout)
        if not result.ok:
            problems.append(located.at(*loc, message=result.message))
    strategy = located.model.components.gpu_operator
    if strategy is not None and strategy.mig_strategy == "single":
        kinds = {p for _, layout in layouts for p, n in layout.items() if n}
        if len(kinds) > 1:
            problems.append(
                located.at(
                    *base,
                    message=(
                        f"migStrategy single allows one MIG profile type per node, this pool has {len(kinds)}: "
                        f"{', '.join(sorted(kinds))} (use migStrategy: mixed)"
                    ),
                )
            )
    return problems


def _device_coverage(located: Located[Cluster], plan: PoolPlan) -> list[Diagnostic]:
    base: Key = ("nodePools", plan.index, "sharing", "mig", "devices")
    seen: dict[int, int] = {}
    problems = []
    for d_index, devices in enumerate(plan.spec.sharing.mig.devices or []):  # type: ignore[union-attr]
        for g_index, gpu in enumerate(devices.gpus):
            loc = base + (d_index, "gpus", g_index)
            if gpu >= plan.gpus_per_node:
                problems.append(
                    located.at(
                        *loc,
                        message=f"GPU index {gpu} does not exist: nodes have {plan.gpus_per_node} GPUs (0..{plan.gpus_per_node - 1})",
                    )
                )
            elif gpu in seen:
                problems.append(
                    located.at(
                        *loc,
                        message=f"GPU index {gpu} is already given a layout in devices[{seen[gpu]}]",
                    )
                )
            seen.setdefault(gpu, d_index)
    missing = [i for i in range(plan.gpus_per_node) if i not in seen]
    if missing:
        problems.append(
            located.at(
                *base,
                message=f"devices leave GPU index {', '.join(map(str, missing))} without a layout: cover 0..{plan.gpus_per_node - 1} exactly once",
            )
        )
    return problems


def _pool_shape(located: Located[Cluster], index: int) -> list[Diagnostic]:
    cluster = located.model
    pool = cluster.node_pools[index]
    if pool.nodes.by_cluster_autoscaler:
        return _cluster_autoscaler_pool_shape(located, index)
    if pool.nodes.autoscaled or pool.karpenter is not None:
        return _karpenter_pool_shape(located, index)
    problems = []
    if not pool.hostnames and not pool.labels and pool.node_group is None:
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodes",
                message="a static pool needs nodeGroup, hostnames or labels to select its nodes (or a karpenter section, for a static NodePool)",
            )
        )
    if pool.node_group is not None and cluster.provider not in NODE_GROUP_LABELS:
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodeGroup",
                message=f"nodeGroup selects nodes by a cloud's node-group label, which {cluster.provider} nodes have none of: use hostnames or labels",
            )
        )
    if pool.node_group is not None and pool.hostnames:
        problems.append(
            located.at(
                "nodePools",
                index,
                "hostnames",
                message="set nodeGroup or hostnames, not both: nodeGroup already selects the pool's nodes",
            )
        )
    return problems


def _cluster_autoscaler_pool_shape(located: Located[Cluster], index: int) -> list[Diagnostic]:
    """Refuse a Cluster Autoscaler pool the autoscaler cannot find or that has no node group."""
    cluster = located.model
    pool = cluster.node_pools[index]
    at = ("nodePools", index, "nodes", "autoscaler")
    problems = []
    if pool.node_group is None:
        problems.append(
            located.at(
                *at,
                message="a pool scaled by the Cluster Autoscaler needs nodeGroup: the managed node group it scales (min and max are that group's)",
            )
        )
    elif cluster.provider not in NODE_GROUP_LABELS:
        problems.append(
            located.at(
                *at,
                message=f"the Cluster Autoscaler scales cloud node groups, which provider {cluster.provider} has none of",
            )
        )
    if cluster.components.cluster_autoscaler is None:
        problems.append(
            located.at(
                *at, message="autoscaler: cluster-autoscaler needs components.clusterAutoscaler"
            )
        )
    if pool.karpenter is not None:
        problems.append(
            located.at(
                "nodePools",
                index,
                "karpenter",
                message="a karpenter section applies to pools Karpenter makes, not to a Cluster Autoscaler node group",
            )
        )
    if pool.hostnames:
        problems.append(
            located.at(
                "nodePools",
                index,
                "hostnames",
                message="the node group's label selects a Cluster Autoscaler pool's nodes: drop hostnames",
            )
        )
    return problems


def _karpenter_pool_shape(located: Located[Cluster], index: int) -> list[Diagnostic]:
    cluster = located.model
    pool = cluster.node_pools[index]
    if cluster.provider == "gcp" and pool.nodes.autoscaled and pool.nodes.autoscaler is None:
        # GKE grows node pools with its own Cluster Autoscaler (gpuplan/plan/gke.py); there is no Karpenter.
        message = "Karpenter does not serve provider gcp: GKE scales a node pool with its own Cluster Autoscaler; set autoscaler: cluster-autoscaler (with nodeGroup and components.clusterAutoscaler)"
        return [located.at("nodePools", index, "nodes", message=message)]
    problems = []
    if cluster.components.karpenter is None:
        if pool.nodes.autoscaled:
            message = "an autoscaled pool (min/max) needs components.karpenter; use {count: N} for a static pool"
        else:
            message = "a karpenter section (a static NodePool) needs components.karpenter; drop it to select existing nodes by nodeGroup, hostnames or labels"
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodes" if pool.nodes.autoscaled else "karpenter",
                message=message,
            )
        )
    if cluster.provider not in ("aws", "azure"):
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodes" if pool.nodes.autoscaled else "karpenter",
                message=f"Karpenter does not serve provider {cluster.provider}; use {{count: N}} with nodeGroup, hostnames or labels",
            )
        )
    if pool.karpenter is None:
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodes",
                message="an autoscaled pool needs a karpenter section (instanceTypes)",
            )
        )
    if pool.hostnames:
        problems.append(
            located.at(
                "nodePools",
                index,
                "hostnames",
                message="hostnames apply to static pools Karpenter does not make",
            )
        )
    if pool.node_group is not None:
        problems.append(
            located.at(
                "nodePools",
                index,
                "nodeGroup",
                message="nodeGroup applies to static pools Karpenter does not make (its NodePool labels the nodes)",
            )
        )
    return problems


def _cohort_cycles(located: Located[Cluster]) -> list[Diagnostic]:
    """Error on a cohort that is its own ancestor: Kueue disables every ClusterQueue of that tree."""
    parents = {c.name: c.parent for c in located.model.cohorts}
    problems = []
    for index, cohort in enumerate(located.model.cohorts):
        chain = [cohort.name]
        parent = cohort.parent
        while parent is not None and parent in parents and parent not in chain:
            chain.append(parent)
            parent = parents[parent]
        if parent == cohort.name:
            cycle = " -> ".join(chain + [cohort.name])
            problems.append(
                located.at(
                    "cohorts",
                    index,
                    "parent",
                    message=f"cohort {cohort.name} is its own ancestor, a cycle ({cycle}): Kueue would disable every ClusterQueue in it",
                )
            )
    return problems


def _cluster_refs(located: Located[Cluster]) -> list[Diagnostic]:
    cluster = located.model
    problems = []
    for field_name in ("nodePools", "priorityClasses", "cohorts", "networks"):
        items = getattr(
            cluster,
            {"nodePools": "node_pools", "priorityClasses": "priority_classes"}.get(
                field_name, field_name
            ),
        )
        problems.extend(_duplicates(located, field_name, items))
    cohorts = [c.name for c in cluster.cohorts]
    for index, cohort in enumerate(cluster.cohorts):
        if cohort.parent is not None and cohort.parent not in cohorts:
            problems.append(
                located.at(
                    "cohorts",
                    index,
                    "parent",
                    message=f"unknown cohort {cohort.parent!r}{_guess(cohort.parent, cohorts)}",
                )
            )
    problems.extend(_cohort_cycles(located))
    autoscaler = cluster.components.cluster_autoscaler
    if autoscaler is not None and cluster.provider == "aws" and autoscaler.region is None:
        # The chart's cloudProvider aws needs awsRegion (kubernetes/autoscaler cluster-autoscaler-chart-9.59.0
        # cluster-autoscaler/charts/cluster-autoscaler/values.yaml).
        problems.append(
            located.at(
                "components",
                "clusterAutoscaler",
                message="the Cluster Autoscaler on aws needs region (the node groups' AWS region)",
            )
        )
    if autoscaler is not None:
        problems.extend(_cluster_autoscaler_groups(located))
    pools = [p.name for p in cluster.node_pools]
    for n_index, network in enumerate(cluster.networks):
        for p_index, pool in enumerate(network.pools):
            if pool not in pools:
                problems.append(
                    located.at(
                        "networks",
                        n_index,
                        "pools",
                        p_index,
                        message=f"unknown pool {pool!r}{_guess(pool, pools)}",
                    )
                )
    return problems


def _cluster_autoscaler_groups(located: Located[Cluster]) -> list[Diagnostic]:
    """Refuse node-group names the Cluster Autoscaler settings cannot use (missing, unknown pools, namespace)."""
    cluster = located.model
    autoscaler = cluster.components.cluster_autoscaler
    assert autoscaler is not None
    at = ("components", "clusterAutoscaler")
    scaled = {p.name for p in cluster.node_pools if p.nodes.by_cluster_autoscaler}
    problems = []
    if autoscaler.discovery == "explicit":
        for missing in sorted(scaled - set(autoscaler.node_groups)):
            message = f"discovery explicit needs nodeGroups[{missing}]: the Auto Scaling group of pool {missing}"
            problems.append(located.at(*at, "discovery", message=message))
    for extra in sorted(set(autoscaler.node_groups) - scaled):
        message = f"{extra} is no pool with autoscaler: cluster-autoscaler"
        problems.append(located.at(*at, "nodeGroups", extra, message=message))
    if cluster.provider == "azure" and autoscaler.namespace != "kube-system":
        # AKS's managed autoscaler reads its priority-expander ConfigMap from kube-system (Azure/AKS
        # website/blog/2025-07-17-scaling-safely-with-azure-aks-spot-node-pools-using-cluster-autoscaler-priority-expander).
        message = "AKS runs the Cluster Autoscaler itself and reads its priority-expander ConfigMap from kube-system: drop namespace"
        problems.append(located.at(*at, "namespace", message=message))
    return problems


def _component_versions(located: Located[Cluster]) -> list[Diagnostic]:
    """Error on a component version (or release line) gpuplan has no facts for."""
    problems = []
    for component in REGISTRY.values():
        wanted = chosen(component, located.model)
        if wanted is None:
            continue
        version, line = wanted
        where = ("components", component.field)
        if component.line_field and line not in component.lines:
            lines = ", ".join(component.lines)
            problems.append(
                located.at(
                    *where,
                    message=f"{component.name} has no releases for {component.line_field} {line}; gpuplan knows {lines}",
                )
            )
            continue
        try:
            component.release(version, line)
        except UnknownVersion as exc:
            problems.append(located.at(*where, "version", message=str(exc)))
    return problems


def build_cluster(located: Located[Cluster]) -> tuple[ClusterPlan, list[Diagnostic]]:
    """Resolve one cluster: GPU models, pool resources, MIG placement, references."""
    pools, problems = _pools(located)
    return ClusterPlan(located, dict(pools)), list(problems)


def _pools(located: Located[Cluster]) -> tuple[dict[str, PoolPlan], list[Diagnostic]]:
    plan = ClusterPlan(located)
    problems = _cluster_refs(located) + _component_versions(located)
    for index, pool in enumerate(located.model.node_pools):
        problems.extend(_pool_shape(located, index))
        model = catalog.lookup(pool.gpu)
        if model is None:
            guess = catalog.closest(pool.gpu)
            hint = (
                f" (did you mean {guess!r}?)" if guess else f"; known: {', '.join(catalog.names())}"
            )
            problems.append(
                located.at(
                    "nodePools", index, "gpu", message=f"unknown GPU model {pool.gpu!r}{hint}"
                )
            )
            continue
        gpus, found = _gpus_per_node(located, index)
        problems.extend(found)
        if gpus is None:
            continue
        pool_plan = build_pool(located.model, index, model, gpus)
        found = _mig_problems(located, pool_plan)
        problems.extend(found)
        if not found and pool.name not in plan.pools:
            plan.pools[pool.name] = pool_plan
    return plan.pools, problems


def _quota_grants(
    alloc: AllocationPlan, q_index: int, quota: Quota, pool: PoolPlan
) -> tuple[list[Grant], list[Diagnostic]]:
    loc = alloc.loc("quotas", q_index)
    where = alloc.tenant
    if quota.gpus is not None:
        if pool.spec.sharing.mig is not None:
            profiles = ", ".join(sorted({r.profile or "" for r in pool.resources.values()}))
            return [], [
                where.at(
                    *loc,
                    "gpus",
                    message=f"pool {pool.name} is a MIG pool: use mig: {{profile: count}} (its layout gives {profiles})",
                )
            ]
        if shapes := _limit_shapes(alloc, q_index, quota):
            return [], shapes
        (resource,) = pool.resources
        grant = Grant(
            pool,
            resource,
            quota.gpus,
            _limit(quota.borrowing_limit),
            _limit(quota.lending_limit),
            loc + ("gpus",),
            alloc,
        )
        return [grant], []
    if pool.spec.sharing.mig is None:
        unit = "shares" if pool.mode in ("time-slicing", "mps") else "whole GPUs"
        return [], [
            where.at(*loc, "mig", message=f"pool {pool.name} is not a MIG pool: use gpus ({unit})")
        ]
    if shapes := _limit_shapes(alloc, q_index, quota):
        return [], shapes
    return _mig_grants(alloc, q_index, quota, pool)


def _limit_shapes(alloc: AllocationPlan, q_index: int, quota: Quota) -> list[Diagnostic]:
    """Return errors where a limit's shape does not fit the quota's unit (once the unit fits the pool)."""
    if quota.borrowing_limit is None and quota.lending_limit is None:
        return []  # most quotas set no limit: nothing to check
    problems = []
    for field, value in (
        ("borrowingLimit", quota.borrowing_limit),
        ("lendingLimit", quota.lending_limit),
    ):
        loc = alloc.loc("quotas", q_index, field)
        if quota.gpus is not None and isinstance(value, dict):
            problems.append(alloc.tenant.at(*loc, message="must be a number on a gpus quota"))
        if quota.mig is not None and isinstance(value, int):
            problems.append(
                alloc.tenant.at(
                    *loc,
                    message="must be a mapping per MIG profile on a mig quota, such as {1g.10gb: 7}",
                )
            )
    return problems


def _limit(value: int | dict[str, int] | None, profile: str | None = None) -> int | None:
    if isinstance(value, dict):
        return value.get(profile or "")
    return value


def _mig_grants(
    alloc: AllocationPlan, q_index: int, quota: Quota, pool: PoolPlan
) -> tuple[list[Grant], list[Diagnostic]]:
    loc = alloc.loc("quotas", q_index, "mig")
    by_profile = {r.profile: r.name for r in pool.resources.values()}
    grants, problems = [], []
    for profile, count in sorted((quota.mig or {}).items()):
        if "+" in profile:
            problems.append(
                alloc.tenant.at(
                    *loc,
                    profile,
                    message=f"{profile} instances cannot be granted: '+' is not allowed in a Kubernetes resource name",
                )
            )
        elif profile not in by_profile:
            have = ", ".join(p for p in by_profile if p)
            problems.append(
                alloc.tenant.at(
                    *loc,
                    profile,
                    message=f"pool {pool.name} has no {profile} instances; its layout gives {have}",
                )
            )
        else:
            grants.append(
                Grant(
                    pool,
                    by_profile[profile],
                    count,
                    _limit(quota.borrowing_limit, profile),
                    _limit(quota.lending_limit, profile),
                    loc + (profile,),
                    alloc,
                )
            )
    for kind, limits in (
        ("borrowingLimit", quota.borrowing_limit),
        ("lendingLimit", quota.lending_limit),
    ):
        if not isinstance(limits, dict):
            continue  # none, or a number (refused by _limit_shapes)
        for profile in sorted(limits):
            if profile not in (quota.mig or {}):
                problems.append(
                    alloc.tenant.at(
                        *alloc.loc("quotas", q_index, kind, profile),
                        message=f"{profile} has no mig quota here",
                    )
                )
    return grants, problems


def _allocation(
    tenant: Located[Tenant], index: int, cluster: ClusterPlan
) -> tuple[AllocationPlan, list[Diagnostic]]:
    """Resolve one allocation: its grants, and its references into the cluster."""
    alloc = AllocationPlan(tenant, index, cluster)
    return alloc, _resolve(alloc)


def _resolve(alloc: AllocationPlan) -> list[Diagnostic]:
    """Give the allocation its grants; return the problems of its references into the cluster."""
    cluster, tenant = alloc.cluster, alloc.tenant
    spec = alloc.spec
    problems = []
    cohorts = [c.name for c in cluster.spec.cohorts]
    if spec.cohort is not None and spec.cohort not in cohorts:
        problems.append(
            tenant.at(
                *alloc.loc("cohort"),
                message=f"cluster {cluster.name} has no cohort {spec.cohort!r}{_guess(spec.cohort, cohorts)}",
            )
        )
    networks = [n.name for n in cluster.spec.networks]
    for n_index, network in enumerate(spec.networks):
        if network not in networks:
            problems.append(
                tenant.at(
                    *alloc.loc("networks", n_index),
                    message=f"cluster {cluster.name} has no network {network!r}{_guess(network, networks)}",
                )
            )
    declared = [p.name for p in cluster.spec.node_pools]
    seen: set[str] = set()
    for q_index, quota in enumerate(spec.quotas):
        if quota.pool in seen:
            problems.append(
                tenant.at(
                    *alloc.loc("quotas", q_index, "pool"),
                    message=f"pool {quota.pool} has a quota already in this allocation",
                )
            )
            continue
        seen.add(quota.pool)
        pool = cluster.pools.get(quota.pool)
        if pool is not None:  # a declared pool without errors: the common case
            grants, found = _quota_grants(alloc, q_index, quota, pool)
            alloc.grants.extend(grants)
            problems.extend(found)
            continue
        if quota.pool not in declared:  # (a declared pool left out has errors of its own)
            problems.append(
                tenant.at(
                    *alloc.loc("quotas", q_index, "pool"),
                    message=f"cluster {cluster.name} has no pool {quota.pool!r}{_guess(quota.pool, declared)}",
                )
            )
    return problems


SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Namespaces a supported provider runs its own components in, whatever the cluster file says: a
# tenant there would get admin over them. Any provider's are refused on every cluster (a tenant
# may move between clusters, and none of these names is a team's).
PROVIDER_NAMESPACES = {
    # GKE's Managed Service for Prometheus (GoogleCloudPlatform/prometheus-engine v0.17.2,
    # manifests/operator.yaml: Namespace gmp-system and gmp-public).
    "gmp-system": "GKE (Managed Service for Prometheus)",
    "gmp-public": "GKE (Managed Service for Prometheus)",
    # EKS: Fargate logging reads its ConfigMap from aws-observability, the CloudWatch
    # Observability add-on runs in amazon-cloudwatch (awsdocs/amazon-eks-user-guide at 4d52b4d,
    # latest/ug/nodes/fargate-logging.adoc and latest/ug/workloads/eks-add-ons.adoc).
    "aws-observability": "EKS (Fargate logging)",
    "amazon-cloudwatch": "EKS (CloudWatch Observability add-on)",
    # AKS: Azure Policy's Gatekeeper and the Azure Arc agents, which Azure Policy itself never
    # evaluates as they are the platform's (Azure/azure-policy at 0ab9883, built-in-policies/policyDefinitions/Kubernetes/
    # ContainerNoPrivilege.json).
    "gatekeeper-system": "AKS (Azure Policy's Gatekeeper)",
    "azure-arc": "AKS (Azure Arc agents)",
}


def _namespaces(
    tenants: list[Located[Tenant]],
    clusters: list[Located[Cluster]],
    base_owners: dict[str, str] | None = None,
) -> list[Diagnostic]:
    reserved = set(SYSTEM_NAMESPACES) | {"argocd"}
    for cluster in clusters:
        reserved |= set(namespaces_of(cluster.model))
        reserved.add(cluster.model.gitops.namespace)
    owner: dict[str, tuple[Located[Tenant], tuple[str | int, ...]]] = {}
    problems = []
    for tenant in tenants:
        for n_index, namespace in enumerate(tenant.model.namespace_names):
            loc: tuple[str | int, ...] = (
                ("namespaces", n_index) if tenant.model.namespaces else ("name",)
            )
            if namespace in PROVIDER_NAMESPACES:
                problems.append(
                    tenant.at(
                        *loc,
                        message=f"namespace {namespace!r} is run by {PROVIDER_NAMESPACES[namespace]}: a tenant there would be admin over it",
                    )
                )
            elif namespace in reserved or namespace.startswith("kube-"):
                problems.append(
                    tenant.at(
                        *loc, message=f"namespace {namespace!r} is a system or component namespace"
                    )
                )
            elif namespace in owner and owner[namespace][0].model.name == tenant.model.name:
                problems.append(tenant.at(*loc, message=f"namespace {namespace!r} is listed twice"))
            elif namespace in owner:
                problems.extend(_collision(namespace, owner[namespace], (tenant, loc), base_owners))
            else:
                owner[namespace] = (tenant, loc)
    return problems


Claim = tuple[Located[Tenant], tuple[str | int, ...]]


def _collision(
    namespace: str, first: Claim, second: Claim, base_owners: dict[str, str] | None
) -> list[Diagnostic]:
    """Blame a namespace two tenants claim on the file that introduced the clash.

    With a git base (check --base), the tenant that held the namespace there keeps it and only
    the other file is blamed; without one, or when neither held it, both files are.
    """
    held = (base_owners or {}).get(namespace)
    problems = []
    for (tenant, loc), (other, _) in ((second, first), (first, second)):
        if held == tenant.model.name:
            continue
        message = f"namespace {namespace!r} belongs to tenant {other.model.name} already ({other.source.path})"
        if held != other.model.name:
            message = f"namespace {namespace!r} is claimed by tenant {other.model.name} as well ({other.source.path}): give each tenant its own"
        problems.append(tenant.at(*loc, message=message))
    return problems


def build_fleet(
    inputs: Inputs, base_owners: dict[str, str] | None = None
) -> tuple[Fleet, list[Diagnostic]]:
    """Resolve every reference of the fleet and compute each pool's resources.

    base_owners (namespace -> tenant at a git base) tells which file introduced a namespace clash.
    """
    problems: list[Diagnostic] = []
    clusters: dict[str, ClusterPlan] = {}
    for located in inputs.clusters:
        plan, found = build_cluster(located)
        plan.node_images = inputs.node_images.get(located.model.name, {})
        problems.extend(found)
        clusters.setdefault(plan.name, plan)
    problems.extend(_namespaces(inputs.tenants, inputs.clusters, base_owners))
    known = sorted(clusters)
    for tenant in sorted(inputs.tenants, key=lambda t: t.model.name):
        problems.extend(_tenant(tenant, clusters, known, inputs.broken))
    tenants = {t.model.name: t for t in inputs.tenants}
    return Fleet(clusters, tenants, inputs.files), problems


def _tenant(
    tenant: Located[Tenant],
    clusters: dict[str, ClusterPlan],
    known: list[str],
    broken: AbstractSet[str] = frozenset(),
) -> list[Diagnostic]:
    problems = []
    seen: set[str] = set()
    for index, allocation in enumerate(tenant.model.allocations):
        if allocation.cluster in seen:
            problems.append(
                tenant.at(
                    "allocations",
                    index,
                    "cluster",
                    message=f"a second allocation on cluster {allocation.cluster}: merge them",
                )
            )
            continue
        seen.add(allocation.cluster)
        cluster = clusters.get(allocation.cluster)
        if cluster is None and allocation.cluster in broken:
            continue  # the cluster file has errors of its own, reported there
        if cluster is None:
            problems.append(
                tenant.at(
                    "allocations",
                    index,
                    "cluster",
                    message=f"unknown cluster {allocation.cluster!r}{_guess(allocation.cluster, known)}",
                )
            )
            continue
        priority = tenant.model.priority_class
        names = [p.name for p in cluster.spec.priority_classes]
        if priority is not None and priority not in names:
            problems.append(
                tenant.at(
                    "priorityClass",
                    message=f"cluster {cluster.name} has no priority class {priority!r}{_guess(priority, names)}",
                )
            )
        plan, found = _allocation(tenant, index, cluster)
        problems.extend(found)
        cluster.allocations.append(plan)
    return problems
