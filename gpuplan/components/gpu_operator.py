"""NVIDIA GPU Operator: the releases gpuplan supports, each with its chart, operand images, driver
branches and the ClusterPolicy / NVIDIADriver fields that appeared in it.

Every release of the last 18 months (v25.3.1, 2025-06-05, to v26.7.0, 2026-08-20; tags of
NVIDIA/gpu-operator). Facts per release, with where they were read:

- operand images: NVIDIA/gpu-operator@<tag>:deployments/gpu-operator/values.yaml. The validator and
  node-status exporter have no version there: the chart writes `.Chart.AppVersion`
  (templates/clusterpolicy.yaml), which the published chart sets to the release tag
  (NVIDIA/cloud-native-docs gpu-operator/life-cycle-policy.rst: "Validator ... ${version}").
- chart: repository https://helm.ngc.nvidia.com/nvidia, name gpu-operator, version = the tag
  (../shared/facts/upstream-components.md, "Installing operators with Argo CD").
- driver branches: the "NVIDIA GPU Driver" row of the component matrix in NVIDIA/cloud-native-docs
  gpu-operator/life-cycle-policy.rst, at the docs commit noted per release series below (the last
  state of that release's column, which takes in drivers qualified after the release).
- gated fields: config/crd/bases/nvidia.com_clusterpolicies.yaml and nvidia.com_nvidiadrivers.yaml
  diffed tag by tag; only fields gpuplan emits are listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuplan.components.base import Chart, Component, Release

CHART_REPO = "https://helm.ngc.nvidia.com/nvidia"
CHART_NAME = "gpu-operator"
UPSTREAM = "NVIDIA/gpu-operator"


@dataclass(frozen=True)
class Image:
    """One operand image: repository, image name and tag ("" for the driver: chosen per cluster)."""

    repository: str
    image: str
    version: str

    @property
    def host(self) -> str:
        """Return the registry host of the repository (nvcr.io)."""
        return self.repository.split("/", 1)[0]


# Gated fields, by the release that added them (CRD diff between consecutive tags).
CDI_NRI = "ClusterPolicy.spec.cdi.nriPluginEnabled"  # v26.3.0
KUBELET_ROOT_DIR = "ClusterPolicy.spec.hostPaths.kubeletRootDir"  # v26.7.0
SCRAPE_TIMEOUT = "ClusterPolicy.spec.dcgmExporter.serviceMonitor.scrapeTimeout"  # v26.7.0
DRIVER_CR_DEFAULT = "NVIDIADriver.spec.default"  # v26.7.0 (and required from then on)
DRIVER_CR_UPGRADE_POLICY = "NVIDIADriver.spec.upgradePolicy"  # v26.7.0
# The chart renders its own ClusterPolicy "cluster-policy" unless clusterPolicy.deployCR=false;
# before v26.7.0 it always does (deployments/gpu-operator/templates/clusterpolicy.yaml at each tag).
CHART_DEPLOY_CR = "chart values clusterPolicy.deployCR"  # v26.7.0
# Required, with default "docker", up to v26.3.0, which dropped the default and the enum.
DEFAULT_RUNTIME = "ClusterPolicy.spec.operator.defaultRuntime"  # up to v25.10.1


@dataclass(frozen=True)
class GpuOperatorRelease(Release):
    """A GPU Operator release: operand images, default driver, driver branches, gated fields."""

    operands: Mapping[str, Image] = field(default_factory=dict)
    default_driver: str = ""  # values.yaml driver.version
    driver_branches: tuple[int, ...] = ()  # branches the component matrix lists (R535 -> 535)
    fields: frozenset[str] = frozenset()  # gated ClusterPolicy / NVIDIADriver fields it has
    cdi_enabled: bool = True  # values.yaml cdi.enabled (the chart's default)
    # values.yaml validator.plugin.env: WITH_WORKLOAD=false up to v25.3.2 (the plugin validation
    # then runs no GPU pod); empty from v25.3.3.
    validator_workload: bool = True

    def has(self, gated_field: str) -> bool:
        """Tell whether this release's CRDs have a gated field."""
        return gated_field in self.fields


_NVIDIA = "nvcr.io/nvidia"
_K8S = "nvcr.io/nvidia/k8s"
_CLOUD_NATIVE = "nvcr.io/nvidia/cloud-native"


def _operands(
    *,
    toolkit: str,
    device_plugin: str,
    dcgm: str,
    dcgm_exporter: str,
    mig_manager: str,
    driver_manager: str,
    gds: str,
    validator: Image,
) -> dict[str, Image]:
    """Return the operand images of one release (gfd ships in the device-plugin image)."""
    return {
        "driver": Image(_NVIDIA, "driver", ""),
        "driverManager": Image(_CLOUD_NATIVE, "k8s-driver-manager", driver_manager),
        "toolkit": Image(_K8S, "container-toolkit", toolkit),
        "devicePlugin": Image(_NVIDIA, "k8s-device-plugin", device_plugin),
        "gfd": Image(_NVIDIA, "k8s-device-plugin", device_plugin),
        "dcgm": Image(_CLOUD_NATIVE, "dcgm", dcgm),
        "dcgmExporter": Image(_K8S, "dcgm-exporter", dcgm_exporter),
        "migManager": Image(_CLOUD_NATIVE, "k8s-mig-manager", mig_manager),
        "gds": Image(_CLOUD_NATIVE, "nvidia-fs", gds),
        "nodeStatusExporter": validator,
        "validator": validator,
    }


def _validator(tag: str) -> Image:
    """Return the validator image: gpu-operator-validator up to v25.3.x, the operator image after."""
    # values.yaml validator/nodeStatusExporter: nvcr.io/nvidia/cloud-native/gpu-operator-validator
    # through v25.3.4; nvcr.io/nvidia/gpu-operator from v25.10.0.
    if tag.startswith("v25.3."):
        return Image(_CLOUD_NATIVE, "gpu-operator-validator", tag)
    return Image(_NVIDIA, "gpu-operator", tag)


def _release(
    tag: str,
    *,
    default_driver: str,
    branches: tuple[int, ...],
    docs: str,
    fields: frozenset[str] = frozenset(),
    cdi_enabled: bool = True,
    validator_workload: bool = True,
    **images: str,
) -> GpuOperatorRelease:
    """Return one release's facts with the sources they were read from."""
    return GpuOperatorRelease(
        version=tag,
        sources=(
            f"{UPSTREAM}@{tag}:deployments/gpu-operator/values.yaml",
            f"{UPSTREAM}@{tag}:config/crd/bases/nvidia.com_clusterpolicies.yaml",
            f"{UPSTREAM}@{tag}:config/crd/bases/nvidia.com_nvidiadrivers.yaml",
            f"NVIDIA/cloud-native-docs@{docs}:gpu-operator/life-cycle-policy.rst",
        ),
        chart=Chart(CHART_REPO, CHART_NAME, tag),
        crds=tag,
        operands=_operands(validator=_validator(tag), **images),
        default_driver=default_driver,
        driver_branches=branches,
        fields=fields,
        cdi_enabled=cdi_enabled,
        validator_workload=validator_workload,
    )


_V25 = frozenset({DEFAULT_RUNTIME})
_V26_3 = frozenset({CDI_NRI})
_V26_7 = _V26_3 | {
    KUBELET_ROOT_DIR,
    SCRAPE_TIMEOUT,
    DRIVER_CR_DEFAULT,
    DRIVER_CR_UPGRADE_POLICY,
    CHART_DEPLOY_CR,
}
# Driver branches. v25.3.1: docs 638a2ea6 (570.148.08 default, 575.57.08, 550.163.01, 535.247.01).
# v25.3.2: docs 738f8227 (adds 580.65.06). v25.3.3/v25.3.4: docs 7185608a (580.82.07 default ...
# 535.247.01). v25.10.0: docs 3e11d275. v25.10.1: docs 0f2f019e (adds 590.48.01). v26.3.x: docs
# ee488781 (595.71.05 ... 535.288.01; R550 and R575 gone). v26.7.0: docs 187a4a5b (610.57.04,
# 595.91.07 default, 580.173.02, 535.309.01; R570 and R590 gone).
_R25_3_1 = (535, 550, 570, 575)
_R25_3 = (535, 550, 570, 575, 580)
_R25_10_1 = (535, 550, 570, 575, 580, 590)
_R26_3 = (535, 570, 580, 590, 595)
_R26_7 = (535, 580, 595, 610)

_OLD_TOOLKIT = "v1.17.8-ubuntu20.04"

RELEASES: tuple[GpuOperatorRelease, ...] = (
    _release(
        "v25.3.1",
        default_driver="570.148.08",
        branches=_R25_3_1,
        docs="638a2ea6",
        cdi_enabled=False,
        validator_workload=False,
        fields=_V25,
        toolkit=_OLD_TOOLKIT,
        device_plugin="v0.17.2",
        dcgm="4.2.3-1-ubuntu22.04",
        dcgm_exporter="4.2.3-4.1.3-ubuntu22.04",
        mig_manager="v0.12.1-ubuntu20.04",
        driver_manager="v0.8.0",
        gds="2.20.5",
    ),
    _release(
        "v25.3.2",
        default_driver="570.148.08",
        branches=_R25_3,
        docs="738f8227",
        cdi_enabled=False,
        validator_workload=False,
        fields=_V25,
        toolkit=_OLD_TOOLKIT,
        device_plugin="v0.17.3",
        dcgm="4.2.3-1-ubuntu22.04",
        dcgm_exporter="4.2.3-4.1.3-ubuntu22.04",
        mig_manager="v0.12.2-ubuntu20.04",
        driver_manager="v0.8.0",
        gds="2.20.5",
    ),
    _release(
        "v25.3.3",
        default_driver="580.82.07",
        branches=_R25_3,
        docs="7185608a",
        cdi_enabled=False,
        fields=_V25,
        toolkit=_OLD_TOOLKIT,
        device_plugin="v0.17.4",
        dcgm="4.3.1-1-ubuntu22.04",
        dcgm_exporter="4.3.1-4.4.0-ubuntu22.04",
        mig_manager="v0.12.3-ubuntu20.04",
        driver_manager="v0.8.1",
        gds="2.20.5",
    ),
    _release(
        "v25.3.4",
        default_driver="580.82.07",
        branches=_R25_3,
        docs="7185608a",
        cdi_enabled=False,
        fields=_V25,
        toolkit=_OLD_TOOLKIT,
        device_plugin="v0.17.4",
        dcgm="4.3.1-1-ubuntu22.04",
        dcgm_exporter="4.3.1-4.4.0-ubuntu22.04",
        mig_manager="v0.12.3-ubuntu20.04",
        driver_manager="v0.8.1",
        gds="2.20.5",
    ),
    _release(
        "v25.10.0",
        default_driver="580.95.05",
        branches=_R25_3,
        docs="3e11d275",
        fields=_V25,
        toolkit="v1.18.0",
        device_plugin="v0.18.0",
        dcgm="4.4.1-2-ubuntu22.04",
        dcgm_exporter="4.4.1-4.6.0-distroless",
        mig_manager="v0.13.0",
        driver_manager="v0.9.0",
        gds="2.26.6",
    ),
    _release(
        "v25.10.1",
        default_driver="580.105.08",
        branches=_R25_10_1,
        docs="0f2f019e",
        fields=_V25,
        toolkit="v1.18.1",
        device_plugin="v0.18.1",
        dcgm="4.4.2-1-ubuntu22.04",
        dcgm_exporter="4.4.2-4.7.0-distroless",
        mig_manager="v0.13.1",
        driver_manager="v0.9.1",
        gds="2.26.6",
    ),
    _release(
        "v26.3.0",
        default_driver="580.126.20",
        branches=_R26_3,
        docs="ee488781",
        fields=_V26_3,
        toolkit="v1.19.0",
        device_plugin="v0.19.0",
        dcgm="4.5.2-1-ubuntu22.04",
        dcgm_exporter="4.5.1-4.8.0-distroless",
        mig_manager="v0.14.0",
        driver_manager="v0.10.0",
        gds="2.27.3",
    ),
    _release(
        "v26.3.1",
        default_driver="580.126.20",
        branches=_R26_3,
        docs="ee488781",
        fields=_V26_3,
        toolkit="v1.19.0",
        device_plugin="v0.19.0",
        dcgm="4.5.2-1-ubuntu22.04",
        dcgm_exporter="4.5.1-4.8.0-distroless",
        mig_manager="v0.14.0",
        driver_manager="v0.10.0",
        gds="2.27.3",
    ),
    _release(
        "v26.3.2",
        default_driver="580.126.20",
        branches=_R26_3,
        docs="ee488781",
        fields=_V26_3,
        toolkit="v1.19.1",
        device_plugin="v0.19.2",
        dcgm="4.5.2-1-ubuntu22.04",
        dcgm_exporter="4.5.3-4.8.2-distroless",
        mig_manager="v0.14.2",
        driver_manager="v0.11.0",
        gds="2.27.3",
    ),
    _release(
        "v26.3.3",
        default_driver="580.126.20",
        branches=_R26_3,
        docs="ee488781",
        fields=_V26_3,
        toolkit="v1.19.1",
        device_plugin="v0.19.3",
        dcgm="4.5.2-1-ubuntu22.04",
        dcgm_exporter="4.5.3-4.8.2-distroless",
        mig_manager="v0.14.2",
        driver_manager="v0.11.0",
        gds="2.27.3",
    ),
    _release(
        "v26.7.0",
        default_driver="595.91.07",
        branches=_R26_7,
        docs="187a4a5b",
        fields=_V26_7,
        toolkit="v1.20.0",
        device_plugin="v0.20.0",
        dcgm="4.6.0-1-ubuntu24.04",
        dcgm_exporter="4.6.0-4.8.3-distroless",
        mig_manager="v0.15.0",
        driver_manager="v0.12.0",
        gds="2.29.4",
    ),
)

COMPONENT = Component(
    name="gpu-operator",
    field="gpuOperator",
    releases=RELEASES,
    emitter="gpuplan.emit.gpu_operator:emit",
    checks=("gpuplan.check.components", "gpuplan.check.drivers"),
)


def release(version: str) -> GpuOperatorRelease:
    """Return the facts of one GPU Operator release (UnknownVersion names the known ones)."""
    found = COMPONENT.release(version)
    assert isinstance(found, GpuOperatorRelease)
    return found
