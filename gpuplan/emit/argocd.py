"""Argo CD: an Application per cluster, and the kustomizations Argo CD builds."""

from __future__ import annotations

import posixpath
from typing import Any

from gpuplan.crds.versions import cluster_components, fleet_components, header_line
from gpuplan.emit.bootstrap import fleet as bootstrap
from gpuplan.emit.bootstrap.app import CLUSTER_LABEL, RETRY
from gpuplan.emit.meta import Manifest, finalize, k8s
from gpuplan.fleet import ClusterPlan, Fleet

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
APPS = "argocd"
OUTPUT_PATH = "output"  # where the rendered fleet lives in the git repository


def application(cluster: ClusterPlan, output_path: str = OUTPUT_PATH) -> dict[str, Any]:
    """Return the Argo CD Application that syncs one cluster's folder."""
    gitops = cluster.spec.gitops
    destination = {"server": gitops.destination.server} if gitops.destination.server else {"name": gitops.destination.name}
    spec = {
        "project": gitops.project,
        "source": {
            "repoURL": gitops.repo_url,
            "targetRevision": gitops.target_revision,
            "path": posixpath.join(output_path, cluster.name),
        },
        "destination": destination,
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            "syncOptions": ["ApplyOutOfSyncOnly=true"],
            "retry": RETRY,  # an automated sync of the same commit is not retried otherwise
        },
    }
    obj = k8s("argoproj.io/v1alpha1", "Application", cluster.name, gitops.namespace, spec=spec)
    obj["metadata"]["labels"] = {CLUSTER_LABEL: cluster.name}
    return obj


def applications(fleet: Fleet, output_path: str = OUTPUT_PATH) -> list[Manifest]:
    """Return the Applications of every cluster (always all, so the app of apps stays whole)."""
    return [
        Manifest(f"{APPS}/{name}.yaml", application(cluster, output_path), (cluster.located.source.path,), None)
        for name, cluster in sorted(fleet.clusters.items())
    ]


def _kustomization(resources: list[str]) -> dict[str, Any]:
    return {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": resources}


def kustomization(cluster: ClusterPlan, manifests: list[Manifest]) -> Manifest:
    """Return the kustomization listing every file of one cluster's folder."""
    prefix = f"{cluster.name}/"
    files = sorted(m.path.removeprefix(prefix) for m in manifests)
    # The component versions (shipped CRD sets) the folder was rendered for: `gpuplan validate` reads them.
    comments = (header_line(cluster_components(cluster.spec, known_only=True)),)
    return Manifest(f"{prefix}kustomization.yaml", _kustomization(files), (cluster.located.source.path,), cluster.name, comments)


def app_of_apps(fleet: Fleet, listed: list[Manifest] | None = None) -> Manifest:
    """Return the kustomization of argocd/ (what the root syncs): projects and every Application."""
    files = sorted(m.path.removeprefix(f"{APPS}/") for m in listed) if listed else [f"{name}.yaml" for name in sorted(fleet.clusters)]
    sources = tuple(sorted(c.located.source.path for c in fleet.clusters.values()))
    return Manifest(f"{APPS}/kustomization.yaml", _kustomization(files), sources, None, (header_line(fleet_components()),))


def emit_fleet(fleet: Fleet, output_path: str = OUTPUT_PATH) -> list[Manifest]:
    """Return the fleet-level objects: projects, operator and cluster Applications, app of apps, root."""
    listed = bootstrap.projects(fleet) + bootstrap.operator_manifests(fleet)
    listed += [finalize(m) for m in applications(fleet, output_path)]
    if not fleet.clusters:
        return listed + [app_of_apps(fleet, listed)]
    root = bootstrap.root(fleet, output_path)
    kustomize_root = Manifest(f"{bootstrap.ROOT_FOLDER}/kustomization.yaml", _kustomization(["root.yaml"]), root.sources)
    return listed + [app_of_apps(fleet, listed), root, kustomize_root]
