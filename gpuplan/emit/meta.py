"""The manifest record, object paths, and what every emitted object carries (labels, waves)."""

from __future__ import annotations

from typing import Any

from gpuplan.model.manifest import Manifest as Manifest  # re-exported: every emitter makes them

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpuplan"}
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"

# Argo CD applies lower waves first: namespaces and priorities, then flavors, cohorts and
# configs, then what refers to them (queues, policies, node pools, quotas), then LocalQueues.
WAVES = {
    "Namespace": -3, "PriorityClass": -3, "WorkloadPriorityClass": -3,
    "ResourceFlavor": -2, "Cohort": -2, "ConfigMap": -2, "NetworkAttachmentDefinition": -2,
    "EC2NodeClass": -2, "AKSNodeClass": -2,
    "ClusterQueue": -1, "ClusterPolicy": -1, "NodePool": -1, "NodeFeatureRule": -1, "Queue": -1,
    "ResourceQuota": -1, "LimitRange": -1, "NetworkPolicy": -1, "RoleBinding": -1,
    "ValidatingAdmissionPolicy": -1,
    "LocalQueue": 0, "Application": 0, "ValidatingAdmissionPolicyBinding": 0,
}  # fmt: skip
_WAVE_TEXT = {kind: str(wave) for kind, wave in WAVES.items()}


CORE_GROUPS = (
    "v1", "apps/v1", "rbac.authorization.k8s.io/v1", "networking.k8s.io/v1", "scheduling.k8s.io/v1",
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1",
    "admissionregistration.k8s.io/v1",
)  # fmt: skip


def k8s(
    api_version: str, kind: str, name: str, namespace: str | None = None, **body: Any
) -> dict[str, Any]:
    """Return a Kubernetes object with metadata and the given top-level fields."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def object_path(cluster: str, folder: str, obj: dict[str, Any]) -> str:
    """Return the file of an object: <cluster>/<folder>/<kind>-<name>.yaml (kind and name only)."""
    kind = str(obj["kind"]).lower()
    return f"{cluster}/{folder}/{kind}-{obj['metadata']['name']}.yaml"


def manifest(cluster: str, folder: str, obj: dict[str, Any], *sources: str) -> Manifest:
    """Return a manifest for an object of a cluster, filed under a folder."""
    return Manifest(object_path(cluster, folder, obj), obj, _sources(sources), cluster)


def _sources(given: tuple[str, ...]) -> tuple[str, ...]:
    """Return the source files sorted, each once (most objects have one or two)."""
    if len(given) == 2:
        first, second = given
        if first == second:
            return (first,)
        return (first, second) if first < second else (second, first)
    return tuple(sorted(set(given)))


def _sync_options(obj: dict[str, Any]) -> str | None:
    kind = obj["kind"]
    if kind == "Namespace":
        return "Prune=false,Delete=false"  # removing a tenant from git must never delete its data
    if obj["apiVersion"] in CORE_GROUPS:
        return None
    if kind == "ClusterPolicy":
        return "ServerSideApply=true,SkipDryRunOnMissingResource=true"
    return "SkipDryRunOnMissingResource=true"  # the CRD may arrive in the same sync


def finalize(item: Manifest) -> Manifest:
    """Add the managed-by label, the sync wave and the sync options every object carries.

    The emitter's object is not changed: the object and its metadata are copied (shallow).
    """
    obj = dict(item.obj)
    metadata = dict(obj["metadata"])
    labels = metadata.get("labels")
    metadata["labels"] = {**labels, **MANAGED_BY} if labels else dict(MANAGED_BY)
    annotations = metadata.get("annotations")
    annotations = dict(annotations) if annotations else {}
    kind = obj["kind"]
    annotations[SYNC_WAVE] = _WAVE_TEXT.get(kind, "0")
    options = _sync_options(obj)
    if options is not None:
        annotations[SYNC_OPTIONS] = options
    metadata["annotations"] = annotations
    obj["metadata"] = metadata
    return Manifest(item.path, obj, item.sources, item.cluster, item.comments, True)


def finalized(items: list[Manifest]) -> list[Manifest]:
    """Return the items finalized, each made by finalize() taken as it is."""
    return [item if item.final else finalize(item) for item in items]
