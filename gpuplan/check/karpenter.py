"""Karpenter rules: who labels an autoscaled pool's nodes, and what the cluster's Karpenter release runs.

Rules the NodePool CRD enforces on the objects gpuplan emits (its CEL validations), the release's
facts (gpuplan/components/karpenter.py: node class, capacity types), and wiring that would validate
but never work at run time. NFD's rules for static pools are in check/nfd.py. That an autoscaled
pool needs components.karpenter and a provider Karpenter serves is checked in resolve.py
(`_pool_shape`).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.karpenter import RELEASES, KarpenterRelease
from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile, format_path
from gpuplan.plan.fleet import INSTANCE_GPUS, ClusterPlan, Fleet
from gpuplan.plan.pools import GPU, PoolPlan


def _warning(source: SourceFile, loc: Key, message: str, at_key: bool = False) -> Diagnostic:
    line, col = source.position(loc, at_key)
    return Diagnostic(source.path, line, col, Severity.WARNING, format_path(loc), message)


def _pools(fleet: Fleet, autoscaled: bool) -> Iterator[tuple[ClusterPlan, PoolPlan]]:
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for pool in cluster.pools.values():
            if (
                pool.spec.nodes.autoscaled == autoscaled
                and not pool.spec.nodes.by_cluster_autoscaler
            ):
                yield cluster, pool


def _made(fleet: Fleet) -> Iterator[tuple[ClusterPlan, PoolPlan]]:
    """Yield the pools Karpenter makes (a NodePool each: autoscaled, or static with a karpenter section)."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for pool in cluster.pools.values():
            if pool.karpenter_made and pool.spec.karpenter is not None:
                yield cluster, pool


def _domain(key: str) -> str:
    return key.rpartition("/")[0]


def _in_domain(key: str, domain: str) -> bool:
    prefix = _domain(key)
    return prefix == domain or prefix.endswith("." + domain)


# --- Karpenter -------------------------------------------------------------------------------


def _karpenter(cluster: ClusterPlan) -> KarpenterRelease | None:
    release = cluster.release("karpenter")
    return release if isinstance(release, KarpenterRelease) else None


@check
def check_karpenter_node_class(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when nodeClass is not the node class of the cluster's Karpenter provider."""
    for cluster in clusters_with(fleet, "karpenter"):
        release, spec = _karpenter(cluster), cluster.spec.components.karpenter
        if release is None or spec is None:
            continue
        wanted, ref = release.node_class, spec.node_class
        if (ref.group, ref.kind) != (wanted.group, wanted.kind):
            message = (
                f"Karpenter for {release.line} ({release.version}) provisions nodes from {wanted.kind} "
                f"({wanted.group}), not {ref.kind} ({ref.group}): its NodePools would never launch a node"
            )
            yield cluster.located.source.diagnostic(
                ("components", "karpenter", "nodeClass"), message
            )


@check
def check_karpenter_capacity_types(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on capacity type `reserved` before Karpenter core v1.3; warn while its gate is off by default."""
    for cluster, pool in _made(fleet):
        release, spec = _karpenter(cluster), pool.spec.karpenter
        if release is None or spec is None or "reserved" not in spec.capacity_types:
            continue
        loc = (
            "nodePools",
            pool.index,
            "karpenter",
            "capacityTypes",
            spec.capacity_types.index("reserved"),
        )
        if not release.reserved_capacity:
            message = f"Karpenter {release.version} (core {release.core}) has no reserved capacity type (core v1.3.0 added it)"
            yield cluster.located.source.diagnostic(loc, message)
        elif not release.reserved_capacity_by_default:
            message = f"Karpenter {release.version} (core {release.core}) launches reserved capacity only with the ReservedCapacity feature gate on (default off before core v1.6.0)"
            yield _warning(cluster.located.source, loc, message)


@check
def check_instance_type_gpus(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a known instance type has another GPU count than the pool's gpusPerNode."""
    for cluster, pool in _made(fleet):
        spec = pool.spec.karpenter
        if spec is None:
            continue
        for t_index, instance_type in enumerate(spec.instance_types):
            count = INSTANCE_GPUS.get(instance_type)
            if count is not None and count != pool.gpus_per_node:
                loc = ("nodePools", pool.index, "karpenter", "instanceTypes", t_index)
                message = (
                    f"{instance_type} has {count} GPUs, but the pool's nodes have {pool.gpus_per_node} (gpusPerNode): "
                    "the pool's capacity and its NodePool's nvidia.com/gpu limit would be wrong"
                )
                yield cluster.located.source.diagnostic(loc, message)


@check
def check_host_architecture(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a pool's GPU only comes on hosts of another CPU architecture than its NodePool asks for."""
    for cluster, pool in _made(fleet):
        spec, need = pool.spec.karpenter, pool.model.host_arch
        if spec is None or not need or spec.architecture == need:
            continue
        # The NodePool requires kubernetes.io/arch of the pool's architecture (emit/karpenter.py), and
        # Karpenter launches only instance types whose labels meet every requirement
        # (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/nodeclaim.go,
        # filterInstanceTypesByRequirements): no instance type has both.
        message = (
            f"{pool.model.name} is a Grace superchip: its hosts are {need}, and the pool's NodePool asks for "
            f"{spec.architecture} nodes, so Karpenter never launches one; set karpenter.architecture: {need}"
        )
        yield cluster.located.source.diagnostic(("nodePools", pool.index, "karpenter"), message)


@check
def check_karpenter_labels(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on pool labels the NodePool CRD refuses in template labels (karpenter.sh, hostname)."""
    for cluster, pool in _made(fleet):
        if cluster.spec.components.karpenter is None:
            continue
        for key in pool.spec.labels:
            reason = None
            if key == "kubernetes.io/hostname":
                reason = "Karpenter sets kubernetes.io/hostname itself"
            elif _in_domain(key, "karpenter.sh") and key != "karpenter.sh/capacity-type":
                reason = 'the label domain "karpenter.sh" is reserved for Karpenter'
            if reason is not None:
                loc = ("nodePools", pool.index, "labels", key)
                yield cluster.located.source.diagnostic(
                    loc, f"{reason}; the NodePool would be rejected", at_key=True
                )


@check
def check_karpenter_known_resources(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when an autoscaled pool's GPUs are advertised under a name Karpenter cannot predict.

    Karpenter launches a node for a pending pod only if some instance type's predicted resources
    fit the pod's requests, and its instance-type model knows physical `nvidia.com/gpu` only.
    Pods asking for `nvidia.com/mig-*` or `nvidia.com/gpu.shared` never make it launch a node.
    """
    for cluster, pool in _pools(fleet, autoscaled=True):
        if cluster.spec.components.karpenter is None or pool.spec.dra is not None:
            continue  # DRA pools: check/dra.py refuses autoscaling them outright
        unknown = [name for name in pool.resources if name != GPU]
        if not unknown:
            continue
        names = ", ".join(unknown)
        message = (
            f"Karpenter predicts nodes of pool {pool.name} to offer {GPU} only, so pending pods that ask for "
            f"{names} never make it launch a node (and Karpenter keeps no minimum of nodes): the pool grows "
            "only when other pods trigger it; make it a static pool ({count: N})"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "sharing"), message)


def _first_static(release: KarpenterRelease) -> str:
    """Return the first release of the same provider line with static NodePools."""
    same_line = [r for r in RELEASES if r.line == release.line and r.static_node_pools]
    return same_line[0].version if same_line else "none"


@check
def check_static_node_pools(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on a static NodePool before Karpenter core v1.8.0; warn where AKS runs Karpenter with its gate off."""
    for cluster, pool in _made(fleet):
        release = _karpenter(cluster)
        if release is None or pool.spec.nodes.autoscaled:
            continue
        loc = ("nodePools", pool.index, "karpenter")
        if not release.static_node_pools:
            message = (
                f"Karpenter {release.version} (core {release.core}) has no static NodePools (spec.replicas came with core "
                f"v1.8.0; the first {release.line} release with it is {_first_static(release)}): upgrade Karpenter, or drop "
                "the karpenter section and select the pool's nodes by nodeGroup"
            )
            yield cluster.located.source.diagnostic(loc, message)
            continue
        # kubernetes-sigs/karpenter pkg/operator/options/options.go: StaticCapacity=false by default up to
        # v1.14.1. gpuplan's Karpenter Application turns it on (settings.featureGates.staticCapacity, both
        # providers' charts/karpenter/values.yaml), except on AKS, where Node Auto Provisioning runs
        # Karpenter unless the cluster says selfHosted.
        spec = cluster.spec.components.karpenter
        if cluster.spec.provider == "azure" and spec is not None and not spec.self_hosted:
            message = (
                f"a static NodePool keeps {pool.nodes_most} nodes only with Karpenter's StaticCapacity feature gate on "
                f"(alpha, off by default in {release.version}), which AKS's managed Karpenter (Node Auto Provisioning) does "
                "not turn on: run Karpenter yourself (selfHosted: true), or select the pool's nodes by nodeGroup"
            )
            yield _warning(cluster.located.source, loc, message)


@check
def check_karpenter_minimum(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on nodes.min above 0 on an autoscaled pool: Karpenter keeps no minimum, so it is no capacity."""
    for cluster, pool in _pools(fleet, autoscaled=True):
        least = pool.spec.nodes.min or 0
        if least == 0 or cluster.spec.components.karpenter is None:
            continue
        message = (
            f"Karpenter keeps no minimum: it launches nodes of pool {pool.name} only for pending pods and removes empty "
            f"ones, so nodes.min {least} is never kept up and gpuplan counts none of it as always-on capacity; for nodes "
            f"that must stay up, make a static pool (nodes: {{count: {least}}}) with the same karpenter section"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "nodes", "min"), message)
