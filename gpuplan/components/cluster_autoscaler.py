"""Cluster Autoscaler: the chart release gpuplan supports and the facts it relies on.

Read from kubernetes/autoscaler at tag cluster-autoscaler-chart-9.59.0:
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
TAG = "cluster-autoscaler-chart-9.59.0"
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

RELEASES: tuple[Release, ...] = (
    Release(
        version="9.59.0",
        sources=(
            f"{REPO}@{TAG}:cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml",
            f"{REPO}@{TAG}:cluster-autoscaler/charts/cluster-autoscaler/values.yaml",
            f"{REPO}@{TAG}:cluster-autoscaler/charts/cluster-autoscaler/templates/priority-expander-configmap.yaml",
            f"{REPO}@{TAG}:cluster-autoscaler/expander/priority/readme.md",
            f"{REPO}@{TAG}:cluster-autoscaler/config/flags/flags.go",
        ),
        chart=Chart(CHART_REPO, "cluster-autoscaler", "9.59.0"),
    ),
)

CLUSTER_AUTOSCALER = Component(
    name="cluster-autoscaler",
    field="clusterAutoscaler",
    releases=RELEASES,
    emitter="gpuplan.emit.cluster_autoscaler:emit",
    checks=("gpuplan.check.cluster_autoscaler",),
)
