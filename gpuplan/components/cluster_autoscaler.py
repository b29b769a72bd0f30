"""Cluster Autoscaler: the chart releases gpuplan supports and the facts it relies on.

Read from kubernetes/autoscaler at tag cluster-autoscaler-chart-9.59.0 (and the same at
cluster-autoscaler-chart-9.53.0, the last chart of the 1.34 line: appVersion 1.34.2; every values key,
template and flag below is unchanged between the two tags, so both get the same values):
- cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml: chart `cluster-autoscaler` 9.59.0, appVersion
  1.35.0; README.md: repository https://kubernetes.github.io/autoscaler.
- values.yaml: `cloudProvider` (aws), `awsRegion`, `autoDiscovery.clusterName` (with the default tags
  k8s.io/cluster-autoscaler/enabled and k8s.io/cluster-autoscaler/<clusterName>), `autoscalingGroups`
  ({name, minSize, maxSize}), `extraArgs` (container flags), `expanderPriorities`, `image.tag`.
- templates/priority-expander-configmap.yaml: the chart writes `expanderPriorities` into the ConfigMap
  cluster-autoscaler-priority-expander only when `extraArgs.expander` is set and names priority.
- expander/priority/readme.md: "The priority should be a positive value. The highest value wins."; a
  group matching no expression is never expanded.
- config/flags/flags.go: skip-nodes-with-system-pods (default true), balance-similar-node-groups
  (default false), scale-down-delay-after-add (default 10m), scale-down-unneeded-time.
- cloudprovider/aws/README.md: an ASG scaled from zero is described to the autoscaler by the tags
  k8s.io/cluster-autoscaler/node-template/label/<name>, .../taint/<name> and .../resources/<name>.
The autoscaler's minor should match the cluster's Kubernetes minor (its README's version table), so
the image tag follows kubernetesVersion: the newest cluster-autoscaler-1.<minor>.<patch> tag below.
"""

from __future__ import annotations

from gpuplan.components.base import Chart, Component, Release

REPO = "kubernetes/autoscaler"
CHART_REPO = "https://kubernetes.github.io/autoscaler"
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
NODE_TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template"
# The newest patch tag of each autoscaler minor (git tags cluster-autoscaler-1.<minor>.<patch>).
IMAGE_TAGS = {
    "1.30": "v1.30.7",
    "1.31": "v1.31.5",
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
}

CHART_FILES = (
    "charts/cluster-autoscaler/Chart.yaml",
    "charts/cluster-autoscaler/values.yaml",
    "charts/cluster-autoscaler/templates/priority-expander-configmap.yaml",
    "expander/priority/readme.md",
    "config/flags/flags.go",
)


def _release(chart: str) -> Release:
    """Return the facts of one chart version, read at its tag cluster-autoscaler-chart-<chart>."""
    tag = f"cluster-autoscaler-chart-{chart}"
    return Release(
        version=chart,
        sources=tuple(f"{REPO}@{tag}:cluster-autoscaler/{path}" for path in CHART_FILES),
        chart=Chart(CHART_REPO, "cluster-autoscaler", chart),
    )


# 9.53.0: appVersion 1.34.2 (platform teams on Kubernetes 1.34); 9.59.0: appVersion 1.35.0.
RELEASES: tuple[Release, ...] = (_release("9.53.0"), _release("9.59.0"))

CLUSTER_AUTOSCALER = Component(
    name="cluster-autoscaler",
    field="clusterAutoscaler",
    releases=RELEASES,
    emitter="gpuplan.emit.cluster_autoscaler:emit",
    checks=("gpuplan.check.cluster_autoscaler",),
)
