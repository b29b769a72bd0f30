"""Per tenant namespace: Namespace, ResourceQuota, LimitRange, NetworkPolicy, RoleBinding."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from gpuplan.components.dra_driver import CHART_GPU_CLASSES
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.model.common import ContainerDefaults
from gpuplan.plan.dra import dra_pools, is_dra_resource, quota_resource
from gpuplan.plan.entitlements import CPU, MEMORY, exact_quantity, namespace_quotas, quantity
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan
from gpuplan.plan.pools import GPU

TENANT_LABEL = "gpuplan.io/tenant"
NAMESPACE_NAME = "kubernetes.io/metadata.name"
PSA = "pod-security.kubernetes.io"
LIMIT_RANGE = "container-defaults"


def _folder(namespace: str) -> str:
    return f"namespaces/{namespace}"


def namespace(alloc: AllocationPlan, name: str) -> dict[str, Any]:
    """Return the Namespace with its tenant label and Pod Security Admission labels."""
    level = alloc.tenant.model.pod_security
    labels = {TENANT_LABEL: alloc.name}
    for mode in ("enforce", "audit", "warn"):
        labels[f"{PSA}/{mode}"] = level
        labels[f"{PSA}/{mode}-version"] = "latest"
    obj = k8s("v1", "Namespace", name)
    obj["metadata"]["labels"] = labels
    return obj


def resource_quota(alloc: AllocationPlan, name: str) -> dict[str, Any]:
    """Return the ResourceQuota: never below what the tenant's ClusterQueue can admit.

    Every GPU resource of the cluster the tenant has no quota on is pinned to zero, so pods
    that bypass Kueue (no queue name) cannot take GPUs the tenant was never granted.
    """
    hard = {_quota_key(r): quantity(r, v) for r, v in namespace_quotas(alloc)[name].items()}
    hard |= {f"requests.{r}": "0" for r in unattached_devices(alloc)}
    if dra_pools(alloc.cluster):
        # A claim on one of the DRA chart's own classes would take a pool's GPUs past the quota on
        # gpuplan's classes: none of them unless the tenant holds quota on it (a pool's class by that name).
        hard |= {k: "0" for k in map(quota_resource, CHART_GPU_CLASSES) if k not in hard}
    return k8s("v1", "ResourceQuota", alloc.name, name, spec={"hard": hard})


@lru_cache(maxsize=4096)
def _quota_key(resource: str) -> str:
    """Return the ResourceQuota key of a resource: requests.<name>, or a DRA class's devices key as it is."""
    return resource if is_dra_resource(resource) else f"requests.{resource}"


def unattached_devices(alloc: AllocationPlan) -> list[str]:
    """Return the network devices (EFA, SR-IOV VFs, RDMA shared devices) of networks the tenant does not attach.

    Pods may ask for a device-plugin resource with no NetworkAttachmentDefinition (EFA has none at
    all), so the tenant's `networks` is enforced by quota: a device of a network it does not list is
    pinned to zero (extended resources are quota'd as requests.<name>, kubernetes.io resource-quotas
    "Resource Quota For Extended Resources"). What it lists is not capped: devices follow the GPUs
    its quota grants (a p5.48xlarge's 32 EFA devices go with its 8 GPUs).
    """
    networks = alloc.cluster.spec.networks
    if not networks:
        return []
    listed = set(alloc.spec.networks)
    attached = {n.device_resource for n in networks if n.name in listed}
    return sorted({n.device_resource for n in networks if n.device_resource} - attached)


def max_gpus_per_pod(alloc: AllocationPlan) -> int | None:
    """Return the whole-GPU ceiling per pod, or None when the tenant has no whole GPUs."""
    pools = [g.pool for g in alloc.grants if g.resource == GPU]
    if not pools:
        return None
    return alloc.spec.max_gpus_per_pod or max(p.gpus_per_node for p in pools)


def container_defaults(alloc: AllocationPlan) -> ContainerDefaults:
    """Return the container defaults of the tenant, or else of its cluster."""
    return alloc.tenant.model.container_defaults or alloc.cluster.spec.container_defaults


def limit_range(alloc: AllocationPlan, name: str) -> dict[str, Any]:
    """Return the LimitRange: default cpu and memory for containers, and the whole GPUs per pod.

    The ResourceQuota constrains requests.cpu and requests.memory, so the API server rejects a
    pod whose containers state neither unless a LimitRange gives them a default (Kubernetes docs,
    concepts/policy/resource-quotas; ../shared/facts/upstream-components.md, "ResourceQuota").
    The GPU default of 0 matters too: a Pod-type max makes the API server reject every pod without
    a limit for that resource, so CPU-only pods get an explicit zero GPU limit.
    """
    defaults = container_defaults(alloc)
    request = {
        CPU: exact_quantity(CPU, defaults.requests.cpu),
        MEMORY: exact_quantity(MEMORY, defaults.requests.memory),
    }
    limit = {
        r: exact_quantity(r, v)
        for r, v in ((CPU, defaults.limits.cpu), (MEMORY, defaults.limits.memory))
        if v is not None
    }
    container: dict[str, Any] = {"type": "Container", "defaultRequest": request}
    limits = [container]
    ceiling = max_gpus_per_pod(alloc)
    if ceiling is not None:
        request[GPU] = limit[GPU] = "0"
        limits.append({"type": "Pod", "max": {GPU: str(ceiling)}})
    if limit:
        container["default"] = limit
    return k8s("v1", "LimitRange", LIMIT_RANGE, name, spec={"limits": limits})


def network_policy(alloc: AllocationPlan, name: str) -> dict[str, Any] | None:
    """Return the policy that admits traffic only from the tenant's own and non-tenant namespaces.

    Egress is left open, so DNS and registries keep working; other tenants cannot reach in.
    """
    if not alloc.tenant.model.network_isolation:
        return None
    own = {"key": NAMESPACE_NAME, "operator": "In", "values": sorted(alloc.namespaces)}
    shared = {"key": TENANT_LABEL, "operator": "DoesNotExist"}
    spec = {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [
                {"namespaceSelector": {"matchExpressions": [own]}},
                {"namespaceSelector": {"matchExpressions": [shared]}},
            ]}
        ],
    }  # fmt: skip
    return k8s("networking.k8s.io/v1", "NetworkPolicy", "tenant-isolation", name, spec=spec)


def _subject(owner: str) -> dict[str, str]:
    kind, _, rest = owner.partition(":")
    if kind == "serviceaccount":
        namespace, _, account = rest.partition(":")
        return {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind.title(), "name": rest}


def role_binding(alloc: AllocationPlan, name: str) -> dict[str, Any] | None:
    """Return the RoleBinding giving the tenant's owners the admin ClusterRole, if it has owners."""
    owners = alloc.tenant.model.owners
    if not owners:
        return None
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"}
    subjects = [_subject(o) for o in owners]
    return k8s(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "tenant-owners",
        name,
        roleRef=role,
        subjects=subjects,
    )


# The built-in classes every cluster has, above any class a user may create (kubernetes
# pkg/apis/scheduling/types.go: HighestUserDefinablePriority = 1e9, SystemCriticalPriority = 2e9 for
# system-cluster-critical, +1000 for system-node-critical). Since Kubernetes 1.17 any namespace may
# use them unless a quota forbids it.
SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")
# A pod without priorityClassName gets priority 0 when no class is globalDefault (same file,
# DefaultPriorityWhenNoDefaultClassExists), and gpuplan makes none globalDefault.
DEFAULT_PRIORITY = 0


def priority_ceiling(alloc: AllocationPlan, name: str) -> dict[str, Any]:
    """Return a quota that forbids pods with any priority class above the tenant's own.

    Without it any tenant could set priorityClassName to the highest class, or to a built-in
    system class, and preempt others. A tenant without a priorityClass has the default priority
    (0): every class above 0 is forbidden to it, the lowest ceiling that leaves it the priority
    its pods get anyway.
    """
    above = classes_above(alloc.cluster, alloc.tenant.model.priority_class)
    scope = {
        "matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": list(above)}
        ]
    }
    return k8s(
        "v1",
        "ResourceQuota",
        "priority-ceiling",
        name,
        spec={"hard": {"pods": "0"}, "scopeSelector": scope},
    )


def classes_above(cluster: ClusterPlan, own: str | None) -> tuple[str, ...]:
    """Return the priority classes above a tenant's own (or the default priority), sorted, found once per cluster."""
    known: dict[str | None, tuple[str, ...]]
    known = cluster.cache.setdefault("classes-above", {})  # type: ignore[assignment]
    found = known.get(own)
    if found is None:
        classes = cluster.spec.priority_classes
        ceiling = next((p.value for p in classes if p.name == own), DEFAULT_PRIORITY)
        found = known[own] = tuple(
            sorted({p.name for p in classes if p.value > ceiling} | set(SYSTEM_CLASSES))
        )
    return found


# What a namespace's objects read of the allocation: its own inputs, and for the ResourceQuota
# the cohort's lending (entitlements.namespace_quotas), which an edit of any member can move.
BUILDERS = (namespace, priority_ceiling, limit_range, network_policy, role_binding)
QUOTA_BUILDERS = (resource_quota,)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the namespace-level objects of every tenant allocation on the cluster."""
    return [m for a in cluster.allocations for m in own_objects(a) + quota_objects(a)]


def own_objects(alloc: AllocationPlan) -> list[Manifest]:
    """Return the objects of one allocation's namespaces that read nothing of its cohort."""
    return _objects(alloc, BUILDERS)


def quota_objects(alloc: AllocationPlan) -> list[Manifest]:
    """Return the ResourceQuotas of one allocation's namespaces."""
    return _objects(alloc, QUOTA_BUILDERS)


def _objects(
    alloc: AllocationPlan, builders: tuple[Callable[[AllocationPlan, str], dict | None], ...]
) -> list[Manifest]:
    cluster = alloc.cluster
    sources = alloc.sources
    out = []
    for name in alloc.namespaces:
        folder = _folder(name)
        for build in builders:
            obj = build(alloc, name)
            if obj is not None:
                out.append(manifest(cluster.name, folder, obj, *sources))
    return out
