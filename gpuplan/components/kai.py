"""KAI Scheduler: the releases gpuplan supports and the facts it relies on.

Read from kai-scheduler/KAI-Scheduler at v0.17.0, and the same at v0.16.8 (the last patch of the
previous minor, still maintained beside it):
- deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml: Queue is cluster-scoped and serves
  scheduling.run.ai/v2 only; spec.parentQueue, priority, resources.{gpu,cpu,memory}.{quota, limit,
  overQuotaWeight} are numbers with no CRD default.
- pkg/admission/webhook/queuehooks/queue_validator.go: a Queue without `resources` is rejected; a child
  over its parent (or children summed over it) is only a warning, and only with quota validation on.
- deployments/kai-scheduler/values.yaml: pods reach a queue through the label `kai.scheduler/queue`
  (podgrouper.queueLabelKey); the chart creates `default-parent-queue` and `default-queue` (defaultQueue).
- .github/workflows/on-release.yaml and README.md "Install from Production": the chart is pushed to
  oci://ghcr.io/kai-scheduler/kai-scheduler as `kai-scheduler`, chart version = the tag (with its "v").
Units (../shared/facts/upstream-components.md, KAI Scheduler): GPU in devices, CPU in millicores,
memory in MB (1e6 bytes); -1 is unlimited.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.base import Chart, Component, Release

REPO = "kai-scheduler/KAI-Scheduler"
QUEUE_CRD = "deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml"
CHART_REPO = "oci://ghcr.io/kai-scheduler/kai-scheduler"
API_VERSION = "scheduling.run.ai/v2"
TOPOLOGY_API_VERSION = (
    "kai.scheduler/v1alpha1"  # deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml
)
QUEUE_LABEL = "kai.scheduler/queue"  # values.yaml podgrouper.queueLabelKey
SCHEDULER_NAME = "kai-scheduler"  # pods' spec.schedulerName (docs/quickstart/pods/gpu-pod.yaml)
UNLIMITED = -1
# Queues the chart creates itself (values.yaml defaultQueue); a tenant of that name would take them over.
RESERVED_QUEUES = ("default-parent-queue", "default-queue")

# Who enforces the tenants' quotas when nobody says (components.quotaAuthority): Kueue, then Volcano,
# then KAI, the first that runs. Two quota systems on the same pods strand GPUs (one admits, the other holds).
AUTHORITY_ORDER = ("kueue", "volcano", "kai")


def running_schedulers(components: Any) -> list[str]:
    """Return the quota-capable schedulers a cluster's components run, in authority order."""
    return [name for name in AUTHORITY_ORDER if getattr(components, name, None) is not None]


def authority(components: Any) -> str | None:
    """Return the scheduler that enforces the tenants' quotas: the one named, else the first that runs."""
    named = getattr(components, "quota_authority", None)
    if named is not None:
        return str(named)
    running = running_schedulers(components)
    return running[0] if running else None


def _release(tag: str) -> Release:
    """Return the facts of one tag: the chart of that version (with its "v") and its CRD set."""
    return Release(
        version=tag,
        sources=(
            f"{REPO}@{tag}:{QUEUE_CRD}",
            f"{REPO}@{tag}:pkg/admission/webhook/queuehooks/queue_validator.go",
            f"{REPO}@{tag}:.github/workflows/on-release.yaml",
            f"{REPO}@{tag}:deployments/kai-scheduler/values.yaml",
        ),
        chart=Chart(CHART_REPO, "kai-scheduler", tag),
        crds=tag,
    )


# v0.16.8 -> v0.17.0 (git diff of the files above and deployments/kai-scheduler/): the Queue CRD, the
# queue validator, the values gpuplan reads or sets (defaultQueue.createDefaultQueue,
# podgrouper.queueLabelKey) and the chart's publishing are the same; v0.17.0's Topology adds
# spec.levels[].alias (gpuplan writes none), values.yaml adds `openshift` (v0.16.8 looks the
# ClusterVersion CRD up in templates/hooks/, which finds nothing when Argo CD renders the chart: not
# OpenShift either way) and templates/default-queue.yaml marks the default Queues Prune=false for
# Argo CD. The values gpuplan sets are the same on both.
RELEASES: tuple[Release, ...] = (_release("v0.16.8"), _release("v0.17.0"))

KAI = Component(
    name="kai-scheduler",
    field="kai",
    releases=RELEASES,
    emitter="gpuplan.emit.kai:emit",
    checks=("gpuplan.check.kai",),
)
