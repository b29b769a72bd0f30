"""The Argo CD Application that installs one operator on one cluster.

Facts (argoproj/argo-cd v3.5.1):
- a Helm chart from an OCI registry is named by `repoURL` without the oci:// scheme plus `chart`
  (docs/user-guide/helm.md, "note: the oci:// syntax is not included");
- `syncPolicy.retry` with `limit: -1` retries without end, with exponential backoff, and `refresh`
  lets a new commit replace a failing sync (docs/user-guide/auto_sync.md "Automatic Retry");
- `CreateNamespace=true` with `managedNamespaceMetadata` labels the namespace Argo CD creates
  (docs/operator-manual/application.yaml); `ServerSideApply=true` applies objects whose
  last-applied annotation would exceed 256 KiB, such as large CRDs (docs/user-guide/sync-options.md).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from gpuplan.components.base import Chart
from gpuplan.emit.meta import MANAGED_BY, SYNC_WAVE, k8s
from gpuplan.plan.fleet import ClusterPlan

OUTPUT_PATH = "output"  # where the rendered fleet lives in the git repository
CRD_KIND = "apiextensions.k8s.io/CustomResourceDefinition"
WEBHOOKS = (
    "admissionregistration.k8s.io/MutatingWebhookConfiguration",
    "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
)
CLUSTER_LABEL = "gpuplan.io/cluster"  # the values overlay finds a cluster's Applications by it
COMPONENT_LABEL = "gpuplan.io/component"
CRD_WAVE = -6  # CRD-only charts (karpenter-crd) before the operators that need them
OPERATOR_WAVE = -5  # operators before the cluster's Application (wave 0) that holds their objects
PRIVILEGED = {  # Pod Security Admission: the namespace runs privileged host agents
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}
RETRY = {
    "limit": -1,
    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
    "refresh": True,
}


@dataclass(frozen=True)
class Operator:
    """One operator Application: a chart (or another source) installed into a namespace."""

    component: str  # the Application's name suffix and file name: "kueue", "karpenter-crd"
    namespace: str
    chart: Chart | None = None
    values: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] | None = None  # a non-Helm source (upstream manifests at a tag)
    # Objects gpuplan renders into output/<cluster>/<component>/ (an upstream manifest with the
    # release's image): the Application syncs that folder of the fleet's own repository.
    rendered: tuple[dict[str, Any], ...] = ()
    wave: int = OPERATOR_WAVE
    privileged: bool = False  # the namespace needs PSA privileged (host paths, privileged pods)
    server_side: bool = False  # large CRDs: apply server-side
    skip_crds: bool = False  # the CRDs come from their own chart
    crds: tuple[
        str, ...
    ] = ()  # shipped CRD sets it installs ("kueue/v0.19.2"): the deployment graph
    release_name: str = ""  # Helm release name; default: the chart's name
    create_namespace: bool = True  # False for namespaces that always exist (kube-system)
    # Cluster-scoped kinds the chart or manifest creates ("group/Kind", "" for core), for the
    # AppProject's whitelist: read from its templates at the pinned tag.
    cluster_kinds: tuple[str, ...] = (
        CRD_KIND,
        "rbac.authorization.k8s.io/ClusterRole",
        "rbac.authorization.k8s.io/ClusterRoleBinding",
    )

    @property
    def name(self) -> str:
        """Return the Application's file stem."""
        return self.component


def repo_url(chart: Chart) -> str:
    """Return the chart repository as Argo CD wants it: OCI registries without oci://."""
    return chart.repo.removeprefix("oci://")


def rendered_folder(cluster: ClusterPlan, operator: Operator) -> str:
    """Return the folder of an operator's rendered objects, relative to the output folder."""
    return f"{cluster.name}/{operator.component}"


def _source(cluster: ClusterPlan, operator: Operator, output_path: str) -> dict[str, Any]:
    if operator.rendered:
        gitops = cluster.spec.gitops
        return {
            "repoURL": gitops.repo_url,
            "targetRevision": gitops.target_revision,
            "path": posixpath.join(output_path, rendered_folder(cluster, operator)),
        }
    if operator.source is not None:
        return operator.source
    assert operator.chart is not None, operator.component
    helm: dict[str, Any] = {"releaseName": operator.release_name or operator.chart.name}
    if operator.skip_crds:
        helm["skipCrds"] = True
    if operator.values:
        helm["valuesObject"] = operator.values
    return {
        "repoURL": repo_url(operator.chart),
        "chart": operator.chart.name,
        "targetRevision": operator.chart.version,
        "helm": helm,
    }


def _sync_policy(operator: Operator) -> dict[str, Any]:
    options = ["CreateNamespace=true"] if operator.create_namespace else []
    if operator.server_side:
        options.append("ServerSideApply=true")
    labels = dict(MANAGED_BY)
    if operator.privileged:
        labels |= PRIVILEGED
    policy: dict[str, Any] = {
        # No resources finalizer on the Application: removing it from git never uninstalls the
        # operator, whose CRDs would take every custom resource with them.
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": options,
    }
    if operator.create_namespace:
        policy["managedNamespaceMetadata"] = {"labels": labels}
    return policy | {"retry": RETRY}


def destination(cluster: ClusterPlan, namespace: str) -> dict[str, str]:
    """Return the Application destination of a cluster, in a namespace."""
    target = cluster.spec.gitops.destination
    where = {"server": target.server} if target.server else {"name": str(target.name)}
    return where | {"namespace": namespace}


def operator_application(
    cluster: ClusterPlan, operator: Operator, output_path: str = OUTPUT_PATH
) -> dict[str, Any]:
    """Return the Application installing one operator on a cluster."""
    gitops = cluster.spec.gitops
    obj = k8s(
        "argoproj.io/v1alpha1", "Application", f"{cluster.name}-{operator.name}", gitops.namespace,
        spec={
            "project": gitops.project,
            "source": _source(cluster, operator, output_path),
            "destination": destination(cluster, operator.namespace),
            "syncPolicy": _sync_policy(operator),
        },
    )  # fmt: skip
    obj["metadata"]["labels"] = {
        CLUSTER_LABEL: cluster.name, COMPONENT_LABEL: operator.component, **MANAGED_BY,
    }  # fmt: skip
    obj["metadata"]["annotations"] = {SYNC_WAVE: str(operator.wave)}
    return obj
