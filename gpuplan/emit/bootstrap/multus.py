"""Multus and Whereabouts, when the cluster has networks.

Multus publishes no chart: its Application syncs deployments/multus-daemonset-thick.yml of
k8snetworkplumbingwg/multus-cni at the pinned tag (a directory source with `include`; the manifest
creates the NetworkAttachmentDefinition CRD and runs in kube-system). Whereabouts has a chart
(gpuplan/components/multus.py), needed only by networks with whereabouts IPAM.
"""

from __future__ import annotations

from gpuplan.components import REGISTRY
from gpuplan.components.multus import MULTUS, MultusRelease
from gpuplan.emit.bootstrap.app import CRD_WAVE, Operator
from gpuplan.fleet import ClusterPlan

MANIFEST_DIR = "deployments"
MANIFEST = "multus-daemonset-thick.yml"
NAMESPACE = "kube-system"  # the manifest's own namespace


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the Multus (and Whereabouts) Applications of a cluster with networks."""
    if not any(n.attaches for n in cluster.spec.networks):  # efa networks need no Multus
        return []
    component = REGISTRY["multus"]
    release = cluster.release("multus")  # components.multus.version, else the newest
    if not isinstance(release, MultusRelease):
        return []  # an unknown version: an error already
    source = {
        "repoURL": f"https://github.com/{MULTUS}.git",
        "targetRevision": release.version,
        "path": MANIFEST_DIR,
        "directory": {"include": MANIFEST},
    }
    crd_set = component.crd_set(release)
    found = [
        Operator(
            "multus", NAMESPACE, source=source, wave=CRD_WAVE, server_side=True,
            crds=(crd_set,) if crd_set else (), create_namespace=False,
        )
    ]  # fmt: skip
    if any(n.ipam is not None and n.ipam.type == "whereabouts" for n in cluster.spec.networks):
        found.append(
            Operator(
                "whereabouts", NAMESPACE, chart=release.whereabouts_chart, create_namespace=False
            )
        )
    return found
