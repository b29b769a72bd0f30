"""DRA: the DeviceClasses of the cluster's DRA pools and, per tenant namespace, ResourceClaimTemplates.

Written in the resource.k8s.io version the cluster serves (gpuplan/plan/dra.py resource_api): v1 from 1.34,
else the beta version its components.draDriver.resourceApi states. Shapes (the kubernetes_validate
schemas of each release, which `validate` checks them against; kubernetes/kubernetes
staging/src/k8s.io/api/resource/<version>/types.go at release-1.32 for v1beta1, release-1.33 for
v1beta2): DeviceClass spec.selectors[].cel.expression and spec.config[].opaque {driver, parameters} in
all three; ResourceClaimTemplate spec.spec.devices.requests[] {name, exactly {deviceClassName,
allocationMode, count}} in v1 and v1beta2, with deviceClassName, allocationMode and count on the
request itself in v1beta1. Kueue admits only ExactCount requests of templates, without per-request
config (kubernetes-sigs/kueue v0.19.2 site/content/en/docs/concepts/dynamic_resource_allocation.md,
"Limitations"), so the templates are that and the sharing sits on the class (gpuplan/plan/dra.py).
The ResourceQuota limits on each class's devices are written with the other quotas (emit/tenants.py).
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.dra_driver import FLAT_REQUEST_APIS, RESOURCE_API
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.dra import DraClass, classes, opaque_config, resource_api, selector
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan

FOLDER = "dra"
REQUEST = "device"  # the request's name in every template (a DNS label)


def device_class(cls: DraClass, api: str = RESOURCE_API) -> dict[str, Any]:
    """Return the DeviceClass selecting one kind of device of the fleet, with its sharing config."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector(cls)}}]}
    config = opaque_config(cls)
    if config is not None:
        spec["config"] = [config]
    return k8s(api, "DeviceClass", cls.name, spec=spec)


def claim_template(cls: DraClass, namespace: str, api: str = RESOURCE_API) -> dict[str, Any]:
    """Return the ResourceClaimTemplate claiming one device of a class, named after the class."""
    exact = {"deviceClassName": cls.name, "allocationMode": "ExactCount", "count": 1}
    request: dict[str, Any] = {"name": REQUEST}
    if api in FLAT_REQUEST_APIS:
        request.update(exact)
    else:
        request["exactly"] = exact
    spec = {"spec": {"devices": {"requests": [request]}}}
    return k8s(api, "ResourceClaimTemplate", cls.name, namespace, spec=spec)


def granted_classes(alloc: AllocationPlan) -> list[DraClass]:
    """Return the DeviceClasses an allocation has quota on, by name."""
    found = {
        g.pool.resources[g.resource].device_class
        for g in alloc.grants
        if g.pool.resources[g.resource].device_class is not None
    }
    return sorted((c for c in found if c is not None), key=lambda c: c.name)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return the cluster's DeviceClasses and its tenants' ResourceClaimTemplates (none without DRA pools)."""
    if cluster.release("dra-driver") is None:
        return []  # no driver: check/dra.py reports DRA pools without one
    source = cluster.located.source.path
    api = resource_api(cluster.spec)
    out = [
        manifest(cluster.name, FOLDER, device_class(cls, api), source)
        for cls in classes(cluster).values()
    ]
    for alloc in cluster.allocations:
        sources = (alloc.tenant.source.path, source)
        for namespace in alloc.namespaces:
            for cls in granted_classes(alloc):
                obj = claim_template(cls, namespace, api)
                out.append(manifest(cluster.name, f"namespaces/{namespace}", obj, *sources))
    return out
