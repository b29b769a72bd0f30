"""Fixture fleets built from a few typed functions instead of pasted YAML.

Every builder returns YAML text in one fixed layout: top-level and per-pool keys in block style,
each value in flow style (`nodes: {count: 2}`), lists of mappings as block lists of flow mappings
(`quotas:` then `- {pool: train, gpus: 8}`). A test that asserts a diagnostic's line:col computes
it from the written text with `position`, so the layout may change without breaking a test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import write_repo

GITOPS = {"repoURL": "https://git.example.com/fleet.git"}
OPERATOR = {"version": "v26.7.0", "driverVersion": "580.82.07"}
KUEUE = {"version": "v0.19.2"}
AWS_NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}


def aws_karpenter(
    version: str = "v1.14.1", role: str = "GpuNodes", **fields: Any
) -> dict[str, Any]:
    """The karpenter component on AWS: node class gpu with its IAM role (and more aws fields)."""
    return {"version": version, "nodeClass": AWS_NODE_CLASS | {"aws": {"role": role} | fields}}


class Raw(str):
    """A scalar written exactly as given: `580.82` (a number to YAML) or `8` where "8" would be quoted."""


_PLAIN = re.compile(r"[A-Za-z0-9_./*+-][A-Za-z0-9_./*+=:@-]*")


def _scalar(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    # Quoted like numbers: versions ("1.33", "580.82.07"), times ("03:00"), hex IDs ("15b3").
    numeric = re.fullmatch(r"[0-9.:]+|[0-9][0-9a-f]*", text) is not None
    special = text.lower() in ("true", "false", "null", "yes", "no", "on", "off", "~")
    if _PLAIN.fullmatch(text) and not numeric and not special:
        return text
    return json.dumps(text)


def flow(value: Any) -> str:
    """One value in YAML flow style: `{count: 2}`, `[p5.48xlarge]`, `"1.33"`."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return _scalar(value)


# Lists of mappings written one item a line; every other list is one flow line.
BLOCK_LISTS = frozenset({"quotas", "taints", "networks", "cpuPools"})


def _fields(fields: Mapping[str, Any], indent: str) -> str:
    """Keys in block style at indent, values in flow style (BLOCK_LISTS one item a line)."""
    lines = []
    for key, value in fields.items():
        if value is None:
            continue
        if key in BLOCK_LISTS and value and all(isinstance(v, Mapping) for v in value):
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  - {flow(v)}" for v in value]
        elif key == "components":
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  {k}: {flow(v)}" for k, v in value.items()]
        else:
            lines.append(f"{indent}{key}: {flow(value)}")
    return "".join(line + "\n" for line in lines)


def pool(
    name: str = "train",
    gpu: str = "H100-SXM5-80GB",
    *,
    nodes: Mapping[str, int] | None = None,
    gpus_per_node: int = 8,
    cpu: int = 192,
    memory: str = "1900Gi",
    hostnames: list[str] | None = None,
    node_group: str | None = None,
    karpenter: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: list[Mapping[str, str]] | None = None,
    sharing: Mapping[str, Any] | None = None,
    **more: Any,
) -> str:
    """One node pool: static (`nodes={"count": n}` with hostnames or a node group) or autoscaled.

    Without nodes: 2 static nodes, with hostnames `<name>-N` unless something else selects them."""
    if nodes is None:
        nodes = {"count": 2}
        if not (hostnames or node_group or karpenter or labels):
            hostnames = [f"{name}-[0-9]+"]
    fields = {"name": name, "gpu": gpu, "gpusPerNode": gpus_per_node, "cpu": cpu,
              "memory": memory, "nodes": nodes, "hostnames": hostnames, "nodeGroup": node_group,
              "karpenter": karpenter, "labels": labels, "taints": taints, "sharing": sharing}  # fmt: skip
    body = _fields(fields | more, "    ")
    return "  - " + body[4:]


def cluster(
    *pools: str,
    name: str = "c1",
    provider: str = "onprem",
    components: Mapping[str, Any] | None = None,
    priority_classes: list[Mapping[str, Any]] | None = None,
    cohorts: list[Mapping[str, Any]] | None = None,
    networks: list[Mapping[str, Any]] | None = None,
    **more: Any,
) -> str:
    """One cluster file: header, components (one flow line each), classes, cohorts, pools, networks,
    then any other top-level field (cpuPools, ignore, ...)."""
    head = {"name": name, "kubernetesVersion": "1.33", "provider": provider, "gitops": GITOPS,
            "components": components or {"kueue": KUEUE}, "priorityClasses": priority_classes,
            "cohorts": cohorts}  # fmt: skip
    text = _fields(head, "") + "nodePools:\n" + "".join(pools or (pool(),))
    return text + _fields({"networks": networks} | more, "")


MIG_7 = {"mig": {"layout": {"1g.10gb": 7}}}
MIXED = {"gpuOperator": OPERATOR | {"migStrategy": "mixed"}, "kueue": KUEUE}


def static_cluster(
    components: Mapping[str, Any] = MIXED, sharing: Mapping[str, Any] = MIG_7, **more: Any
) -> str:
    """A small static on-prem cluster c1 for tenant tests (no autoscaler: only tenant rules speak):
    pool train of 4 nodes, pool infer of 2 shared ones, class research, cohort shared."""
    train = pool("train", nodes={"count": 4}, hostnames=["train-[0-9]+"])
    return cluster(train, pool("infer", sharing=sharing), components=components,
                   priority_classes=[{"name": "research", "value": 100}], cohorts=[{"name": "shared"}],
                   **more)  # fmt: skip


def allocation(
    cluster: str = "c1",
    *,
    cohort: str | None = None,
    weight: int | None = None,
    quotas: list[Mapping[str, Any]] | None = None,
    **fields: Any,
) -> str:
    """One allocation of a tenant: `- cluster:`, cohort, weight, quotas, then other fields in order."""
    items = {"cluster": cluster, "cohort": cohort, "weight": weight, "quotas": quotas} | fields
    return "  - " + _fields(items, "    ")[4:]


def tenant(name: str, *allocations: str, **fields: Any) -> str:
    """One tenant file: its name, top-level fields (owners, priorityClass, ...), then allocations."""
    return _fields({"name": name} | fields, "") + "allocations:\n" + "".join(allocations)


def fleet(root: Path, clusters: Mapping[str, str], tenants: Mapping[str, str] = {}) -> Path:
    """Write a repository: clusters/<name>.yaml and tenants/<name>.yaml."""
    files = {f"clusters/{n}.yaml": t for n, t in clusters.items()}
    files |= {f"tenants/{n}.yaml": t for n, t in tenants.items()}
    return write_repo(root, files)


def position(text: str, needle: str, after: str = "") -> str:
    """The 1-based `line:col` where needle first starts in text (after the first `after`)."""
    at = text.index(needle, text.index(after) + len(after) if after else 0)
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"{line}:{column}"
