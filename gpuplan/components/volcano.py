"""Volcano: the releases gpuplan supports and the facts of each.

Read from volcano-sh/volcano at each tag: config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml
(the Queue CRD serves scheduling.volcano.sh/v1beta1 only, in every release below) and
installer/helm/chart/volcano/Chart.yaml (chart `volcano`, version = the tag without "v", published to
https://volcano-sh.github.io/helm-charts: README.md "helm repo add volcano-sh").

What changes: `spec.dequeueStrategy` (fifo|traverse, default traverse) exists from v1.14; `spec.weight`
has `maximum: 65535` and `default: 1` in the CRD from v1.12 (v1.11 leaves it unbounded).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Chart, Component, Release

REPO = "volcano-sh/volcano"
QUEUE_CRD = "config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml"
CHART_REPO = "https://volcano-sh.github.io/helm-charts"
API_VERSION = (
    "scheduling.volcano.sh/v1beta1"  # the only version the Queue CRD serves (v1.11 to v1.15)
)
# Queues Volcano creates itself and refuses to delete (admission webhook validateQueueDeleting);
# a tenant of that name would take them over.
RESERVED_QUEUES = ("default", "root")


@dataclass(frozen=True, kw_only=True)
class VolcanoRelease(Release):
    """A Volcano release: the Queue fields that vary between releases."""

    dequeue_strategy: bool  # Queue spec.dequeueStrategy exists (v1.14 on)
    max_weight: int | None  # Queue spec.weight maximum in the CRD (None: unbounded)
    # DRA devices in Queue quotas (`deviceclass/<DeviceClass>` keys), enforced by the capacity plugin with
    # its argument capacity.DynamicResourceAllocationEnable: pkg/scheduler/plugins/capacity/capacity.go,
    # from v1.15 (absent at v1.14.4).
    dra_quota: bool = False
    # The resource.k8s.io version its scheduler cache watches ResourceClaims and DeviceClasses in
    # (pkg/scheduler/cache/cache.go informerFactory.Resource(): V1beta1 at v1.12.4 and v1.13.3, V1 from
    # v1.14.4; none at v1.11.2), None where it watches none.
    dra_api: str | None = None


def _release(
    tag: str,
    dequeue_strategy: bool,
    max_weight: int | None,
    dra_quota: bool = False,
    dra_api: str | None = "resource.k8s.io/v1",
) -> VolcanoRelease:
    sources = (f"{REPO}@{tag}:{QUEUE_CRD}", f"{REPO}@{tag}:installer/helm/chart/volcano/Chart.yaml")
    chart = Chart(CHART_REPO, "volcano", tag.removeprefix("v"))
    return VolcanoRelease(
        version=tag,
        sources=sources,
        chart=chart,
        crds=tag,
        dequeue_strategy=dequeue_strategy,
        max_weight=max_weight,
        dra_quota=dra_quota,
        dra_api=dra_api,
    )


_BETA1 = "resource.k8s.io/v1beta1"
RELEASES: tuple[VolcanoRelease, ...] = (
    _release("v1.11.2", dequeue_strategy=False, max_weight=None, dra_api=None),
    _release("v1.12.4", dequeue_strategy=False, max_weight=65535, dra_api=_BETA1),
    _release("v1.13.3", dequeue_strategy=False, max_weight=65535, dra_api=_BETA1),
    _release("v1.14.4", dequeue_strategy=True, max_weight=65535),
    _release("v1.15.1", dequeue_strategy=True, max_weight=65535, dra_quota=True),
)

VOLCANO = Component(
    name="volcano",
    field="volcano",
    releases=RELEASES,
    emitter="gpuplan.emit.volcano:emit",
    checks=("gpuplan.check.volcano",),
)
