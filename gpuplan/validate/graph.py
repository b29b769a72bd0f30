"""The deployment graph of a rendered fleet: what a bare cluster with only Argo CD needs to reach a
working state on the first sync.

- every custom resource in a cluster's folder has its CRD installed by an Application of that cluster
  that syncs in an earlier wave than the cluster's own Application (or by the platform: `external`);
- every namespace an object lives in is created (a Namespace object, an operator Application's
  CreateNamespace, or a namespace every cluster has);
- every Application names an AppProject that exists, whose sourceRepos, destinations and
  clusterResourceWhitelist allow what the Application syncs;
- every NodePool's node class exists among the cluster's objects (rendered or the user's own).

Works on plain objects (no emit/ import): the caller says which kinds each Application installs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpuplan.validate.buckets import bucket_of

CLUSTER_LABEL = "gpuplan.io/cluster"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# API groups Kubernetes serves itself (no CRD needed).
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "policy", "autoscaling", "rbac.authorization.k8s.io", "networking.k8s.io",
    "scheduling.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "storage.k8s.io",
    "node.k8s.io", "coordination.k8s.io", "apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io",
    "discovery.k8s.io", "certificates.k8s.io", "resource.k8s.io",
})  # fmt: skip
DEFAULT_PROJECT = "default"


@dataclass(frozen=True)
class GraphProblem:
    """One break in the deployment graph, at an object."""

    cluster: str | None  # None: a fleet-level object (argocd/)
    kind: str
    namespace: str
    name: str
    path: str  # field path in the object
    message: str


def group_of(obj: Mapping[str, Any]) -> str:
    """Return the API group of an object ("" for core)."""
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def _wave(obj: Mapping[str, Any]) -> int:
    try:
        return int((_meta(obj, "annotations") or {}).get(SYNC_WAVE, 0))
    except ValueError:
        return 0


def _problem(cluster: str | None, obj: Mapping[str, Any], path: str, message: str) -> GraphProblem:
    return GraphProblem(
        cluster,
        str(obj.get("kind", "")),
        str(_meta(obj, "namespace") or ""),
        str(_meta(obj, "name") or ""),
        path,
        message,
    )


def _cluster_apps(apps: Iterable[Mapping[str, Any]], cluster: str) -> list[Mapping[str, Any]]:
    return [a for a in apps if (_meta(a, "labels") or {}).get(CLUSTER_LABEL) == cluster]


def _created_namespaces(apps: list[Mapping[str, Any]]) -> set[str]:
    created = set()
    for app in apps:
        spec = app.get("spec") or {}
        if "CreateNamespace=true" in ((spec.get("syncPolicy") or {}).get("syncOptions") or []):
            created.add(str((spec.get("destination") or {}).get("namespace", "")))
    return created


def check_cluster(
    cluster: str,
    objects: Sequence[Mapping[str, Any]],
    apps: Sequence[Mapping[str, Any]],
    installs: Mapping[str, Collection[tuple[str, str]]],
    external: Collection[tuple[str, str]] = (),
    namespaces: Collection[str] = (),
    by_kind: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[GraphProblem]:
    """Check one cluster's folder against the Applications of that cluster.

    `installs`: Application name -> (group, kind) of every CRD it installs. Only kinds some
    Application installs are checked: others (the Prometheus Operator's) are the user's to install.
    `external`: kinds the platform provides (AKS Node Auto Provisioning's Karpenter CRDs);
    `namespaces`: namespaces the user provides (those of components gpuplan configures but does not install).
    `by_kind`: the objects already grouped by kind (gpuplan.validate.buckets.objects_by_kind); the
    problems come kind by kind.
    """
    known = {k for kinds in installs.values() for k in kinds}
    mine = _cluster_apps(apps, cluster)
    own = [
        a
        for a in mine
        if (a.get("spec") or {}).get("source", {}).get("chart") is None
        and str((a.get("spec") or {}).get("source", {}).get("path", "")).endswith(f"/{cluster}")
    ]
    if not own:
        return [
            GraphProblem(
                cluster,
                "Application",
                "",
                cluster,
                "",
                f"no Application syncs the folder of cluster {cluster}",
            )
        ]
    wave = min(_wave(a) for a in own)
    before: dict[tuple[str, str], str] = {}
    for app in mine:
        if _wave(app) < wave:
            for kind in installs.get(str(_meta(app, "name")), ()):
                before.setdefault(kind, str(_meta(app, "name")))
    buckets = by_kind if by_kind is not None else _by_kind(objects)
    created = {str(_meta(o, "name")) for o in buckets.get("Namespace", ())}
    created |= _created_namespaces(mine) | BUILTIN_NAMESPACES | set(namespaces)
    kinds = None  # (group, kind) of every object: NodePools ask
    if "NodePool" in buckets:
        kinds = frozenset(_kind(o) for bucket in buckets.values() for o in bucket)
    context = _Context(
        cluster,
        wave,
        frozenset(known),
        frozenset(before),
        frozenset(external),
        frozenset(created),
        kinds,
    )
    return [p for bucket in buckets.values() for o in bucket for p in _problems(context, o)]


class _Context(NamedTuple):
    """What one cluster's objects are checked against (check_cluster)."""

    cluster: str
    wave: int  # the wave of the cluster's own Application
    known: frozenset[tuple[str, str]]  # kinds some Application installs
    before: frozenset[tuple[str, str]]  # kinds installed in a wave before it
    external: frozenset[tuple[str, str]]  # kinds the platform installs
    created: frozenset[str]  # namespaces that exist
    kinds: frozenset[tuple[str, str]] | None  # every object's (group, kind), when a NodePool asks


def _by_kind(objects: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Return every object by kind, in order (as gpuplan.validate.buckets.objects_by_kind)."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        found.setdefault(bucket_of(obj), []).append(obj)
    return found


def _kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    return group_of(obj), str(obj.get("kind"))


def _set(_objects: Sequence[Any], kinds: list[tuple[str, str]]) -> set[tuple[str, str]]:
    return set(kinds)


def _problems(context: _Context, obj: Mapping[str, Any]) -> list[GraphProblem]:
    """Return the problems of one object of a cluster."""
    cluster, wave, known, before, external, created, kinds = context
    problems: list[GraphProblem] = []
    key = (group_of(obj), str(obj.get("kind", "")))
    if key[0] not in BUILTIN_GROUPS and key in known and key not in before and key not in external:
        problems.append(
            _problem(
                cluster,
                obj,
                "apiVersion",
                f"no Application of cluster {cluster} installs the CRD of {key[1]} ({key[0]}) in a wave before the cluster's own Application (wave {wave})",
            )
        )
    namespace = _meta(obj, "namespace")
    if namespace and namespace not in created:
        problems.append(
            _problem(
                cluster,
                obj,
                "metadata.namespace",
                f'Namespace "{namespace}" is created by no object and no Application of cluster {cluster}',
            )
        )
    if obj.get("kind") == "NodePool":
        ref = (
            (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")
        ) or {}
        # A node class of that kind under another name is the reference check's finding (check_node_class_references).
        wanted = (ref.get("group"), ref.get("kind")) if isinstance(ref, dict) else None
        kind_present = wanted is None or any(k == wanted for k in kinds or ())  # (any value)
        if isinstance(ref, dict) and not kind_present:
            problems.append(
                _problem(
                    cluster,
                    obj,
                    "spec.template.spec.nodeClassRef",
                    f"{ref.get('kind')} {ref.get('name')!r} is neither rendered nor among your own manifests (extra/{cluster}/): Karpenter launches no node for this NodePool",
                )
            )
    return problems


def cluster_scoped(obj: Mapping[str, Any]) -> bool:
    """Tell whether an object has no namespace (check_projects reads only those of a cluster)."""
    return not _meta(obj, "namespace")


def _allowed_kind(project: Mapping[str, Any], key: tuple[str, str]) -> bool:
    listed = (project.get("spec") or {}).get("clusterResourceWhitelist") or []
    return any(e.get("group") in (key[0], "*") and e.get("kind") in (key[1], "*") for e in listed)


def check_projects(
    apps: Sequence[Mapping[str, Any]],
    projects: Sequence[Mapping[str, Any]],
    cluster_objects: Mapping[str, Sequence[Mapping[str, Any]]],
    installs_cluster_kinds: Mapping[str, Collection[tuple[str, str]]] | None = None,
) -> list[GraphProblem]:
    """Check every Application's project: it exists and allows the Application's repository, destination and kinds."""
    by_name = {str(_meta(p, "name")): p for p in projects}
    problems: list[GraphProblem] = []
    for app in apps:
        spec = app.get("spec") or {}
        name = str(spec.get("project", ""))
        if name == DEFAULT_PROJECT:
            continue
        project = by_name.get(name)
        if project is None:
            problems.append(
                _problem(
                    None,
                    app,
                    "spec.project",
                    f'AppProject "{name}" does not exist: Argo CD refuses to sync the Application',
                )
            )
            continue
        pspec = project.get("spec") or {}
        repo = (spec.get("source") or {}).get("repoURL")
        if repo not in (pspec.get("sourceRepos") or []) and "*" not in (
            pspec.get("sourceRepos") or []
        ):
            problems.append(
                _problem(
                    None,
                    app,
                    "spec.source.repoURL",
                    f'AppProject "{name}" does not list {repo} in sourceRepos',
                )
            )
        dest = spec.get("destination") or {}
        if not any(
            (d.get("server") == dest.get("server") and d.get("name") == dest.get("name"))
            and d.get("namespace") in ("*", dest.get("namespace"))
            for d in pspec.get("destinations") or []
        ):
            problems.append(
                _problem(
                    None,
                    app,
                    "spec.destination",
                    f'AppProject "{name}" does not allow this destination',
                )
            )
        cluster = (_meta(app, "labels") or {}).get(CLUSTER_LABEL)
        kinds = set((installs_cluster_kinds or {}).get(str(_meta(app, "name")), ()))
        if str((spec.get("source") or {}).get("path", "")).endswith(f"/{cluster}"):
            kinds |= {
                (group_of(o), str(o.get("kind")))
                for o in cluster_objects.get(str(cluster), [])
                if not _meta(o, "namespace")
            }
        for key in sorted(kinds):
            if not _allowed_kind(project, key):
                problems.append(
                    _problem(
                        None,
                        app,
                        "spec.project",
                        f'AppProject "{name}" does not whitelist the cluster-scoped kind {key[1]} ({key[0]}): the sync fails',
                    )
                )
    return problems


def _fill(value: Any, element: Mapping[str, Any]) -> Any:
    """Return a template value with every {{.key}} replaced by the element's value."""
    if isinstance(value, str):
        for key, text in element.items():
            value = value.replace("{{." + str(key) + "}}", str(text))
        return value
    if isinstance(value, dict):
        return {k: _fill(v, element) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, element) for v in value]
    return value


def expand_application_sets(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the Applications the list generators of these ApplicationSets generate (in the set's wave)."""
    out = []
    for obj in objects:
        if obj.get("kind") != "ApplicationSet":
            continue
        spec = obj.get("spec") or {}
        wave = (_meta(obj, "annotations") or {}).get(SYNC_WAVE, "0")
        for generator in spec.get("generators") or []:
            for element in ((generator or {}).get("list") or {}).get("elements") or []:
                app = {
                    "apiVersion": obj.get("apiVersion"),
                    "kind": "Application",
                    **_fill(spec.get("template") or {}, element),
                }
                app["metadata"] = {**app.get("metadata", {}), "annotations": {SYNC_WAVE: wave}}
                out.append(app)
    return out
