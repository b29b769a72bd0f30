"""Node Feature Discovery: the releases gpuplan supports and their facts.

Read from kubernetes-sigs/node-feature-discovery at v0.19.0 (the newest release tag; v0.20.0 is
unreleased) and v0.18.3 (the last of v0.18, a line GPU Operator charts bundle: see below):
deployment/base/nfd-crds/nfd-api-crds.yaml (NodeFeatureRule, nfd.k8s-sigs.io/v1alpha1, served and
stored; the same file at both tags) and Makefile `helm-push` (chart `node-feature-discovery`, version =
the tag without "v", pushed to oci://registry.k8s.io/nfd/charts; docs/_config.yml `helm_oci_repo`).
The values gpuplan sets exist at both tags: deployment/helm/node-feature-discovery/values.yaml
`worker.tolerations` and `master.enableTaints` (templates/master.yaml passes -enable-taints); the
system.name feature's `nodename` element (source/system/system.go) and the InRegexp op
(api/nfd/v1alpha1/types.go) are in both.

NFD's own Application (gpuOperator.nfd: standalone, or rules without the GPU Operator) installs the
release `components.nfd.version` names, else the newest; a bundled NFD is the GPU Operator chart's.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

REPO = "kubernetes-sigs/node-feature-discovery"


@dataclass(frozen=True, kw_only=True)
class NfdRelease(Release):
    """An NFD release: the NodeFeatureRule apiVersion and the match operators gpuplan uses."""

    rule_api_version: str
    match_ops: tuple[str, ...]  # matchExpressions ops gpuplan emits (InRegexp for node names)


def _release(tag: str) -> NfdRelease:
    """Return the facts of one tag (the same at v0.18.3 and v0.19.0)."""
    return NfdRelease(
        version=tag,
        sources=(
            f"{REPO}@{tag}:deployment/base/nfd-crds/nfd-api-crds.yaml",
            f"{REPO}@{tag}:Makefile",
            f"{REPO}@{tag}:deployment/helm/node-feature-discovery/values.yaml",
            f"{REPO}@{tag}:source/system/system.go",
        ),
        chart=Chart("oci://registry.k8s.io/nfd/charts", "node-feature-discovery", tag[1:]),
        crds=tag,
        rule_api_version="nfd.k8s-sigs.io/v1alpha1",
        match_ops=("InRegexp",),
    )


RELEASES: tuple[NfdRelease, ...] = (_release("v0.18.3"), _release("v0.19.0"))

# nfd-master sets a NodeFeatureRule's taints only with enableTaints: the chart value master.enableTaints
# (default false) passes the -enable-taints flag (templates/master.yaml), which overrides the config
# file's enableTaints (pkg/nfd-master/nfd-master.go configure: args.Overrides), the same in every NFD
# chart gpuplan installs, bundled or not: v0.17.3 (GPU Operator v25.3.x), v0.18.2, v0.18.3, v0.19.0
# (NVIDIA/gpu-operator deployments/gpu-operator/Chart.yaml dependencies at each tag). It refuses unprefixed keys and kubernetes.io keys other than under
# feature.node.kubernetes.io (v0.19.0 pkg/nfd-master/nfd-master.go filterTaints,
# pkg/apis/nfd/validate/validate.go Taint; deployment/helm/node-feature-discovery/values.yaml).
TAINT_NAMESPACE = "feature.node.kubernetes.io"


def taint_refused(key: str) -> str | None:
    """Return why nfd-master refuses to set a taint with this key, or None when it sets it."""
    prefix = key.rpartition("/")[0]
    if not prefix:
        return "nfd-master sets no taint without a prefix (example.com/key)"
    in_kubernetes_io = prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")
    if (
        in_kubernetes_io
        and prefix != TAINT_NAMESPACE
        and not prefix.endswith("." + TAINT_NAMESPACE)
    ):
        return f"nfd-master sets no taint in the kubernetes.io domain (except {TAINT_NAMESPACE})"
    return None


NFD = Component(
    name="nfd",
    field="nfd",
    releases=RELEASES,
    emitter="gpuplan.emit.nfd:emit",
    checks=("gpuplan.check.nfd",),
    configured=False,
)
