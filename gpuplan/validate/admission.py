"""The proof of the admission policies: their CEL run on sample objects of every tenant namespace.

For each cluster with `admission`, samples are built from the plan alone (never from the emitter): a
Pod, a batch Job, a JobSet, a Volcano Job and a ResourceClaim per tenant namespace that use only what
the tenant holds, which every policy must admit, and one escape per rule (another queue, a higher
Kueue priority, a GPU resource without quota, requests below limits, a foreign DeviceClass, no queue),
which that rule's policy must refuse. A policy is evaluated as the API server does
(kubernetes.io docs reference/access-authn-authz/validating-admission-policy): the binding's
namespaceSelector and the policy's resourceRules pick the request, variables are computed in order
and each validation must return true; an expression error refuses, as failurePolicy Fail does.
The CEL runs on gpuplan's interpreter (gpuplan.validate.cel) with object, oldObject (null on CREATE),
request, params (null: the policies take none), namespaceObject and variables.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpuplan.components.dra_driver import CHART_CHANNEL_CLASSES, CHART_GPU_CLASSES
from gpuplan.components.kai import authority
from gpuplan.diagnostics import Diagnostic
from gpuplan.model.manifest import Manifest
from gpuplan.plan.dra import QUOTA_SUFFIX, is_dra_resource, resource_api
from gpuplan.plan.fleet import AllocationPlan, ClusterPlan, Fleet
from gpuplan.validate.cel import K8S_FUNCTIONS, cel

KINDS = {  # kind of a sample -> (API group, resource) of its request
    "Pod": ("", "pods"),
    "Job": ("batch", "jobs"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "VolcanoJob": ("batch.volcano.sh", "jobs"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
}


@dataclass
class Sample:
    """An object created in a tenant namespace, and the policy that must refuse it (None: admitted)."""

    what: str
    obj: dict[str, Any]
    namespace: str
    refused_by: str | None = None


@dataclass
class Policy:
    """A ValidatingAdmissionPolicy with its compiled expressions and the selector of its bindings."""

    name: str
    obj: dict[str, Any]
    selectors: list[dict[str, Any]] = field(default_factory=list)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Tell whether a label selector matches labels (matchLabels and matchExpressions)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for term in selector.get("matchExpressions", []):
        key, op, values = term["key"], term["operator"], term.get("values", [])
        found = key in labels
        if (
            (op == "Exists" and not found)
            or (op == "DoesNotExist" and found)
            or (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and found and labels[key] in values)
        ):
            return False
    return True


def _matches(policy: dict[str, Any], group: str, resource: str) -> bool:
    """Tell whether a policy's resourceRules take a CREATE of this group and resource."""
    for rule in policy["spec"].get("matchConstraints", {}).get("resourceRules", []):
        if (
            ({"*", group} & set(rule.get("apiGroups", [])))
            and ({"*", resource} & set(rule.get("resources", [])))
            and ({"*", "CREATE"} & set(rule.get("operations", [])))
        ):
            return True
    return False


def _run(expression: str, context: dict[str, Any]) -> Any:
    return cel.compile(expression).execute(cel.Context(variables=context, functions=K8S_FUNCTIONS))


def evaluate(
    policy: dict[str, Any], obj: dict[str, Any], namespace: str, user: str = "tenant-user"
) -> list[str]:
    """Return the messages of the validations a policy fails on a CREATE of obj in namespace ([]: admitted).

    An expression that cannot be evaluated refuses (failurePolicy Fail), with the error as its message.
    """
    kind = (
        "VolcanoJob"
        if str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/")
        else obj["kind"]
    )
    group, resource = KINDS.get(kind, ("", obj["kind"].lower() + "s"))
    request = {
        "operation": "CREATE",
        "namespace": namespace,
        "name": obj["metadata"].get("name", ""),
        "kind": {
            "group": group,
            "version": obj["apiVersion"].rpartition("/")[2],
            "kind": obj["kind"],
        },
        "resource": {
            "group": group,
            "version": obj["apiVersion"].rpartition("/")[2],
            "resource": resource,
        },
        "userInfo": {"username": user},
    }
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    context: dict[str, Any] = {
        "object": obj,
        "oldObject": None,
        "request": request,
        "params": None,
        "namespaceObject": namespace_object,
        "variables": {},
    }
    spec = policy["spec"]
    try:
        for variable in spec.get("variables", []):
            context["variables"] = {
                **context["variables"],
                variable["name"]: _run(variable["expression"], context),
            }
    except Exception as exc:  # noqa: BLE001 - any evaluation error refuses (failurePolicy Fail)
        return [f"expression error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"]
    failed = []
    for validation in spec.get("validations", []):
        try:
            verdict = _run(validation["expression"], context)
        except Exception as exc:  # noqa: BLE001 - as above
            failed.append(
                f"expression error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            )
            continue
        if verdict is True:
            continue
        message = validation.get("message") or f"failed expression: {validation['expression']}"
        if "messageExpression" in validation:
            try:
                text = _run(validation["messageExpression"], context)
                message = text if isinstance(text, str) and text.strip() else message
            except Exception:  # noqa: BLE001 - the API server falls back to message too
                pass
        failed.append(message)
    return failed


def _container(resources: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    given = {
        "limits": limits if limits is not None else dict(resources),
        "requests": dict(resources),
    }
    return {"name": "main", "image": "registry.example.com/train:1", "resources": given}


def _pod_spec(resources: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [_container(resources, limits)]}


def _object(
    kind: str, ns: str, labels: dict[str, str], annotations: dict[str, str], spec: dict[str, Any]
) -> dict[str, Any]:
    api, kind_name = {
        "Pod": ("v1", "Pod"),
        "Job": ("batch/v1", "Job"),
        "JobSet": ("jobset.x-k8s.io/v1alpha2", "JobSet"),
        "VolcanoJob": ("batch.volcano.sh/v1alpha1", "Job"),
    }[kind]
    metadata: dict[str, Any] = {"name": "sample", "namespace": ns, "labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if kind == "Pod":
        body = spec
    elif kind == "Job":
        body = {"template": {"spec": spec}}
    elif kind == "JobSet":
        body = {
            "replicatedJobs": [
                {"name": "workers", "template": {"spec": {"template": {"spec": spec}}}}
            ]
        }
    else:
        body = {"tasks": [{"name": "workers", "replicas": 1, "template": {"spec": spec}}]}
        if VOLCANO_QUEUE in annotations:
            body["queue"] = annotations[VOLCANO_QUEUE]
    return {"apiVersion": api, "kind": kind_name, "metadata": metadata, "spec": body}


KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
KAI_QUEUE = "kai.scheduler/queue"
WORKLOAD_KINDS = ("Pod", "Job", "JobSet", "VolcanoJob")


def _queue_marks(alloc: AllocationPlan) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations that name the tenant's own queues, on every scheduler that runs."""
    components = alloc.cluster.spec.components
    labels, annotations = {}, {}
    if components.kueue is not None:
        labels[KUEUE_QUEUE] = alloc.spec.kueue.local_queues[0].name
    if components.kai is not None:
        labels[KAI_QUEUE] = alloc.name
    if components.volcano is not None:
        annotations[VOLCANO_QUEUE] = alloc.name
    return labels, annotations


def _ceiling(cluster: ClusterPlan, alloc: AllocationPlan) -> int:
    own = alloc.tenant.model.priority_class
    return next((p.value for p in cluster.spec.priority_classes if p.name == own), 0)


def samples(cluster: ClusterPlan) -> Iterator[Sample]:
    """Yield the admitted and refused samples of every tenant namespace of a cluster."""
    components = cluster.spec.components
    others = [a.name for a in cluster.allocations]
    gpus = sorted(
        {r for p in cluster.pools.values() for r in p.resources if not is_dra_resource(r)}
    )
    for alloc in cluster.allocations:
        granted = [r for r in alloc.resources() if not is_dra_resource(r)]
        own = {granted[0]: "1"} if granted else {"cpu": "1"}
        labels, annotations = _queue_marks(alloc)
        own_class = alloc.tenant.model.priority_class
        if components.kueue is not None and own_class:
            labels[KUEUE_PRIORITY] = own_class
        other = next((n for n in others if n != alloc.name), f"{alloc.name}-elsewhere")
        for ns in alloc.namespaces:
            for kind in WORKLOAD_KINDS:
                yield Sample(
                    f"a {kind} using only what tenant {alloc.name} holds",
                    _object(kind, ns, labels, annotations, _pod_spec(own)),
                    ns,
                )
            yield from _escapes(cluster, alloc, ns, labels, annotations, own, granted, gpus, other)
            if components.dra_driver is not None:
                yield from _claims(cluster, alloc, ns)


def _escapes(
    cluster: ClusterPlan,
    alloc: AllocationPlan,
    ns: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    own: dict[str, str],
    granted: list[str],
    gpus: list[str],
    other: str,
) -> Iterator[Sample]:
    components = cluster.spec.components

    def escape(
        what: str,
        kind: str,
        policy: str,
        marks: tuple[dict[str, str], dict[str, str]] = (labels, annotations),
        spec: dict[str, Any] | None = None,
    ) -> Sample:
        obj = _object(kind, ns, *marks, spec or _pod_spec(own))
        return Sample(what, obj, ns, policy)

    queues = "gpuplan-tenant-queues"
    if components.kueue is not None:
        names = {q.name for q in alloc.spec.kueue.local_queues}
        foreign = next(f"{n}-{other}" for n in sorted(names) if f"{n}-{other}" not in names)
        marks = ({**labels, KUEUE_QUEUE: foreign}, annotations)
        yield escape(
            f"a Pod on LocalQueue {foreign}, not one of its namespace's", "Pod", queues, marks
        )
        above = [p for p in cluster.spec.priority_classes if p.value > _ceiling(cluster, alloc)]
        if above:
            top = max(above, key=lambda p: p.value).name
            marks = ({**labels, KUEUE_PRIORITY: top}, annotations)
            what = f"a Job at workload priority {top}, above tenant {alloc.name}'s ceiling"
            yield escape(what, "Job", "gpuplan-workload-priority", marks)
    if components.kai is not None:
        marks = ({**labels, KAI_QUEUE: other}, annotations)
        yield escape(f"a Pod on KAI Queue {other}", "Pod", queues, marks)
    if components.volcano is not None:
        marks = (labels, {**annotations, VOLCANO_QUEUE: other})
        yield escape(f"a Volcano Job in Volcano Queue {other}", "VolcanoJob", queues, marks)
        marks = ({**labels, "volcano.sh/queue-name": other}, annotations)
        yield escape(f"a Pod labelled for Volcano Queue {other}", "Pod", queues, marks)
    gpu_rule = "gpuplan-gpu-resources"
    foreign = next((r for r in gpus if r not in granted), "nvidia.com/not-granted")
    what = f"a JobSet asking for {foreign}, which tenant {alloc.name} has no quota for"
    yield escape(what, "JobSet", gpu_rule, spec=_pod_spec({foreign: "1"}))
    if not granted:
        return
    what = f"a Job asking for {granted[0]} with requests below limits"
    yield escape(what, "Job", gpu_rule, spec=_pod_spec({granted[0]: "1"}, {granted[0]: "2"}))
    admission = cluster.spec.admission
    if admission is not None and admission.require_queue and authority(components) is not None:
        yield escape(
            "a Job asking for GPUs without a queue", "Job", "gpuplan-require-queue", ({}, {})
        )


def _claims(cluster: ClusterPlan, alloc: AllocationPlan, ns: str) -> Iterator[Sample]:
    api = resource_api(cluster.spec)
    classes = [r.removesuffix(QUOTA_SUFFIX) for r in alloc.resources() if is_dra_resource(r)]

    def claim(device_class: str) -> dict[str, Any]:
        request: dict[str, Any] = {"name": "gpu"}
        if api == "resource.k8s.io/v1beta1":
            request["deviceClassName"] = device_class
        else:
            request["exactly"] = {"deviceClassName": device_class}
        spec = {"devices": {"requests": [request]}}
        return {
            "apiVersion": api,
            "kind": "ResourceClaim",
            "metadata": {"name": "sample", "namespace": ns},
            "spec": spec,
        }

    for admitted in [*classes[:1], *CHART_CHANNEL_CLASSES]:
        yield Sample(f"a ResourceClaim on DeviceClass {admitted}", claim(admitted), ns)
    for chart in CHART_GPU_CLASSES:
        what = f"a ResourceClaim on the driver chart's DeviceClass {chart}"
        yield Sample(what, claim(chart), ns, "gpuplan-dra-classes")


def cluster_policies(manifests: list[Manifest], cluster: str) -> list[Policy]:
    mine = [m.obj for m in manifests if m.cluster == cluster]
    policies = {
        o["metadata"]["name"]: Policy(o["metadata"]["name"], o)
        for o in mine
        if o.get("kind") == "ValidatingAdmissionPolicy"
    }
    for o in mine:
        if o.get("kind") == "ValidatingAdmissionPolicyBinding":
            bound = policies.get(o["spec"].get("policyName"))
            if bound is not None:
                selector = o["spec"].get("matchResources", {}).get("namespaceSelector", {})
                bound.selectors.append(selector)
    return sorted(policies.values(), key=lambda p: p.name)


def namespace_labels(manifests: list[Manifest], cluster: str) -> dict[str, dict[str, str]]:
    return {
        m.obj["metadata"]["name"]: dict(m.obj["metadata"].get("labels", {}))
        for m in manifests
        if m.cluster == cluster and m.obj.get("kind") == "Namespace"
    }


def verdicts(
    sample: Sample, policies: list[Policy], labels: dict[str, str]
) -> dict[str, list[str]]:
    """Return, per policy that refuses the sample, its messages."""
    kind = (
        "VolcanoJob"
        if sample.obj["apiVersion"].startswith("batch.volcano.sh/")
        else sample.obj["kind"]
    )
    group, resource = KINDS[kind]
    out = {}
    for policy in policies:
        if not any(_selects(s, labels) for s in policy.selectors):
            continue
        if not _matches(policy.obj, group, resource):
            continue
        failed = evaluate(policy.obj, sample.obj, sample.namespace)
        if failed:
            out[policy.name] = failed
    return out


def admission_problems(manifests: list[Manifest], fleet: Fleet) -> list[Diagnostic]:
    """Return an error at the cluster's `admission` for every sample a policy treats wrongly."""
    problems = []
    rendered = {m.cluster for m in manifests}  # render --cluster: the others are not proven here
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if cluster.spec.admission is None or name not in rendered:
            continue
        policies = cluster_policies(manifests, name)
        namespaces = namespace_labels(manifests, name)
        source = cluster.located.source
        for sample in samples(cluster):
            refused = verdicts(sample, policies, namespaces.get(sample.namespace, {}))
            wrong = None
            if sample.refused_by is None and refused:
                policy, messages = next(iter(refused.items()))
                wrong = f"policy {policy} refuses {sample.what} in namespace {sample.namespace}: {messages[0]}"
            elif sample.refused_by is not None and sample.refused_by not in refused:
                wrong = f"policy {sample.refused_by} admits {sample.what} in namespace {sample.namespace}"
            if wrong is not None:
                problems.append(
                    source.diagnostic(("admission",), f"admission proof: {wrong}", at_key=True)
                )
    return problems
