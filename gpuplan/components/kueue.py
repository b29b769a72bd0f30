"""Kueue: the releases gpuplan supports and the facts of each, read from the CRDs at each tag.

Every fact below was read from kubernetes-sigs/kueue at the release tag, in
config/components/crd/bases/kueue.x-k8s.io_{clusterqueues,cohorts,localqueues,resourceflavors,
workloadpriorityclasses}.yaml (apiVersions served, enums, maxItems), pkg/webhooks/clusterqueue_webhook.go
(the 512 flavor x resource rule) and charts/kueue/README.md plus hack/helm-chart-package.sh (the chart:
`helm push` to oci://registry.k8s.io/kueue/charts, chart version = the tag without its "v").

What changes between the releases gpuplan supports:
- v0.12: Cohort is kueue.x-k8s.io/v1alpha1 with `spec.parent`; a resource group takes 16 flavors and
  16 covered resources; whenCanBorrow is Borrow|TryNextFlavor.
- v0.13: Cohort is v1beta1 with `spec.parentName`.
- v0.14: 64 flavors, 64 covered resources, and the webhook's 512 flavor x resource entries per group.
- v0.15: v1beta2 served (ClusterQueue `spec.cohortName` instead of `spec.cohort`); whenCanBorrow
  MayStopSearch|TryNextFlavor (v1beta1 also keeps Borrow, "old name for MayStopSearch":
  apis/kueue/v1beta1/clusterqueue_types.go@v0.15.0).
- v0.16: v1beta2 is the storage version; v1beta1 deprecated.
Feature gates on by default (pkg/features/kube_features.go): HierarchicalCohorts (beta since v0.11),
TopologyAwareScheduling from v0.14, AdmissionFairSharing from v0.15 (when admissionScope's modes
are enumerated in v1beta2). The Configuration (config.kueue.x-k8s.io) has v1beta2 from v0.15 (apis/config/).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplan.components.base import Chart, Component, Release

GROUP = "kueue.x-k8s.io"
REPO = "kubernetes-sigs/kueue"
CRD_DIR = "config/components/crd/bases"
CHART_REPO = "oci://registry.k8s.io/kueue/charts"
# Configuration resources.deviceClassMappings: at most 16 mappings (pkg/config/validation.go
# validateDeviceClassMappings at v0.19.2).
MAX_DEVICE_CLASS_MAPPINGS = 16


# Built-in job integrations, the names `integrations.frameworks` takes: the FrameworkName constants under
# pkg/controller/jobs/ at each tag. Kueue refuses to start on any other name, or on one kind listed
# twice (pkg/config/validation.go validateIntegrations: NotSupported, Duplicate).
_FRAMEWORKS_V012 = frozenset({
    "batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset",
    "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob", "ray.io/raycluster",
    "kubeflow.org/jaxjob", "kubeflow.org/mpijob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "workload.codeflare.dev/appwrapper",
})  # fmt: skip
_FRAMEWORKS_V014 = _FRAMEWORKS_V012 | {"trainer.kubeflow.org/trainjob"}
_FRAMEWORKS_V017 = _FRAMEWORKS_V014 | {"ray.io/rayservice", "sparkoperator.k8s.io/sparkapplication"}


@dataclass(frozen=True, kw_only=True)
class KueueRelease(Release):
    """A Kueue release: the apiVersions it serves and the enums and limits of what gpuplan emits."""

    served: tuple[str, ...]  # kueue.x-k8s.io versions of ClusterQueue, LocalQueue, ResourceFlavor
    cohort_version: str  # the Cohort kind's version (v1alpha1 on v0.12)
    cohort_parent_field: str  # "parent" (v1alpha1) or "parentName"
    when_can_borrow: tuple[
        str, ...
    ]  # enum of spec.flavorFungibility.whenCanBorrow (emitted apiVersion)
    when_can_preempt: tuple[
        str, ...
    ]  # enum of spec.flavorFungibility.whenCanPreempt (emitted apiVersion)
    max_flavors: int  # spec.resourceGroups[].flavors maxItems
    max_covered_resources: int  # spec.resourceGroups[].coveredResources maxItems
    max_group_entries: int | None  # flavors x resources per group (webhook), None: no such rule
    admission_modes: tuple[
        str, ...
    ]  # enum of spec.admissionScope.admissionMode (emitted apiVersion); () none
    config_versions: tuple[
        str, ...
    ]  # config.kueue.x-k8s.io versions of the Configuration (apis/config/)
    gates_on: frozenset[
        str
    ]  # feature gates gpuplan relies on that are on by default (pkg/features)
    # Topology (TAS): the version emitted and spec.levels maxItems, from kueue.x-k8s.io_topologies.yaml
    # at each tag (v1alpha1 up to v0.13, v1beta1 on v0.14, v1beta2 served from v0.15; 8 levels on v0.12).
    topology_version: str = "v1beta2"
    max_topology_levels: int = 16
    # DRA (pkg/features/kube_features.go at each tag): "beta" from v0.18 (KueueDRAIntegration, on by
    # default; Configuration resources.deviceClassMappings in apis/config/v1beta2/configuration_types.go),
    # "alpha" v0.14-v0.17 (DynamicResourceAllocation, off by default), "" before.
    dra: str = ""

    @property
    def chart_manager(self) -> dict[str, Any]:
        """Return the controller and clientConnection blocks of the chart's own Configuration.

        gpuplan's Configuration replaces the chart's whole controllerManagerConfigYaml, so it repeats
        these: charts/kueue/values.yaml sets qps 50 / burst 100 and concurrency 5 (Job, Pod, Workload)
        and 1 (LocalQueue, ClusterQueue, ResourceFlavor) from v0.12.10 to v0.18.6, where the code's
        defaults are 20 / 30 (apis/config/v1beta1/defaults.go DefaultClientConnectionQPS/Burst); at
        v0.19.2 qps 300 / burst 500 (the code's defaults too) and Workload 10, LocalQueue and
        ClusterQueue 5.
        """
        newer = int(self.version.split(".")[1]) >= 19
        return {
            "controller": {
                "groupKindConcurrency": {
                    "Job.batch": 5,
                    "Pod": 5,
                    "Workload.kueue.x-k8s.io": 10 if newer else 5,
                    "LocalQueue.kueue.x-k8s.io": 5 if newer else 1,
                    "ClusterQueue.kueue.x-k8s.io": 5 if newer else 1,
                    "ResourceFlavor.kueue.x-k8s.io": 1,
                }
            },
            "clientConnection": {"qps": 300, "burst": 500} if newer else {"qps": 50, "burst": 100},
        }

    @property
    def api(self) -> str:
        """Return the version gpuplan emits: the newest served (v1beta2 from v0.15 on)."""
        return self.served[-1]

    @property
    def api_version(self) -> str:
        """Return the apiVersion of the objects gpuplan emits, e.g. kueue.x-k8s.io/v1beta2."""
        return f"{GROUP}/{self.api}"

    @property
    def cohort_api_version(self) -> str:
        """Return the Cohort kind's apiVersion."""
        return f"{GROUP}/{self.cohort_version}"

    @property
    def cohort_field(self) -> str:
        """Return the ClusterQueue field naming its cohort: cohortName in v1beta2, cohort in v1beta1."""
        return "cohortName" if self.api == "v1beta2" else "cohort"

    @property
    def frameworks(self) -> frozenset[str]:
        """Return the built-in integrations (integrations.frameworks) of this release."""
        minor = int(self.version.split(".")[1])
        if minor >= 17:
            return _FRAMEWORKS_V017
        return _FRAMEWORKS_V014 if minor >= 14 else _FRAMEWORKS_V012

    @property
    def stop_search(self) -> str:
        """Return whenCanBorrow's "stop at the first flavor that fits, borrowing" value for this release."""
        return "MayStopSearch" if "MayStopSearch" in self.when_can_borrow else "Borrow"


def _sources(tag: str) -> tuple[str, ...]:
    kinds = (
        "clusterqueues",
        "cohorts",
        "localqueues",
        "resourceflavors",
        "workloadpriorityclasses",
    )
    crds = tuple(f"{REPO}@{tag}:{CRD_DIR}/{GROUP}_{kind}.yaml" for kind in (*kinds, "topologies"))
    return crds + (
        f"{REPO}@{tag}:pkg/webhooks/clusterqueue_webhook.go",
        f"{REPO}@{tag}:pkg/features/kube_features.go",
        f"{REPO}@{tag}:pkg/config/validation.go",
        f"{REPO}@{tag}:charts/kueue/README.md",
    )


def _release(tag: str, **facts: object) -> KueueRelease:
    chart = Chart(CHART_REPO, "kueue", tag.removeprefix("v"))
    return KueueRelease(version=tag, sources=_sources(tag), chart=chart, crds=tag, **facts)  # type: ignore[arg-type]


_V012 = dict(
    served=("v1beta1",), cohort_version="v1alpha1", cohort_parent_field="parent",
    when_can_borrow=("Borrow", "TryNextFlavor"), when_can_preempt=("Preempt", "TryNextFlavor"),
    max_flavors=16, max_covered_resources=16, max_group_entries=None,
    admission_modes=(), config_versions=("v1beta1",), gates_on=frozenset({"HierarchicalCohorts"}),
    topology_version="v1alpha1", max_topology_levels=8,
)  # fmt: skip
_V013 = _V012 | dict(
    cohort_version="v1beta1", cohort_parent_field="parentName", max_topology_levels=16
)
_V014 = _V013 | dict(
    max_flavors=64, max_covered_resources=64, max_group_entries=512,
    gates_on=frozenset({"HierarchicalCohorts", "TopologyAwareScheduling"}), topology_version="v1beta1",
)  # fmt: skip
_V015 = _V014 | dict(
    served=("v1beta1", "v1beta2"), cohort_version="v1beta2",
    when_can_borrow=("MayStopSearch", "TryNextFlavor"), when_can_preempt=("MayStopSearch", "TryNextFlavor"),
    admission_modes=("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"),
    config_versions=("v1beta1", "v1beta2"),
    gates_on=frozenset({"HierarchicalCohorts", "TopologyAwareScheduling", "AdmissionFairSharing"}),
    topology_version="v1beta2",
)  # fmt: skip

RELEASES: tuple[KueueRelease, ...] = (
    _release("v0.12.10", **_V012),
    _release("v0.13.10", **_V013),
    _release("v0.14.4", **_V014, dra="alpha"),
    _release("v0.14.8", **_V014, dra="alpha"),
    _release("v0.15.8", **_V015, dra="alpha"),
    _release("v0.16.9", **_V015, dra="alpha"),
    _release("v0.17.8", **_V015, dra="alpha"),
    _release("v0.18.6", **_V015, dra="beta"),
    _release("v0.19.2", **_V015, dra="beta"),
)

KUEUE = Component(
    name="kueue",
    field="kueue",
    releases=RELEASES,
    emitter="gpuplan.emit.kueue:emit",
    checks=("gpuplan.check.kueue",),
)


def on_flavors_rule(version: str | None) -> bool:
    """Tell whether a Kueue release's ClusterQueue webhook refuses admissionChecksStrategy onFlavors
    naming no flavor of the queue (None: the newest release).

    kubernetes-sigs/kueue pkg/webhooks/clusterqueue_webhook.go calls validateAdmissionCheckOnFlavors
    from v0.16 (v0.16.9, v0.17.8, v0.18.6, v0.19.2); v0.12.10 to v0.15.8 have no such rule.
    """
    return version is None or int(version.lstrip("v").split(".")[1]) >= 16
