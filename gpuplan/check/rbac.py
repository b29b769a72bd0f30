"""RBAC rules: a tenant's owners get the admin ClusterRole in its namespaces, so who they are matters.

`system:` users and groups are Kubernetes' own identities: group:system:unauthenticated is every
anonymous request, group:system:authenticated every signed-in user, group:system:masters bypasses
RBAC, user:system:serviceaccount:NS:NAME is a service account anywhere (kubernetes.io, "Using RBAC
Authorization", "Referring to subjects": the system: prefix is reserved for Kubernetes system use;
the names are declared in kubernetes/apiserver pkg/authentication/user/user.go).
A service account of another namespace given admin lets anything that runs as it act in the
tenant's namespaces. Both are refused unless the cluster file lists the subject under
rbac.allowedSubjects.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import allocation_check
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import AllocationPlan

_MEANING = {
    "system:unauthenticated": "every anonymous request",
    "system:authenticated": "every signed-in user",
    "system:masters": "cluster administrators who bypass RBAC",
    "system:serviceaccounts": "every service account of the cluster",
}


def why_refused(owner: str, namespaces: list[str]) -> str | None:
    """Return why an owner may not be given admin by default, or None when it may."""
    kind, _, name = owner.partition(":")
    if kind in ("user", "group") and name.startswith("system:"):
        meaning = _MEANING.get(name) or (
            "service accounts" if name.startswith("system:serviceaccount") else ""
        )
        what = f" ({meaning})" if meaning else ""
        return f"{owner} is a Kubernetes system identity{what}, not a team"
    if kind == "serviceaccount":
        namespace = name.partition(":")[0]
        if namespace not in namespaces:
            return f"{owner} is a service account of namespace {namespace}, which is not one of the tenant's ({', '.join(namespaces)})"
    return None


def _refused(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    allowed = set(alloc.cluster.spec.rbac.allowed_subjects)
    cluster_file = alloc.cluster.located.source.path
    for index, owner in enumerate(alloc.tenant.model.owners):
        reason = why_refused(owner, alloc.namespaces)
        if reason is None or owner in allowed:
            continue
        message = (
            f"{reason}: it would be given admin in the tenant's namespaces on cluster {alloc.cluster.name}; "
            f"if that is really meant, list it under rbac.allowedSubjects in {cluster_file}"
        )
        yield alloc.tenant.at("owners", index, message=message)


@allocation_check
def check_owner_subjects(alloc: AllocationPlan) -> Iterator[Diagnostic]:
    """Error when an owner is a system: identity or another namespace's service account, unless allowed."""
    return _refused(alloc)
