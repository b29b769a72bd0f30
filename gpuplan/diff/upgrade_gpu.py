"""What a GPU Operator or DRA driver bump does to the GPU nodes: operand images that roll, drivers that
restart under their upgrade policy, and the ClusterPolicy that changes owner at v26.7.0."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.components.base import Release
from gpuplan.components.gpu_operator import CHART_DEPLOY_CR, GpuOperatorRelease
from gpuplan.diff import upgrade_reach
from gpuplan.diff.kinds import Context, dig, is_kind, mapping
from gpuplan.diff.objects import ObjectKey, Side
from gpuplan.diff.upgrade_model import Bump, Step

GPU_OPERATOR = "NVIDIA/gpu-operator@v26.7.0"
# The driver DaemonSet is OnDelete; with autoUpgrade the upgrade controller cordons, drains and
# restarts the driver node by node, maxParallelUpgrades at a time.
DRIVER_POLICY = (
    f"{GPU_OPERATOR}:controllers/upgrade_controller.go, assets/state-driver/0500_daemonset.yaml"
)
# Every operand DaemonSet is owned by the ClusterPolicy (controllerutil.SetControllerReference), so
# the garbage collector deletes them all when it is deleted.
OWNED = f"{GPU_OPERATOR}:controllers/object_controls.go"
# clusterPolicy.deployCR exists from v26.7.0: before, the chart always rendered `cluster-policy`.
DEPLOY_CR = f"{GPU_OPERATOR}:deployments/gpu-operator/templates/clusterpolicy.yaml"
# A resource annotated Prune=false is never pruned (argoproj/argo-cd@v3.5.1:docs/user-guide/sync-options.md).
PRUNE = "argoproj/argo-cd@v3.5.1:docs/user-guide/sync-options.md"


def _plugin_source(release: Release) -> str:
    """Return the chart template of the DRA driver's kubelet plugin DaemonSet at a release."""
    if release.version.startswith("v25."):
        return f"NVIDIA/k8s-dra-driver-gpu@{release.version}:deployments/helm/nvidia-dra-driver-gpu/templates/kubeletplugin.yaml"
    return f"kubernetes-sigs/dra-driver-nvidia-gpu@{release.version}:deployments/helm/dra-driver-nvidia-gpu/templates/kubeletplugin.yaml"


def _deploys_cr(release: Release) -> bool:
    """Tell whether a release's chart has clusterPolicy.deployCR (it can leave the ClusterPolicy to gpuplan)."""
    return isinstance(release, GpuOperatorRelease) and release.has(CHART_DEPLOY_CR)


def _switch_over() -> str:
    return (
        "ClusterPolicy cluster-policy changes owner: the old chart renders it itself, from this release "
        "gpuplan renders it and sets clusterPolicy.deployCR=false. If an Argo CD Application with prune "
        "installed the old chart, its first sync at the new release prunes the chart's copy, and the garbage "
        "collector deletes every operand DaemonSet the ClusterPolicy owns (the driver's too) until the "
        "cluster's Application creates gpuplan's. Before merging: annotate the live object "
        "`argocd.argoproj.io/sync-options=Prune=false` so the prune skips it and the cluster's Application "
        "takes it over under the same name; remove the annotation after the sync"
    )


def switch_over(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    """Yield the ClusterPolicy's change of owner when a hop crosses clusterPolicy.deployCR (v26.7.0)."""
    if bump.component.name == "gpu-operator" and _deploys_cr(old) != _deploys_cr(new):
        yield Step(
            "api",
            _switch_over(),
            source=f"{DEPLOY_CR}, {OWNED}, {PRUNE}",
            blast=ctx.facts.cluster(bump.scope),
            action=True,
        )


def image_steps(ctx: Context, bump: Bump, old: Release, new: Release) -> Iterator[Step]:
    if bump.component.name == "gpu-operator":
        rolled = upgrade_reach.operand_changes(old, new)
        if rolled:
            text = f"operand DaemonSets roll on every GPU node ({', '.join(rolled)})"
            if any(r.startswith("toolkit ") for r in rolled):
                text += "; the toolkit restarts the container runtime on each node"
            yield Step(
                "images",
                text,
                source=f"NVIDIA/gpu-operator@{new.version}:deployments/gpu-operator/values.yaml",
                blast=ctx.facts.cluster(bump.scope),
            )
        if new.version == bump.new.version:  # the objects are those of the bump's ends: last hop
            yield from _driver_steps(ctx, bump)
    elif bump.component.name == "dra-driver":
        text = f"the DRA kubelet plugin DaemonSet rolls on every GPU node ({old.version} -> {new.version}): a pod whose claim the plugin must prepare waits until it is back on its node"
        yield Step("images", text, source=_plugin_source(new), blast=ctx.facts.cluster(bump.scope))


def _drivers(side: Side, scope: str) -> dict[ObjectKey, dict[str, object]]:
    """Return the driver specs of a cluster: the ClusterPolicy's (unless NVIDIADriver objects deploy
    the drivers) and each NVIDIADriver's."""
    out: dict[ObjectKey, dict[str, object]] = {}
    for key, entry in side.items():
        if key.scope != scope:
            continue
        if is_kind(key, "nvidia.com", "ClusterPolicy"):
            driver = mapping(dig(entry.obj, "spec", "driver"))
            if driver.get("enabled", True) and not driver.get("useNvidiaDriverCRD"):
                out[key] = driver
        elif is_kind(key, "nvidia.com", "NVIDIADriver"):
            out[key] = mapping(entry.obj.get("spec"))
    return out


def _driver_steps(ctx: Context, bump: Bump) -> Iterator[Step]:
    """Yield each driver that changes and the upgrade policy that governs its rollout."""
    before, after = _drivers(ctx.old, bump.scope), _drivers(ctx.new, bump.scope)
    for key, now in sorted(after.items(), key=lambda item: str(item[0])):
        was = before.get(key, {})
        if was.get("version") == now.get("version"):
            continue
        policy = mapping(now.get("upgradePolicy"))
        auto = policy.get("autoUpgrade", is_kind(key, "nvidia.com", "NVIDIADriver"))
        if auto:
            evict = "drains it" if dig(policy, "drain", "enable") else "deletes its GPU pods"
            how = f"autoUpgrade: the GPU Operator takes the GPU nodes {policy.get('maxParallelUpgrades', 1)} at a time (maxUnavailable {policy.get('maxUnavailable', '25%')}), cordons each, {evict} and restarts its driver"
        else:
            how = "autoUpgrade is off: the driver DaemonSet is OnDelete, each node keeps its driver until its driver pod is deleted by hand"
        pool = mapping(now.get("nodeSelector")).get("gpuplan.io/pool")
        blast = ctx.facts.pool(bump.scope, str(pool)) if pool else ctx.facts.cluster(bump.scope)
        text = f"GPU driver {was.get('version') or 'none'} -> {now.get('version')} ({key.label()}): {how}"
        yield Step("images", text, source=DRIVER_POLICY, blast=blast, action=not auto)
