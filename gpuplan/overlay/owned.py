"""What a patch may not change in a generated object: the fields gpuplan's proofs rest on; pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]

# The labels that wire a node to its pool, its MIG configuration and its device-plugin
# configuration (as emitted by gpuplan.emit: pool label, GPU Operator labels).
WIRING_LABELS = ("gpuplan.io/pool", "nvidia.com/mig.config", "nvidia.com/device-plugin.config")
WIRING_WHY = "the label wires nodes to their pool, MIG configuration and device-plugin configuration, which gpuplan proves consistent: change the cluster file instead"
SELECTOR_WHY = "namespaceSelectors keep a tenant's queues and network isolation to the tenant's own namespaces: change the tenant file instead"
IDENTITY_WHY = "the object's identity: its file name and every reference to it derive from it"
RBAC_WHY = "who is bound to which role is what gpuplan checks (owners get admin in their own namespaces; system: users and groups and other namespaces' service accounts only when the cluster file allows them): change the tenant's owners or rbac.allowedSubjects instead"
QUOTA_WHY = "quota figures are what gpuplan proves to fit the pools' capacity and each namespace's ResourceQuota: change the tenant file instead"


@dataclass(frozen=True)
class Rule:
    """A field (prefix, '*' matches any one step) of some kinds that patches may not change."""

    kinds: frozenset[str]  # empty: every kind
    prefix: Path
    why: str
    names: frozenset[str] = frozenset()  # empty: every name


def _rule(kinds: str, prefix: str, why: str, names: str = "") -> Rule:
    return Rule(frozenset(kinds.split()), tuple(prefix.split(".")), why, frozenset(names.split()))


RULES = (
    _rule("", "apiVersion", IDENTITY_WHY),
    _rule("", "kind", IDENTITY_WHY),
    _rule("", "metadata.name", IDENTITY_WHY),
    _rule("", "metadata.namespace", IDENTITY_WHY),
    _rule(
        "ResourceQuota",
        "spec",
        "a namespace's ResourceQuota is proved to admit what its ClusterQueue admits (nominal quota plus borrowing): change the tenant file instead",
    ),
    _rule("ClusterQueue Cohort", "spec.resourceGroups", QUOTA_WHY),
    _rule(
        "ClusterQueue",
        "spec.cohort",
        "borrowing and lending are proved within the cohort: change the tenant file instead",
    ),
    _rule(
        "ClusterQueue",
        "spec.cohortName",
        "borrowing and lending are proved within the cohort: change the tenant file instead",
    ),
    _rule(
        "Cohort",
        "spec.parentName",
        "borrowing and lending are proved within the cohort tree: change the tenant file instead",
    ),
    _rule("Queue", "spec.capability", QUOTA_WHY),
    _rule("Queue", "spec.guarantee", QUOTA_WHY),
    _rule("Queue", "spec.deserved", QUOTA_WHY),
    # KAI's Queue (scheduling.run.ai/v2, gpuplan/emit/kai.py): spec.resources.{gpu,cpu,memory}.
    # {quota,limit,overQuotaWeight} and spec.parentQueue (kai-scheduler/KAI-Scheduler v0.17.0,
    # deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml).
    _rule("Queue", "spec.resources", QUOTA_WHY),
    _rule(
        "Queue",
        "spec.parentQueue",
        "a KAI Queue's parent is its cohort, within which borrowing and the quotas are proved: change the tenant file instead",
    ),
    _rule(
        "PriorityClass WorkloadPriorityClass",
        "value",
        "the value is what each tenant's priority-ceiling quota and the preemption proofs rest on: change the cluster file instead",
    ),
    _rule(
        "PriorityClass",
        "globalDefault",
        "gpuplan makes no class the default, so a pod without a class runs at priority 0 under every tenant's ceiling",
    ),
    _rule("RoleBinding ClusterRoleBinding", "subjects", RBAC_WHY),
    _rule("RoleBinding ClusterRoleBinding", "roleRef", RBAC_WHY),
    _rule(
        "NodePool",
        "spec.limits",
        "a NodePool's limits are the pool capacity (nodes.max) gpuplan proves quotas against: change the cluster file instead",
    ),
    _rule(
        "ResourceFlavor",
        "spec.nodeLabels",
        "a flavor's node labels pin workloads to exactly its pool's nodes: change the cluster file instead",
    ),
    _rule(
        "LocalQueue",
        "spec.clusterQueue",
        "the LocalQueue wires the namespace to its tenant's ClusterQueue: change the tenant file instead",
    ),
    _rule(
        "ClusterPolicy",
        "spec.mig.strategy",
        "the MIG strategy decides which resources the pools advertise: change the cluster file instead",
    ),
    _rule(
        "ClusterPolicy",
        "spec.migManager.config",
        "wires the mig-parted configuration gpuplan proved placeable: change the cluster file instead",
    ),
    _rule(
        "ClusterPolicy",
        "spec.devicePlugin.config",
        "wires the device-plugin configuration of the sharing pools: change the cluster file instead",
    ),
    _rule(
        "ConfigMap",
        "data",
        "the MIG layouts and sharing configurations gpuplan proved: change the cluster file instead",
        "gpuplan-mig-parted-config gpuplan-device-plugin-config",
    ),
)


def flatten(value: Any, path: Path = ()) -> dict[Path, Any]:
    """Return every leaf (scalars, empty mappings and lists) by its path."""
    if isinstance(value, dict) and value:
        return {
            p: v for key, item in value.items() for p, v in flatten(item, path + (key,)).items()
        }
    if isinstance(value, list) and value:
        return {p: v for i, item in enumerate(value) for p, v in flatten(item, path + (i,)).items()}
    return {path: value}


def _matches(rule: Rule, kind: str, name: str, path: Path) -> bool:
    if (rule.kinds and kind not in rule.kinds) or (rule.names and name not in rule.names):
        return False
    shared = min(len(rule.prefix), len(path))
    return all(want in ("*", got) for want, got in zip(rule.prefix[:shared], path[:shared]))


def _wiring(value: Any, path: Path = ()) -> Counter[tuple[Path, str, str]]:
    """Count where each wiring label is set: a mapping key, or a list item whose `key` names it."""
    found: Counter[tuple[Path, str, str]] = Counter()
    if isinstance(value, dict):
        if value.get("key") in WIRING_LABELS:
            found[(path, str(value["key"]), repr(sorted(value.items())))] += 1
        for key, item in value.items():
            if key in WIRING_LABELS:
                found[(path, key, repr(item))] += 1
            found += _wiring(item, path + (key,))
    elif isinstance(value, list):
        for item in value:
            found += _wiring(item, path + ("*",))  # list order does not wire anything
    return found


def _wiring_change(before: Any, after: Any) -> Path | None:
    """Return where a wiring label was added, removed or changed, or None."""
    old, new = _wiring(before), _wiring(after)
    changed = sorted((old - new) + (new - old), key=repr)
    if not changed:
        return None
    path, label, _ = changed[0]
    return tuple(p for p in path if p != "*") + (label,)


def owned_changes(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[Path, str]]:
    """Return (field path, why) for each owned field a patch changed, one per reason."""
    kind, name = str(before.get("kind", "")), str((before.get("metadata") or {}).get("name", ""))
    old, new = flatten(before), flatten(after)
    changed = sorted(
        (p for p in old.keys() | new.keys() if old.get(p, _MISSING) != new.get(p, _MISSING)),
        key=repr,
    )
    found: dict[str, Path] = {}
    for path in changed:
        if "namespaceSelector" in path:
            found.setdefault(SELECTOR_WHY, path[: path.index("namespaceSelector") + 1])
        for rule in RULES:
            if _matches(rule, kind, name, path):
                found.setdefault(rule.why, path[: max(len(rule.prefix), 1)])
    wiring = _wiring_change(before, after)
    if wiring is not None:
        found.setdefault(WIRING_WHY, wiring)
    return sorted(((path, why) for why, path in found.items()), key=lambda item: repr(item[0]))


_MISSING = object()
