"""Multus and Whereabouts: the releases gpuplan supports and their facts.

- Multus k8snetworkplumbingwg/multus-cni v4.3.0 and v4.2.4 (the last of v4.2): no Helm chart upstream;
  installed from deployments/multus-daemonset-thick.yml at the tag. It defines the
  NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1, `spec.config` a JSON string); for v4.3.0 gpuplan
  ships that CRD from k8snetworkplumbingwg/network-attachment-definition-client v1.7.7
  artifacts/networks-crd.yaml (the same v1 schema; multus v4.3.0 go.mod vendors the client v1.7.6),
  for v4.2.4 from the client v1.7.6 its go.mod vendors (artifacts/networks-crd.yaml the same as at
  v1.7.7; the manifests' own CRDs differ only by the `nad` short name v4.3.0 adds). Both manifests
  run in kube-system and write cniVersion 0.3.1 in their own config. Both run the
  image ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot-thick (daemon and init container), a
  moving tag, not the release's: .github/workflows/image-push-release.yml at both tags pushes, on a
  v* tag, `ghcr.io/<repository>:<tag>-thick` (docker/metadata-action's tag-ref output + "-thick",
  `latest=false`). gpuplan ships the manifest of each tag (gpuplan/manifests/, fetched by
  scripts/fetch_manifests.py) and renders it with `image` below (gpuplan/emit/bootstrap/multus.py).
- Whereabouts k8snetworkplumbingwg/whereabouts v0.9.4 (with Multus v4.3.0) and v0.9.3 (released with
  Multus v4.2.4, 2026-02-17): IPAM config `range`, `gateway`, `exclude` (README.md, the same at both);
  chart `whereabouts-chart`, version = the tag without "v", pushed to oci://ghcr.io/k8snetworkplumbingwg
  (hack/release/chart-push.sh; hack/release/chart-update.sh sets the chart's version, appVersion and
  image tag to the tag before it is packaged).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

MULTUS = "k8snetworkplumbingwg/multus-cni"
WHEREABOUTS = "k8snetworkplumbingwg/whereabouts"
NAD_CLIENT = "k8snetworkplumbingwg/network-attachment-definition-client"


@dataclass(frozen=True, kw_only=True)
class MultusRelease(Release):
    """A Multus release, with the Whereabouts release installed beside it."""

    nad_api_version: str
    image: str  # the release's thick-plugin image, for the daemon and its init container
    cni_version: str  # the CNI spec version gpuplan writes into spec.config
    whereabouts: str
    whereabouts_chart: Chart


RELEASES: tuple[MultusRelease, ...] = (
    MultusRelease(
        version="v4.2.4",
        sources=(
            f"{MULTUS}@v4.2.4:deployments/multus-daemonset-thick.yml",
            f"{MULTUS}@v4.2.4:go.mod",
            f"{MULTUS}@v4.2.4:.github/workflows/image-push-release.yml",
            f"{NAD_CLIENT}@v1.7.6:artifacts/networks-crd.yaml",
            f"{WHEREABOUTS}@v0.9.3:README.md",
            f"{WHEREABOUTS}@v0.9.3:hack/release/chart-push.sh",
            f"{WHEREABOUTS}@v0.9.3:hack/release/chart-update.sh",
        ),
        chart=None,
        crds="v1.7.6",
        nad_api_version="k8s.cni.cncf.io/v1",
        image=f"ghcr.io/{MULTUS}:v4.2.4-thick",
        cni_version="0.3.1",
        whereabouts="v0.9.3",
        whereabouts_chart=Chart("oci://ghcr.io/k8snetworkplumbingwg", "whereabouts-chart", "0.9.3"),
    ),
    MultusRelease(
        version="v4.3.0",
        sources=(
            f"{MULTUS}@v4.3.0:deployments/multus-daemonset-thick.yml",
            f"{MULTUS}@v4.3.0:go.mod",
            f"{MULTUS}@v4.3.0:.github/workflows/image-push-release.yml",
            f"{NAD_CLIENT}@v1.7.7:artifacts/networks-crd.yaml",
            f"{WHEREABOUTS}@v0.9.4:README.md",
            f"{WHEREABOUTS}@v0.9.4:hack/release/chart-push.sh",
        ),
        chart=None,  # upstream publishes no chart for Multus
        crds="v1.7.7",
        nad_api_version="k8s.cni.cncf.io/v1",
        image=f"ghcr.io/{MULTUS}:v4.3.0-thick",
        cni_version="0.3.1",  # every plugin gpuplan configures reads it (see gpuplan/emit/multus.py)
        whereabouts="v0.9.4",
        whereabouts_chart=Chart("oci://ghcr.io/k8snetworkplumbingwg", "whereabouts-chart", "0.9.4"),
    ),
)

MULTUS_COMPONENT = Component(
    name="multus",
    field="multus",
    releases=RELEASES,
    emitter="gpuplan.emit.multus:emit",
    checks=("gpuplan.check.networks",),
    configured=False,
)
