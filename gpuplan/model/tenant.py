"""The Tenant input file: namespaces, owners and GPU quotas per cluster."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from gpuplan.model.common import ContainerDefaults, Ignore, Model, Name, Quantity

SUBJECT = re.compile(
    r"^(group|user):[^\s]{1,253}$|^serviceaccount:[a-z0-9-]{1,63}:[a-z0-9.-]{1,253}$"
)


def _subject(value: Any) -> Any:
    if isinstance(value, str) and not SUBJECT.fullmatch(value):
        raise ValueError(
            f"{value[:80]!r} is not a subject: use group:NAME, user:NAME or serviceaccount:NAMESPACE:NAME"
        )
    return value


Subject = Annotated[str, BeforeValidator(_subject)]
Count = Annotated[int, Field(ge=0, le=10_000_000)]
Limit = Count | dict[str, Count]


class Quota(Model):
    """A tenant's quota on one pool: whole GPUs or shares (gpus), or MIG instances (mig)."""

    pool: Name
    """A GPU pool of the allocation's cluster (nodePools[].name)."""
    gpus: Count | None = None
    """Whole GPUs (exclusive pools) or shares (time-sliced and MPS pools)."""
    mig: dict[str, Count] | None = Field(default=None, min_length=1)
    """MIG instances per profile, such as {1g.10gb: 14}."""
    borrowing_limit: Limit | None = None
    """Most the tenant may borrow from its cohort (a number for gpus, per profile for mig)."""
    lending_limit: Limit | None = None
    """Most of its quota the tenant lends to its cohort."""

    # Whether a limit's shape fits gpus or mig is checked in resolve.py once the unit is known to
    # fit the pool: a mig quota on an exclusive pool is the cause to report, not its scalar limit.

    @model_validator(mode="after")
    def _one_unit(self) -> Quota:
        if (self.gpus is None) == (self.mig is None):
            raise ValueError(
                "set gpus (whole GPUs or shares) or mig (instances per profile), not both"
            )
        return self


class CpuQuota(Model):
    """A tenant's cpu and memory on one CPU-only pool of the cluster."""

    pool: Name
    """A pool of the cluster's cpuPools."""
    cpu: Quantity
    """Cores."""
    memory: Quantity
    """Bytes."""


class BorrowWithinCohort(Model):
    """Whether a ClusterQueue that borrows may preempt in its cohort (Kueue borrowWithinCohort)."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    """Never (default), or LowerPriority: preempt lower-priority workloads of the cohort while borrowing."""
    max_priority_threshold: int | None = Field(default=None, ge=-2_147_483_648, le=2_147_483_647)
    """Only workloads at or below this priority may be preempted that way; default: any lower priority."""


class Preemption(Model):
    """Kueue preemption of the tenant's ClusterQueue."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = (
        "LowerPriority"
    )
    """Preempt the tenant's own workloads to admit one of its higher priority; default LowerPriority."""
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    """Preempt borrowers to get nominal quota back; default Any with a cohort, else Never."""
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()
    """Preemption while borrowing; default policy Never."""

    @model_validator(mode="after")
    def _kueue_cel(self) -> Preemption:
        # kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go (CEL on spec.preemption,
        # ../shared/facts/kueue-admission-rules.md ClusterQueue rule 11)
        if self.reclaim_within_cohort == "Never" and self.borrow_within_cohort.policy != "Never":
            raise ValueError(
                "reclaimWithinCohort Never cannot be combined with borrowWithinCohort.policy other than Never (Kueue rejects it)"
            )
        return self


class LocalQueue(Model):
    """A LocalQueue created in each of the tenant's namespaces, pointing at its ClusterQueue."""

    name: Name
    """Name workloads give in the kueue.x-k8s.io/queue-name label; `default` is used without one."""
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = "None"
    """None (default), Hold (admit nothing new) or HoldAndDrain (also evict admitted workloads)."""
    weight: int | None = Field(default=None, ge=1, le=1000)
    """Admission fair sharing weight of this queue in each namespace (needs the cluster's
    components.kueue.admissionFairSharing): Kueue divides the queue's recent usage by its weight,
    so a queue of weight 2 may use twice as much before others go first. Multiplied by the
    namespace's namespaceShares entry; default 1."""


class QueueSettings(Model):
    """Kueue settings of the tenant's ClusterQueue and LocalQueues on one cluster.

    Every field exists with the same values in every Kueue release from v0.8.0 to v0.19.2
    (kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml and
    kueue.x-k8s.io_localqueues.yaml at each tag).
    """

    preemption: Preemption = Preemption()
    """withinClusterQueue, reclaimWithinCohort and borrowWithinCohort."""
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    """BestEffortFIFO (default): a workload that does not fit lets smaller ones pass; StrictFIFO: it blocks them."""
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = "None"
    """None (default), Hold or HoldAndDrain: stop the whole ClusterQueue."""
    local_queues: list[LocalQueue] = Field(
        default=[LocalQueue(name="default")], min_length=1, max_length=16
    )
    """LocalQueues in every namespace; default one named `default` (Kueue's LocalQueueDefaulting picks it)."""


class Allocation(Model):
    """What a tenant may use on one cluster."""

    cluster: Name
    """The cluster this allocation is on (a file in clusters/)."""
    cohort: Name | None = None
    """Kueue cohort; required for borrowing and lending."""
    weight: int | None = Field(default=None, ge=1, le=1_000_000)
    """Volcano queue weight and Kueue fair-sharing weight."""
    quotas: list[Quota] = []
    """The tenant's quota on each GPU pool it uses; none for a CPU-only tenant (then cpuQuotas)."""
    cpu: Quantity | None = None
    """Total cpu; default: each pool's cpu per GPU times the GPUs granted."""
    memory: Quantity | None = None
    """Total memory; default: each pool's memory per GPU times the GPUs granted."""
    max_gpus_per_pod: int | None = Field(default=None, ge=1, le=64)
    """Most whole GPUs one pod may ask for; default: the largest gpusPerNode granted."""
    networks: list[Name] = []
    """Networks of the cluster attached in the tenant's namespaces."""
    cpu_quotas: list[CpuQuota] = []
    """cpu and memory on the cluster's CPU-only pools, where the tenant's CPU-only workloads run."""
    namespace_shares: dict[Name, Annotated[int, Field(ge=1, le=1000)]] | None = None
    """Weight of each namespace, such as {team-a: 3, team-a-batch: 1}; default 1 each. Every namespace
    is listed. Where Kueue, Volcano or KAI admits the tenant's workloads, each namespace's ResourceQuota
    is the tenant's whole total (what the scheduler may admit there) and the weights order Kueue's
    admission fair sharing; where none does, they split the total into the namespaces' ResourceQuotas."""
    kueue: QueueSettings = QueueSettings()
    """Kueue preemption, queueing strategy, stop policy and LocalQueues of this allocation."""
    gpu_metric_autoscaling: bool = False
    """Serve the GPU utilisation of this tenant's pods as custom metrics (Prometheus Adapter rules), so an
    inference HorizontalPodAutoscaler can scale on it; needs monitoring on the cluster. Default false."""
    ignore: list[Ignore] = []
    """Warnings about this allocation accepted where they stand, each with its reason."""

    @model_validator(mode="after")
    def _something(self) -> Allocation:
        if not self.quotas and not self.cpu_quotas:
            raise ValueError(
                "an allocation grants quotas on GPU pools or cpuQuotas on CPU pools (a CPU-only tenant): it has neither"
            )
        return self


class Tenant(Model):
    """One team sharing the fleet (tenants/<name>.yaml)."""

    name: Name
    """Tenant name, equal to the file's stem."""
    namespaces: list[Name] | None = Field(default=None, min_length=1)
    """The tenant's namespaces, unique across tenants; default: [name]."""
    owners: list[Subject] = []
    """RBAC subjects given admin in the namespaces: group:NAME, user:NAME, serviceaccount:NS:NAME."""
    pod_security: Literal["restricted", "baseline", "privileged"] = "restricted"
    """Pod Security Standard enforced in the namespaces: restricted (default), baseline or privileged."""
    network_isolation: bool = True
    """Deny ingress from other tenants' namespaces (a NetworkPolicy); default true."""
    priority_class: Name | None = None
    """Default priority class of the tenant's workloads, and the highest its pods may use."""
    allocations: list[Allocation] = []
    """What the tenant may use, one entry per cluster it runs on."""
    container_defaults: ContainerDefaults | None = None
    """Default cpu and memory of containers in the tenant's namespaces; default: the cluster's."""
    ignore: list[Ignore] = []
    """Warnings about this tenant accepted where they stand, each with its reason."""

    @property
    def namespace_names(self) -> list[str]:
        """Return the tenant's namespaces (its name when none are given)."""
        return list(self.namespaces) if self.namespaces else [self.name]
