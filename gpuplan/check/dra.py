"""DRA rules: what a cluster needs before its pools' GPUs can be claimed through the NVIDIA DRA driver.

Mixing DRA pools and device-plugin pools in one cluster is what upstream supports, one node never
both: the driver's chart refuses GPU allocation beside the device plugin "on the same node"
(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 templates/validation.yaml), and the GPU Operator skips its
device plugin on a node labelled nvidia.com/gpu.deploy.device-plugin=false (NVIDIA/gpu-operator v26.7.0
controllers/state_manager.go addGPUStateLabels keeps a label already set). Where nothing can disable the
device plugin per node (GKE's own GPU stack), a DRA pool is an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check
from gpuplan.components.dra_driver import (
    BETA_APIS,
    CHART_CHANNEL_CLASSES,
    CHART_GPU_CLASSES,
    GPU_OPERATOR_SINCE,
    NFD_PCI_LABEL,
    RESOURCE_API,
    RESOURCE_API_SINCE,
    SHARING_GATES,
    DraDriverRelease,
)
from gpuplan.components.kai import authority
from gpuplan.components.kueue import MAX_DEVICE_CLASS_MAPPINGS, KueueRelease
from gpuplan.components.volcano import VolcanoRelease
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.dra import DraClass, classes, dra_pools, driver_roots, resource_api, strategy_of
from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.plan.gke import google_stack

# The chart's own DeviceClasses: a gpuplan class of the same name would fight the chart over the object.
CHART_CLASSES = frozenset(CHART_GPU_CLASSES + CHART_CHANNEL_CLASSES)
# `<class>.deviceclass.resource.k8s.io` is the prefix of a quota key: a DNS subdomain of at most 253.
MAX_CLASS_NAME = 253 - len(".deviceclass.resource.k8s.io")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.removeprefix("v").split("."))


def _clusters(fleet: Fleet) -> Iterator[ClusterPlan]:
    """Yield, in name order, the clusters with DRA pools."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if dra_pools(cluster):
            yield cluster


@check
def check_dra_kubernetes(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on DRA pools where the cluster serves no resource.k8s.io version gpuplan can write in.

    v1 is served, on by default, from 1.34. 1.32 and 1.33 serve DRA only as beta APIs, off by default behind
    the DynamicResourceAllocation feature gate (gpuplan/components/dra_driver.py BETA_APIS), so there the
    cluster states the one it turned on in components.draDriver.resourceApi; before 1.32 there is no
    structured-parameters DRA beta at all (1.31 has v1alpha3 only). From 1.34 gpuplan writes v1.
    """
    for cluster in _clusters(fleet):
        version = _version(cluster.spec.kubernetes_version)
        driver = cluster.spec.components.dra_driver
        declared = driver.resource_api if driver is not None else None
        if declared is None and version < RESOURCE_API_SINCE:
            for pool in dra_pools(cluster):
                yield cluster.located.source.diagnostic(("nodePools", pool.index, "dra"), (
                    f"pool {pool.name} uses DRA, but Kubernetes {cluster.spec.kubernetes_version} does not serve {RESOURCE_API} "
                    "(DRA is GA and on by default from 1.34; 1.32 and 1.33 serve only beta versions, off by default): "
                    f"{_beta_hint(version)}, or remove dra"
                ))  # fmt: skip
        release = cluster.release("dra-driver")
        api = resource_api(cluster.spec)
        if isinstance(release, DraDriverRelease) and api not in release.resource_apis:
            yield cluster.located.source.diagnostic(("components", "draDriver", "version"), (
                f"the DRA driver {release.version}'s chart takes no resourceApiVersion {api}: pin a release that does"
            ))  # fmt: skip
        if declared is not None and not _serves(version, declared):
            kubernetes = cluster.spec.kubernetes_version
            yield cluster.located.source.diagnostic(("components", "draDriver", "resourceApi"), (
                f"on Kubernetes {kubernetes} gpuplan writes DRA objects in {RESOURCE_API} (served and on by default "
                f"from 1.34), not {declared}: remove resourceApi"
                if version >= RESOURCE_API_SINCE
                else f"Kubernetes {kubernetes} does not serve {declared}: {_beta_hint(version)}"
            ))  # fmt: skip


def _serves(version: tuple[int, ...], api: str) -> bool:
    """Tell whether gpuplan may write DRA objects in `api` for a cluster of this Kubernetes version."""
    if api == RESOURCE_API:
        return version >= RESOURCE_API_SINCE
    low, high = BETA_APIS[api]
    return low <= version[:2] <= high


def _beta_hint(version: tuple[int, ...]) -> str:
    """Return what a cluster before 1.34 can do to use DRA."""
    served = [api for api in BETA_APIS if _serves(version, api)]
    if not served:
        return "upgrade the cluster to 1.34 or later (1.32 and 1.33 with a beta API turned on)"
    return (
        f"turn on {' or '.join(served)} in the cluster (the DynamicResourceAllocation feature gate) "
        "and state it in components.draDriver.resourceApi, or upgrade the cluster to 1.34 or later"
    )


@check
def check_dra_driver(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on DRA pools without components.draDriver, or where the device plugin cannot be disabled."""
    for cluster in _clusters(fleet):
        source = cluster.located.source
        operator = cluster.spec.components.gpu_operator
        release = cluster.release("gpu-operator")
        for pool in dra_pools(cluster):
            where = ("nodePools", pool.index, "dra")
            if cluster.spec.components.dra_driver is None:
                yield source.diagnostic(where, f"pool {pool.name} uses DRA: add components.draDriver (the NVIDIA DRA driver that allocates its GPUs)")  # fmt: skip
            if google_stack(cluster.spec):
                yield source.diagnostic(where, (
                    f"pool {pool.name} uses DRA, but GKE's own GPU stack runs its device plugin on every GPU node and "
                    "the DRA driver may not share a node with it: run the GPU Operator on this cluster, or remove dra"
                ))  # fmt: skip
            elif (
                operator is not None
                and _version(cluster.spec.kubernetes_version) < RESOURCE_API_SINCE
            ):
                yield source.diagnostic(("components", "gpuOperator"), (
                    f"pool {pool.name} uses DRA beside the GPU Operator, which NVIDIA supports on Kubernetes 1.34.2 "
                    f"or later, not {cluster.spec.kubernetes_version}: use a driver on the host (no gpuOperator) "
                    "or upgrade the cluster"
                ))  # fmt: skip
            elif (
                operator is not None
                and release is not None
                and _version(release.version) < GPU_OPERATOR_SINCE
            ):
                yield source.diagnostic(("components", "gpuOperator", "version"), (
                    f"pool {pool.name} uses DRA, which needs GPU Operator v25.10.0 or later (CDI on by default, driver 580+), "
                    f"not {release.version}"
                ))  # fmt: skip


@check
def check_dra_plugin_nodes(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error where the pinned driver's kubelet plugin would match no node of a cluster without the GPU Operator.

    Its default affinity needs a label that only the GPU Operator (nvidia.com/gpu.present) or NFD's
    class-qualified PCI label gives these nodes (gpuplan/components/dra_driver.py).
    """
    for cluster in _clusters(fleet):
        release = cluster.release("dra-driver")
        if not isinstance(release, DraDriverRelease) or cluster.spec.components.gpu_operator:
            continue
        if NFD_PCI_LABEL in release.plugin_node_labels:
            continue
        yield cluster.located.source.diagnostic(("components", "draDriver", "version"), (
            f"the DRA driver {release.version}'s kubelet plugin runs only on nodes labelled "
            f"{', '.join(sorted(release.plugin_node_labels))}, and without the GPU Operator NFD labels NVIDIA GPUs "
            f"{NFD_PCI_LABEL}: pin a newer driver release or run the GPU Operator"
        ))  # fmt: skip


@check
def check_dra_autoscaling(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a DRA pool Karpenter scales: Karpenter launches no node for a pod with ResourceClaims.

    kubernetes-sigs/karpenter v1.14.1 pkg/operator/options/options.go: --ignore-dra-requests defaults to
    true, and then pkg/controllers/provisioning/scheduling/scheduler.go fails every pod with DRA requests
    (its DRA support is not GA). A static pool ({count: N}) is always there.
    """
    for cluster in _clusters(fleet):
        for pool in dra_pools(cluster):
            if pool.spec.nodes.by_karpenter:
                yield cluster.located.source.diagnostic(("nodePools", pool.index, "nodes"), (
                    f"pool {pool.name} uses DRA, but Karpenter launches no node for a pod with ResourceClaims "
                    "(--ignore-dra-requests is on by default): make the pool static ({count: N}), or leave it on the device plugin"
                ))  # fmt: skip


@check
def check_dra_device_classes(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when one DeviceClass name would select different devices, or names a class the chart makes.

    A class selects one GPU model (and MIG profile) with one sharing: a second pool giving the same name to
    another model's GPUs would have its tenants claim GPUs their pool does not have.
    """
    for cluster in _clusters(fleet):
        source = cluster.located.source
        first: dict[str, tuple[DraClass, str]] = {}
        for pool in dra_pools(cluster):
            where = ("nodePools", pool.index, "dra", "deviceClass")
            for resource in pool.resources.values():
                cls = resource.device_class
                if cls is None:
                    continue
                if cls.name in first and first[cls.name][0] != cls:
                    other, owner = first[cls.name]
                    yield source.diagnostic(where, (
                        f"DeviceClass {cls.name} selects {_describe(other)} (pool {owner}); pool {pool.name} has {_describe(cls)}: "
                        "give this pool its own deviceClass"
                    ))  # fmt: skip
                first.setdefault(cls.name, (cls, pool.name))
                if cls.name in CHART_CLASSES:
                    yield source.diagnostic(where, f"DeviceClass {cls.name} is made by the DRA driver's chart itself: choose another name")  # fmt: skip
                if len(cls.name) > MAX_CLASS_NAME:
                    yield source.diagnostic(where, f"DeviceClass {cls.name} is longer than {MAX_CLASS_NAME} characters, too long for its ResourceQuota key")  # fmt: skip
            if not pool.model.product_labels:
                yield source.diagnostic(("nodePools", pool.index, "gpu"), (
                    f"gpuplan knows no product name of {pool.model.name}, which a DeviceClass selects DRA devices by: "
                    "use the device plugin on this pool"
                ))  # fmt: skip


def _describe(cls: DraClass) -> str:
    what = f"{cls.profile} MIG instances of {cls.model}" if cls.profile else f"{cls.model} GPUs"
    return what + (f" shared by {cls.strategy}" if cls.strategy else "")


@check
def check_dra_sharing(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a DRA pool's sharing settings the driver release cannot apply."""
    for cluster in _clusters(fleet):
        release = cluster.release("dra-driver")
        if not isinstance(release, DraDriverRelease):
            continue
        for pool in dra_pools(cluster):
            sharing = pool.spec.sharing
            strategy = strategy_of(pool.spec)
            gate = SHARING_GATES.get(strategy) if strategy else None
            if gate is not None and gate not in release.feature_gates:
                field = "mps" if strategy == "MPS" else "timeSlicing"
                yield cluster.located.source.diagnostic(
                    ("nodePools", pool.index, "sharing", field),
                    f"the DRA driver {release.version} has no feature gate {gate}, which {strategy} sharing "
                    f"of DRA devices needs: pin a release that has it (components.draDriver.version) or remove {field}",
                )  # fmt: skip
            slicing = sharing.time_slicing
            interval = slicing.interval if slicing is not None else None
            if (
                sharing.mig is not None
                and interval is not None
                and not release.mig_time_slicing_config
            ):
                yield cluster.located.source.diagnostic(
                    ("nodePools", pool.index, "sharing", "timeSlicing", "interval"),
                    f"the DRA driver {release.version} takes no time-slice interval for MIG devices (its MigDeviceConfig "
                    "has no timeSlicingConfig, and unknown fields fail the claim): remove interval",
                )  # fmt: skip


@check
def check_dra_nodes(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error where a DRA pool's nodes would lack the driver's labels, or pools need different driver roots."""
    for cluster in _clusters(fleet):
        source = cluster.located.source
        for pool in dra_pools(cluster):
            if not pool.label_selected:
                continue  # gpuplan labels these nodes itself (NFD rules, Karpenter)
            missing = [
                f"{k}: {v!r}" for k, v in pool.dra_labels.items() if pool.spec.labels.get(k) != v
            ]
            if missing:
                yield source.diagnostic(("nodePools", pool.index, "labels"), (
                    f"pool {pool.name} uses DRA and gpuplan does not label its nodes: give them (and its labels) "
                    f"{', '.join(missing)}, or the device plugin runs there and the DRA kubelet plugin does not"
                ))  # fmt: skip
        roots = driver_roots(cluster)
        if len(set(roots.values())) > 1:
            listed = ", ".join(f"{pool} {root}" for pool, root in roots.items())
            yield source.diagnostic(("nodePools",), (
                f"the DRA pools of cluster {cluster.name} have their drivers in different places ({listed}); "
                "the DRA driver's kubelet plugin takes one nvidiaDriverRoot: use one driver mode on them"
            ))  # fmt: skip


@check
def check_dra_schedulers(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error where Kueue or Volcano cannot count DRA devices, or KAI cannot see them as GPUs.

    Kueue: DRA on by default from v0.18 (KueueDRAIntegration beta); alpha and off before. No DRA with
    topology-aware scheduling, at most 16 deviceClassMappings (kubernetes-sigs/kueue v0.19.2
    site/content/en/docs/concepts/dynamic_resource_allocation.md "Limitations", pkg/config/validation.go).
    """
    for cluster in _clusters(fleet):
        source = cluster.located.source
        release = cluster.release("kueue")
        if isinstance(release, KueueRelease):
            yield from _kueue(cluster, release)
        volcano = cluster.release("volcano")
        volcano_enforces = authority(cluster.spec.components) == "volcano"
        if volcano_enforces and isinstance(volcano, VolcanoRelease) and not volcano.dra_quota:
            yield source.diagnostic(("components", "volcano", "version"), (
                f"Volcano enforces the quotas of cluster {cluster.name}, which has DRA pools, but Volcano "
                f"{volcano.version} counts no DRA devices in Queues: use Volcano v1.15 or later"
            ))  # fmt: skip
        api = resource_api(cluster.spec)
        if (
            isinstance(volcano, VolcanoRelease)
            and api != RESOURCE_API
            and volcano.dra_api not in (None, api)
        ):
            # Volcano's scheduler cache watches ResourceClaims and DeviceClasses in one version only
            # (gpuplan/components/volcano.py dra_api); on a beta cluster it must be the one turned on.
            yield source.diagnostic(("components", "volcano", "version"), (
                f"cluster {cluster.name} has DRA pools on {api}, but Volcano {volcano.version} reads DRA objects "
                f"through {volcano.dra_api} only: upgrade the cluster to 1.34 or later, or pin a Volcano that reads {api}"
            ))  # fmt: skip
        if cluster.release("kai-scheduler") is not None and api != RESOURCE_API:
            # KAI's scheduler reads DRA objects through informerFactory.Resource().V1() (NVIDIA/KAI-Scheduler
            # pkg/ from v0.12.17 to v0.20.1; v0.16.8 and v0.17.0 lie between, their tags were not stored).
            yield source.diagnostic(("components", "kai"), (
                f"cluster {cluster.name} has DRA pools on {api}, but KAI reads DRA objects through {RESOURCE_API} "
                "only: upgrade the cluster to 1.34 or later, or leave KAI out"
            ))  # fmt: skip
        if authority(cluster.spec.components) == "kai":
            for cls in classes(cluster).values():
                if "gpu" not in cls.name:
                    yield source.diagnostic(("components", "kai"), (
                        f"KAI counts a DRA device as a GPU only when its DeviceClass name contains \"gpu\"; {cls.name} does not: "
                        "rename the pool's deviceClass"
                    ))  # fmt: skip


def _kueue(cluster: ClusterPlan, release: KueueRelease) -> Iterator[Diagnostic]:
    source = cluster.located.source
    api = resource_api(cluster.spec)
    if release.dra == "beta" and api != RESOURCE_API:
        # Kueue's DRA integration reads ResourceClaims, ResourceClaimTemplates and DeviceClasses through the
        # resource.k8s.io/v1 client only (kubernetes-sigs/kueue v0.18.0 and v0.19.2 pkg/dra/claims.go,
        # pkg/dra/mapper.go, pkg/controller/core/indexer/indexer.go import k8s.io/api/resource/v1).
        yield source.diagnostic(("components", "kueue"), (
            f"cluster {cluster.name} has DRA pools on {api}, but Kueue {release.version} counts DRA devices "
            f"through {RESOURCE_API} only: upgrade the cluster to 1.34 or later, or let another scheduler "
            "(or ResourceQuota alone) hold the DRA quotas"
        ))  # fmt: skip
    if release.dra != "beta":
        state = (
            "DRA only as the alpha feature DynamicResourceAllocation, off by default"
            if release.dra
            else "no DRA support"
        )
        yield source.diagnostic(("components", "kueue", "version"), (
            f"cluster {cluster.name} has DRA pools, but Kueue {release.version} has {state}: "
            "use Kueue v0.18 or later (KueueDRAIntegration, on by default)"
        ))  # fmt: skip
    for pool in dra_pools(cluster):
        if pool.spec.topology:
            yield source.diagnostic(("nodePools", pool.index, "topology"), (
                f"pool {pool.name} uses DRA and topology-aware scheduling, which Kueue does not combine "
                "(DRA devices are left out of TAS capacity): remove topology or dra"
            ))  # fmt: skip
    count = len(classes(cluster))
    if count > MAX_DEVICE_CLASS_MAPPINGS:
        yield source.diagnostic(("nodePools",), (
            f"cluster {cluster.name} has {count} DRA DeviceClasses; Kueue's Configuration takes at most "
            f"{MAX_DEVICE_CLASS_MAPPINGS} deviceClassMappings"
        ))  # fmt: skip
