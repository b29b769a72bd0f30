"""Multus and Whereabouts: the release gpuplan supports and its facts.

- Multus k8snetworkplumbingwg/multus-cni v4.3.0: no Helm chart upstream; installed from
  deployments/multus-daemonset-thick.yml at the tag. It defines the NetworkAttachmentDefinition CRD
  (k8s.cni.cncf.io/v1, `spec.config` a JSON string); gpuplan ships that CRD from
  k8snetworkplumbingwg/network-attachment-definition-client v1.7.7 artifacts/networks-crd.yaml (the
  same v1 schema; multus v4.3.0 go.mod vendors the client v1.7.6).
- Whereabouts k8snetworkplumbingwg/whereabouts v0.9.4: IPAM config `range`, `gateway`, `exclude`
  (README.md); chart `whereabouts-chart`, version = the tag without "v", pushed to
  oci://ghcr.io/k8snetworkplumbingwg (hack/release/chart-push.sh).
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
    cni_version: str  # the CNI spec version gpuplan writes into spec.config
    whereabouts: str
    whereabouts_chart: Chart


RELEASES: tuple[MultusRelease, ...] = (
    MultusRelease(
        version="v4.3.0",
        sources=(
            f"{MULTUS}@v4.3.0:deployments/multus-daemonset-thick.yml",
            f"{MULTUS}@v4.3.0:go.mod",
            f"{NAD_CLIENT}@v1.7.7:artifacts/networks-crd.yaml",
            f"{WHEREABOUTS}@v0.9.4:README.md",
            f"{WHEREABOUTS}@v0.9.4:hack/release/chart-push.sh",
        ),
        chart=None,  # upstream publishes no chart for Multus
        crds="v1.7.7",
        nad_api_version="k8s.cni.cncf.io/v1",
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
