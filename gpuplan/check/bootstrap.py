"""Argo CD rules: clusters sharing an ApplicationSet share what its template fixes."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check
from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import ClusterPlan, Fleet


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
