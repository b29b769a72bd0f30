"""The NVIDIA DRA driver for GPUs: the release gpuplan supports and the facts it relies on.

Read from kubernetes-sigs/dra-driver-nvidia-gpu at v0.4.1 (chart deployments/helm/dra-driver-nvidia-gpu):
- Chart.yaml: chart `dra-driver-nvidia-gpu` version 0.4.1, kubeVersion >=1.32.0-0; pushed to
  oci://registry.k8s.io/dra-driver-nvidia/charts (../shared/facts/upstream-components.md).
- values.yaml: `resources.gpus.enabled` (default true) needs `gpuResourcesEnabledOverride: true` or the
  chart fails to render (templates/validation.yaml: the driver "cannot be deployed alongside the standard
  GPU device plugin on the same node"); `resourceApiVersion` overrides the auto-detected resource.k8s.io
  version; `featureGates` is a map written as FEATURE_GATES; `kubeletPlugin.nodeSelector` and
  `kubeletPlugin.tolerations` (default: only nvidia.com/gpu NoSchedule) place the kubelet plugin;
  `nvidiaDriverRoot` is / for a host driver, /run/nvidia/driver for the GPU Operator's.
- templates/deviceclass-gpu.yaml, deviceclass-mig.yaml: the chart's own DeviceClasses gpu.nvidia.com
  (type 'gpu') and mig.nvidia.com (type 'mig'), selected by driver 'gpu.nvidia.com'.
- cmd/gpu-kubelet-plugin/deviceinfo.go (GpuInfo.Attributes) and mig.go (CommonAttributesMig): device
  attributes type ('gpu' | 'mig'), uuid, productName (NVML's device name), brand, architecture,
  cudaComputeCapability, driverVersion, cudaDriverVersion; MIG devices add profile and parentUUID.
- api/nvidia.com/resource/v1beta1 (api.go, gpuconfig.go, migconfig.go, sharing.go, validate.go): opaque
  configs GpuConfig and MigDeviceConfig of resource.nvidia.com/v1beta1, decoded strictly (unknown fields
  fail). GpuSharing {strategy: TimeSlicing|MPS, timeSlicingConfig {interval: Default|Short|Medium|Long},
  mpsConfig}; MigDeviceSharing {strategy, mpsConfig} has no timeSlicingConfig. TimeSlicing needs the
  driver's feature gate TimeSlicingSettings, MPS needs MPSSupport (pkg/featuregates/featuregates.go:
  both alpha, off by default).

The release before it, v25.12.0, came from NVIDIA/k8s-dra-driver-gpu (since moved) as chart
`nvidia-dra-driver-gpu` (deployments/helm/nvidia-dra-driver-gpu/Chart.yaml: version 25.12.0,
kubeVersion >=1.32.0-0) on https://helm.ngc.nvidia.com/nvidia (tests/bats/setup_suite.bash `helm repo
add nvidia`). Read at that tag, what gpuplan relies on is the same as at v0.4.1: values.yaml has
gpuResourcesEnabledOverride, resourceApiVersion, resources.gpus.enabled, resources.computeDomains.enabled,
featureGates (a map written as FEATURE_GATES, templates/kubeletplugin.yaml), nvidiaDriverRoot,
kubeletPlugin.nodeSelector and kubeletPlugin.tolerations (default empty there; gpuplan always sets
them); templates/validation.yaml refuses resources.gpus.enabled without the override;
templates/deviceclass-gpu.yaml and deviceclass-mig.yaml select type 'gpu' and 'mig';
cmd/gpu-kubelet-plugin/partitions.go (PartDevAttributes) and deviceinfo.go advertise type, uuid,
productName, brand, architecture and for MIG profile and parentUUID (GPU index and minor were removed
before the tag, commit 36fc80ab); api/nvidia.com/resource/v1beta1/api.go has GpuConfig and
MigDeviceConfig, sharing.go's MigDeviceSharing no timeSlicingConfig; pkg/featuregates/featuregates.go
has TimeSlicingSettings and MPSSupport (alpha, off). The differences are typed facts of each release
below (chart, feature_gates); the checks refuse what a pinned release lacks. Other differences in
values.yaml touch nothing gpuplan turns on: the controller (only with resources.computeDomains.enabled,
templates/controller.yaml) requires a control-plane node there; the kubelet plugin's default affinity
(values.yaml kubeletPlugin.affinity, one term per label) accepts feature.node.kubernetes.io/pci-10de.present,
cpu-model.vendor_id NVIDIA or nvidia.com/gpu.present; v0.4.1 adds the class-qualified pci-0302_10de and
pci-0300_10de labels, which NFD sets by default (kubernetes-sigs/node-feature-discovery source/pci/pci.go:
deviceLabelFields class and vendor). The GPU Operator labels every such node nvidia.com/gpu.present
(NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, gpuNodeLabels and commonGPULabelKey), so
v25.12.0's plugin runs on nodes without the operator only if something else sets those labels
(`plugin_node_labels` below; gpu.present and Grace CPUs aside, check/dra.py refuses that case).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

REPO = "kubernetes-sigs/dra-driver-nvidia-gpu"
CHART_DIR = "deployments/helm/dra-driver-nvidia-gpu"
CHART_REPO = "oci://registry.k8s.io/dra-driver-nvidia/charts"
NVIDIA_REPO = "NVIDIA/k8s-dra-driver-gpu"  # releases up to v25.12
NVIDIA_CHART_DIR = "deployments/helm/nvidia-dra-driver-gpu"
NGC_REPO = "https://helm.ngc.nvidia.com/nvidia"
DRIVER = "gpu.nvidia.com"  # ResourceSlice spec.driver and the attributes' domain
CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"  # api/nvidia.com/resource/v1beta1/api.go
# The chart's own DeviceClasses of GPUs while resources.gpus.enabled (which gpuplan sets): devices of
# type gpu, mig and vfio at v0.4.1 (deployments/helm/dra-driver-nvidia-gpu/templates/
# deviceclass-gpu.yaml, deviceclass-mig.yaml, deviceclass-vfio-gpu.yaml) and at NVIDIA's v25.12.0
# (the same files under deployments/helm/nvidia-dra-driver-gpu/templates/): no gpuplan quota counts
# them. Those of ComputeDomains (deviceclass-compute-domain-daemon.yaml,
# deviceclass-compute-domain-default-channel.yaml: IMEX channels, no GPUs) are claimed by the
# driver's controller in the workload's namespace.
CHART_GPU_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
CHART_CHANNEL_CLASSES = (
    "compute-domain-daemon.nvidia.com",
    "compute-domain-default-channel.nvidia.com",
)
# The label the kubelet plugin is placed by (kubeletPlugin.nodeSelector), and which the GPU Operator's
# driver manager evicts on driver upgrades (NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst).
KUBELET_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"
# The GPU Operator runs its device plugin where this label is "true" and leaves a node whose label is
# already set alone (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, addGPUStateLabels).
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# Sharing strategy -> the driver feature gate it needs (api/nvidia.com/resource/v1beta1/validate.go).
SHARING_GATES = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
# Kubernetes serves resource.k8s.io/v1, on by default, from 1.34 (DRA GA: kubernetes CHANGELOG-1.34;
# the bundled kubernetes_validate schemas of 1.34 are the first with resource.k8s.io/v1). 1.32 and 1.33
# serve only beta versions, off by default behind the DynamicResourceAllocation gate, so a cluster there
# states the one it turned on (components.draDriver.resourceApi). The group versions by release,
# kubernetes/kubernetes staging/src/k8s.io/api/resource/<version>/types.go: release-1.32 has v1beta1
# (structured parameters; 1.31 had only v1alpha3), release-1.33 adds v1beta2; checked in the
# kubernetes_validate schemas generated from each release's OpenAPI (deviceclass-resource-v1beta1.json
# from v1.32.0, -v1beta2.json from v1.33.0, only v1alpha3 in v1.31.0), which `validate` checks against.
RESOURCE_API = "resource.k8s.io/v1"
RESOURCE_API_SINCE = (1, 34)
BETA_APIS = {  # beta group version -> the Kubernetes minors gpuplan emits it for (before v1 is served)
    "resource.k8s.io/v1beta1": ((1, 32), (1, 33)),
    "resource.k8s.io/v1beta2": ((1, 33), (1, 33)),
}
# v1beta1's DeviceRequest holds deviceClassName, allocationMode and count itself; v1beta2 and v1 nest them
# in `exactly` (ExactDeviceRequest): staging/src/k8s.io/api/resource/v1beta1/types.go @ release-1.32,
# v1beta2/types.go @ release-1.33 (devicerequest-resource-v1beta1.json, exactdevicerequest-resource-v1beta2.json).
FLAT_REQUEST_APIS = frozenset({"resource.k8s.io/v1beta1"})
# GPU allocation with the GPU Operator needs Kubernetes v1.34.2+ and GPU Operator v25.10.0+ (CDI on by
# default, driver 580+): NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst "Prerequisites".
GPU_OPERATOR_SINCE = (25, 10, 0)


@dataclass(frozen=True, kw_only=True)
class DraDriverRelease(Release):
    """A DRA driver release: its attributes, opaque config kinds and sharing support."""

    attributes: frozenset[str]  # device attributes (the gpu.nvidia.com domain) gpuplan selects by
    mig_time_slicing_config: bool  # MigDeviceSharing has timeSlicingConfig
    kube_min: tuple[int, int]  # Chart.yaml kubeVersion
    # The driver's feature gates gpuplan may set (pkg/featuregates/featuregates.go at the tag).
    feature_gates: frozenset[str]
    # Node labels the kubelet plugin's default affinity accepts (values.yaml kubeletPlugin.affinity).
    plugin_node_labels: frozenset[str]
    # resource.k8s.io versions the chart's resourceApiVersion takes (templates/_helpers.tpl resourceApiVersion
    # and templates/validation.yaml: v1, v1beta2 or v1beta1).
    resource_apis: frozenset[str] = frozenset({RESOURCE_API, *BETA_APIS})


# The gates of both releases that gpuplan sets (SHARING_GATES); each has more (DynamicMIG, ...).
_GATES = frozenset({"TimeSlicingSettings", "MPSSupport"})
# NFD's default label for an NVIDIA 3D controller (the class of data-center GPUs).
NFD_PCI_LABEL = "feature.node.kubernetes.io/pci-0302_10de.present"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # the GPU Operator sets it on every NVIDIA node
_PLUGIN_LABELS = frozenset({
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/cpu-model.vendor_id",
    GPU_PRESENT_LABEL,
})  # fmt: skip

RELEASES: tuple[DraDriverRelease, ...] = (  # oldest first: the last is the default
    DraDriverRelease(
        version="v25.12.0",
        sources=(
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/Chart.yaml",
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/values.yaml",
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/templates/validation.yaml",
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/templates/kubeletplugin.yaml",
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/templates/_helpers.tpl",
            f"{NVIDIA_REPO}@v25.12.0:{NVIDIA_CHART_DIR}/templates/deviceclass-gpu.yaml",
            f"{NVIDIA_REPO}@v25.12.0:cmd/gpu-kubelet-plugin/deviceinfo.go",
            f"{NVIDIA_REPO}@v25.12.0:cmd/gpu-kubelet-plugin/partitions.go",
            f"{NVIDIA_REPO}@v25.12.0:api/nvidia.com/resource/v1beta1/api.go",
            f"{NVIDIA_REPO}@v25.12.0:api/nvidia.com/resource/v1beta1/sharing.go",
            f"{NVIDIA_REPO}@v25.12.0:pkg/featuregates/featuregates.go",
            f"{NVIDIA_REPO}@v25.12.0:tests/bats/setup_suite.bash",
        ),
        chart=Chart(NGC_REPO, "nvidia-dra-driver-gpu", "25.12.0"),
        attributes=frozenset({"type", "uuid", "productName", "brand", "architecture", "profile"}),
        mig_time_slicing_config=False,
        kube_min=(1, 32),
        feature_gates=_GATES,
        plugin_node_labels=_PLUGIN_LABELS,
    ),
    DraDriverRelease(
        version="v0.4.1",
        sources=(
            f"{REPO}@v0.4.1:{CHART_DIR}/Chart.yaml",
            f"{REPO}@v0.4.1:{CHART_DIR}/values.yaml",
            f"{REPO}@v0.4.1:{CHART_DIR}/templates/validation.yaml",
            f"{REPO}@v0.4.1:{CHART_DIR}/templates/_helpers.tpl",
            f"{REPO}@v0.4.1:{CHART_DIR}/templates/deviceclass-gpu.yaml",
            f"{REPO}@v0.4.1:cmd/gpu-kubelet-plugin/deviceinfo.go",
            f"{REPO}@v0.4.1:cmd/gpu-kubelet-plugin/mig.go",
            f"{REPO}@v0.4.1:api/nvidia.com/resource/v1beta1/sharing.go",
            f"{REPO}@v0.4.1:pkg/featuregates/featuregates.go",
        ),
        chart=Chart(CHART_REPO, "dra-driver-nvidia-gpu", "0.4.1"),
        attributes=frozenset({"type", "uuid", "productName", "brand", "architecture", "profile"}),
        mig_time_slicing_config=False,
        kube_min=(1, 32),
        feature_gates=_GATES,
        plugin_node_labels=_PLUGIN_LABELS
        | {NFD_PCI_LABEL, "feature.node.kubernetes.io/pci-0300_10de.present"},
    ),
)

DRA_DRIVER = Component(
    name="dra-driver",
    field="draDriver",
    releases=RELEASES,
    emitter="gpuplan.emit.dra:emit",
    checks=("gpuplan.check.dra",),
)
