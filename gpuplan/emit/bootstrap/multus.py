"""Multus and Whereabouts, when the cluster has networks.

Multus publishes no chart, only deployments/multus-daemonset-thick.yml of
k8snetworkplumbingwg/multus-cni at each tag (it creates the NetworkAttachmentDefinition CRD and runs
in kube-system), and that manifest runs the moving `:snapshot-thick` image. Argo CD cannot change an
image of a plain directory source (`kustomize.images` needs a kustomization in the source folder:
argoproj/argo-cd v3.5.1 util/app/discovery/discovery.go takes a folder for kustomize only when it
holds one, and util/kustomize/kustomize.go Build runs `kustomize edit set image` in it; deployments/
has none at either tag), so gpuplan renders the manifest it ships for the release
(gpuplan/manifests/) with the release's image into output/<cluster>/multus/, which the Application
syncs from the fleet's repository. Whereabouts has a chart (gpuplan/components/multus.py), needed
only by networks with whereabouts IPAM.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components import REGISTRY
from gpuplan.components.multus import MultusRelease
from gpuplan.emit.bootstrap.app import CRD_WAVE, Operator
from gpuplan.manifests import objects
from gpuplan.plan.fleet import ClusterPlan

MANIFEST = "multus-daemonset-thick.yml"
NAMESPACE = "kube-system"  # the manifest's own namespace
UPSTREAM_IMAGE = "ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot-thick"  # at v4.2.4 and v4.3.0


def daemon_objects(release: MultusRelease) -> tuple[dict[str, Any], ...]:
    """Return the objects of the release's manifest, its containers running the release's image."""
    found = objects("multus", release.version, MANIFEST)
    for obj in found:
        if obj.get("kind") != "DaemonSet":
            continue
        pod = obj["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            if container.get("image") != UPSTREAM_IMAGE:  # a new manifest: check it by hand
                raise ValueError(
                    f"multus {release.version}: unexpected image {container.get('image')}"
                )
            container["image"] = release.image
    return tuple(found)


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the Multus (and Whereabouts) Applications of a cluster with networks."""
    if not any(n.attaches for n in cluster.spec.networks):  # efa networks need no Multus
        return []
    component = REGISTRY["multus"]
    release = cluster.release("multus")  # components.multus.version, else the newest
    if not isinstance(release, MultusRelease):
        return []  # an unknown version: an error already
    crd_set = component.crd_set(release)
    found = [
        Operator(
            "multus", NAMESPACE, rendered=daemon_objects(release), wave=CRD_WAVE, server_side=True,
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
