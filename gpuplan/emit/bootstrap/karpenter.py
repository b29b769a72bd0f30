"""Karpenter's Applications: the CRD chart first, then the controller chart without CRDs.

Both providers publish charts `karpenter` and `karpenter-crd` at the provider tag without "v"
(aws/karpenter-provider-aws hack/release/common.sh publishHelmChart; Azure/karpenter-provider-azure
charts/ and hack/release/common.sh). Values (charts/karpenter/values.yaml at each tag):
`settings.clusterName`, and on AWS `settings.interruptionQueue` (an SQS queue name; empty: interruption
handling off). On AKS Karpenter normally runs as the managed Node Auto Provisioning add-on: gpuplan
installs nothing there unless the cluster says `selfHosted: true`, and then the controller's endpoint,
identities and network come from `karpenter.azure` (emit/bootstrap/karpenter_azure.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.components import REGISTRY
from gpuplan.components.karpenter import KarpenterRelease
from gpuplan.emit.bootstrap import karpenter_azure
from gpuplan.emit.bootstrap.app import CRD_WAVE, Operator
from gpuplan.plan.fleet import ClusterPlan

NAME = "karpenter"


def values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the controller chart's settings from the model."""
    karpenter = cluster.spec.components.karpenter
    assert karpenter is not None
    settings: dict[str, Any] = {"clusterName": karpenter.cluster_name or cluster.name}
    if cluster.spec.provider == "aws" and karpenter.interruption_queue:
        settings["interruptionQueue"] = karpenter.interruption_queue
    if any(p.karpenter_made and not p.spec.nodes.autoscaled for p in cluster.pools.values()):
        # Static NodePools (spec.replicas) act only with the StaticCapacity gate, off by default
        # (settings.featureGates.staticCapacity in both providers' charts/karpenter/values.yaml).
        settings["featureGates"] = {"staticCapacity": True}
    release = cluster.release(NAME)
    if (
        cluster.spec.provider == "azure"
        and karpenter.azure is not None
        and isinstance(release, KarpenterRelease)
    ):
        out = karpenter_azure.values(karpenter.azure, release)
        return out | {"settings": settings | out["settings"]}
    return {"settings": settings}


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the CRD and controller Applications, or none where AKS runs Karpenter itself."""
    karpenter = cluster.spec.components.karpenter
    release = cluster.release(NAME)
    if karpenter is None or release is None or release.chart is None:
        return []
    if cluster.spec.provider == "azure" and not karpenter.self_hosted:
        return []
    crd_set = REGISTRY[NAME].crd_set(release)
    crds = Operator(
        "karpenter-crd", karpenter.namespace, chart=replace(release.chart, name="karpenter-crd"),
        wave=CRD_WAVE, server_side=True, crds=(crd_set,) if crd_set else (), create_namespace=False,
    )  # fmt: skip
    controller = Operator(
        NAME, karpenter.namespace, chart=release.chart, values=values(cluster), skip_crds=True,
        create_namespace=karpenter.namespace != "kube-system",
    )  # fmt: skip
    return [crds, controller]
