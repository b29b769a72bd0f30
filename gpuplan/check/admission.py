"""Admission policies: only where the cluster's Kubernetes serves them, with a queue to require.

ValidatingAdmissionPolicy is served as admissionregistration.k8s.io/v1 from Kubernetes 1.30
(kubernetes.io docs reference/access-authn-authz/validating-admission-policy, "FEATURE STATE: Kubernetes
v1.30 [stable]"). An older cluster gets an error rather than the policies left out: a fleet that asks for
enforcement and silently gets none would believe its quotas hold.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.components.kai import authority
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet

SERVED_FROM = (1, 30)


@check
def check_admission(fleet: Fleet) -> Iterator[Diagnostic]:
    """Refuse admission policies on a Kubernetes before 1.30, and requireQueue without a scheduler that queues."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        spec = cluster.spec
        if spec.admission is None:
            continue
        source = cluster.located.source
        major, minor = (int(p) for p in spec.kubernetes_version.split("."))
        if (major, minor) < SERVED_FROM:
            yield source.diagnostic(
                ("admission",),
                f"admission policies need Kubernetes 1.30 or later (ValidatingAdmissionPolicy "
                f"admissionregistration.k8s.io/v1), cluster {name} runs {spec.kubernetes_version}: "
                "remove admission or upgrade the cluster",
                at_key=True,
            )
        if spec.admission.require_queue and authority(spec.components) is None:
            yield source.diagnostic(
                ("admission", "requireQueue"),
                f"requireQueue: cluster {name} runs no Kueue, Volcano or KAI Scheduler to queue GPU "
                "workloads: add one under components or remove requireQueue",
            )
