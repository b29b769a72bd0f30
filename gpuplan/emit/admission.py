"""ValidatingAdmissionPolicies that hold every workload in a tenant namespace to what its tenant was granted.

Quotas limit what is admitted, not where it is charged: a pod names its queue, its Kueue priority and its
GPU resources itself. Each policy here closes one such escape, in the tenant namespaces only (bound by
their gpuplan.io/tenant label), with the tenants' figures written into the policy's CEL as a map keyed by
namespace, so one policy and one binding per rule serve every tenant of the cluster.

admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding are
served from Kubernetes 1.30 (kubernetes.io docs reference/access-authn-authz/validating-admission-policy,
"FEATURE STATE: Kubernetes v1.30 [stable]"; the core schema gpuplan validates each cluster's objects
against has the kind from 1.30); check/admission.py refuses `admission` on an older cluster. A policy's CEL
sees object, oldObject, request, params, namespaceObject and variables (same page, "Validation
expression"); these use object, request and variables. failurePolicy Fail: an expression error refuses.
gpuplan proves every policy on sample objects before writing (gpuplan/validate/admission.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuplan.components.dra_driver import CHART_CHANNEL_CLASSES
from gpuplan.components.kai import authority
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.emit.tenants import TENANT_LABEL, classes_above
from gpuplan.plan.dra import QUOTA_SUFFIX, is_dra_resource
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan

API = "admissionregistration.k8s.io/v1"
FOLDER = "admission"
# Queue keys: kubernetes-sigs/kueue v0.19.2 pkg/controller/constants/constants.go (QueueLabel,
# WorkloadPriorityClassLabel); volcano-sh/apis v1.13.0 pkg/apis/scheduling/v1beta1/labels.go
# (QueueNameAnnotationKey) and batch/v1alpha1 Job spec.queue; kai-scheduler/KAI-Scheduler v0.17.0
# pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go (the queue label).
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
# Volcano also reads volcano.sh/queue-name, as a label or an annotation, before the annotation above
# (volcano-sh/volcano, utils GetObjQueue; the object goes to the queue `default` without any of them).
VOLCANO_LABEL = "volcano.sh/queue-name"
KAI_QUEUE = "kai.scheduler/queue"
GPU_PREFIX = "nvidia.com/"
# The kinds whose pod templates the policies read, by API group and resource.
WORKLOADS = (
    ("", "pods"),
    ("batch", "jobs"),
    ("jobset.x-k8s.io", "jobsets"),
    ("batch.volcano.sh", "jobs"),
)
# The pod specs of a Pod, a batch Job, a JobSet and a Volcano Job.
POD_SPECS = (
    "object.kind == 'Pod' ? [object.spec]"
    " : object.kind == 'JobSet' ? object.spec.replicatedJobs.map(r, r.template.spec.template.spec)"
    " : object.apiVersion.startsWith('batch.volcano.sh/') ? object.spec.tasks.map(t, t.template.spec)"
    " : [object.spec.template.spec]"
)
CONTAINERS = (
    "variables.specs.map(s, s.containers + (has(s.initContainers) ? s.initContainers : []))"
)
LABELS = "has(object.metadata.labels) ? object.metadata.labels : {}"
ANNOTATIONS = "has(object.metadata.annotations) ? object.metadata.annotations : {}"


def _text(values: list[str]) -> str:
    """Return a CEL list of string literals (names and resources hold no quote)."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _per_namespace(
    cluster: ClusterPlan, name: str, values: Callable[[AllocationPlan], list[str]]
) -> list[tuple[str, str]]:
    """Return two variables: `<name>ByNamespace`, each tenant namespace's values, and `<name>`, the request's."""
    table = {ns: values(a) for a in cluster.allocations for ns in a.namespaces}
    body = ", ".join(f"'{ns}': {_text(v)}" for ns, v in sorted(table.items()))
    by_namespace = f"{name}ByNamespace"
    return [
        (by_namespace, f"{{{body}}}"),
        (
            name,
            f"request.namespace in variables.{by_namespace} ? variables.{by_namespace}[request.namespace] : []",
        ),
    ]


def _policy(
    name: str, rules: list[tuple[str, str]], variables: list[tuple[str, str]], validations: list
) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for group, resource in rules:
        groups.setdefault(group, []).append(resource)
    resource_rules = [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": sorted(set(resources)),
        }
        for group, resources in sorted(groups.items())
    ]
    spec = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": resource_rules},
        "variables": [{"name": n, "expression": e} for n, e in variables],
        "validations": validations,
    }
    return k8s(API, "ValidatingAdmissionPolicy", name, spec=spec)


def _binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    selector = {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}
    spec = {
        "policyName": name,
        "validationActions": list(actions),
        "matchResources": {"namespaceSelector": selector},
    }
    return k8s(API, "ValidatingAdmissionPolicyBinding", name, spec=spec)


def _label_rule(variable: str, key: str, allowed: str, what: str) -> dict[str, str]:
    """A rule that the object's label or annotation `key`, when set, is one of `allowed`."""
    value = f"variables.{variable}['{key}']"
    return {
        "expression": f"!('{key}' in variables.{variable}) || {value} in variables.{allowed}",
        "messageExpression": (
            f"'{key} ' + {value} + ' is not one of the {what} of namespace ' + request.namespace"
            f" + ': use one of ' + variables.{allowed}.join(', ')"
        ),
        "reason": "Forbidden",
    }


def queues(cluster: ClusterPlan) -> dict[str, Any] | None:
    """The policy that a workload's queue is one of its own namespace's, for each scheduler that runs."""
    components = cluster.spec.components
    variables = [("labels", LABELS), ("annotations", ANNOTATIONS)]
    validations = []
    if components.kueue is not None:
        variables += _per_namespace(
            cluster, "kueueQueues", lambda a: [q.name for q in a.spec.kueue.local_queues]
        )
        validations.append(_label_rule("labels", KUEUE_QUEUE, "kueueQueues", "LocalQueues"))
    if components.volcano is not None:
        variables += _per_namespace(cluster, "volcanoQueues", lambda a: [a.name])
        validations.append(
            _label_rule("annotations", VOLCANO_QUEUE, "volcanoQueues", "Volcano Queues")
        )
        for where in ("labels", "annotations"):
            validations.append(_label_rule(where, VOLCANO_LABEL, "volcanoQueues", "Volcano Queues"))
        validations.append(
            {
                "expression": (
                    "!has(object.spec) || !has(object.spec.queue)"  # a Volcano Job's or PodGroup's
                    " || object.spec.queue in variables.volcanoQueues"
                ),
                "messageExpression": (
                    "'spec.queue ' + object.spec.queue + ' is not one of the Volcano Queues of namespace '"
                    " + request.namespace + ': use ' + variables.volcanoQueues.join(', ')"
                ),
                "reason": "Forbidden",
            }
        )
    if components.kai is not None:
        variables += _per_namespace(cluster, "kaiQueues", lambda a: [a.name])
        validations.append(_label_rule("labels", KAI_QUEUE, "kaiQueues", "KAI Queues"))
    if not validations:
        return None
    rules = [*WORKLOADS, ("scheduling.volcano.sh", "podgroups")]
    return _policy("gpuplan-tenant-queues", rules, variables, validations)


def priorities(cluster: ClusterPlan) -> dict[str, Any] | None:
    """The policy that a Kueue workload priority class is no higher than the tenant's ceiling."""
    if cluster.spec.components.kueue is None:
        return None
    names = [p.name for p in cluster.spec.priority_classes]

    def allowed(alloc: AllocationPlan) -> list[str]:
        above = set(classes_above(cluster, alloc.tenant.model.priority_class))
        return [n for n in names if n not in above]

    variables = [("labels", LABELS), *_per_namespace(cluster, "classes", allowed)]
    rule = _label_rule("labels", KUEUE_PRIORITY, "classes", "workload priority classes allowed")
    return _policy("gpuplan-workload-priority", list(WORKLOADS), variables, [rule])


def _gpu(cluster: ClusterPlan) -> str:
    """Return a CEL test that resource name r is a GPU resource (of the cluster, or NVIDIA's)."""
    others = sorted(
        {
            r
            for p in cluster.pools.values()
            for r in p.resources
            if not r.startswith(GPU_PREFIX) and not is_dra_resource(r)
        }
    )
    test = f"r.startsWith('{GPU_PREFIX}')"
    return f"({test} || r in {_text(others)})" if others else test


def gpu_resources(cluster: ClusterPlan) -> dict[str, Any]:
    """The policy that containers ask only for the GPU resources their tenant has quota on, requests equal to limits."""
    gpu = _gpu(cluster)
    granted = _per_namespace(
        cluster, "granted", lambda a: [r for r in a.resources() if not is_dra_resource(r)]
    )
    variables = [("specs", POD_SPECS), ("containers", CONTAINERS), *granted]
    foreign = f"c.resources.limits.filter(r, {gpu} && !(r in variables.granted))"
    unequal = (
        f"c.resources.requests.filter(r, {gpu} && (!has(c.resources.limits) ||"
        " !(r in c.resources.limits) || string(c.resources.limits[r]) != string(c.resources.requests[r])))"
    )
    has_limits = "has(c.resources) && has(c.resources.limits)"
    has_requests = "has(c.resources) && has(c.resources.requests)"
    validations = [
        {
            "expression": f"variables.containers.all(cs, cs.all(c, !({has_limits}) || size({foreign}) == 0))",
            "messageExpression": (
                "'container ' + variables.containers.map(cs, cs.filter(c, "
                f"{has_limits} && size({foreign}) > 0)).filter(cs, size(cs) > 0)[0][0].name"
                " + ' asks for a GPU resource namespace ' + request.namespace + ' has no quota for: use '"
                " + (size(variables.granted) > 0 ? variables.granted.join(', ') : 'none (no GPU quota here)')"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": f"variables.containers.all(cs, cs.all(c, !({has_requests}) || size({unequal}) == 0))",
            "message": (
                "GPU requests must equal limits: set resources.limits of each GPU resource to its request "
                "(or leave requests out: they default to the limits)"
            ),
            "reason": "Invalid",
        },
    ]
    return _policy("gpuplan-gpu-resources", list(WORKLOADS), variables, validations)


# resource.k8s.io: v1beta1 names the class on the request (deviceClassName), v1beta2 and v1 under exactly;
# firstAvailable lists subrequests with their own class (kubernetes/kubernetes v1.34.0
# staging/src/k8s.io/api/resource/v1/types.go DeviceRequest, ExactDeviceRequest, DeviceSubRequest).
DEVICE_REQUESTS = "object.kind == 'ResourceClaim' ? object.spec.devices : object.spec.spec.devices"
CLASSES = (
    "has(variables.devices.requests) ? variables.devices.requests.map(q,"
    " has(q.exactly) ? [q.exactly.deviceClassName]"
    " : has(q.firstAvailable) ? q.firstAvailable.map(s, s.deviceClassName)"
    " : has(q.deviceClassName) ? [q.deviceClassName] : []) : []"
)


def dra_classes(cluster: ClusterPlan) -> dict[str, Any] | None:
    """The policy that ResourceClaims name only the DeviceClasses their tenant has quota on."""
    if cluster.spec.components.dra_driver is None:
        return None
    granted = _per_namespace(
        cluster,
        "granted",
        lambda a: [r.removesuffix(QUOTA_SUFFIX) for r in a.resources() if is_dra_resource(r)],
    )
    variables = [("devices", DEVICE_REQUESTS), ("classes", CLASSES), *granted]
    channels = _text(list(CHART_CHANNEL_CLASSES))  # IMEX channels of ComputeDomains: no GPUs
    rule = {
        "expression": f"variables.classes.all(l, l.all(c, c in variables.granted || c in {channels}))",
        "messageExpression": (
            "'DeviceClass ' + variables.classes.map(l, l.filter(c, !(c in variables.granted)))"
            ".filter(l, size(l) > 0)[0][0] + ' is not a DeviceClass namespace ' + request.namespace"
            " + ' has quota for: use ' + (size(variables.granted) > 0 ?"
            " variables.granted.join(', ') : 'none (no DRA quota here)')"
        ),
        "reason": "Forbidden",
    }
    rules = [("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates")]
    return _policy("gpuplan-dra-classes", rules, variables, [rule])


def require_queue(cluster: ClusterPlan) -> dict[str, Any] | None:
    """The policy that a GPU workload names a queue of the quota authority (admission.requireQueue).

    A Pod whose controller is a batch Job, JobSet or Volcano Job passes: its owner was checked (the
    garbage collector removes a pod whose owner does not exist).
    """
    admission = cluster.spec.admission
    scheduler = authority(cluster.spec.components)
    if admission is None or not admission.require_queue or scheduler is None:
        return None
    queued = {
        "kueue": f"'{KUEUE_QUEUE}' in variables.labels",
        "kai": f"'{KAI_QUEUE}' in variables.labels",
        "volcano": (
            f"'{VOLCANO_QUEUE}' in variables.annotations || '{VOLCANO_LABEL}' in variables.labels"
            f" || '{VOLCANO_LABEL}' in variables.annotations || (object.apiVersion.startsWith('batch.volcano.sh/')"
            " && has(object.spec.queue))"
        ),
    }[scheduler]
    where = {
        "kueue": f"the label {KUEUE_QUEUE}",
        "kai": f"the label {KAI_QUEUE}",
        "volcano": f"spec.queue (Volcano Job), the label {VOLCANO_LABEL} or the annotation {VOLCANO_QUEUE}",
    }[scheduler]
    owned = (
        "object.kind == 'Pod' && has(object.metadata.ownerReferences) && object.metadata.ownerReferences"
        ".exists(o, has(o.controller) && o.controller && o.kind in ['Job', 'JobSet'])"
    )
    asks = (
        "variables.containers.exists(cs, cs.exists(c, has(c.resources) && ("
        f"(has(c.resources.limits) && c.resources.limits.exists(r, {_gpu(cluster)})) || "
        f"(has(c.resources.requests) && c.resources.requests.exists(r, {_gpu(cluster)})))))"
    )
    variables = [
        ("labels", LABELS),
        ("annotations", ANNOTATIONS),
        ("specs", POD_SPECS),
        ("containers", CONTAINERS),
    ]
    rule = {
        "expression": f"({owned}) || !({asks}) || {queued}",
        "message": (
            f"GPU workloads in tenant namespaces go through {scheduler.capitalize()}: set {where} "
            "to one of your namespace's queues"
        ),
        "reason": "Forbidden",
    }
    return _policy("gpuplan-require-queue", list(WORKLOADS), variables, [rule])


POLICIES = (queues, priorities, gpu_resources, dra_classes, require_queue)


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return each policy and its binding, when the cluster asks for admission policies."""
    admission = cluster.spec.admission
    if admission is None or not cluster.allocations:
        return []
    out = []
    source = cluster.located.source.path
    sources = sorted({source, *(p for a in cluster.allocations for p in a.sources)})
    for build in POLICIES:
        policy = build(cluster)
        if policy is None:
            continue
        name = policy["metadata"]["name"]
        for obj in (policy, _binding(name, admission.validation_actions)):
            out.append(manifest(cluster.name, FOLDER, obj, *sources))
    return out
