"""Argo CD rules: clusters sharing an ApplicationSet share what its template fixes."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.plan.fleet import ClusterPlan, Fleet


def _fixed(cluster: ClusterPlan) -> dict[str, str]:
    gitops = cluster.spec.gitops
    return {
        "repoURL": gitops.repo_url, "targetRevision": gitops.target_revision, "project": gitops.project,
        "namespace": gitops.namespace, "destination": "server" if gitops.destination.server else "name",
    }  # fmt: skip


@check
def check_application_set(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when clusters of one ApplicationSet differ in what its template fixes."""
    first: dict[str, tuple[str, dict[str, str]]] = {}
    for name, cluster in sorted(fleet.clusters.items()):
        set_name = cluster.spec.gitops.application_set
        if not set_name:
            continue
        mine = _fixed(cluster)
        if set_name not in first:
            first[set_name] = (name, mine)
            continue
        other, theirs = first[set_name]
        for key in sorted(k for k in mine if mine[k] != theirs[k]):
            yield cluster.located.source.diagnostic(("gitops", "applicationSet"), (
                f"ApplicationSet {set_name} renders one {key} for all its clusters: this cluster's ({mine[key]}) "
                f"differs from cluster {other}'s ({theirs[key]}); use the same, or another ApplicationSet"
            ))  # fmt: skip


@check
def check_root_repository(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when clusters name other git repositories, revisions or Argo CD namespaces than the root Application uses."""
    names = sorted(fleet.clusters)
    if not names:
        return
    first = fleet.clusters[names[0]].spec.gitops
    root = (first.repo_url, first.target_revision, first.namespace)
    for name in names[1:]:
        cluster = fleet.clusters[name]
        gitops = cluster.spec.gitops
        if (gitops.repo_url, gitops.target_revision, gitops.namespace) != root:
            source = cluster.located.source
            line, col = source.position(("gitops",), True)
            yield Diagnostic(source.path, line, col, Severity.WARNING, "gitops", (
                f"the root Application syncs output/argocd/ from {first.repo_url} at {first.target_revision} into namespace "
                f"{first.namespace} (cluster {names[0]}), where this cluster's Application lives too: name the same "
                "repoURL, targetRevision and namespace, or Argo CD reads this cluster's folder from elsewhere"
            ))  # fmt: skip
