"""The fleet's Argo CD roots: an AppProject per `gitops.project` and the root Application (app of apps).

AppProject fields (argoproj/argo-cd v3.5.1 manifests/crds/appproject-crd.yaml, docs/user-guide/projects.md):
`sourceRepos` (repository URLs, as Applications write them), `destinations` (server or name, and a
namespace), `clusterResourceWhitelist` (group and kind; a cluster-scoped kind not listed is refused
at sync). Namespaced kinds stay allowed (no namespaceResourceWhitelist).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from typing import Any

from gpuplan.crds.versions import header_line
from gpuplan.emit.bootstrap import operator_application, operators
from gpuplan.emit.bootstrap.app import OUTPUT_PATH, RETRY, rendered_folder, repo_url
from gpuplan.emit.meta import MANAGED_BY, SYNC_WAVE, Manifest, finalize, k8s
from gpuplan.plan.fleet import ClusterPlan, Fleet

API = "argoproj.io/v1alpha1"
KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
APPS = "argocd"
ROOT = "gpuplan-root"
ROOT_FOLDER = f"{APPS}/bootstrap"
PROJECT_WAVE = -10  # projects exist before any Application that names them
ROOT_PROJECT = (
    "default"  # every Argo CD install has it; the root must not need a project it creates
)


def _kind(entry: str) -> dict[str, str]:
    group, _, kind = entry.rpartition("/")
    return {"group": group, "kind": kind}


def _sources(cluster: ClusterPlan) -> list[str]:
    """Return every source repository a cluster's Applications read."""
    repos = [cluster.spec.gitops.repo_url]
    for operator in operators(cluster):
        repos.append(
            repo_url(operator.chart)
            if operator.chart
            else str((operator.source or {}).get("repoURL", cluster.spec.gitops.repo_url))
        )
    return repos


def project(name: str, clusters: list[ClusterPlan]) -> dict[str, Any]:
    """Return the AppProject of the clusters naming it, with the operators' cluster-scoped kinds."""
    repos = sorted({r for c in clusters for r in _sources(c)})
    destinations = []
    for cluster in clusters:
        target = cluster.spec.gitops.destination
        where = {"server": target.server} if target.server else {"name": str(target.name)}
        if {**where, "namespace": "*"} not in destinations:
            destinations.append({**where, "namespace": "*"})
    kinds = sorted({k for c in clusters for o in operators(c) for k in o.cluster_kinds})
    obj = k8s(API, "AppProject", name, clusters[0].spec.gitops.namespace, spec={
        "description": "GPU platform clusters rendered by gpuplan",
        "sourceRepos": repos,
        "destinations": sorted(destinations, key=lambda d: (d.get("server", ""), d.get("name", ""))),
        "clusterResourceWhitelist": [_kind(k) for k in kinds],
    })  # fmt: skip
    obj["metadata"]["labels"] = dict(MANAGED_BY)
    obj["metadata"]["annotations"] = {SYNC_WAVE: str(PROJECT_WAVE)}
    return obj


def projects(fleet: Fleet) -> list[Manifest]:
    """Return an AppProject per gitops.project (except Argo CD's own `default`)."""
    by_name: dict[str, list[ClusterPlan]] = {}
    for _, cluster in sorted(fleet.clusters.items()):
        by_name.setdefault(cluster.spec.gitops.project, []).append(cluster)
    return [
        Manifest(f"{APPS}/appproject-{name}.yaml", project(name, members), tuple(sorted(c.located.source.path for c in members)))
        for name, members in sorted(by_name.items()) if name != ROOT_PROJECT
    ]  # fmt: skip


def operator_manifests(fleet: Fleet, output_path: str = OUTPUT_PATH) -> list[Manifest]:
    """Return every cluster's operator Applications: argocd/<cluster>/<component>.yaml."""
    return [
        Manifest(
            f"{APPS}/{name}/{o.name}.yaml",
            operator_application(cluster, o, output_path),
            (cluster.located.source.path,),
        )
        for name, cluster in sorted(fleet.clusters.items())
        for o in operators(cluster)
    ]


def rendered_manifests(fleet: Fleet) -> list[Manifest]:
    """Return the objects gpuplan renders for operators without a chart, with their kustomization.

    <cluster>/<component>/ holds them and its own kustomization.yaml: the operator's Application syncs
    that folder, the cluster's Application (whose kustomization does not list it) leaves it alone.
    Like the Applications, they are fleet-level files (no `cluster`): no cluster kustomization or
    overlay takes them in.
    """
    found: list[Manifest] = []
    for _, cluster in sorted(fleet.clusters.items()):
        source = (cluster.located.source.path,)
        for operator in operators(cluster):
            if not operator.rendered:
                continue
            folder = rendered_folder(cluster, operator)
            files = [
                finalize(Manifest(f"{folder}/{str(o['kind']).lower()}-{o['metadata']['name']}.yaml", o, source))
                for o in operator.rendered
            ]  # fmt: skip
            sets = dict(s.split("/", 1) for s in operator.crds)
            kustomization = {
                "apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
                "resources": sorted(m.path.removeprefix(f"{folder}/") for m in files),
            }  # fmt: skip
            comments = (header_line(sets),) if sets else ()
            found += files + [
                Manifest(f"{folder}/kustomization.yaml", kustomization, source, None, comments)
            ]
    return found


def _root_application(name: str, gitops: Any, path: str) -> dict[str, Any]:
    """Return an Application of project default syncing a folder of Applications into Argo CD's namespace."""
    obj = k8s(API, "Application", name, gitops.namespace, spec={
        "project": ROOT_PROJECT,
        "source": {"repoURL": gitops.repo_url, "targetRevision": gitops.target_revision, "path": path},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": gitops.namespace},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, "retry": RETRY},
    })  # fmt: skip
    obj["metadata"]["labels"] = dict(MANAGED_BY)
    obj["metadata"]["annotations"] = {SYNC_WAVE: "0"}  # the fleet's root is applied by hand
    return obj


def root(fleet: Fleet, output_path: str) -> Manifest:
    """Return the root Application: it syncs output/argocd/ (projects, clusters' roots, ApplicationSets)."""
    gitops = fleet.clusters[sorted(fleet.clusters)[0]].spec.gitops
    obj = _root_application(ROOT, gitops, posixpath.join(output_path, APPS))
    sources = tuple(sorted(c.located.source.path for c in fleet.clusters.values()))
    return Manifest(f"{ROOT_FOLDER}/root.yaml", obj, sources)


def cluster_root(cluster: ClusterPlan, apps_path: str) -> Manifest:
    """Return a cluster's root Application: it syncs argocd/<cluster>/ (its operators, then its folder).

    One root per cluster, so that a cluster whose operator never becomes healthy (an unreachable API, a
    crash-looping DaemonSet) holds back only its own later waves: a sync waits on the health of the
    running tasks of its current wave before the next (argo-cd v3.5.1
    gitops-engine/pkg/sync/sync_context.go, "if (a) we are multi-step and we have any running tasks").
    """
    gitops = cluster.spec.gitops
    obj = _root_application(
        f"{ROOT}-{cluster.name}", gitops, posixpath.join(apps_path, cluster.name)
    )
    return Manifest(f"{APPS}/{cluster.name}.yaml", obj, (cluster.located.source.path,))


def cluster_scoped(manifests: Iterable[Manifest]) -> dict[str, set[str]]:
    """Return per cluster the "group/Kind" of every cluster-scoped object of its folder."""
    found: dict[str, set[str]] = {}
    for item in manifests:  # most objects are namespaced: asked first
        if item.namespace or item.cluster is None or item.kind in ("", "Kustomization"):
            continue
        group = str(item.obj.get("apiVersion", "")).rpartition("/")[0]
        found.setdefault(item.cluster, set()).add(f"{group}/{item.kind}")
    return found


def complete_projects(
    fleet: Fleet, manifests: list[Manifest], others: Callable[[str], list[Manifest]] | None = None
) -> list[Manifest]:
    """Add to each AppProject's whitelist the cluster-scoped kinds its clusters' folders hold (own manifests too).

    `others(name)` returns the objects of a cluster this render leaves out (`render --cluster`), whose
    kinds the rewritten project must still allow.
    """
    scoped = cluster_scoped(manifests)
    if others is not None:
        for name in sorted(set(fleet.clusters) - set(scoped)):
            scoped |= {name: cluster_scoped(others(name)).get(name, set())}
    out = list(manifests)
    for index, item in enumerate(manifests):
        if item.cluster is None and item.kind == "AppProject":
            obj = {**item.obj, "spec": dict(item.obj["spec"])}
            kinds = {f"{e['group']}/{e['kind']}" for e in obj["spec"]["clusterResourceWhitelist"]}
            for name, cluster in fleet.clusters.items():
                if cluster.spec.gitops.project == item.name:
                    kinds |= scoped.get(name, set())
            obj["spec"]["clusterResourceWhitelist"] = [_kind(k) for k in sorted(kinds)]
            out[index] = Manifest(item.path, obj, item.sources, item.cluster, item.comments)
    return out
