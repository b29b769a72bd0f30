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
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

REPO = "kubernetes-sigs/dra-driver-nvidia-gpu"
CHART_DIR = "deployments/helm/dra-driver-nvidia-gpu"
CHART_REPO = "oci://registry.k8s.io/dra-driver-nvidia/charts"
DRIVER = "gpu.nvidia.com"  # ResourceSlice spec.driver and the attributes' domain
CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"  # api/nvidia.com/resource/v1beta1/api.go
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
# serve only beta versions, off by default behind the DynamicResourceAllocation gate.
RESOURCE_API = "resource.k8s.io/v1"
RESOURCE_API_SINCE = (1, 34)
# GPU allocation with the GPU Operator needs Kubernetes v1.34.2+ and GPU Operator v25.10.0+ (CDI on by
# default, driver 580+): NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst "Prerequisites".
GPU_OPERATOR_SINCE = (25, 10, 0)


@dataclass(frozen=True, kw_only=True)
class DraDriverRelease(Release):
    """A DRA driver release: its attributes, opaque config kinds and sharing support."""

    attributes: frozenset[str]  # device attributes (the gpu.nvidia.com domain) gpuplan selects by
    mig_time_slicing_config: bool  # MigDeviceSharing has timeSlicingConfig
    kube_min: tuple[int, int]  # Chart.yaml kubeVersion


RELEASES: tuple[DraDriverRelease, ...] = (
    DraDriverRelease(
        version="v0.4.1",
        sources=(
            f"{REPO}@v0.4.1:{CHART_DIR}/Chart.yaml",
            f"{REPO}@v0.4.1:{CHART_DIR}/values.yaml",
            f"{REPO}@v0.4.1:{CHART_DIR}/templates/validation.yaml",
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
    ),
)

DRA_DRIVER = Component(
    name="dra-driver",
    field="draDriver",
    releases=RELEASES,
    emitter="gpuplan.emit.dra:emit",
    checks=("gpuplan.check.dra",),
)
