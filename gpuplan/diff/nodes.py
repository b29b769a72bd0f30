"""Changes that reach the GPU nodes: MIG relayouts, driver and GPU Operator changes, Karpenter
node replacement, operator chart and CRD changes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpuplan.diff import migview
from gpuplan.diff.kinds import Blast, Context, Disruption, dig, is_kind, listing, mapping
from gpuplan.diff.objects import ObjectKey, Side
from gpuplan.gpus.catalog import GpuModel
from gpuplan.plan.pools import MIG_CONFIG_LABEL, NODE_GROUP_LABELS, POOL_LABEL

KARPENTER = "karpenter.sh"
KUEUE = "kueue.x-k8s.io"
NFD = "nfd.k8s-sigs.io"
GPU_OPERATOR = "nvidia.com"
ARGOCD = "argoproj.io"
CLUSTER_LABEL = "gpuplan.io/cluster"  # on the Applications of a cluster's operators
# Charts whose DaemonSets run the GPU nodes' stack (driver, container toolkit, kubelet plugin): a
# change of their release reaches every GPU node; other operators' releases restart their own pods.
GPU_NODE_CHARTS = {"gpu-operator", "dra-driver-nvidia-gpu"}
RESET = (
    "MIG manager will reset the GPUs of pool {pool}'s nodes (workloads running on them are stopped)"
)
# ClusterPolicy parts whose image the GPU Operator runs as a DaemonSet on every GPU node; a new
# version rolls that DaemonSet (NVIDIA/gpu-operator v26.7.0 api/nvidia/v1/clusterpolicy_types.go).
DAEMONSETS = (
    "toolkit",
    "devicePlugin",
    "gfd",
    "migManager",
    "dcgm",
    "dcgmExporter",
    "validator",
    "nodeStatusExporter",
)


# MIG layouts


def pool_labels(key: ObjectKey, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return (pool, node labels) for a Karpenter NodePool, each rule of an NFD NodeFeatureRule, or
    the ResourceFlavor of a pool gpuplan does not label (its nodeLabels name the MIG config)."""
    if is_kind(key, KUEUE, "ResourceFlavor"):
        labels = mapping(dig(obj, "spec", "nodeLabels"))
        if POOL_LABEL in labels or MIG_CONFIG_LABEL not in labels:
            return []  # gpuplan labels the pool's nodes: its NodePool or NFD rule says how
        return [(key.name, labels)]
    if is_kind(key, KARPENTER, "NodePool"):
        labels = mapping(dig(obj, "spec", "template", "metadata", "labels"))
        return [(str(labels.get(POOL_LABEL) or key.name), labels)]
    if is_kind(key, NFD, "NodeFeatureRule"):
        out = []
        for rule in listing(dig(obj, "spec", "rules")):
            labels = mapping(dig(rule, "labels"))
            if POOL_LABEL in labels or MIG_CONFIG_LABEL in labels:
                out.append((str(labels.get(POOL_LABEL) or key.name), labels))
        return out
    return []


def _mig_labels(side: Side) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    """Return the mig.config label value per (cluster, pool), and for a pool gpuplan does not label
    the nodes that must carry it (`node group G (label)`, or their labels)."""
    out: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for key, entry in side.items():
        for pool, labels in pool_labels(key, entry.obj):
            value = labels.get(MIG_CONFIG_LABEL)
            outside = None
            if is_kind(key, KUEUE, "ResourceFlavor"):
                groups = [f"{labels[k]} ({k})" for k in NODE_GROUP_LABELS.values() if k in labels]
                others = [f"{k}={v}" for k, v in labels.items() if k != MIG_CONFIG_LABEL]
                outside = (
                    f"node group {groups[0]}"
                    if groups
                    else f"the nodes labelled {', '.join(others)}"
                )
            out[(key.scope, pool)] = (None if value is None else str(value), outside)
    return out


@dataclass(frozen=True)
class MigChange:
    """A pool's MIG layout before and after (configurations resolved from the mig-parted ConfigMap)."""

    scope: str
    pool: str
    old_name: str | None
    new_name: str | None
    old: migview.Config | None
    new: migview.Config | None
    model: GpuModel | None
    outside: str | None = None  # the nodes gpuplan does not label, which must carry the new label

    def text(self) -> str:
        """Return `before -> after` as profile counts per GPU."""
        return f"{migview.per_gpu(self.old, self.old_name)} -> {migview.per_gpu(self.new, self.new_name)}"


def mig_changes(ctx: Context) -> list[MigChange]:
    """Return every pool whose MIG layout (its label, or the configuration it names) changes."""
    before, after = _mig_labels(ctx.old), _mig_labels(ctx.new)
    configs_before, configs_after = migview.configs(ctx.old), migview.configs(ctx.new)
    out = []
    for scope, pool in sorted(before.keys() & after.keys()):
        was, now = before[(scope, pool)][0], after[(scope, pool)][0]
        old = configs_before.get((scope, was)) if was else None
        new = configs_after.get((scope, now)) if now else None
        same_content = (
            old is not None and new is not None and migview.canonical(old) == migview.canonical(new)
        )
        if was == now and (old is None or new is None or same_content):
            continue
        if was != now and same_content:
            continue  # a renamed configuration with the same layout: the MIG manager has nothing to do
        shown = next((c for c in (new, old) if c), ())
        model = migview.model_for(shown, ctx.facts.model(scope, pool))
        outside = after[(scope, pool)][1]
        out.append(MigChange(scope, pool, was, now, old, new, model, outside))
    return out


def mig_relayouts(ctx: Context) -> Iterator[Disruption]:
    """Yield every pool whose nodes the MIG manager will re-partition."""
    for change in mig_changes(ctx):
        pool = change.pool
        message = f"pool {pool}: MIG layout {change.text()}: " + RESET.format(pool=pool)
        if change.outside and change.new_name:
            # The MIG manager acts on a change of the node's label, never on the ConfigMap's
            # (NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go, UpdateFunc).
            message += f"; gpuplan does not label this pool's nodes: set {MIG_CONFIG_LABEL}={change.new_name} on {change.outside} with this change (`gpuplan requirements` lists it), the MIG manager re-partitions a node only when that label changes"
        yield Disruption(
            change.scope, "mig-relayout", pool, message, ctx.facts.pool(change.scope, pool)
        )


# The GPU Operator


def _policies(ctx: Context) -> Iterator[tuple[ObjectKey, dict[str, Any], dict[str, Any]]]:
    """Yield every ClusterPolicy present on both sides, as it was and as it is."""
    for key in ctx.changed():
        if is_kind(key, GPU_OPERATOR, "ClusterPolicy"):
            yield key, ctx.old[key].obj, ctx.new[key].obj


def _image(spec: Any) -> str:
    """Return `repository/image:version` of a ClusterPolicy part."""
    part = mapping(spec)
    return f"{part.get('repository', '')}/{part.get('image', '')}:{part.get('version', '')}"


def driver_upgrades(ctx: Context) -> Iterator[Disruption]:
    """Yield a driver change: the GPU Operator reinstalls the driver on every GPU node."""
    for key, old, new in _policies(ctx):
        was, now = dig(old, "spec", "driver"), dig(new, "spec", "driver")
        if dig(was, "useNvidiaDriverCRD") and dig(now, "useNvidiaDriverCRD"):
            continue  # NVIDIADriver objects deploy the drivers (clusterpolicy_types.go DriverSpec.UseNvidiaDriverCRD)
        if not dig(was, "enabled") and not dig(now, "enabled"):
            continue  # the nodes' own drivers (preinstalled): the version is not deployed
        if _image(was) == _image(now) and bool(dig(was, "enabled")) == bool(dig(now, "enabled")):
            continue
        what = f"GPU driver {dig(was, 'version') or 'none'} -> {dig(now, 'version') or 'none'}"
        policy = mapping(dig(now, "upgradePolicy"))
        # The driver DaemonSet is OnDelete (NVIDIA/gpu-operator v26.7.0 assets/state-driver/
        # 0500_daemonset.yaml); with autoUpgrade its upgrade controller (controllers/
        # upgrade_controller.go) cordons each node, evicts its GPU pods and restarts the driver.
        if policy.get("autoUpgrade"):
            parallel = policy.get("maxParallelUpgrades", 1)
            how = f"with autoUpgrade the GPU Operator rolls every GPU node ({parallel} at a time, maxUnavailable {policy.get('maxUnavailable', '25%')}): each is cordoned and its GPU pods evicted"
        else:
            how = "autoUpgrade is off: each node keeps its driver until its driver pod is deleted, which stops the GPU workloads there"
        yield Disruption(
            key.scope, "driver-upgrade", key.label(), f"{what}: {how}", ctx.facts.cluster(key.scope)
        )


def _driver_pools(ctx: Context, key: ObjectKey) -> str | None:
    """Return the pool an NVIDIADriver selects by its gpuplan.io/pool node selector."""
    selector = mapping(dig(ctx.old[key].obj, "spec", "nodeSelector"))
    pool = selector.get(POOL_LABEL)
    return str(pool) if pool else None


def nvidia_driver_upgrades(ctx: Context) -> Iterator[Disruption]:
    """Yield an NVIDIADriver whose driver changes: its pool's nodes get the new driver."""
    for key in ctx.changed():
        if not is_kind(key, GPU_OPERATOR, "NVIDIADriver"):
            continue
        was, now = dig(ctx.old[key].obj, "spec"), dig(ctx.new[key].obj, "spec")
        if _image(was) == _image(now):
            continue
        pool = _driver_pools(ctx, key)
        # NVIDIADriver's upgradePolicy defaults to autoUpgrade (NVIDIA/gpu-operator v26.7.0
        # api/nvidia/v1alpha1/nvidiadriver_types.go GetUpgradePolicyWithDefaults).
        policy = dig(now, "upgradePolicy")
        auto = True if policy is None else bool(mapping(policy).get("autoUpgrade"))
        how = (
            "the GPU Operator rolls the pool's nodes one by one, cordoning each and evicting its GPU pods"
            if auto
            else "autoUpgrade is off: each node keeps its driver until its driver pod is deleted"
        )
        what = f"GPU driver {dig(was, 'version') or 'none'} -> {dig(now, 'version') or 'none'}" + (
            f" on pool {pool}" if pool else ""
        )
        blast = ctx.facts.pool(key.scope, pool) if pool else ctx.facts.cluster(key.scope)
        yield Disruption(key.scope, "driver-upgrade", key.label(), f"{what}: {how}", blast)


def preinstalled_stacks(ctx: Context) -> Iterator[Disruption]:
    """Yield every pool whose preinstalled driver or OS changes (from the fleets with `--base`; from
    the gpuplan.io/gpu-stack annotation of its ResourceFlavor with two folders)."""
    for (scope, pool), (was, now) in sorted(ctx.facts.stacks.items()):
        message = f"pool {pool}: {was} -> {now}: the node image ships the GPU stack, so every node of the pool must be re-imaged (drained and rebooted, or replaced) outside gpuplan; gpuplan only checks the stated version"
        yield Disruption(scope, "driver-upgrade", pool, message, ctx.facts.pool(scope, pool))


def gpu_operator_upgrades(ctx: Context) -> Iterator[Disruption]:
    """Yield the GPU Operator DaemonSets whose version changes: each rolls over every GPU node."""
    for key, old, new in _policies(ctx):
        rolled = []
        for part in DAEMONSETS:
            was, now = dig(old, "spec", part), dig(new, "spec", part)
            if (was or now) and _image(was) != _image(now):
                rolled.append(
                    f"{part} {dig(was, 'version') or 'none'} -> {dig(now, 'version') or 'none'}"
                )
        if rolled:
            note = (
                "; the toolkit restarts the container runtime on each node"
                if any(r.startswith("toolkit ") for r in rolled)
                else ""
            )
            message = f"GPU Operator DaemonSets roll on every GPU node ({', '.join(rolled)}){note}"
            yield Disruption(
                key.scope,
                "gpu-operator-upgrade",
                key.label(),
                message,
                ctx.facts.cluster(key.scope),
            )


# Karpenter


def _template(obj: dict[str, Any]) -> dict[str, Any]:
    """Return a NodePool's template as Karpenter hashes it for drift.

    NodePool.Hash() hashes spec.template (requirements excluded, compared for compatibility
    instead) and a NodeClaim whose hash or requirements no longer match is Drifted
    (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/nodepool.go Hash,
    pkg/controllers/nodeclaim/disruption/drift.go areStaticFieldsDrifted/areRequirementsDrifted).
    """
    return mapping(dig(obj, "spec", "template"))


def _drift_held(obj: dict[str, Any]) -> bool:
    """Tell whether a budget of 0 nodes covers Drifted (no reasons: every reason)."""
    for budget in listing(dig(obj, "spec", "disruption", "budgets")):
        reasons = listing(dig(budget, "reasons"))
        if (
            str(dig(budget, "nodes")) == "0"
            and not dig(budget, "schedule")
            and (not reasons or "Drifted" in reasons)
        ):
            return True
    return False


def _drifted_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Return which parts of the node template changed (requirements, node class, labels...)."""
    was, now = _template(old), _template(new)
    parts = []
    for name in sorted(mapping(was.get("spec")).keys() | mapping(now.get("spec")).keys()):
        if mapping(was.get("spec")).get(name) != mapping(now.get("spec")).get(name):
            parts.append(name)
    for name in sorted(mapping(was.get("metadata")).keys() | mapping(now.get("metadata")).keys()):
        if mapping(was.get("metadata")).get(name) != mapping(now.get("metadata")).get(name):
            parts.append(f"node {name}")
    return parts


def nodes_replaced(ctx: Context) -> Iterator[Disruption]:
    """Yield every Karpenter NodePool whose node template changes: its nodes drift and are replaced."""
    for key in ctx.changed():
        if not is_kind(key, KARPENTER, "NodePool"):
            continue
        old, new = ctx.old[key].obj, ctx.new[key].obj
        parts = _drifted_fields(old, new)
        if not parts:
            continue
        pool = pool_labels(key, new)[0][0]
        if _drift_held(new):
            fate = "its disruption budget allows 0 Drifted nodes, so they are replaced only when emptied or deleted by hand; new nodes get the new template"
        else:
            fate = "Karpenter drains and replaces them within its disruption budgets"
        message = f"pool {pool}: node template changes ({', '.join(parts)}): Karpenter marks the pool's nodes Drifted; {fate}"
        yield Disruption(
            key.scope, "nodes-replaced", pool, message, ctx.facts.pool(key.scope, pool)
        )


# Node classes: a change of one drifts the nodes of every NodePool that launches with it.
# EC2NodeClass: fields outside the hash (hash:"ignore") drift only by what they resolve to: a node
# whose AMI, subnet or security groups the new selector terms no longer give is Drifted; ipPrefixCount
# drifts nothing; every other field is in the hash, whose change drifts every node
# (aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/ec2nodeclass.go, pkg/cloudprovider/drift.go).
# AKSNodeClass: every field but tags is in the hash (imageFamily, osDiskSizeGB, kubelet, ...)
# (Azure/karpenter-provider-azure v1.14.2 pkg/apis/v1beta1/aksnodeclass.go,
# pkg/cloudprovider/drift.go areStaticFieldsDrifted).
NODE_CLASSES = {"karpenter.k8s.aws": "EC2NodeClass", "karpenter.azure.com": "AKSNodeClass"}
NO_DRIFT = {"EC2NodeClass": ("ipPrefixCount",), "AKSNodeClass": ("tags",)}
RESOLVED = {
    "amiSelectorTerms": "whose AMI the new terms no longer select (a new alias or version: every node)",
    "amiFamily": "whose AMI the new family no longer selects",
    "subnetSelectorTerms": "in a subnet the new terms no longer select",
    "securityGroupSelectorTerms": "whose security groups differ from those the new terms select",
    "capacityReservationSelectorTerms": "in a capacity reservation the new terms no longer select",
}


def _class_users(ctx: Context, key: ObjectKey) -> list[tuple[str, dict[str, Any]]]:
    """Return (pool, NodePool) of every NodePool of the cluster that launches nodes with a node class."""
    out = []
    for other, entry in ctx.new.items():
        ref = mapping(dig(entry.obj, "spec", "template", "spec", "nodeClassRef"))
        if (
            other.scope == key.scope
            and is_kind(other, KARPENTER, "NodePool")
            and ref.get("name") == key.name
            and ref.get("kind", key.kind) == key.kind
        ):
            out.append((pool_labels(other, entry.obj)[0][0], entry.obj))
    return sorted(out, key=lambda p: p[0])


def node_classes_changed(ctx: Context) -> Iterator[Disruption]:
    """Yield every Karpenter node class whose change drifts the nodes of the NodePools using it."""
    for key in ctx.changed():
        if NODE_CLASSES.get(key.group) != key.kind:
            continue
        was, now = mapping(dig(ctx.old[key].obj, "spec")), mapping(dig(ctx.new[key].obj, "spec"))
        fields = sorted(
            f
            for f in was.keys() | now.keys()
            if was.get(f) != now.get(f) and f not in NO_DRIFT[key.kind]
        )
        users = _class_users(ctx, key)
        if not fields or not users:
            continue
        if all(f in RESOLVED for f in fields):
            which = "each node " + " or ".join(RESOLVED[f] for f in fields)
        else:
            which = "every node it launched (the node class's hash changes)"
        held = [pool for pool, obj in users if _drift_held(obj)]
        fate = "Karpenter drains and replaces them within the NodePools' disruption budgets"
        if held:
            fate += f" (pool{'s' if len(held) > 1 else ''} {', '.join(held)}: a budget of 0 Drifted nodes holds them until emptied or deleted by hand)"
        pools = [pool for pool, _ in users]
        message = f"{key.label()} changes ({', '.join(fields)}): Karpenter marks Drifted {which} in pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}; {fate}"
        yield Disruption(
            key.scope, "nodes-replaced", key.label(), message, ctx.facts.some(key.scope, set(pools))
        )


# Operator charts and CRDs


def _sources(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Return an Argo CD Application's sources (`source` or `sources`)."""
    spec = mapping(obj.get("spec"))
    return [
        mapping(s)
        for s in ([spec.get("source")] if spec.get("source") else listing(spec.get("sources")))
    ]


def _charts(obj: dict[str, Any]) -> dict[str, str]:
    """Return chart (or repository path) -> targetRevision of an Application."""
    out = {}
    for source in _sources(obj):
        name = str(source.get("chart") or source.get("path") or source.get("repoURL") or "")
        if source.get("chart"):
            out[name] = str(source.get("targetRevision", ""))
    return out


def chart_upgrades(ctx: Context) -> Iterator[Disruption]:
    """Yield every Argo CD Application whose Helm chart version changes (with the chart's CRDs)."""
    for key in ctx.changed():
        if not is_kind(key, ARGOCD, "Application"):
            continue
        before, after = _charts(ctx.old[key].obj), _charts(ctx.new[key].obj)
        moved = [
            f"{c} {before[c]} -> {after[c]}"
            for c in sorted(before.keys() & after.keys())
            if before[c] != after[c]
        ]
        values = [s for s in _sources(ctx.new[key].obj) if s.get("chart")] != [
            s for s in _sources(ctx.old[key].obj) if s.get("chart")
        ]
        if moved:
            message = f"operator chart upgrade ({', '.join(moved)}): Argo CD upgrades the release, its CRDs and its controllers"
        elif values:
            message = "operator chart values change: Argo CD re-renders the release and restarts what changed"
        else:
            continue
        # an operator's Application lives in argocd/ but is about one cluster: its cluster label
        labels = mapping(dig(ctx.new[key].obj, "metadata", "labels"))
        cluster = str(labels.get(CLUSTER_LABEL) or key.scope)
        if set(after) & GPU_NODE_CHARTS:
            blast = ctx.facts.cluster(cluster)
        else:  # a controller's release: its pods restart, no GPU node is touched
            blast = Blast()
            message += " (its own pods only: no GPU node is touched)"
        yield Disruption(cluster, "chart-upgrade", key.label(), message, blast)


def operators_removed(ctx: Context) -> Iterator[Disruption]:
    """Yield every Argo CD Application of a Helm chart that is deleted: Argo CD removes the operator."""
    for key in ctx.removed():
        if not is_kind(key, ARGOCD, "Application"):
            continue
        obj = ctx.old[key].obj
        charts = _charts(obj)
        if not charts:
            continue
        # with the resources finalizer Argo CD deletes what the Application deployed (a cascade
        # delete); without it the release stays, unmanaged (argoproj/argo-cd v3.5.1
        # docs/user-guide/app_deletion.md, "About The Deletion Finalizer")
        finalizers = listing(dig(obj, "metadata", "finalizers"))
        cascade = any(
            str(f).startswith("resources-finalizer.argocd.argoproj.io") for f in finalizers
        )
        fate = (
            "Argo CD deletes the release and what it deployed"
            if cascade
            else "Argo CD stops managing the release: it stays, unmanaged and never upgraded"
        )
        cluster = str(mapping(dig(obj, "metadata", "labels")).get(CLUSTER_LABEL) or key.scope)
        message = f"operator {', '.join(sorted(charts))} is removed ({key.label()} deleted): {fate}"
        yield Disruption(
            cluster, "operator-removed", key.label(), message, ctx.facts.cluster(cluster)
        )


def crd_changes(ctx: Context) -> Iterator[Disruption]:
    """Yield every CustomResourceDefinition changed or removed (removing one deletes its objects)."""
    for change in ctx.changes:
        key = change.key
        if (
            is_kind(key, "apiextensions.k8s.io", "CustomResourceDefinition")
            and change.status != "added"
        ):
            if change.status == "removed":
                message = (
                    f"{key.label()} is removed: the API server deletes every {key.name} object"
                )
            else:
                paths = sorted(
                    {f.path.split(".")[1] if "." in f.path else f.path for f in change.fields}
                )
                message = f"{key.label()} changes ({', '.join(paths)}): served versions and validation of its objects may change"
            yield Disruption(key.scope, "crd-changed", key.name, message)
