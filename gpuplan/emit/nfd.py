"""Node labels for static pools: one NFD NodeFeatureRule per pool that names its nodes.

Static pools (`nodes: {count}`) are machines gpuplan does not create, so something has to put the
pool's labels on them: the pool label the ResourceFlavor selects and the MIG and device-plugin
config labels the GPU Operator reads. NFD's nfd-master does it from a NodeFeatureRule (NFD ships
with the GPU Operator), and removes the labels again when a node stops matching.

Rule shape (NFD v0.19 NodeFeatureRule CRD and customization guide): one rule per pool with
`labels` = `PoolPlan.node_labels` and one `matchFeatures` term on the `system.name` feature,
element `nodename` (the Kubernetes node name), operator `InRegexp` with one value per `hostnames`
regex; `InRegexp` matches when any value matches, so one rule covers every regex of the pool.
NFD matches with Go's unanchored regexp.MatchString, while `hostnames` name whole node names, so
each regex is wrapped as `^(?:regex)$`: `infer-[0-9]+` does not label `dgx-infer-01`.

Pools selected by `nodeGroup` or `labels` only (no `hostnames`) get no rule: their nodes are
labelled and tainted by whoever runs them (check/nfd.py says which labels and taints they must carry).

Taints: the rule carries the pool's taints (`spec.rules[].taints`), and nfd-master applies them when
its `enableTaints` is on, which `master_values` turns on for the chart (NFD v0.19.0
deployment/helm/node-feature-discovery/values.yaml `master.enableTaints`). Keys nfd-master refuses
(unprefixed, or in kubernetes.io: gpuplan/components/nfd.py `taint_refused`) are left out of the
rule and reported by check/nfd.py.
"""

from __future__ import annotations

from typing import Any

from gpuplan.components.nfd import NfdRelease, taint_refused
from gpuplan.emit.meta import Manifest, k8s, manifest
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import PoolPlan

FOLDER = "nfd"
NAME_PREFIX = "gpuplan-"  # NodeFeatureRules are cluster-wide and other vendors ship their own
NODE_NAME_FEATURE = "system.name"
NODE_NAME_ELEMENT = "nodename"


def anchored(regex: str) -> str:
    """Return a regex that matches whole node names only (NFD's InRegexp is unanchored)."""
    return f"^(?:{regex})$"


def rule_name(pool: PoolPlan) -> str:
    """Return the NodeFeatureRule's name for a pool."""
    return f"{NAME_PREFIX}{pool.name}"


def taints(pool: PoolPlan) -> list[dict[str, str]]:
    """Return the pool's taints nfd-master sets (it refuses some keys)."""
    return [t for t in pool.taints if taint_refused(t["key"]) is None]


def master_values(cluster: ClusterPlan) -> dict[str, Any]:
    """Return the nfd-master chart values the cluster's rules need: enableTaints when one carries taints."""
    if any(taints(pool) for pool in cluster.pools.values() if cluster.nfd_labelled(pool)):
        return {"enableTaints": True}
    return {}


def node_feature_rule(release: NfdRelease, pool: PoolPlan) -> dict[str, Any]:
    """Return the NodeFeatureRule that labels the nodes a static pool's hostnames name."""
    names = [anchored(h) for h in dict.fromkeys(pool.spec.hostnames)]
    match = {
        "feature": NODE_NAME_FEATURE,
        "matchExpressions": {NODE_NAME_ELEMENT: {"op": "InRegexp", "value": names}},
    }
    rule: dict[str, Any] = {
        "name": f"gpuplan pool {pool.name}",
        "labels": pool.node_labels,
        "matchFeatures": [match],
    }
    if taints(pool):
        rule["taints"] = taints(pool)
    return k8s(release.rule_api_version, "NodeFeatureRule", rule_name(pool), spec={"rules": [rule]})


def emit(cluster: ClusterPlan) -> list[Manifest]:
    """Return a NodeFeatureRule per static pool with hostnames, when the GPU Operator or Kueue need labels."""
    release = cluster.release("nfd")
    if not isinstance(release, NfdRelease):
        return []  # components.nfd.version names a release gpuplan does not know: an error already
    source = cluster.located.source.path
    return [
        manifest(cluster.name, FOLDER, node_feature_rule(release, pool), source)
        for pool in cluster.pools.values()
        if cluster.nfd_labelled(pool)
    ]
