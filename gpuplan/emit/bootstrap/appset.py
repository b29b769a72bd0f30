"""One ApplicationSet for many clusters (`gitops.applicationSet`), instead of an Application each.

A list generator with one element per cluster and a Go template (argoproj/argo-cd v3.5.1
docs/operator-manual/applicationset/Generators-List.md; `goTemplateOptions: ["missingkey=error"]`
makes a missing key an error rather than an empty string). The generated Applications are those
gpuplan would render per cluster; the root applies the ApplicationSet in the clusters' wave (0),
after the operators.
"""

from __future__ import annotations

import posixpath
from typing import Any

from gpuplan.emit.bootstrap.app import CLUSTER_LABEL, RETRY
from gpuplan.emit.meta import MANAGED_BY, SYNC_WAVE, Manifest, k8s
from gpuplan.plan.fleet import ClusterPlan, Fleet

APPS = "argocd"


def _element(cluster: ClusterPlan, output_path: str) -> dict[str, str]:
    target = cluster.spec.gitops.destination
    where = {"server": str(target.server)} if target.server else {"name": str(target.name)}
    return {"cluster": cluster.name, "path": posixpath.join(output_path, cluster.name), **where}


def application_set(name: str, members: list[ClusterPlan], output_path: str) -> dict[str, Any]:
    """Return the ApplicationSet generating the cluster Applications of its members."""
    gitops = members[0].spec.gitops
    key = "server" if gitops.destination.server else "name"
    template = {
        "metadata": {
            "name": "{{.cluster}}",
            "namespace": gitops.namespace,
            "labels": {CLUSTER_LABEL: "{{.cluster}}", **MANAGED_BY},
        },
        "spec": {
            "project": gitops.project,
            "source": {
                "repoURL": gitops.repo_url,
                "targetRevision": gitops.target_revision,
                "path": "{{.path}}",
            },
            "destination": {key: "{{." + key + "}}"},
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": ["ApplyOutOfSyncOnly=true"],
                "retry": RETRY,
            },
        },
    }
    obj = k8s("argoproj.io/v1alpha1", "ApplicationSet", name, gitops.namespace, spec={
        "goTemplate": True,
        "goTemplateOptions": ["missingkey=error"],
        "generators": [{"list": {"elements": [_element(c, output_path) for c in members]}}],
        "template": template,
    })  # fmt: skip
    obj["metadata"]["labels"] = dict(MANAGED_BY)
    obj["metadata"]["annotations"] = {SYNC_WAVE: "0"}
    return obj


def members(fleet: Fleet) -> dict[str, list[ClusterPlan]]:
    """Return ApplicationSet name -> its clusters, sorted by name."""
    found: dict[str, list[ClusterPlan]] = {}
    for _, cluster in sorted(fleet.clusters.items()):
        if cluster.spec.gitops.application_set:
            found.setdefault(cluster.spec.gitops.application_set, []).append(cluster)
    return found


def application_sets(fleet: Fleet, output_path: str) -> list[Manifest]:
    """Return argocd/applicationset-<name>.yaml for every ApplicationSet the clusters name."""
    return [
        Manifest(
            f"{APPS}/applicationset-{name}.yaml",
            application_set(name, group, output_path),
            tuple(sorted(c.located.source.path for c in group)),
        )
        for name, group in sorted(members(fleet).items())
    ]
