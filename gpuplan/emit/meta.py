"""The manifest record, object paths, and what every emitted object carries (labels, waves)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from gpuplan import warm

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
    "LocalQueue": 0, "Application": 0,
}  # fmt: skip
_WAVE_TEXT = {kind: str(wave) for kind, wave in WAVES.items()}
T = TypeVar("T")


class _ReadOnce(Generic[T]):
    """A value read once from the record's object and then kept on the record (its __dict__).

    functools.cached_property does the same under a lock on Python 3.11: at 18k objects a run,
    the lock cost more than reading the object every time.
    """

    def __init__(self, read: Callable[[Any], T]) -> None:
        self.read = read
        self.name = read.__name__
        self.__doc__ = read.__doc__

    @overload
    def __get__(self, item: None, owner: Any = None) -> _ReadOnce[T]: ...
    @overload
    def __get__(self, item: object, owner: Any = None) -> T: ...
    def __get__(self, item: Any, owner: Any = None) -> T | _ReadOnce[T]:
        if item is None:  # read on the class
            return self
        value = self.read(item)
        item.__dict__[self.name] = value  # found before this (non-data) descriptor from now on
        return value


CORE_GROUPS = (
    "v1", "apps/v1", "rbac.authorization.k8s.io/v1", "networking.k8s.io/v1", "scheduling.k8s.io/v1",
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1",
)  # fmt: skip


@dataclass(frozen=True)
class Manifest:
    """One object to write: where it goes, the object, and the inputs it comes from.

    The object is never changed once it is in a Manifest (a patch or finalize makes a new one), so
    its kind, name and namespace are read from it once, on first use, and kept on the record: later
    stages ask for them many times per object.
    """

    path: str  # relative to the output folder, with '/'
    obj: dict[str, Any]
    sources: tuple[str, ...]
    cluster: str | None = None  # None for fleet-level files (argocd/)
    comments: tuple[
        str, ...
    ] = ()  # header lines after the sources, e.g. "Components: kueue=v0.14.4"
    final: bool = field(
        default=False, compare=False, repr=False
    )  # finalize() made it: it carries the labels and annotations every object carries

    @_ReadOnce
    def kind(self) -> str:
        """Return the object's kind."""
        return str(self.obj.get("kind", ""))

    @_ReadOnce
    def name(self) -> str:
        """Return the object's name."""
        return str(self.obj.get("metadata", {}).get("name", ""))

    @_ReadOnce
    def namespace(self) -> str | None:
        """Return the object's namespace, if it has one."""
        return self.obj.get("metadata", {}).get("namespace")


def cluster_only(emitter: Callable[[Any], list[Manifest]]) -> Callable[[Any], list[Manifest]]:
    """Mark a cluster emitter whose objects read the cluster file alone (its spec and pools; no
    allocation, grant or figure of another emitter): `render --watch` keeps them by its model."""
    emitter.cluster_only = True  # type: ignore[attr-defined]
    return emitter


def cluster_objects(emitter: Callable[[Any], list[Manifest]], cluster: Any) -> list[Manifest]:
    """Return emitter(cluster) finalized; inside `render --watch` kept by the cluster's model when
    the emitter is marked cluster_only (the one input it reads). The list is shared: never change it."""
    if getattr(emitter, "cluster_only", False):
        kind = f"cluster/{emitter.__module__}"
        return warm.remember_same(kind, (cluster.spec,), None, _finalized, emitter, cluster)
    return finalized(emitter(cluster))


def _finalized(emitter: Callable[[Any], list[Manifest]], cluster: Any) -> list[Manifest]:
    return finalized(emitter(cluster))


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
