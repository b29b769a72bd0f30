"""Kueue's Application: the chart with a Configuration derived from the model.

The chart reads the whole Configuration from `managerConfig.controllerManagerConfigYaml` (a YAML
string; kubernetes-sigs/kueue charts/kueue/values.yaml at every supported tag) and adds
internalCertManagement itself (templates/manager/manager-config.yaml). Fields
(apis/config/<version>/configuration_types.go at each tag): `manageJobsWithoutQueueName`,
`managedJobsNamespaceSelector`, `integrations.frameworks`, `fairSharing` (v1beta1:
`enable` + `preemptionStrategies`; v1beta2: present means on, `preemptionStrategies` required) and
`featureGates`. Health, metrics, webhook and leader election keep the chart's values, which are
also the code defaults (apis/config/v1beta1/defaults.go); the chart's controller concurrency and
client QPS / burst, which are not the code's defaults before v0.19, are repeated per release
(KueueRelease.chart_manager).
"""

from __future__ import annotations

from typing import Any

from gpuplan.components import REGISTRY
from gpuplan.components.kueue import KueueRelease
from gpuplan.emit import kueue as kueue_emitter
from gpuplan.emit.bootstrap.app import WEBHOOKS, Operator
from gpuplan.emit.bootstrap.fabrics import device_resources
from gpuplan.plan.dra import classes
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.writer.yamlout import dump

NAME = "kueue"
CONFIG_GROUP = "config.kueue.x-k8s.io"
# charts/kueue/templates at v0.19.2: the visibility API server and its API priority and fairness.
CLUSTER_KINDS = (
    "apiregistration.k8s.io/APIService",
    "flowcontrol.apiserver.k8s.io/FlowSchema",
    "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration",
)
NAMESPACE_NAME = "kubernetes.io/metadata.name"
# Both strategies, in the order the chart's example and the fair sharing docs list them.
PREEMPTION_STRATEGIES = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


def tenant_namespaces(cluster: ClusterPlan) -> list[str]:
    """Return every tenant namespace on the cluster, sorted."""
    return sorted({ns for alloc in cluster.allocations for ns in alloc.namespaces})


def _selected(namespaces: list[str]) -> dict[str, Any]:
    """Return a namespace selector term for exactly these namespaces (none: every namespace has the label)."""
    if namespaces:
        return {"key": NAMESPACE_NAME, "operator": "In", "values": namespaces}
    return {"key": NAMESPACE_NAME, "operator": "DoesNotExist"}


def needed_gates(cluster: ClusterPlan) -> set[str]:
    """Return the feature gates the emitted Kueue objects rely on."""
    return kueue_emitter.gates(cluster)


def device_class_mappings(cluster: ClusterPlan, release: KueueRelease) -> list[dict[str, Any]]:
    """Return one mapping per DRA DeviceClass, named as the ClusterQueues cover its devices.

    The name is the class's ResourceQuota key, a valid label key (pkg/config/validation.go at v0.19.2
    checks content.IsLabelKey), so the ClusterQueue and the ResourceQuota count the same resource.
    Only where Kueue has DRA on by default (v0.18 on); check/dra.py refuses DRA pools with an older Kueue.
    """
    if release.dra != "beta":
        return []
    return [
        {"name": cls.resource, "deviceClassNames": [cls.name]} for cls in classes(cluster).values()
    ]


def configuration(cluster: ClusterPlan, release: KueueRelease) -> dict[str, Any]:
    """Return the Kueue Configuration for the cluster."""
    kueue = cluster.spec.components.kueue
    assert kueue is not None
    version = release.config_versions[-1]
    authority = cluster.spec.components.quota_authority in (None, NAME)
    namespaces = tenant_namespaces(cluster)
    config: dict[str, Any] = {
        "apiVersion": f"{CONFIG_GROUP}/{version}",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # Bare pods and jobs without a queue name are held too, but only in tenant namespaces: in
        # kube-system or an operator's namespace they would wait for a quota that never comes.
        "manageJobsWithoutQueueName": authority and bool(namespaces),
        "managedJobsNamespaceSelector": {"matchExpressions": [_selected(namespaces)]},
        "integrations": {"frameworks": list(kueue.frameworks)},
        **release.chart_manager,
    }
    if cluster.spec.components.monitoring is not None:
        # The tenants' quota, usage and lending series the dashboards and the pending-under-quota alert read
        # (metrics.enableClusterQueueResources: apis/config/<version>/configuration_types.go at every tag).
        config["metrics"]["enableClusterQueueResources"] = True
    if device_resources(
        cluster
    ):  # pods of tenants' networks ask for them; no ClusterQueue covers them
        config["resources"] = {"excludeResourcePrefixes": device_resources(cluster)}
    mappings = device_class_mappings(cluster, release)
    if mappings:
        config.setdefault("resources", {})["deviceClassMappings"] = mappings
    if any(alloc.spec.weight is not None for alloc in cluster.allocations):
        sharing: dict[str, Any] = {"preemptionStrategies": list(PREEMPTION_STRATEGIES)}
        config["fairSharing"] = sharing if version == "v1beta2" else {"enable": True, **sharing}
    fair = kueue.admission_fair_sharing
    if fair is not None:  # apis/config/<version>/configuration_types.go AdmissionFairSharing
        config["admissionFairSharing"] = {
            "usageHalfLifeTime": fair.usage_half_life_time,
            "usageSamplingInterval": fair.usage_sampling_interval,
        }
        if fair.resource_weights:
            config["admissionFairSharing"]["resourceWeights"] = dict(
                sorted(fair.resource_weights.items())
            )
    gates = sorted(needed_gates(cluster) - release.gates_on)
    if gates:
        config["featureGates"] = dict.fromkeys(gates, True)
    return config


def operators(cluster: ClusterPlan) -> list[Operator]:
    """Return Kueue's Application, if the cluster runs Kueue."""
    kueue = cluster.spec.components.kueue
    release = cluster.release(NAME)
    if kueue is None or not isinstance(release, KueueRelease) or release.chart is None:
        return []
    text = dump(configuration(cluster, release))
    values = {"managerConfig": {"controllerManagerConfigYaml": text}}
    crds = REGISTRY[NAME].crd_set(release)
    return [
        Operator(
            NAME, kueue.namespace, chart=release.chart, values=values, server_side=True, crds=(crds,) if crds else (),
            cluster_kinds=Operator.cluster_kinds + WEBHOOKS + CLUSTER_KINDS,
        )
    ]  # fmt: skip
