"""The NVIDIA DRA driver's Application: the chart at the pinned tag, its kubelet plugin on the DRA pools only.

Values (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 deployments/helm/dra-driver-nvidia-gpu/values.yaml,
templates/validation.yaml, templates/kubeletplugin.yaml; the same keys in NVIDIA/k8s-dra-driver-gpu v25.12.0
deployments/helm/nvidia-dra-driver-gpu, the chart of the release before, gpuplan/components/dra_driver.py):
- `gpuResourcesEnabledOverride: true`, without which the chart refuses to render GPU allocation; the
  override is safe here because the device plugin is disabled on every node the plugin runs on;
- `resourceApiVersion` pinned to what the cluster serves (v1, or the beta version stated on 1.32 and
  1.33; templates/_helpers.tpl takes any of v1, v1beta2, v1beta1), not Helm's auto-detection;
- `resources.computeDomains.enabled: false`: gpuplan makes no ComputeDomains (multi-node NVLink);
- `nvidiaDriverRoot`: /run/nvidia/driver where the GPU Operator installs the driver, / for a host
  driver, GKE COS's install folder there (NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst);
- `featureGates`: TimeSlicingSettings and MPSSupport where a DRA pool shares its GPUs that way (both
  alpha and off by default: pkg/featuregates/featuregates.go);
- `kubeletPlugin.nodeSelector` on the DRA pools' label and `kubeletPlugin.tolerations` for their taints.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.dra_driver import KUBELET_PLUGIN_LABEL, SHARING_GATES, DraDriverRelease
from gpuplan.emit.bootstrap.app import Operator
from gpuplan.emit.kueue import tolerations
from gpuplan.plan.dra import HOST_ROOT, dra_pools, driver_roots, resource_api, strategy_of
from gpuplan.plan.fleet import ClusterPlan

NAME = "dra-driver"
# templates/deviceclass-*.yaml, validatingadmissionpolicy*.yaml at v0.4.1 and v25.12.0
CLUSTER_KINDS = (
    "resource.k8s.io/DeviceClass",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
)


def feature_gates(cluster: ClusterPlan) -> dict[str, bool]:
    """Return the driver feature gates the DRA pools' sharing needs."""
    wanted = {strategy_of(p.spec) for p in dra_pools(cluster)}
    return {SHARING_GATES[s]: True for s in sorted(s for s in wanted if s is not None)}


def _tolerations(cluster: ClusterPlan) -> list[dict[str, str]]:
    """Return a toleration for every taint of a DRA pool, once each, in pool order."""
    out: list[dict[str, str]] = []
    for pool in dra_pools(cluster):
        out += [t for t in tolerations(pool) if t not in out]
    return out


def values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the chart values for the cluster's DRA pools."""
    roots = sorted(set(driver_roots(cluster).values()))  # one root: check/dra.py refuses several
    out: dict[str, Any] = {
        "resourceApiVersion": resource_api(cluster.spec),
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "nvidiaDriverRoot": roots[0] if roots else HOST_ROOT,
        "kubeletPlugin": {
            "nodeSelector": {KUBELET_PLUGIN_LABEL: "true"},
            "tolerations": _tolerations(cluster),
        },
    }
    gates = feature_gates(cluster)
    if gates:
        out["featureGates"] = gates
    return out


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return the DRA driver's Application, if the cluster has DRA pools and runs the driver."""
    driver = cluster.spec.components.dra_driver
    release = cluster.release(NAME)
    if driver is None or not isinstance(release, DraDriverRelease) or release.chart is None:
        return []
    if not dra_pools(cluster):
        return []
    return [
        Operator(
            NAME, driver.namespace, chart=release.chart, values=values(cluster),
            privileged=True,  # the kubelet plugin is privileged and mounts host paths (templates/kubeletplugin.yaml)
            server_side=True,  # the ComputeDomain CRDs come with the chart (crds/)
            cluster_kinds=Operator.cluster_kinds + CLUSTER_KINDS,
        )
    ]  # fmt: skip
