"""What upstream says about moving between releases: required stops and the actions a bump must take.

Facts only, each with its source ("owner/repo@tag:path", or a release note's address). The PR comment's
upgrade plan (`gpuplan.diff.upgrade`) reads them through `steps` and `notes_between`; the CRD, chart
value, metric and image differences it computes itself from what gpuplan ships per release.

A note is `required` where upstream marks it so: Kueue's "Urgent Upgrade Notes" and "Actions Required
Before Upgrading" (its "ACTION REQUIRED" items among them) and "Upgrading steps"; an upgrade guide's
must-do step ("ensure ... before upgrading", "you will need to", a "breaking change" alert); a chart's
upgrade procedure. Behaviour changes upstream lists without asking for anything are kept with
required=False. A note names the release that brings it, so a bump from any supported release to a
later one crosses exactly the notes that concern it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Component


@dataclass(frozen=True)
class UpgradeNote:
    """An action upstream documents for a bump that crosses `version` (old < version <= new)."""

    component: str  # registry name: "kueue", "karpenter", ...
    version: str  # the release that brings it
    action: str  # what the platform team must do, in gpuplan's own words
    source: str  # where upstream says so
    required: bool = True  # upstream marks it required (see the module docstring)
    line: str = ""  # the release line, for a component with several ("aws", "azure")
    # the change it names replaces or restarts nodes by itself (Karpenter's drift after the bump)
    replaces_nodes: bool = False


@dataclass(frozen=True)
class RequiredStop:
    """A release a bump must stop at: from below `version` to above it, upgrade to `version` first."""

    component: str
    version: str
    why: str
    source: str
    line: str = ""


# ---------------------------------------------------------------------------------------------------
# Kueue (kubernetes-sigs/kueue). Read: the "Urgent Upgrade Notes" / "Actions Required Before Upgrading"
# and "Upgrading steps" of every release from v0.13.0 to v0.19.2 (CHANGELOG/CHANGELOG-0.<minor>.md at
# the newest supported tag of each minor), plus the Deprecation and Cleanup items that remove a feature
# gate or a flag. Upstream's policy (site/content/en/docs/getting-started/installation.md#upgrade-policy
# at v0.19.2): read the .0 notes of each minor crossed and the patch notes of the target minor; no
# release must be stopped at. A note backported to several lines is kept once, at the first release at
# or above a supported release that carries it: the metrics Certificate rename (v0.13.1, v0.14.0) is
# already in v0.12.6, below the oldest supported v0.12.10, so it is not listed; the MultiKueue
# kubeconfig validation (v0.13.8, again in v0.14.3 and v0.15.0) is listed at v0.13.8; the
# RejectUpdatesToCQWithInvalidOnFlavors gate (v0.16.6, v0.17.1, v0.18.0) at v0.16.6; the KueuePopulator
# chart (v0.17.6, v0.18.2, v0.19.0) at v0.17.6; RayJob's submitter sidecar (v0.17.7, v0.18.3, v0.19.0)
# at v0.17.7; LeaderWorkerSet size and the TAS slice checks (v0.18.5, v0.19.1) at v0.18.5.
# ---------------------------------------------------------------------------------------------------

_KUEUE_LOG = "kubernetes-sigs/kueue@{tag}:CHANGELOG/CHANGELOG-0.{minor}.md#{release}"
_KUEUE_TAGS = {
    13: "v0.13.10", 14: "v0.14.8", 15: "v0.15.8", 16: "v0.16.9", 17: "v0.17.8", 18: "v0.18.6",
    19: "v0.19.2",
}  # fmt: skip


def _kueue(version: str, action: str, required: bool = True) -> UpgradeNote:
    minor = int(version.split(".")[1])
    source = _KUEUE_LOG.format(tag=_KUEUE_TAGS[minor], minor=minor, release=version)
    return UpgradeNote("kueue", version, action, source, required)


_KUEUE_NOTES = (
    _kueue(
        "v0.13.0",
        "Cohort moves from v1alpha1 to v1beta1 with no conversion: before the bump, save "
        "every Cohort, rewrite it as kueue.x-k8s.io/v1beta1 with spec.parent renamed spec.parentName, "
        "delete the cohorts.kueue.x-k8s.io CRD, install v0.13, then re-apply the saved Cohorts.",
    ),
    _kueue(
        "v0.13.0",
        "Helm: the KueueViz backend and frontend images are now set as separate "
        "kueueViz.{backend,frontend}.image.repository and .tag values; move custom images there.",
    ),
    _kueue(
        "v0.13.0",
        "ProvisioningRequests are managed in autoscaling.x-k8s.io/v1: the Cluster "
        "Autoscaler that serves them must be 1.31.1 or newer.",
    ),
    _kueue(
        "v0.13.0",
        "The TASProfileMostFreeCapacity feature gate is gone: remove it from the "
        "Configuration's featureGates and from --feature-gates.",
    ),
    _kueue(
        "v0.13.0",
        "The visibility API's FlowSchema and PriorityLevelConfiguration are installed by "
        "default: on Kubernetes 1.28 or older, upgrade Kubernetes to 1.29+ or drop those two objects.",
    ),
    _kueue(
        "v0.13.8",
        "MultiKueue rejects insecure remote kubeconfigs: fix them, or turn on the "
        "MultiKueueAllowInsecureKubeconfigs gate for the time being (slated to go after v0.17).",
    ),
    _kueue(
        "v0.14.0",
        "Topology moves from v1alpha1 to v1beta1 with no conversion: before the bump, save "
        "every Topology and rewrite it as kueue.x-k8s.io/v1beta1, delete the topologies.kueue.x-k8s.io "
        "CRD, clear the finalizers of the remaining Topologies, install v0.14, then re-apply them.",
    ),
    _kueue(
        "v0.14.0",
        "Kueue no longer sets the cluster-autoscaler.kubernetes.io/ ProvisioningRequest "
        "annotations on pods: a custom ProvisioningRequest controller must read "
        "autoscaling.x-k8s.io/consume-provisioning-request and .../provisioning-class-name instead.",
    ),
    _kueue(
        "v0.14.0",
        "Eviction metrics (pods_ready_to_evicted_time_seconds, evicted_workloads_total, "
        "local_queue_evicted_workloads_total, evicted_workloads_once_total) report reason "
        '"Deactivated" plus an underlying_cause label instead of "DeactivatedXYZ" reasons: update '
        "alerts and dashboards that match the old values.",
    ),
    _kueue(
        "v0.14.0",
        "The kueue.x-k8s.io/podset-group-name annotation may no longer be a number: "
        "the creation webhook now refuses numeric values, so rename such groups before the bump.",
    ),
    _kueue(
        "v0.14.0",
        "ClusterQueue .status.pendingWorkloadsStatus (QueueVisibility) is no longer "
        "filled: read pending workloads through the VisibilityOnDemand API instead.",
        required=False,
    ),
    _kueue(
        "v0.14.5",
        "TAS now covers Kubeflow TrainJob: with Trainer v2, run Kubeflow Trainer v2.1.0 or newer.",
    ),
    _kueue(
        "v0.15.0",
        "LocalQueue .status.flavors is deprecated and will be removed: read flavors "
        "through the VisibilityOnDemand API.",
    ),
    _kueue(
        "v0.15.0",
        "The DRA integration uses resource.k8s.io/v1: turning it on needs Kubernetes "
        "1.34 or newer.",
    ),
    _kueue(
        "v0.15.0",
        "kueue.x-k8s.io/v1beta2 is served next to v1beta1 (still the storage version): "
        "start moving manifests to v1beta2; v0.16 stores v1beta2 and v1beta1 is to be dropped.",
    ),
    _kueue(
        "v0.16.0",
        "The FlavorFungibilityImplicitPreferenceDefault gate is gone: express the flavor "
        "preference in ClusterQueue spec.flavorFungibility.preference.",
    ),
    _kueue(
        "v0.16.0",
        'The "wl" short name of Workloads is gone: use "kwl", "kueueworkload" or '
        "workloads.kueue.x-k8s.io in kubectl and scripts.",
    ),
    _kueue(
        "v0.16.0",
        "v1beta2 becomes the storage version, but objects are rewritten only when "
        "written: after the bump run hack/migrate-to-v1beta2.sh (a no-op update of every Kueue "
        "object) so nothing stays stored as v1beta1 before a release stops serving it.",
        required=False,
    ),
    _kueue(
        "v0.16.6",
        "New alpha gate RejectUpdatesToCQWithInvalidOnFlavors (off): before turning it "
        "on, fix every ClusterQueue whose admissionChecksStrategy onFlavors names a missing flavor.",
    ),
    _kueue(
        "v0.17.0",
        "TAS stops reading the kueue.x-k8s.io/tas label: before the bump, make sure no "
        "TAS workload created before Kueue v0.14.0 is still around.",
    ),
    _kueue(
        "v0.17.0",
        "The TASProfileLeastFreeCapacity gate is removed: drop it from featureGates.",
        required=False,
    ),
    _kueue(
        "v0.17.6",
        "kueue-populator chart: its ConfigMap and hook RBAC (*-kueue-hook-*, "
        "*-kueue-resources) are not adopted by the new release; delete them before upgrading.",
    ),
    _kueue(
        "v0.17.7",
        "RayJobs in SidecarMode now count the submitter sidecar (500m CPU, 200Mi by "
        "default) on the head: add that headroom to the ClusterQueues that admit them.",
    ),
    _kueue(
        "v0.18.0",
        "In-house job integrations: pass the client to RunWithPodSetsInfo, PodSets, "
        "PodsReady and ReclaimablePods, and obtain events with GetEventRecorder (events.k8s.io/v1).",
    ),
    _kueue(
        "v0.18.0",
        "Every integration webhook now skips kube-system and Kueue's own namespace: move "
        "Kueue-managed workloads out of them, or widen managedJobsNamespaceSelector and the webhook "
        "namespaceSelectors.",
    ),
    _kueue(
        "v0.18.0",
        'evicted_workloads_once_total renames its "detailed_reason" label to '
        '"underlying_cause": update queries that read it.',
    ),
    _kueue(
        "v0.18.0",
        "The --visibility-server-port flag is gone: set the port in the Configuration's "
        "visibilityServer.bindPort before the bump.",
    ),
    _kueue(
        "v0.18.5",
        "A Kueue-managed LeaderWorkerSet's spec.leaderWorkerTemplate.size is immutable "
        "(LWSImmutableGroupSize, on): recreate the set to resize it, or turn the gate off.",
    ),
    _kueue(
        "v0.18.5",
        "Workloads with podSetSliceRequiredTopology must set a positive podSetSliceSize "
        "(TASValidateWorkloadSliceSize): fix directly created Workloads before the bump.",
    ),
    _kueue(
        "v0.18.5",
        "With TopologyAwareScheduling off, also set TASRecomputeAssignmentWithinSchedulingCycle "
        "to false before upgrading.",
    ),
    _kueue("v0.19.0", "In-house job integrations: RestorePodSetsInfo now takes a context."),
    _kueue(
        "v0.19.0",
        "MultiKueue kubeconfigs with locationType Path should live under "
        "/etc/multikueue/kubeconfigs (validation to be on by default later), or use Secret or "
        "ClusterProfile.",
    ),
    _kueue(
        "v0.19.0",
        "Autoscaling RayClusters now count the autoscaler sidecar (500m CPU, 512Mi per "
        "head by default): add that headroom to the ClusterQueues that admit them.",
    ),
    _kueue(
        "v0.19.0",
        "A negative subGroupCount on a Workload only warns now and is refused from v0.20: "
        "fix such Workloads.",
    ),
    _kueue(
        "v0.19.0",
        "WaitForPodsReady is on by default (30 min timeout and recovery timeout) where the "
        "Configuration does not set waitForPodsReady: set it explicitly to keep the old behaviour.",
    ),
    _kueue(
        "v0.19.0",
        "The DynamicResourceAllocation gate is removed: use KueueDRAIntegration.",
        required=False,
    ),
    _kueue(
        "v0.19.0",
        "MultiKueueAllowInsecureKubeconfigs is locked off: remove it from --feature-gates "
        "and give remote kubeconfigs certificate-authority-data.",
        required=False,
    ),
)

# ---------------------------------------------------------------------------------------------------
# Karpenter on AWS (aws/karpenter-provider-aws). Read: website/content/en/preview/upgrading/
# upgrade-guide.md at v1.14.1 ("Upgrading to 1.N.0+" for N = 1..14; the docs/ copy at v1.14.1 stops at
# 1.13) and website/content/en/v1.0/upgrading/v1-migration.md ("Before Upgrading to v1.1.0"). The
# sections for 1.4.0, 1.5.0 and 1.13.0 say there are no breaking changes.
# ---------------------------------------------------------------------------------------------------

_AWS_GUIDE = (
    "aws/karpenter-provider-aws@v1.14.1:website/content/en/preview/upgrading/upgrade-guide.md"
)
_AWS_V1 = "aws/karpenter-provider-aws@v1.14.1:website/content/en/v1.0/upgrading/v1-migration.md"


def _aws(
    version: str, action: str, required: bool = True, source: str = "", replaces_nodes: bool = False
) -> UpgradeNote:
    anchor = "#upgrading-to-" + version.removeprefix("v").replace(".", "")
    source = source or _AWS_GUIDE + anchor
    return UpgradeNote("karpenter", version, action, source, required, "aws", replaces_nodes)


_KARPENTER_AWS_NOTES = (
    _aws(
        "v1.1.0",
        "v1beta1 is no longer served: before the bump, every NodePool and EC2NodeClass "
        "manifest must be v1 (kubelet settings moved from the NodePool to the EC2NodeClass) and the "
        "nodepools, nodeclaims and ec2nodeclasses CRDs must list only v1 in status.storedVersions.",
        source=_AWS_V1 + "#before-upgrading-to-v110",
    ),
    _aws(
        "v1.1.0",
        "nodeClassRef.group and nodeClassRef.kind are required: set them (karpenter.k8s.aws, "
        "EC2NodeClass) on every NodePool and NodeClaim before the bump.",
        source=_AWS_V1 + "#nodeclassref-requirements",
    ),
    _aws(
        "v1.1.0",
        "instanceStorePolicy RAID0 now also applies to Bottlerocket: such nodes need a "
        "Bottlerocket image v1.22.0 or newer, or they fail to join.",
        required=False,
    ),
    _aws(
        "v1.1.0",
        "karpenter.k8s.aws/instance-accelerator-name now says trainium, inferentia or "
        "inferentia2: update selectors that expect inferentia for every Neuron device.",
        required=False,
    ),
    _aws(
        "v1.1.0",
        "Launch templates are found by the eks:eks-cluster-name tag instead of "
        "karpenter.k8s.aws/cluster: update IAM conditions that name the old tag.",
        required=False,
    ),
    _aws(
        "v1.1.0",
        "The generic operator metrics are deprecated in favour of per-resource metrics: "
        "move dashboards to the new names.",
        required=False,
    ),
    _aws(
        "v1.2.0",
        "karpenter_voluntary_disruption_queue_failures_total and "
        "karpenter_nodeclaims_disrupted_total report reasons in snake_case (drifted, empty, expired, "
        "underutilized); the nodeclass.status and nodeclass.termination controllers are one nodeclass "
        "controller: update queries and log filters.",
        required=False,
    ),
    _aws(
        "v1.3.0",
        "karpenter_ignored_pod_count is now karpenter_scheduler_ignored_pod_count; capacity "
        "type reserved appears: pods that select on-demand by nodeSelector need a nodeAffinity that "
        "also allows reserved to use ODCRs.",
        required=False,
    ),
    _aws(
        "v1.6.0",
        "Native ODCR support is on by default: open ODCRs are only used through "
        "EC2NodeClass spec.capacityReservationSelectorTerms, so set it before the bump or the "
        "reservations go unused and Karpenter launches on-demand instead.",
    ),
    _aws(
        "v1.7.0",
        "The controller role needs iam:ListInstanceProfiles (new instance profiles use the "
        "path /karpenter/<region>/<cluster>/<nodeclass-uid>/): add it before the bump.",
    ),
    _aws(
        "v1.7.0",
        "karpenter_pods_pods_drained_total is now karpenter_pods_drained_total and the "
        "liveness reason of karpenter_nodeclaims_disrupted_total is registration_timeout; pods with "
        "ResourceClaims are ignored: update queries.",
        required=False,
    ),
    _aws(
        "v1.8.0",
        "Static NodePools (spec.replicas) need the v1.8 CRDs: upgrade the karpenter-crd "
        "chart along with the controller to use them.",
        required=False,
    ),
    _aws(
        "v1.9.0",
        "The getting-started CloudFormation IAM policy is split into five policies: a "
        "controller role built from that template must attach all five.",
    ),
    _aws(
        "v1.10.0",
        "With interruptible ODCRs, add the Capacity Reservation Instance Interruption "
        "warning detail-type to the interruption EventBridge rules.",
    ),
    _aws(
        "v1.11.0",
        "With placement groups, the controller role needs ec2:DescribePlacementGroups and "
        "access to placement-group resources.",
    ),
    _aws(
        "v1.12.0",
        "The controller role needs ec2:DescribeInstanceStatus (instance status health "
        "checks in the interruption controller): add it before the bump.",
    ),
    _aws(
        "v1.12.0",
        "Drift now hashes the CA bundle: existing nodes are marked drifted and replaced "
        "after the bump, so set NodePool disruption budgets for the roll.",
        required=False,
        replaces_nodes=True,
    ),
    _aws(
        "v1.12.0",
        "Zonal shift (opt-in) needs arc-zonal-shift:GetManagedResource when turned on.",
        required=False,
    ),
    _aws(
        "v1.14.0",
        "A new autoscaling.x-k8s.io_capacitybuffers CRD (CapacityBuffer v1beta1) ships: "
        "upgrade the karpenter-crd chart together with the controller so it is installed.",
    ),
)

# ---------------------------------------------------------------------------------------------------
# Karpenter on Azure (Azure/karpenter-provider-azure). The repository has no changelog or upgrade guide
# at any supported tag (v1.6.2 to v1.14.2); its releases build on core kubernetes-sigs/karpenter (go.mod:
# core v1.6.2 at v1.6.2 and v1.6.8, v1.7.1 from v1.7.0, v1.10.0 from v1.10.0). The notes below are the
# core changes the AWS upgrade guide lists for core releases that an Azure bump crosses, each read in
# core's source at the tag the Azure release pins.
# ---------------------------------------------------------------------------------------------------

_KARPENTER_AZURE_NOTES = (
    UpgradeNote(
        "karpenter", "v1.7.0",
        "Core v1.7: karpenter_pods_pods_drained_total is now karpenter_pods_drained_total and the "
        "liveness reason of karpenter_nodeclaims_disrupted_total is registration_timeout: update queries.",
        "kubernetes-sigs/karpenter@v1.7.1:pkg/controllers/node/termination/terminator/metrics.go",
        required=False, line="azure",
    ),
    UpgradeNote(
        "karpenter", "v1.10.0",
        "Core v1.8+: static NodePools (spec.replicas, StaticCapacity gate) need the new NodePool CRD: "
        "apply the release's CRDs with the controller before using them.",
        "kubernetes-sigs/karpenter@v1.10.0:pkg/apis/crds/karpenter.sh_nodepools.yaml",
        required=False, line="azure",
    ),
)  # fmt: skip

# ---------------------------------------------------------------------------------------------------
# NVIDIA GPU Operator. Read: gpu-operator/release-notes.rst (25.3.2 to 26.7.0), upgrade.rst and
# platform-support.rst of NVIDIA/cloud-native-docs (main at commit 52dcb7b8d956; the docs have no
# release tags). None of these sections is marked as required; the CDI change is the one with a "must".
# ---------------------------------------------------------------------------------------------------

_GPU_DOCS = "NVIDIA/cloud-native-docs@52dcb7b8d956:gpu-operator/{page}.rst#{heading}"


def _gpu(version: str, action: str, required: bool = False) -> UpgradeNote:
    source = _GPU_DOCS.format(page="release-notes", heading=version.removeprefix("v"))
    return UpgradeNote("gpu-operator", version, action, source, required)


_GPU_OPERATOR_NOTES = (
    _gpu(
        "v25.10.0",
        "CDI is on by default (ClusterPolicy cdi.enabled true; cdi.default is ignored): "
        "management containers that take GPUs through NVIDIA_VISIBLE_DEVICES instead of the device "
        "plugin or DRA must set runtimeClassName: nvidia.",
        required=True,
    ),
    _gpu(
        "v25.10.0",
        "containerd and CRI-O are configured through drop-in files; the validator is part "
        "of the operator image (mirrors and image overrides no longer need a separate validator).",
    ),
    _gpu(
        "v26.3.0",
        "The NVIDIADriver CRD is for new installs only: upstream does not support switching "
        "an upgraded cluster from ClusterPolicy to NVIDIADriver.",
    ),
    _gpu(
        "v26.3.0",
        "The MIG manager generates a per-node MIG ConfigMap by default instead of the static "
        "one; the Kata manager is deprecated.",
    ),
    _gpu(
        "v26.7.0",
        "GPUCluster manages the DRA driver and cannot be used together with ClusterPolicy; "
        "it needs Kubernetes 1.34.2+, a 580+ driver and a CDI runtime.",
    ),
    _gpu(
        "v26.7.0",
        "A patch upgrade that leaves the driver configuration unchanged restarts driver pods "
        "in place (node cordoned, no drain or eviction); NVIDIADriver gains spec.upgradePolicy.",
    ),
)

# ---------------------------------------------------------------------------------------------------
# The other components, one bump each in the supported range.
# - DRA driver v25.12.0 -> v0.4.1: docs/upgrade.md of kubernetes-sigs/dra-driver-nvidia-gpu at v0.4.1.
# - Monitoring v0.92.1 -> v0.93.0 (kube-prometheus-stack 87.21.0 -> 88.3.0): the chart's UPGRADE.md
#   ("From 87.x to 88.x") and prometheus-operator's CHANGELOG.md ("0.93.0", the [CHANGE] entries).
# - KAI v0.16.8 -> v0.17.0: CHANGELOG.md at v0.17.0 (nothing marked breaking; one removed value).
# - NFD v0.18.3 -> v0.19.0: docs/deployment/helm.md ("Upgrading the chart", "From v0.14+") at v0.19.0.
# Volcano (v1.11.2 to v1.15.1), Multus (v4.2.4 -> v4.3.0) and the Cluster Autoscaler chart (9.53.0 ->
# 9.59.0) document no upgrade action at those tags: Volcano's CHANGELOG.md ends at v0.4, Multus has no
# changelog, and the chart README's migrations stop at 9.0 -> 9.1.
# ---------------------------------------------------------------------------------------------------

_DRA_UPGRADE = "kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1:docs/upgrade.md"
_KPS_UPGRADE = (
    "prometheus-community/helm-charts@kube-prometheus-stack-88.3.0:"
    "charts/kube-prometheus-stack/UPGRADE.md#from-87x-to-88x"
)
_OPERATOR_LOG = "prometheus-operator/prometheus-operator@v0.93.0:CHANGELOG.md#0930--2026-07-28"

_OTHER_NOTES = (
    UpgradeNote(
        "dra-driver", "v0.4.0",
        "Apply the v0.4 ComputeDomain and ComputeDomainClique CRDs before upgrading the chart: "
        "Helm does not update them.",
        _DRA_UPGRADE + "#upgrade-procedure",
    ),
    UpgradeNote(
        "dra-driver", "v0.4.0",
        "The chart is renamed dra-driver-nvidia-gpu (also at oci://registry.k8s.io/dra-driver-nvidia/"
        "charts) and versioned by SemVer: the first upgrade must set nameOverride=nvidia-dra-driver-gpu "
        "and an explicit chart version, or it creates a second copy of every object.",
        _DRA_UPGRADE + "#upgrade-procedure",
    ),
    UpgradeNote(
        "dra-driver", "v0.4.0",
        "On a node that hit the 'device cannot be reprepared after host reboot' issue, delete the "
        "kubelet plugin checkpoint file before upgrading.",
        _DRA_UPGRADE + "#before-you-begin",
    ),
    UpgradeNote(
        "dra-driver", "v0.4.0",
        "Forward only: once on v0.4, going back to v25.12.0 is unsupported (checkpoint BootID, "
        "ComputeDomain numNodes optional).",
        _DRA_UPGRADE + "#what-changed", required=False,
    ),
    UpgradeNote(
        "monitoring", "v0.93.0",
        "kube-prometheus-stack 88 runs prometheus-operator v0.93.0: server-side apply its "
        "monitoring.coreos.com CRDs before the chart upgrade, or enable crds.upgradeJob.enabled.",
        _KPS_UPGRADE,
    ),
    UpgradeNote(
        "monitoring", "v0.93.0",
        "With a Thanos sidecar uploading blocks (Prometheus v3.9.0+, Thanos v0.41.0+), local "
        "compaction stays on: set spec.disableCompaction: true to keep it off.",
        _OPERATOR_LOG, required=False,
    ),
    UpgradeNote(
        "monitoring", "v0.93.0",
        "The CRDs reject negative values in integer fields, and spec.shards of Prometheus and "
        "PrometheusAgent defaults to 1.",
        _OPERATOR_LOG, required=False,
    ),
    UpgradeNote(
        "kai-scheduler", "v0.17.0",
        "The queuecontroller.certSecretName and admission.certSecretName chart values are removed "
        "(the operator manages the webhook TLS secrets): drop them from values.",
        "kai-scheduler/KAI-Scheduler@v0.17.0:CHANGELOG.md#v0170---2026-08-03", required=False,
    ),
    UpgradeNote(
        "nfd", "v0.19.0",
        "Apply the release's nfd-api-crds.yaml (deployment/base/nfd-crds/) before helm upgrade: the "
        "chart keeps its NFD API CRDs in crds/, which Helm never updates.",
        "kubernetes-sigs/node-feature-discovery@v0.19.0:docs/deployment/helm.md#from-v014",
    ),
)  # fmt: skip

NOTES: tuple[UpgradeNote, ...] = (
    *_KUEUE_NOTES, *_KARPENTER_AWS_NOTES, *_KARPENTER_AZURE_NOTES, *_GPU_OPERATOR_NOTES,
    *_OTHER_NOTES,
)  # fmt: skip

# The rule sits in life-cycle-policy.rst, which platform-support.rst includes.
_GPU_SUPPORT = _GPU_DOCS.format(page="life-cycle-policy", heading="nvidia-gpu-operator-life-cycle")

STOPS: tuple[RequiredStop, ...] = (
    RequiredStop(
        "karpenter", "v1.0.6",
        "v1.1.0 stops serving v1beta1: the stored NodePools, NodeClaims and EC2NodeClasses must first be "
        "rewritten as v1 by the migration controller of v1.0.6 or newer. gpuplan's oldest release, "
        "v1.0.14, satisfies it; the v1.1.0 notes say what to finish on it before moving on.",
        _AWS_V1 + "#stored-version-migration", line="aws",
    ),
    RequiredStop(
        "gpu-operator", "v25.10.0",
        "Upgrades are supported within a major release or to the next one: from 25.3.x, stop at any "
        "25.10.x (gpuplan: v25.10.0 or v25.10.1) before 26.x.",
        _GPU_SUPPORT,
    ),
    RequiredStop(
        "gpu-operator", "v26.3.0",
        "Upgrades are supported within a major release or to the next one: from 25.10.x or older, stop "
        "at any 26.3.x (gpuplan: v26.3.0 to v26.3.3) before 26.7.",
        _GPU_SUPPORT,
    ),
)  # fmt: skip


def version_key(version: str) -> tuple[int, ...]:
    """Return a release's numbers for ordering ("v0.14.4" -> (0, 14, 4)); a suffix after "-" is ignored."""
    core = version.removeprefix("v").split("-", 1)[0]
    return tuple(int(part) for part in core.split(".") if part.isdigit())


# Components whose numbering started over: a version whose first number is below the value belongs to
# the newer series. The DRA driver went from calendar versions (NVIDIA/k8s-dra-driver-gpu, v25.12.0) to
# SemVer v0.4.0 when it moved to kubernetes-sigs (kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1:
# docs/upgrade.md#what-changed), so v0.4.1 comes after v25.12.0.
_RESTARTED = {"dra-driver": 25}


def release_order(component: str, version: str) -> tuple[int, ...]:
    """Return the key that orders a component's releases oldest first (series, then numbers)."""
    key = version_key(version)
    restart = _RESTARTED.get(component)
    series = 1 if restart is not None and key and key[0] < restart else 0
    return (series, *key)


def notes_between(component: Component, line: str, old: str, new: str) -> list[UpgradeNote]:
    """Return the notes of the releases a bump from `old` to `new` crosses (old < v <= new), oldest first."""
    name = component.name
    low, high = release_order(name, old), release_order(name, new)
    found = [
        n
        for n in NOTES
        if n.component == name and n.line == line and low < release_order(name, n.version) <= high
    ]
    return sorted(found, key=lambda n: release_order(name, n.version))


def steps(component: Component, line: str, old: str, new: str) -> list[RequiredStop]:
    """Return the releases a bump from `old` to `new` must stop at on the way (old < v < new), oldest first."""
    name = component.name
    low, high = release_order(name, old), release_order(name, new)
    found = [
        s
        for s in STOPS
        if s.component == name and s.line == line and low < release_order(name, s.version) < high
    ]
    return sorted(found, key=lambda s: release_order(name, s.version))
