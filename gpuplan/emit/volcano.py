"""Volcano: one Queue per tenant allocation, sized from the same numbers as Kueue and the quotas.

Source of every field: the Volcano v1.15.1 Queue CRD (scheduling.volcano.sh/v1beta1, spec:
weight, capability, deserved, guarantee.resource, reclaimable; volcano-sh/volcano v1.15.1
config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml). Fields the CRD does not declare
are never emitted (a queue's Open/Closed `state`, which some guides put under spec, is status).

- `weight`: the allocation's weight (default 1); the proportion plugin shares idle capacity by it.
- `capability`: the most the tenant may ever use per resource, nominal plus what it may borrow,
  exactly the namespaces' ResourceQuota (`entitlements.namespace_limits`).
- `guarantee.resource`: the nominal quota per resource (../shared/spec/output.md: guarantee = nominal quota).
- `deserved`: the nominal quota too. Volcano's queue admission webhook requires
  guarantee <= deserved <= capability, and refuses a guarantee whose resource has no deserved
  (v1.15.1 pkg/webhooks/admission/queues/validate/validate_queue.go), and the capacity plugin
  shares by `deserved`; equal to the guarantee it changes nothing for the proportion plugin, which
  derives deserved from the weights.
- `reclaimable: true`: what a tenant borrowed beyond its deserved share can be taken back.
- `dequeueStrategy: traverse`: the CRD's default (structural `default:`), written out so the
  object Argo CD compares is the object the API server stores (no drift; tests/test_no_drift.py).
  Only on releases whose CRD has the field (v1.14 on; gpuplan/components/volcano.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpuplan.components.volcano import API_VERSION, VolcanoRelease
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.dra import QUOTA_SUFFIX, is_dra_resource
from gpuplan.plan.entitlements import namespace_limits, nominal_totals, quantity
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan

FOLDER = "volcano"
DEFAULT_WEIGHT = 1
# CRD default of spec.dequeueStrategy (enum fifo/traverse), emitted so Argo CD does not see drift.
DEQUEUE_STRATEGY = "traverse"


def _resource_list(values: dict[str, int]) -> dict[str, str]:
    named = {_queue_resource(name): (name, value) for name, value in values.items()}
    return {key: quantity(name, value) for key, (name, value) in sorted(named.items())}


@lru_cache(maxsize=4096)
def _queue_resource(name: str) -> str:
    """Return a resource as a Queue names it: a DRA class's devices as deviceclass/<class>.

    The scheduler reads a Queue's DRA devices as deviceclass/<DeviceClass> (volcano-sh/volcano v1.15.1
    pkg/scheduler/framework/session_dra_queue_status.go, queueDRADeviceClassCountPrefix).
    """
    return "deviceclass/" + name.removesuffix(QUOTA_SUFFIX) if is_dra_resource(name) else name


def queue(release: VolcanoRelease, alloc: AllocationPlan) -> dict[str, Any]:
    """Return the Volcano Queue of one tenant allocation, named after the tenant."""
    capability = namespace_limits(alloc)
    nominal = _resource_list(dict.fromkeys(capability, 0) | nominal_totals(alloc))
    spec: dict[str, Any] = {
        "weight": alloc.spec.weight if alloc.spec.weight is not None else DEFAULT_WEIGHT,
        "capability": _resource_list(capability),
        "deserved": nominal,
        "guarantee": {"resource": dict(nominal)},
        "reclaimable": True,
    }
    if release.dequeue_strategy:
        spec["dequeueStrategy"] = (
            DEQUEUE_STRATEGY  # CRD default, emitted so Argo CD does not see drift
        )
    return k8s(API_VERSION, "Queue", alloc.name, spec=spec)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a Queue per tenant allocation, or nothing when Volcano is not a component."""
    release = cluster.release("volcano")
    if not isinstance(release, VolcanoRelease):
        return []  # not a component here (an unknown version is reported by resolve.py)
    # capability and deserved read the cohort's lending (entitlements.namespace_limits)
    return [m for alloc in cluster.allocations for m in allocation_objects(alloc)]


def allocation_objects(alloc: AllocationPlan) -> list[Manifest]:
    """Return the Volcano Queue of one allocation (its cluster runs Volcano)."""
    cluster = alloc.cluster
    release = cluster.release("volcano")
    assert isinstance(release, VolcanoRelease)
    sources = alloc.sources
    return [manifest(cluster.name, FOLDER, queue(release, alloc), *sources)]
