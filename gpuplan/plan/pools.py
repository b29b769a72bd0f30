"""What each node pool offers the scheduler: resource names, units per node, node labels."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

from gpuplan.components.dra_driver import DEVICE_PLUGIN_DEPLOY_LABEL, KUBELET_PLUGIN_LABEL
from gpuplan.gpus.catalog import GpuModel, MigGeometry
from gpuplan.gpus.mig import config_name
from gpuplan.model.cluster import Cluster, NodePool
from gpuplan.model.names import NODE_GROUP_LABELS
from gpuplan.plan.dra import DraClass, class_of
from gpuplan.plan.gke import google_stack
from gpuplan.plan.gke import node_labels as gke_node_labels

POOL_LABEL = "gpuplan.io/pool"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPU = "nvidia.com/gpu"
MIG_DISABLED = "all-disabled"
DEFAULT_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Resource:
    """One schedulable resource a pool's nodes advertise."""

    name: str  # e.g. nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb
    per_node: int  # units every node advertises
    gpu_fraction: Fraction  # the share of one physical GPU that one unit is
    profile: str | None = None  # the MIG profile behind the resource, if any
    device_class: DraClass | None = None  # DRA pools: the DeviceClass whose devices these are


@dataclass
class PoolPlan:
    """A node pool with everything derived from it: model, resources, labels, configs."""

    cluster: str
    index: int
    spec: NodePool
    model: GpuModel
    gpus_per_node: int
    resources: dict[str, Resource] = field(default_factory=dict)
    mig_layouts: tuple[tuple[tuple[int, ...], dict[str, int]], ...] = ()  # (gpu indexes, layout)
    mig_config: str | None = None
    device_plugin_config: str | None = None
    node_group_label: str | None = None  # the provider's node-group label (clouds only)
    gke_labels: dict[str, str] = field(
        default_factory=dict
    )  # GKE's own MIG and time-sharing node labels

    @cached_property
    def name(self) -> str:
        """Return the pool's name (looked up once: it keys every per-pool figure)."""
        return self.spec.name

    @property
    def mode(self) -> str:
        """Return how the GPUs are shared (exclusive, mig, time-slicing, mps, mig+time-slicing)."""
        return self.spec.sharing.mode

    @property
    def nodes_most(self) -> int:
        """Return the pool's node count at nodes.max (or count)."""
        return self.spec.nodes.most

    @property
    def nodes_least(self) -> int:
        """Return the pool's always-on node count: count, or none of an autoscaled pool.

        Karpenter keeps no minimum (kubernetes-sigs/karpenter launches NodeClaims only for pending
        pods, and a NodePool has no min field: v1.14.1 pkg/apis/crds/karpenter.sh_nodepools.yaml), so
        nodes.min is no capacity anyone can count on.
        """
        # The Cluster Autoscaler never shrinks a node group below its minimum (kubernetes/autoscaler
        # cluster-autoscaler-chart-9.59.0 cluster-autoscaler/FAQ.md), so there nodes.min is kept up.
        return 0 if self.spec.nodes.by_karpenter else self.spec.nodes.least

    @property
    def karpenter_made(self) -> bool:
        """Tell whether Karpenter makes the pool's nodes (a NodePool: autoscaled, or static with a karpenter section)."""
        return self.spec.karpenter is not None or self.spec.nodes.by_karpenter

    @property
    def label_selected(self) -> bool:
        """Tell whether the pool is nodes gpuplan does not label: selected by nodeGroup or labels alone."""
        return not self.karpenter_made and not self.spec.hostnames

    def capacity(self, resource: str, at_least: bool = False) -> int:
        """Return the units of a resource the pool offers at its largest (or smallest) size."""
        nodes = self.nodes_least if at_least else self.nodes_most
        return nodes * self.resources[resource].per_node

    def cpu_per_unit(self, resource: str) -> Fraction:
        """Return the node cpu that goes with one unit of a GPU resource."""
        return self.spec.cpu / self.gpus_per_node * self.resources[resource].gpu_fraction

    def memory_per_unit(self, resource: str) -> Fraction:
        """Return the node memory (bytes) that goes with one unit of a GPU resource."""
        return self.spec.memory / self.gpus_per_node * self.resources[resource].gpu_fraction

    @property
    def taints(self) -> list[dict[str, str]]:
        """Return the pool's node taints as Kubernetes dicts (default: nvidia.com/gpu)."""
        if self.spec.taints is None:
            return [dict(DEFAULT_TAINT)]
        return [t.model_dump(exclude_none=True, by_alias=True) for t in self.spec.taints]

    @property
    def node_labels(self) -> dict[str, str]:
        """Return every label gpuplan puts on the pool's nodes (pool, configs, user labels)."""
        labels = self.given_labels
        labels[POOL_LABEL] = self.name
        if self.mig_config is not None:
            labels[MIG_CONFIG_LABEL] = self.mig_config
        if self.device_plugin_config is not None:
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = self.device_plugin_config
        labels.update(self.dra_labels)
        return dict(sorted(labels.items()))

    @property
    def dra_labels(self) -> dict[str, str]:
        """Return the labels a DRA pool's nodes need: no GPU Operator device plugin, the DRA kubelet plugin."""
        if self.spec.dra is None:
            return {}
        return {DEVICE_PLUGIN_DEPLOY_LABEL: "false", KUBELET_PLUGIN_LABEL: "true"}

    @property
    def selector_labels(self) -> dict[str, str]:
        """Return the labels that select exactly this pool's nodes.

        gpuplan puts the pool label on nodes it labels itself (Karpenter templates, NFD rules
        by hostname); a static pool selected by nodeGroup or labels is found by those.
        """
        if self.label_selected:
            labels = self.given_labels
            if self.mig_layouts and self.mig_config is not None:
                # The MIG manager re-partitions a node only when its nvidia.com/mig.config label
                # changes (NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go, the Node
                # informer's UpdateFunc), so the flavor asks for the label of the layout: a new
                # layout is a new name the node group must carry.
                labels[MIG_CONFIG_LABEL] = self.mig_config
            return dict(sorted(labels.items()))
        return {POOL_LABEL: self.name}

    @property
    def given_labels(self) -> dict[str, str]:
        """Return the labels the user states the nodes carry: labels, and the node-group label of nodeGroup."""
        labels = {**self.gke_labels, **self.spec.labels}
        if self.spec.node_group is not None and self.node_group_label is not None:
            labels[self.node_group_label] = self.spec.node_group
        return labels


def mig_resource(profile: str, strategy: str) -> str:
    """Return the resource name the device plugin advertises for a MIG profile."""
    return GPU if strategy == "single" else f"nvidia.com/mig-{profile}"


def _shared(name: str, renamed: bool) -> str:
    return f"{name}.shared" if renamed else name


def _layouts(pool: NodePool, gpus: int) -> tuple[tuple[tuple[int, ...], dict[str, int]], ...]:
    mig = pool.sharing.mig
    if mig is None:
        return ()
    if mig.layout is not None:
        return ((tuple(range(gpus)), {k: v for k, v in mig.layout.items() if v}),)
    return tuple(
        (tuple(d.gpus), {k: v for k, v in d.layout.items() if v}) for d in (mig.devices or [])
    )


def _mig_instances(plan: PoolPlan, geometry: MigGeometry) -> Iterator[tuple[str, Fraction, int]]:
    """Yield (profile, its share of a GPU's compute, instances per node) for each layout entry.

    Unknown profiles are left out (the checks report them), and so are '+' profiles: no valid
    resource name.
    """
    for gpus, layout in plan.mig_layouts:
        for profile, count in layout.items():
            spec = geometry.profile(profile)
            if spec is not None and "+" not in profile:
                share = Fraction(spec.compute_slices, geometry.compute_slices)
                yield profile, share, len(gpus) * count


def _mig_resources(plan: PoolPlan, strategy: str) -> dict[str, Resource]:
    sharing = plan.spec.sharing
    geometry = plan.model.mig
    if geometry is None:
        return {}  # MIG on a model without MIG: reported by the fleet's MIG checks
    per_node: dict[str, int] = {}
    fraction: dict[str, Fraction] = {}
    profile_of: dict[str, str] = {}
    for profile, share, instances in _mig_instances(plan, geometry):
        name = _shared(mig_resource(profile, strategy), sharing.renamed)
        per_node[name] = per_node.get(name, 0) + instances * sharing.replicas
        fraction[name] = share / sharing.replicas
        profile_of[name] = profile
    return {
        name: Resource(name, per_node[name], fraction[name], profile_of[name])
        for name in sorted(per_node)
    }


def build_pool(cluster: Cluster, index: int, model: GpuModel, gpus_per_node: int) -> PoolPlan:
    """Return the plan of one pool: resources per node, MIG layouts and config label values."""
    pool = cluster.node_pools[index]
    plan = PoolPlan(cluster.name, index, pool, model, gpus_per_node)
    plan.node_group_label = NODE_GROUP_LABELS.get(cluster.provider)
    operator = cluster.components.gpu_operator
    strategy = operator.mig_strategy if operator else "mixed"
    if google_stack(cluster):
        # GKE advertises each MIG partition as nvidia.com/gpu (gpuplan/plan/gke.py), as the single strategy does.
        strategy = "single"
        plan.gke_labels = gke_node_labels(pool)
    sharing = pool.sharing
    if pool.dra is not None:
        return _dra_pool(plan)
    if sharing.mig is not None:
        plan.mig_layouts = _layouts(pool, gpus_per_node)
        plan.resources = _mig_resources(plan, strategy)
        plan.mig_config = mig_config_name(plan.mig_layouts, gpus_per_node)
    else:
        name = _shared(GPU, sharing.renamed)
        replicas = sharing.replicas
        plan.resources = {name: Resource(name, gpus_per_node * replicas, Fraction(1, replicas))}
        if model.mig is not None:
            plan.mig_config = MIG_DISABLED
    if sharing.mode in ("time-slicing", "mps", "mig+time-slicing"):
        plan.device_plugin_config = pool.name
    if google_stack(
        cluster
    ):  # GKE partitions and shares GPUs from the node pool's settings, not labels
        plan.mig_config = plan.device_plugin_config = None
    return plan


def _dra_pool(plan: PoolPlan) -> PoolPlan:
    """Fill a DRA pool's plan: one resource per DeviceClass, counting devices (GPUs or MIG instances).

    The MIG manager still partitions the GPUs (the driver advertises static MIG devices as type 'mig');
    no device-plugin config applies.
    """
    pool, model = plan.spec, plan.model
    if pool.sharing.mig is None:
        cls = class_of(pool, model, None)
        plan.resources = {
            cls.resource: Resource(cls.resource, plan.gpus_per_node, Fraction(1), None, cls)
        }
        if model.mig is not None:
            plan.mig_config = MIG_DISABLED
        return plan
    plan.mig_layouts = _layouts(pool, plan.gpus_per_node)
    plan.mig_config = mig_config_name(plan.mig_layouts, plan.gpus_per_node)
    geometry = model.mig
    if geometry is None:
        return plan  # reported by the fleet's MIG checks
    per_node: dict[str, int] = {}
    made: dict[str, Resource] = {}
    for profile, share, instances in _mig_instances(plan, geometry):
        cls = class_of(pool, model, profile)
        per_node[cls.resource] = per_node.get(cls.resource, 0) + instances
        made[cls.resource] = Resource(cls.resource, 0, share, profile, cls)
    plan.resources = {
        name: Resource(name, per_node[name], r.gpu_fraction, r.profile, r.device_class)
        for name, r in sorted(made.items())
    }
    return plan


def mig_config_name(layouts: tuple[tuple[tuple[int, ...], dict[str, int]], ...], gpus: int) -> str:
    """Return the mig-parted config name for a pool's layouts (the same layouts, the same name)."""
    if len(layouts) == 1 and layouts[0][0] == tuple(range(gpus)):
        return config_name(layouts[0][1])
    canonical = json.dumps([[list(g), sorted(lay.items())] for g, lay in layouts], sort_keys=True)
    return "gpuplan-per-gpu-" + hashlib.sha256(canonical.encode()).hexdigest()[:10]
