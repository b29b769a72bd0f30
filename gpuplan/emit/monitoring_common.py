"""What the monitoring emitters share: pool node selectors in PromQL, the GPUs quotas assume."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from gpuplan.components.metrics import KSM_LABEL_PREFIX, known_metrics
from gpuplan.plan.fleet import ClusterPlan
from gpuplan.plan.pools import PoolPlan

__all__ = ["in_pool", "known_metrics", "ksm_label", "pool_nodes", "quota_gpus"]


def ksm_label(key: str) -> str:
    """Return kube-state-metrics' series label of a node label (label_, invalid characters as _, snake case)."""
    # kubernetes/kube-state-metrics@v2.19.1:internal/store/utils.go labelName: SanitizeLabelName replaces
    # [^a-zA-Z0-9_] by _, then toSnakeCase puts _ between a lower-case letter or digit and a capital and lowers all.
    sanitized = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return KSM_LABEL_PREFIX + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", sanitized).lower()


def pool_nodes(pool: PoolPlan) -> str:
    """Return the kube_node_labels selector of exactly one pool's nodes."""
    matchers = ",".join(f'{ksm_label(k)}="{v}"' for k, v in sorted(pool.selector_labels.items()))
    return f"kube_node_labels{{{matchers}}}"


def in_pool(expr: str, pool: PoolPlan) -> str:
    """Return a per-node series expression restricted to one pool's nodes (joined on the node label)."""
    return f"({expr} * on (node) group_left () {pool_nodes(pool)})"


def quota_gpus(cluster: ClusterPlan, pool: PoolPlan) -> int:
    """Return the physical GPUs of a pool the tenants' nominal quotas need, rounded up.

    Per resource, the units granted over the units a node advertises, in GPUs; the largest over the
    pool's resources (MIG profiles of one layout and shared replicas sit on the same GPUs). Units per node,
    not a profile's slice fraction: a layout of two 3g.40gb per A100 leaves a slice unused.
    """
    granted: dict[str, int] = {}
    for alloc in cluster.allocations:
        for grant in alloc.grants:
            if grant.pool.name == pool.name:
                granted[grant.resource] = granted.get(grant.resource, 0) + grant.nominal
    needs = [
        Fraction(units * pool.gpus_per_node, pool.resources[resource].per_node)
        for resource, units in granted.items()
        if pool.resources[resource].per_node
    ]
    return math.ceil(max(needs, default=Fraction(0)))
