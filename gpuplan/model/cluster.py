"""The Cluster input file: components, priorities, cohorts, GPU node pools and networks."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from gpuplan.components import REGISTRY
from gpuplan.model.common import (
    DNS1123_SUBDOMAIN,
    ContainerDefaults,
    Ignore,
    LabelKey,
    LabelValue,
    Model,
    Name,
    Quantity,
    Version,
)
from gpuplan.model.common import (
    matching as _matching,
)
from gpuplan.model.drivers import (
    Driver,
    DriverVersion,
    NodeOs,
    PoolDriver,
    Registry,
    ServiceMonitor,
)
from gpuplan.model.karpenter_azure import SelfHostedAzure
from gpuplan.model.monitoring import Monitoring
from gpuplan.model.nodeclass import AksNodeClassSettings, Ec2NodeClassSettings
from gpuplan.model.sriov import SriovDevices
from gpuplan.model.tenant import Subject

Provider = Literal["aws", "azure", "gcp", "onprem"]
KUBERNETES_VERSION = r"^1\.[0-9]{1,2}$"


# Kubernetes object names (DNS-1123 subdomain, at most 253) and kinds (an upper-case identifier).
Subdomain = Annotated[
    str,
    Field(max_length=253),
    _matching(DNS1123_SUBDOMAIN, "a DNS-1123 subdomain such as karpenter.k8s.aws"),
]
Kind = Annotated[
    str, _matching(re.compile(r"[A-Z][A-Za-z0-9]{0,62}"), "a kind such as EC2NodeClass")
]


# A URL or git revision Argo CD reads verbatim: no white space or control characters (a line break
# in one would still round-trip through YAML, but no git server or API server has such a name).
Url = Annotated[
    str, _matching(re.compile(r"[^\s\x00-\x1f\x7f]+"), "a URL without spaces or control characters")
]
# git check-ref-format: no space, control characters, ~ ^ : ? * [ \ or "..", not ending in "." or "/".
Revision = Annotated[
    str,
    _matching(
        re.compile(r"(?!.*\.\.)[^\s\x00-\x1f\x7f~^:?*\[\\]+(?<![./])"),
        "a git branch, tag or commit",
    ),
]
# A name shown by Argo CD: any printable text on one line.
OneLine = Annotated[
    str, _matching(re.compile(r"[^\x00-\x1f\x7f\x85\u2028\u2029]+"), "text on one line")
]


def _kubernetes_version(value: Any) -> Any:
    """Return an unquoted version as the YAML source wrote it (1.30, not the number 1.3), or refuse it."""
    if isinstance(value, float) and not isinstance(value, bool):
        text = getattr(value, "text", None)  # gpuplan.inputs.load.SourceFloat
        if isinstance(text, str) and re.fullmatch(KUBERNETES_VERSION, text):
            return text
        raise ValueError(
            f'{text or value} is a number in YAML, which drops trailing zeros: quote it, kubernetesVersion: "{text or value}"'
        )
    return value


class Destination(Model):
    """Where Argo CD applies the cluster's manifests: an API server URL or a registered name."""

    server: Url | None = None
    """API server URL, such as https://kubernetes.default.svc."""
    name: OneLine | None = None
    """Cluster name as registered in Argo CD."""

    @model_validator(mode="after")
    def _one_target(self) -> Destination:
        if (self.server is None) == (self.name is None):
            raise ValueError("set exactly one of server or name")
        return self


class GitOps(Model):
    """The Argo CD Application that syncs this cluster's rendered folder."""

    repo_url: Url = Field(alias="repoURL", min_length=1)
    """Git repository Argo CD reads (this repository)."""
    target_revision: Revision = "HEAD"
    """Branch, tag or commit Argo CD syncs."""
    destination: Destination = Destination(server="https://kubernetes.default.svc")
    """Target cluster."""
    project: Name = "default"
    """Argo CD AppProject."""
    namespace: Name = "argocd"
    """Namespace Argo CD runs in (where the Application objects live)."""
    application_set: Name | None = None
    """Sync this cluster's folder through the ApplicationSet of this name (one for many clusters, with the
    same repoURL, targetRevision, project, namespace and kind of destination) instead of its own Application."""


DURATION = re.compile(
    r"0|([0-9]+h)?([0-9]+m)?([0-9]+s)?(?<=[hms])"
)  # a Go duration as Kueue's config takes it


def _releases(component: str) -> WithJsonSchema:
    """Return the JSON schema of a component's version: one of its supported releases (editors complete them).

    Any other version is an error at its line, with the supported ones and a did-you-mean (resolve.py).
    """
    return WithJsonSchema(
        {"type": "string", "enum": list(dict.fromkeys(REGISTRY[component].versions))}
    )


class GpuOperator(Model):
    """NVIDIA GPU Operator: ClusterPolicy, MIG manager and device-plugin configuration."""

    version: Annotated[Version, _releases("gpu-operator")]
    """GPU Operator release, such as v26.7.0; it decides the operand images and the fields emitted."""
    namespace: Name = "gpu-operator"
    """Namespace the operator runs in; default gpu-operator."""
    driver_version: DriverVersion | None = None
    """NVIDIA driver of the GPU nodes, such as "580.82.07" (quote it in YAML): the operator installs it on
    managed pools (its branch must be one this GPU Operator release supports); on preinstalled pools it
    states what the node image ships. Either way its branch must run every pool's GPU."""
    driver: Driver = Driver()
    """Driver mode (managed or preinstalled), GPUDirect RDMA and the driver upgrade policy."""
    toolkit: bool | None = None
    """Run the operator's NVIDIA Container Toolkit; default: only when some pool's OS ships none."""
    mig_strategy: Literal["single", "mixed"] = "mixed"
    """mixed: each MIG profile is its own resource; single: MIG instances are nvidia.com/gpu."""
    dcgm_exporter: bool = True
    """Run the DCGM exporter (GPU metrics for Prometheus)."""
    service_monitor: ServiceMonitor | None = None
    """Create a ServiceMonitor for the DCGM exporter (needs the Prometheus Operator's CRDs)."""
    gpu_direct_storage: bool = False
    """GPUDirect Storage: run the nvidia-fs driver (needs managed drivers with open kernel modules)."""
    node_status_exporter: bool = False
    """Run the node-status exporter (operand validation metrics per node)."""
    validator_workload: Literal["run", "skip"] | None = None
    """Whether the operator validator runs a CUDA workload on each GPU node before its GPUs are
    advertised (run: catches broken GPUs, costs a pod start per node; skip). Default: the release's
    chart, skip on v25.3.1 and v25.3.2, run from v25.3.3."""
    registry: Registry = Registry()
    """A private or air-gapped registry for every operand image, with pull secrets."""
    nfd: Literal["bundled", "standalone"] = "bundled"
    """Node Feature Discovery: installed by the GPU Operator chart (bundled) or by its own Application
    (standalone, for clusters where NFD serves more than the GPU Operator)."""


class AdmissionFairSharing(Model):
    """Kueue's admission fair sharing: inside a ClusterQueue, namespaces' queues that used less go first.

    The Configuration's admissionFairSharing and every ClusterQueue's admissionScope
    (kubernetes-sigs/kueue apis/config/v1beta2/configuration_types.go, on by default from v0.15).
    """

    usage_half_life_time: Annotated[str, _matching(DURATION, "a duration such as 168h")]
    """How fast past usage is forgotten: it decays by half over this time (0s: at once), such as 168h."""
    usage_sampling_interval: Annotated[str, _matching(DURATION, "a duration such as 5m")] = "5m"
    """How often usage is sampled; default 5m, Kueue's (apis/config/v1beta2/defaults.go)."""
    resource_weights: dict[
        Annotated[str, Field(min_length=1, max_length=253)], Annotated[float, Field(ge=0)]
    ] = {}
    """Weight of each resource in the usage, such as {nvidia.com/gpu: 1, cpu: 0}; default 1 each."""


class Kueue(Model):
    """Kueue: ResourceFlavors, ClusterQueues, LocalQueues, Cohorts, WorkloadPriorityClasses."""

    version: Annotated[Version, _releases("kueue")]
    """Kueue release, such as v0.19.2; it decides which ClusterQueue fields and values are emitted."""
    namespace: Name = "kueue-system"
    """Namespace Kueue runs in; default kueue-system."""
    frameworks: list[Annotated[str, Field(min_length=1, max_length=253)]] = [
        "batch/job", "pod", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "ray.io/rayjob", "ray.io/raycluster",
    ]  # fmt: skip
    """Job kinds Kueue manages (its Configuration's integrations.frameworks); "pod" gates bare pods too,
    in tenant namespaces only."""
    admission_fair_sharing: AdmissionFairSharing | None = None
    """Order workloads inside each tenant's ClusterQueue by their namespace queue's recent usage (Kueue v0.15 and later)."""


class Volcano(Model):
    """Volcano: a Queue per tenant allocation."""

    version: Annotated[Version, _releases("volcano")]
    """Volcano release, such as v1.15.1; before v1.14 Queues get no dequeueStrategy."""
    namespace: Name = "volcano-system"
    """Namespace Volcano runs in; default volcano-system."""


class KaiParentQuota(Model):
    """A KAI parent queue's quota, the most its children's quotas may add up to."""

    gpu: int | None = Field(default=None, ge=0, le=1_000_000)
    """GPUs (KAI counts a MIG instance of Ng as N GPUs); default: the children's sum."""
    cpu: Quantity | None = None
    """cpu; default: the children's sum."""
    memory: Quantity | None = None
    """memory; default: the children's sum."""


class Kai(Model):
    """KAI Scheduler: a parent Queue per cohort, a leaf Queue per tenant allocation."""

    version: Annotated[Version, _releases("kai-scheduler")]
    """KAI Scheduler release, such as v0.17.0."""
    namespace: Name = "kai-scheduler"
    """Namespace KAI Scheduler runs in; default kai-scheduler."""
    parents: dict[Name, KaiParentQuota] = {}
    """Quota of the parent Queue of each cohort, keyed by cohort name; a cohort left out gets the
    sum of its children. gpuplan refuses children whose quotas add up to more than the parent's."""


class Nfd(Model):
    """Node Feature Discovery's own Application: the release it installs."""

    version: Annotated[Version, _releases("nfd")]
    """NFD release, such as v0.19.0 (default: the newest gpuplan knows). Only for NFD on its own
    (gpuOperator.nfd: standalone, or static pools without the GPU Operator): a bundled NFD is the
    GPU Operator chart's."""


class Multus(Model):
    """Multus (and Whereabouts beside it) for the cluster's networks: the release installed."""

    version: Annotated[Version, _releases("multus")]
    """Multus release, such as v4.3.0 (default: the newest gpuplan knows); it picks the Whereabouts
    release installed with it."""


class DraDriver(Model):
    """The NVIDIA DRA driver for GPUs: allocates the GPUs of pools with `dra` through ResourceClaims."""

    version: Annotated[Version, _releases("dra-driver")]
    """DRA driver release (kubernetes-sigs/dra-driver-nvidia-gpu), such as v0.4.1."""
    namespace: Name = "dra-driver-nvidia-gpu"
    """Namespace the driver runs in; default dra-driver-nvidia-gpu."""
    resource_api: (
        Literal["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"] | None
    ) = None
    """The resource.k8s.io version gpuplan writes DeviceClasses and ResourceClaimTemplates in, and the
    driver's chart uses. Default resource.k8s.io/v1, which Kubernetes serves from 1.34. Kubernetes 1.32
    and 1.33 serve only beta versions, off by default: there state the one the cluster's administrator
    turned on (the DynamicResourceAllocation feature gate and --runtime-config), resource.k8s.io/v1beta1
    (1.32, 1.33) or resource.k8s.io/v1beta2 (1.33)."""


class NodeClassRef(Model):
    """The Karpenter provider's node class every NodePool of this cluster uses."""

    group: Subdomain
    """API group of the node class, such as karpenter.k8s.aws or karpenter.azure.com."""
    kind: Kind
    """Kind of the node class, such as EC2NodeClass or AKSNodeClass."""
    name: Subdomain
    """Name of the node class object the NodePools point at."""
    aws: Ec2NodeClassSettings | None = None
    """Render the EC2NodeClass from these settings; without them it is yours, in extra/<cluster>/."""
    azure: AksNodeClassSettings | None = None
    """Render the AKSNodeClass from these settings; without them it is yours, in extra/<cluster>/."""


Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
# A Karpenter budget's node count: kubernetes-sigs/karpenter v1.14.1 pkg/apis/crds/karpenter.sh_nodepools.yaml
# (spec.disruption.budgets[].nodes pattern).
BUDGET_NODES = re.compile(r"((100|[0-9]{1,2})%|[0-9]+)")


class MaintenanceWindow(Model):
    """When Karpenter may drain drifted nodes (a new AMI, security patches, a changed NodePool).

    Outside the window drifted nodes are not drained; an empty one still goes (consolidation).
    """

    days: list[Weekday] = Field(default=["sunday"], min_length=1)
    """Days the window opens on (UTC); default [sunday]."""
    start: Annotated[
        str, _matching(re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]"), "a time of day such as 02:00")
    ] = "02:00"
    """Time of day the window opens, HH:MM in UTC (Karpenter's budget schedules have no time zone); default 02:00."""
    duration: Annotated[
        str,
        _matching(
            re.compile(r"([1-9][0-9]?h)?([1-9][0-9]?m)?(?<=[hm])"), "a duration such as 4h or 1h30m"
        ),
    ] = "4h"
    """How long the window stays open, in hours and minutes such as 4h or 1h30m (at most 24h); default 4h."""
    nodes: Annotated[
        str, _matching(BUDGET_NODES, 'a node count or percentage such as "1" or "10%"')
    ] = "1"
    """Drifted nodes of each NodePool drained at once inside the window: a count or a percentage
    ("10%", rounded up by Karpenter); "0" never drains a drifted node. Default "1" (quote it)."""

    @property
    def minutes(self) -> int:
        """Return the window's length in minutes."""
        hours, _, rest = (
            self.duration.partition("h") if "h" in self.duration else ("0", "", self.duration)
        )
        return int(hours) * 60 + int(rest.removesuffix("m") or 0)

    @model_validator(mode="after")
    def _at_most_a_day(self) -> MaintenanceWindow:
        if self.minutes > 24 * 60:
            raise ValueError(
                f"duration {self.duration} is longer than a day: list more days instead"
            )
        if len(set(self.days)) != len(self.days):
            raise ValueError("days lists a day twice")
        return self


class Karpenter(Model):
    """Karpenter: a NodePool per pool it provisions (autoscaled, or static with a karpenter section)."""

    version: Annotated[Version, _releases("karpenter")]
    """Release of the cluster provider's Karpenter, such as v1.14.1 (aws/karpenter-provider-aws) or v1.6.2
    (Azure/karpenter-provider-azure): the cluster's provider picks the list of supported releases."""
    node_class: NodeClassRef
    """The provider's node class every NodePool of this cluster uses."""
    namespace: Name = "kube-system"
    """Namespace Karpenter runs in; default kube-system."""
    cluster_name: OneLine | None = None
    """The cloud's name of the cluster (Karpenter's settings.clusterName); default: the cluster's name."""
    interruption_queue: OneLine | None = None
    """SQS queue of spot interruption and rebalance events (AWS settings.interruptionQueue); none: not watched."""
    self_hosted: bool = False
    """Azure: install Karpenter with its chart; default: AKS Node Auto Provisioning runs it (nothing installed)."""
    azure: SelfHostedAzure | None = None
    """Azure, selfHosted: the cluster's endpoint, identities and network the controller needs (required there)."""
    maintenance: MaintenanceWindow = MaintenanceWindow()
    """When drifted nodes (new AMI, security updates) are drained and replaced; default Sundays
    02:00-06:00 UTC, one node of each NodePool at a time."""


class ClusterAutoscaler(Model):
    """The Cluster Autoscaler: scales the managed node groups of pools with nodes.autoscaler: cluster-autoscaler."""

    version: Annotated[Version, _releases("cluster-autoscaler")]
    """Version of the kubernetes/autoscaler cluster-autoscaler chart, such as 9.59.0 (aws: gpuplan installs it;
    azure and gcp run the cloud's own autoscaler, so no chart is installed there: AKS gets the priority
    expander's ConfigMap, and `gpuplan requirements` prints what to set on the cluster and node pools)."""
    namespace: Name = "kube-system"
    """aws: namespace the autoscaler runs in (and its priority-expander ConfigMap lives in); default
    kube-system. AKS's own autoscaler reads its ConfigMap from kube-system, so azure allows no other."""
    cluster_name: OneLine | None = None
    """The cloud's name of the cluster, for auto-discovery by the ASG tag k8s.io/cluster-autoscaler/<name>;
    default: the cluster's name."""
    discovery: Literal["auto", "explicit"] = "auto"
    """auto: find the node groups by their tags (autoDiscovery.clusterName); explicit: list each pool's
    node group with its min and max (autoscalingGroups)."""
    node_groups: dict[Name, Annotated[OneLine, Field(min_length=1, max_length=255)]] = {}
    """The cloud's name of a Cluster Autoscaler pool's node group (aws: its Auto Scaling group; azure: its
    scale set), keyed by pool name. Required for every pool with discovery explicit; otherwise only where
    the name is not the cloud's usual one, which the priority expander matches: eks-<nodeGroup>-<UUID>
    (EKS managed node groups since 2021; older ones are eks-<UUID>) or aks-<nodeGroup>-<number>-vmss."""
    region: Annotated[LabelValue, Field(min_length=1)] | None = None
    """AWS region of the node groups, such as us-east-1 (the chart's awsRegion); required on aws."""
    scale_down_delay_after_add: Annotated[
        str, _matching(re.compile(r"[1-9][0-9]{0,3}[mh]"), "a duration such as 30m")
    ] = "30m"
    """How long after a scale-up no node is removed; default 30m (GPU nodes take long to come up, and pulls of
    large images make fresh nodes look idle)."""
    scale_down_unneeded_time: Annotated[
        str, _matching(re.compile(r"[1-9][0-9]{0,3}[mh]"), "a duration such as 30m")
    ] = "30m"
    """How long a node stays unneeded before it is removed; default 30m (GPU jobs come in bursts)."""


class Components(Model):
    """The components gpuplan compiles for; an omitted component gets nothing emitted."""

    gpu_operator: GpuOperator | None = None
    """NVIDIA GPU Operator: drivers, device plugin, MIG manager, DCGM exporter."""
    kueue: Kueue | None = None
    """Kueue: quotas, borrowing and preemption of the tenants' workloads."""
    volcano: Volcano | None = None
    """Volcano: a Queue per tenant allocation, weighted by its weight."""
    karpenter: Karpenter | None = None
    """Karpenter: needed by autoscaled pools (nodes: {min, max})."""
    monitoring: Monitoring | None = None
    """ServiceMonitors, PrometheusRules, Grafana dashboards and Prometheus Adapter rules for the pools and tenants."""
    kai: Kai | None = None
    """KAI Scheduler: hierarchical GPU Queues, a parent per cohort and a leaf per tenant allocation."""
    cluster_autoscaler: ClusterAutoscaler | None = None
    """Cluster Autoscaler: needed by pools with nodes.autoscaler: cluster-autoscaler (managed node groups)."""
    nfd: Nfd | None = None
    """Pin the release of NFD's own Application; default the newest gpuplan knows."""
    multus: Multus | None = None
    """Pin the release of Multus and Whereabouts (installed for networks); default the newest gpuplan knows."""
    dra_driver: DraDriver | None = None
    """NVIDIA DRA driver: needed by pools with `dra` (Kubernetes 1.34 and later)."""
    quota_authority: Literal["kueue", "volcano", "kai"] | None = None
    """Which scheduler enforces the tenants' quotas when more than one of Kueue, Volcano and KAI run
    (one must: a pod admitted by one and held by the other strands GPUs); the others only queue or gang-schedule."""


class PriorityClass(Model):
    """A PriorityClass and a Kueue WorkloadPriorityClass of the same name."""

    name: Name
    """Name of the PriorityClass and WorkloadPriorityClass; tenants refer to it by this name."""
    value: int = Field(ge=-2_147_483_648, le=1_000_000_000)
    """Priority; user classes may not exceed one billion (the API server's limit)."""
    description: str | None = Field(default=None, max_length=2048)
    """What the class is for, copied into both objects; at most 2048 characters."""
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    """PreemptLowerPriority (default), or Never: pods of this class wait instead of preempting."""


class Cohort(Model):
    """A Kueue cohort: ClusterQueues in it lend and borrow unused quota."""

    name: Name
    """Cohort name, which tenants' allocations give as their cohort."""
    parent: Name | None = None
    """Parent cohort, for hierarchical cohorts (Kueue v0.11 and later)."""


class Nodes(Model):
    """Node count: {count: N} for a static pool, {min: A, max: B} for an autoscaled one."""

    count: int | None = Field(default=None, ge=0, le=100_000)
    """Static pool: the number of nodes (0 to 100000)."""
    min: int | None = Field(default=None, ge=0, le=100_000)
    """Autoscaled pool: the fewest nodes you expect. Karpenter keeps no minimum (it launches nodes
    only for pending pods), so gpuplan counts none of them as always-on capacity; for nodes that
    must stay up, use a static pool ({count: N})."""
    max: int | None = Field(default=None, ge=0, le=100_000)
    """Autoscaled pool: most nodes the pool scales to (the NodePool's limits); quotas must fit it."""
    autoscaler: Literal["karpenter", "cluster-autoscaler"] | None = None
    """Autoscaled pool: what scales it: karpenter (default), or cluster-autoscaler, the Cluster Autoscaler on
    the managed node group named by nodeGroup (min and max must match the node group's). The Cluster
    Autoscaler keeps the node group's minimum up, so there nodes.min is always-on capacity."""
    capacity_type: Literal["on-demand", "spot"] = "on-demand"
    """Cluster Autoscaler pools: how the node group buys its nodes; on-demand groups are preferred
    over spot ones when the autoscaler picks which group to grow (unless priority says otherwise)."""
    priority: int | None = Field(default=None, ge=1, le=1_000_000)
    """Cluster Autoscaler pools: the priority expander's value of this node group; a HIGHER value is
    preferred. Default: 20 for on-demand, 10 for spot."""

    @model_validator(mode="after")
    def _shape(self) -> Nodes:
        if self.count is not None:
            if self.min is not None or self.max is not None:
                raise ValueError(
                    "set either count (static pool) or min and max (autoscaled), not both"
                )
        elif self.min is None or self.max is None:
            raise ValueError("set count (static pool) or both min and max (autoscaled pool)")
        elif self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if self.count is not None and self.autoscaler is not None:
            raise ValueError("autoscaler applies to autoscaled pools (min and max), not to count")
        if self.by_cluster_autoscaler is False and (
            self.priority is not None or self.capacity_type != "on-demand"
        ):
            raise ValueError(
                "capacityType and priority apply to pools with autoscaler: cluster-autoscaler"
            )
        return self

    @property
    def by_cluster_autoscaler(self) -> bool:
        """Tell whether the Cluster Autoscaler scales this pool (its managed node group)."""
        return self.count is None and self.autoscaler == "cluster-autoscaler"

    @property
    def by_karpenter(self) -> bool:
        """Tell whether Karpenter scales this pool (autoscaled, not by the Cluster Autoscaler)."""
        return self.count is None and not self.by_cluster_autoscaler

    @property
    def autoscaled(self) -> bool:
        """Tell whether an autoscaler (Karpenter or the Cluster Autoscaler) scales this pool (min and max)."""
        return self.count is None

    @property
    def most(self) -> int:
        """Return the largest node count (count, or max)."""
        return self.count if self.count is not None else int(self.max or 0)

    @property
    def least(self) -> int:
        """Return the stated lower bound (count, or min; Karpenter keeps no minimum)."""
        return self.count if self.count is not None else int(self.min or 0)


class KarpenterPool(Model):
    """How Karpenter provisions a pool's nodes: an autoscaled NodePool, or a static one ({count: N})."""

    instance_types: list[Annotated[LabelValue, Field(min_length=1)]] = Field(min_length=1)
    """Cloud instance types the pool's nodes may be, such as [p5.48xlarge]."""
    capacity_types: list[Literal["on-demand", "spot", "reserved"]] = ["on-demand"]
    """Purchase options: on-demand (default), spot or reserved."""
    zones: list[Annotated[LabelValue, Field(min_length=1)]] = []
    """Zones nodes may come up in, such as [us-east-1a]; default: any zone."""
    architecture: Literal["amd64", "arm64"] = "amd64"
    """CPU architecture of the nodes: amd64 (default) or arm64."""
    node_class: Subdomain | None = None
    """Name of another node class of the cluster's kind for this pool, yours in extra/<cluster>/ (such
    as one without the EFA interfaces, which Karpenter launches only on instance types that have them);
    default components.karpenter.nodeClass.name."""


class Taint(Model):
    """A node taint; workloads of the pool get the matching toleration."""

    key: LabelKey
    """Taint key, such as nvidia.com/gpu."""
    value: LabelValue | None = None
    """Taint value; default none."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """NoSchedule, PreferNoSchedule or NoExecute."""


class TimeSlicing(Model):
    """Time-slicing: each GPU (or MIG instance) is advertised `replicas` times."""

    replicas: int | None = Field(default=None, ge=2, le=1024)
    """Shares each GPU (or MIG instance) is advertised as (2 to 1024); required on device-plugin pools.
    DRA pools take none: there the consumers of one ResourceClaim share its device."""
    interval: Literal["Default", "Short", "Medium", "Long"] | None = None
    """DRA pools only: the time slice of each process (the DRA driver's timeSlicingConfig.interval);
    default the driver's, Default."""
    rename_by_default: bool = True
    """Advertise shares as <resource>.shared so they never mix with whole GPUs in a quota."""
    fail_requests_greater_than_one: bool = False
    """Reject pods asking for more than one share (a share gives no more compute); default false."""


# CUDA MPS serves at most 48 client processes per GPU on Volta and later (NVIDIA MPS documentation,
# "Limitations": "up to 48 clients per device").
MPS_MAX_CLIENTS = 48


class Mps(Model):
    """CUDA MPS sharing: each GPU is advertised `replicas` times, with a memory and SM split."""

    replicas: int | None = Field(default=None, ge=2, le=MPS_MAX_CLIENTS)
    """Shares of each GPU, each with an even part of its memory and SMs (2 to 48, MPS's client limit);
    required on device-plugin pools. DRA pools take none: the consumers of one ResourceClaim share its GPU."""
    rename_by_default: bool = True
    """Advertise shares as <resource>.shared so they never mix with whole GPUs in a quota."""


MigLayout = dict[str, Annotated[int, Field(ge=0, le=8)]]


class MigDevices(Model):
    """A MIG layout for some GPU indexes of each node."""

    gpus: list[Annotated[int, Field(ge=0, le=63)]] = Field(min_length=1)
    """GPU indexes on each node that get this layout; together the entries cover every index once."""
    layout: MigLayout = Field(min_length=1)
    """MIG instances per profile on each of these GPUs, such as {3g.40gb: 2}."""


class Mig(Model):
    """MIG partitioning: one layout for every GPU, or layouts per GPU index."""

    layout: MigLayout | None = Field(default=None, min_length=1)
    """MIG instances per profile on every GPU, such as {1g.10gb: 7}; or give devices."""
    devices: list[MigDevices] | None = Field(default=None, min_length=1)
    """Layouts per GPU index, when the GPUs of a node are split differently; or give layout."""

    @model_validator(mode="after")
    def _one_form(self) -> Mig:
        if (self.layout is None) == (self.devices is None):
            raise ValueError("set exactly one of layout (every GPU) or devices (per GPU index)")
        return self


def _sharing(value: Any) -> Any:
    if value == "exclusive":
        return {}
    if isinstance(value, str):
        raise ValueError(
            f"{value[:40]!r} is not a sharing mode: use exclusive, or a mapping with mig, timeSlicing or mps"
        )
    return value


class Sharing(Model):
    """How the pool's GPUs are shared: exclusive (empty), MIG, time-slicing, MPS or MIG+time-slicing."""

    mig: Mig | None = None
    """Split each GPU into MIG instances (GPUs that support MIG only)."""
    time_slicing: TimeSlicing | None = None
    """Share each GPU (or, with mig, each MIG instance) by time-slicing."""
    mps: Mps | None = None
    """Share each GPU through CUDA MPS (not with mig or timeSlicing)."""

    @model_validator(mode="after")
    def _combination(self) -> Sharing:
        if self.mps is not None and (self.mig is not None or self.time_slicing is not None):
            raise ValueError("mps cannot be combined with mig or timeSlicing")
        return self

    @property
    def mode(self) -> str:
        """Return exclusive, mig, time-slicing, mps or mig+time-slicing."""
        if self.mig is not None:
            return "mig+time-slicing" if self.time_slicing is not None else "mig"
        if self.time_slicing is not None:
            return "time-slicing"
        return "mps" if self.mps is not None else "exclusive"

    @property
    def replicas(self) -> int:
        """Return how many ways each GPU or MIG instance is shared (1 when not shared)."""
        sharer = self.time_slicing or self.mps
        return (sharer.replicas or 1) if sharer is not None else 1

    @property
    def renamed(self) -> bool:
        """Tell whether shared resources get the `.shared` suffix."""
        sharer = self.time_slicing or self.mps
        return sharer is not None and sharer.rename_by_default


def _regex(value: Any) -> Any:
    if isinstance(value, str):
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value[:80]!r} is not a valid regular expression: {exc}") from None
    return value


TopologyLevelName = Literal["block", "subblock", "rack", "host", "clique"]


def _level(value: Any) -> Any:
    """Accept a bare level name (`rack`) for {level: rack}."""
    return {"level": value} if isinstance(value, str) else value


class TopologyLevel(Model):
    """One level of a pool's network topology, for topology-aware scheduling (Kueue TAS, KAI)."""

    level: TopologyLevelName
    """block, subblock, rack, host or clique (an NVLink domain, GPU Feature Discovery's nvidia.com/gpu.clique)."""
    node_label: LabelKey | None = None
    """Node label whose value names the node's domain at this level; default by provider: aws
    topology.k8s.aws/network-node-layer-1/2/3 (block/subblock/rack), gcp cloud.google.com/gce-topology-*,
    host kubernetes.io/hostname. On premises a rack or block label is yours to name (and set in labels)."""
    per_node: bool = False
    """The label's value differs node by node (a rack label) and the nodes carry it already, set by
    NFD, the provider or you; gpuplan cannot see node labels, so it takes it as stated (not in labels)."""


class Dra(Model):
    """A pool whose GPUs Dynamic Resource Allocation hands out (the device plugin is disabled on it)."""

    device_class: Subdomain | None = None
    """Name of the DeviceClass of the pool's GPUs (a MIG pool's classes are <profile>.<this>); default
    <gpu>.gpuplan.io, such as h100-sxm5-80gb.gpuplan.io, with a sharing prefix (time-slicing., mps.)."""


class NodePool(Model):
    """A group of identical GPU nodes."""

    name: Name
    """Pool name, unique in the cluster; tenants' quotas refer to it."""
    gpu: str = Field(min_length=1)
    """GPU model: a catalog name, PCI device id (0x2330) or GFD product label."""
    gpus_per_node: int | None = Field(default=None, ge=1, le=64)
    """GPUs in each node (1 to 64); required unless gpuplan knows the GPU count of the pool's
    Karpenter instance types."""
    cpu: Quantity
    """Allocatable cpu per node."""
    memory: Quantity
    """Allocatable memory per node."""
    nodes: Nodes
    """{count: N} for a static pool, {min: A, max: B} for one Karpenter scales (or the Cluster Autoscaler,
    with autoscaler: cluster-autoscaler)."""
    karpenter: KarpenterPool | None = None
    """How Karpenter provisions the nodes: required for autoscaled pools; on a static pool
    ({count: N}) it makes a static NodePool of exactly count nodes (Karpenter core v1.8 and later)."""
    hostnames: list[Annotated[str, BeforeValidator(_regex)]] = []
    """Static pools on premises: regular expressions that match the pool's node names (NFD labels
    those nodes). Clouds name nodes at launch: use nodeGroup there."""
    node_group: Annotated[LabelValue, Field(min_length=1)] | None = None
    """Static and Cluster Autoscaler pools on aws, azure or gcp: the cloud node group the pool is (EKS managed node group,
    AKS agent pool, GKE node pool), selected by the provider's node-group label
    (eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, cloud.google.com/gke-nodepool)."""
    labels: dict[LabelKey, LabelValue] = {}
    """Labels of the pool's nodes: set through NFD on nodes named by hostnames, or by Karpenter; a
    pool selected by nodeGroup or labels alone is selected by them (its nodes must carry them already)."""
    taints: list[Taint] | None = None
    """Default: nvidia.com/gpu=present:NoSchedule."""
    sharing: Annotated[Sharing, BeforeValidator(_sharing)] = Sharing()
    """exclusive (default, whole GPUs), or a mapping with mig, timeSlicing or mps."""
    os: NodeOs | None = None
    """Operating system of the nodes; default by provider: aws al2023, azure ubuntu (AKS), gcp cos,
    onprem ubuntu. It decides whether the driver and container toolkit come preinstalled."""
    driver: PoolDriver | None = None
    """This pool's own driver mode or version, when it differs from the cluster's."""
    topology: list[Annotated[TopologyLevel, BeforeValidator(_level)]] = Field(
        default=[], max_length=16
    )
    """Topology levels of the pool's nodes, coarsest first, such as [block, rack, host]: Kueue gets a
    Topology for the pool's flavor and KAI a Topology; gpuplan proves the nodes carry each label."""
    dra: Dra | None = None
    """Allocate the pool's GPUs through Dynamic Resource Allocation (the NVIDIA DRA driver, in
    components.draDriver) instead of the device plugin: tenants claim them with ResourceClaimTemplates."""
    ignore: list[Ignore] = []
    """Warnings about this pool accepted where they stand, each with its reason."""

    @model_validator(mode="after")
    def _sharing_for_allocation(self) -> NodePool:
        for name, sharer in (("timeSlicing", self.sharing.time_slicing), ("mps", self.sharing.mps)):
            if sharer is None:
                continue
            if self.dra is None and sharer.replicas is None:
                raise ValueError(
                    f"sharing.{name}.replicas is required: the device plugin advertises each GPU that many times"
                )
            if self.dra is not None:
                _dra_sharing(name, sharer)
            elif (
                name == "timeSlicing"
                and self.sharing.time_slicing
                and self.sharing.time_slicing.interval
            ):
                raise ValueError(
                    "sharing.timeSlicing.interval applies to DRA pools only (the DRA driver's timeSlicingConfig)"
                )
        return self


def _dra_sharing(name: str, sharer: TimeSlicing | Mps) -> None:
    """Refuse device-plugin sharing settings on a DRA pool (the DRA driver has no such setting).

    kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 api/nvidia.com/resource/v1beta1/sharing.go: GpuSharing is
    {strategy, timeSlicingConfig {interval}, mpsConfig}; a GPU is shared by the consumers of one claim.
    """
    if sharer.replicas is not None:
        raise ValueError(
            f"sharing.{name}.replicas does not apply to a DRA pool: the DRA driver shares a GPU among the consumers "
            "of one ResourceClaim, it advertises no replicas"
        )
    for field in ("rename_by_default", "fail_requests_greater_than_one"):
        if field in sharer.model_fields_set:
            alias = type(sharer).model_fields[field].alias or field
            raise ValueError(
                f"sharing.{name}.{alias} is a device-plugin setting: the DRA driver has none"
            )


class CpuPool(Model):
    """A group of CPU-only nodes: the home of the tenants' CPU-only work (its own Kueue flavor)."""

    name: Name
    """Pool name, unique in the cluster; tenants' cpuQuotas refer to it."""
    cpu: Quantity
    """Allocatable cpu per node."""
    memory: Quantity
    """Allocatable memory per node."""
    nodes: Nodes
    """Node count: {count: N}, or {min, max} for nodes an autoscaler you run yourself adds."""
    labels: dict[LabelKey, LabelValue] = Field(min_length=1)
    """Labels the pool's nodes already carry (gpuplan does not label them), such as
    {eks.amazonaws.com/nodegroup: general}; the pool's ResourceFlavor selects them."""
    taints: list[Taint] = []
    """Taints of the pool's nodes; CPU-only workloads get the matching tolerations."""
    ignore: list[Ignore] = []
    """Warnings about this pool accepted where they stand, each with its reason."""


def _cidr(value: Any) -> Any:
    if isinstance(value, str):
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{value[:60]!r} is not a valid CIDR: {exc}") from None
    return value


def _address(value: Any) -> Any:
    if isinstance(value, str):
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(f"{value[:60]!r} is not an IP address") from None
    return value


# Linux net/core/dev.c dev_valid_name(): 1-15 bytes (IFNAMSIZ 16 with the NUL), not "." or "..",
# no '/', ':' or white space; gpuplan keeps to printable ASCII, as CNI plugins look names up verbatim.
INTERFACE = re.compile(r"(?!\.{1,2}$)[\x21-\x2e\x30-\x39\x3b-\x7e]{1,15}")
# An extended resource name: a DNS prefix, '/', then a name (as nvidia.com/rdma).
RESOURCE = re.compile(
    r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)


class Ipam(Model):
    """IP address management for a network's attachments."""

    type: Literal["whereabouts", "host-local"]
    """whereabouts (addresses unique across the cluster) or host-local (unique per node only)."""
    range: Annotated[str, BeforeValidator(_cidr)]
    """CIDR addresses are given from, such as 192.168.20.0/24."""
    gateway: Annotated[str, BeforeValidator(_address)] | None = None
    """Gateway address of the range; default none."""
    exclude: list[Annotated[str, BeforeValidator(_cidr)]] = []
    """CIDRs inside the range never given out."""


# The resource the AWS EFA device plugin advertises (aws/karpenter-provider-aws pkg/apis/v1/labels.go,
# ResourceEFA; ../shared/facts/upstream-components.md "Multus networks").
EFA_RESOURCE = "vpc.amazonaws.com/efa"
SRIOV_RESOURCE = re.compile(r"[a-zA-Z0-9_-]+")


class Network(Model):
    """A secondary network on some pools: a Multus NetworkAttachmentDefinition, or AWS EFA."""

    name: Name
    """Name of the network; tenants' allocations list it in networks (the NetworkAttachmentDefinition's name)."""
    type: Literal["sriov", "ib-sriov", "ipoib", "macvlan", "host-device", "efa"]
    """sriov (Ethernet SR-IOV VFs, sriov-cni), ib-sriov (InfiniBand SR-IOV VFs, ib-sriov-cni),
    ipoib or macvlan (over a parent interface, RDMA through the RDMA shared device plugin),
    host-device, or efa (AWS Elastic Fabric Adapter: no NetworkAttachmentDefinition, pods ask for
    vpc.amazonaws.com/efa)."""
    resource_name: (
        Annotated[str, _matching(RESOURCE, "an extended resource name such as nvidia.com/rdma")]
        | None
    ) = None
    """Device-plugin resource backing the network: SR-IOV VFs for sriov and ib-sriov (required),
    an RDMA shared device for ipoib (required) and macvlan (such as rdma/rdma_shared_device_a), the EFA
    device plugin's vpc.amazonaws.com/efa for efa (the default there)."""
    master: (
        Annotated[
            str,
            _matching(
                INTERFACE, "a network interface name (1-15 characters, no '/', ':' or spaces)"
            ),
        ]
        | None
    ) = None
    """Parent interface for ipoib / macvlan, or the device for host-device."""
    sriov: SriovDevices | None = None
    """sriov and ib-sriov (required there): the VFs that back the network (of named PFs, or by PCI
    ID), which gpuplan's SR-IOV network device plugin advertises as resourceName."""
    ipam: Ipam | None = None
    """How attachments get their addresses (required for every type but efa, which has none)."""
    pools: list[Name] = Field(min_length=1)
    """GPU pools whose nodes carry this network."""

    @model_validator(mode="after")
    def _device_backed(self) -> Network:
        if self.type in ("sriov", "ib-sriov"):
            self._sriov_backed()
        elif self.sriov is not None:
            raise ValueError(
                f"sriov (PFs and VFs) belongs to sriov and ib-sriov networks; a {self.type} network has no VFs"
            )
        if self.type == "ipoib" and not self.resource_name:
            raise ValueError(
                "a ipoib network needs resourceName (the RDMA shared device plugin's resource)"
            )
        if self.type in ("ipoib", "macvlan") and not self.master:
            raise ValueError(f"a {self.type} network needs master (the parent interface)")
        if self.type == "efa":
            if self.ipam is not None or self.master is not None:
                raise ValueError(
                    "an efa network has no ipam or master: EFA devices come from the EFA device plugin, with no CNI"
                )
            if self.resource_name not in (None, EFA_RESOURCE):
                raise ValueError(
                    f"an efa network's resource is {EFA_RESOURCE} (the EFA device plugin's)"
                )
        elif self.ipam is None:
            raise ValueError(
                f"a {self.type} network needs ipam (how attachments get their addresses)"
            )
        return self

    def _sriov_backed(self) -> None:
        if not self.resource_name:
            raise ValueError(
                f"a {self.type} network needs resourceName (the SR-IOV device plugin's VF resource)"
            )
        # sriov-network-device-plugin v3.11.0 pkg/utils/utils.go ValidResourceName: ^[a-zA-Z0-9_-]+$.
        name = self.resource_name.partition("/")[2]
        if not SRIOV_RESOURCE.fullmatch(name):
            raise ValueError(
                f"the SR-IOV device plugin refuses resource name {name!r}: letters, digits, '_' and '-' only"
            )
        if self.sriov is None:
            raise ValueError(
                f"a {self.type} network needs sriov: the VFs that back it (pfNames and numVfs, or vendor and "
                "devices), which the SR-IOV network device plugin advertises as its resourceName"
            )
        if self.type == "ib-sriov" and self.sriov.rdma is False:
            raise ValueError(
                "an ib-sriov network's VFs carry RDMA (ib-sriov-cni moves an InfiniBand VF, whose RDMA device "
                "the plugin mounts): remove sriov.rdma: false, or use type sriov for Ethernet VFs"
            )

    @property
    def rdma_vfs(self) -> bool:
        """Tell whether the SR-IOV device plugin mounts the VFs' RDMA devices (isRdma)."""
        if self.sriov is None:
            return False
        return self.type == "ib-sriov" if self.sriov.rdma is None else self.sriov.rdma

    @property
    def device_resource(self) -> str | None:
        """Return the device-plugin resource pods attaching the network request (efa's is fixed)."""
        return EFA_RESOURCE if self.type == "efa" else self.resource_name

    @property
    def attaches(self) -> bool:
        """Tell whether the network is a NetworkAttachmentDefinition (every type but efa)."""
        return self.type != "efa"


class Rbac(Model):
    """What tenants may be given on this cluster beyond gpuplan's default RBAC rules."""

    allowed_subjects: list[Subject] = []
    """Owners gpuplan refuses unless listed here: `system:` users and groups (Kubernetes' own
    identities, such as group:system:authenticated, every signed-in user) and service accounts of
    namespaces that are not the tenant's. Each entry is written like an owner, such as
    serviceaccount:ci:deployer."""


class Admission(Model):
    """ValidatingAdmissionPolicies that hold every workload in a tenant namespace to its quota (Kubernetes 1.30 and later).

    Scoped to the tenant namespaces by their gpuplan.io/tenant label: a workload's queue is one of its
    own namespace's, its Kueue workload priority class no higher than the tenant's, its GPU resources
    those the tenant has quota for (requests equal to limits), its DRA claims on the tenant's classes.
    """

    validation_actions: list[Literal["Deny", "Warn", "Audit"]] = Field(
        default=["Deny"], min_length=1, max_length=2
    )
    """What the API server does with a refused object (the bindings' validationActions): Deny refuses it,
    Warn lets it in with a warning to the client, Audit records it in the audit log. Default [Deny]; roll
    out with [Warn, Audit] first. Deny and Warn together are refused by the API server."""
    require_queue: bool = False
    """GPU workloads only through the quota authority: refuse a Pod, Job, JobSet or Volcano Job that asks
    for GPUs without naming a queue, so that the namespace ResourceQuota is only a backstop."""

    @model_validator(mode="after")
    def _actions(self) -> Admission:
        # kubernetes/kubernetes pkg/apis/admissionregistration/validation/validation.go
        # (validateValidationActions; read at commit afd5df58, the 1.30 tag not fetchable here): no
        # duplicates, never Deny with Warn. gpuplan's core schemas of each version check the rest.
        actions = self.validation_actions
        if len(set(actions)) != len(actions):
            raise ValueError("validationActions lists an action twice")
        if "Deny" in actions and "Warn" in actions:
            raise ValueError(
                "validationActions may not hold both Deny and Warn (the API server refuses it): "
                "use [Deny] or [Deny, Audit] to enforce, [Warn, Audit] to roll out"
            )
        return self


class Cluster(Model):
    """One Kubernetes cluster of the fleet (clusters/<name>.yaml)."""

    name: Name
    """Cluster name, equal to the file's stem; tenants' allocations refer to it."""
    kubernetes_version: Annotated[
        str, BeforeValidator(_kubernetes_version), Field(pattern=KUBERNETES_VERSION)
    ]
    """Kubernetes minor version, such as "1.33" (quote it in YAML)."""
    provider: Provider
    """Where the cluster runs: aws, azure, gcp or onprem."""
    gitops: GitOps
    """Repository, revision and destination of the Argo CD Application that syncs this cluster."""
    components: Components = Components()
    """The components installed on the cluster; gpuplan emits objects for these only."""
    priority_classes: list[PriorityClass] = []
    """PriorityClasses, each with a Kueue WorkloadPriorityClass of the same name."""
    cohorts: list[Cohort] = []
    """Kueue cohorts tenants share and borrow quota within."""
    node_pools: list[NodePool] = Field(min_length=1)
    """The cluster's GPU node pools (at least one)."""
    networks: list[Network] = []
    """Secondary networks (Multus NetworkAttachmentDefinitions)."""
    cpu_pools: list[CpuPool] = []
    """CPU-only node pools: Kueue admits CPU-only workloads there, never on GPU nodes."""
    container_defaults: ContainerDefaults = ContainerDefaults()
    """Default cpu and memory requests (and limits) of containers in every tenant namespace."""
    ignore: list[Ignore] = []
    """Warnings about this cluster accepted where they stand, each with its reason."""
    rbac: Rbac = Rbac()
    """RBAC subjects tenants may name as owners although gpuplan refuses them by default."""
    admission: Admission | None = None
    """ValidatingAdmissionPolicies enforcing the tenants' queues, priorities, GPU resources and DRA
    classes at admission (Kubernetes 1.30 and later); default none."""
