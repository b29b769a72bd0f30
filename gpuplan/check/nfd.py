"""NFD rules for static pools: what nfd-master sets and matches, and pools it leaves unlabelled.

Rules nfd-master enforces on the NodeFeatureRules gpuplan emits (its label namespace policy, Go's
regexp syntax), and wiring that would validate but never label a node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import interegular
from interegular.fsm import anything_else

from gpuplan.check.karpenter import _domain, _in_domain, _pools, _warning
from gpuplan.check.registry import check
from gpuplan.components.nfd import taint_refused
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet
from gpuplan.plan.pools import NODE_GROUP_LABELS, POOL_LABEL

_KUBERNETES_IO = "kubernetes.io"
_NFD_ALLOWED = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")


@check
def check_nfd_label_keys(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on labels nfd-master never sets (kubernetes.io); warn on unprefixed ones (it prefixes them)."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        if not cluster.nfd_labelled(pool):
            continue
        for key in pool.spec.labels:
            loc = ("nodePools", pool.index, "labels", key)
            if not _domain(key):
                message = (
                    f"NFD puts unprefixed labels under feature.node.kubernetes.io/: the nodes get "
                    f"feature.node.kubernetes.io/{key}, not {key}; give the key a prefix (example.com/{key})"
                )
                yield _warning(cluster.located.source, loc, message, at_key=True)
            elif _in_domain(key, _KUBERNETES_IO) and not any(
                _in_domain(key, d) for d in _NFD_ALLOWED
            ):
                message = (
                    f"nfd-master never sets labels in the kubernetes.io domain (except {', '.join(_NFD_ALLOWED)}): "
                    "the pool's nodes would not get this label"
                )
                yield cluster.located.source.diagnostic(loc, message, at_key=True)


def re2_problem(regex: str) -> str | None:
    """Return why Go's regexp (RE2), which NFD matches with, rejects a Python regex, or None."""
    plain: list[str] = []
    i, in_class = 0, False
    while i < len(regex):
        char = regex[i]
        if char == "\\" and i + 1 < len(regex):
            nxt = regex[i + 1]
            if not in_class and nxt in "123456789":
                return "backreferences"
            if nxt == "Z":
                return r"\Z (write \z or $)"
            plain.append("e")
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            plain.append("c")
        elif char == "[":
            in_class = True
            plain.append("c")
            if regex[i + 1 : i + 2] == "]":  # a leading ] is a literal member of the class
                i += 1
        else:
            plain.append(char)
        i += 1
    text = "".join(plain)
    for construct, what in (
        ("(?=", "lookahead"), ("(?!", "lookahead"), ("(?<=", "lookbehind"), ("(?<!", "lookbehind"),
        ("(?>", "atomic groups"), ("(?P=", "backreferences"), ("(?(", "conditionals"),
    ):  # fmt: skip
        if construct in text:
            return what
    for quantifier in ("*+", "++", "?+", "}+"):
        if quantifier in text:
            return "possessive quantifiers"
    return None


@check
def check_nfd_hostnames(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on hostnames regexes that Go's regexp (NFD's InRegexp) cannot compile."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        if not cluster.nfd_labelled(pool):
            continue
        for h_index, regex in enumerate(pool.spec.hostnames):
            problem = re2_problem(regex)
            if problem is not None:
                loc = ("nodePools", pool.index, "hostnames", h_index)
                message = f"NFD matches node names with Go's regexp (RE2), which has no {problem}: the pool's nodes would never be labelled"
                yield cluster.located.source.diagnostic(loc, message)


def shared_name(first: list[str], second: list[str]) -> str | None:
    """Return a node name that both lists of hostnames regexes match whole, None if no name can.

    Each regex is turned into a finite automaton (interegular) and the two lists' automata are
    intersected, so the answer holds for every name, not for samples. A regex outside what the
    automata model (Go's RE2 syntax is checked apart) proves nothing either way: None.
    """
    one, other = automata(first), automata(second)
    return None if one is None or other is None else _shared(one, other)


def automata(regexes: list[str]) -> list[Any] | None:
    """Return the automaton of each regex (None: one is beyond what interegular models)."""
    try:
        return [interegular.parse_pattern(r).to_fsm() for r in regexes]
    except Exception:  # noqa: BLE001 - interegular refuses constructs it cannot model (lookarounds...)
        return None


def _shared(first: list[Any], second: list[Any]) -> str | None:
    for a in first:
        for b in second:
            both = a & b
            if not both.empty():
                return _first_name(both)
    return None


def _first_name(fsm: Any) -> str:
    """Return the shortest name an automaton accepts, the first of them in character order.

    A breadth-first walk over states that tries characters in order reaches each state first by
    that state's smallest shortest name; interegular's own `strings()` orders characters by its
    internal transition numbers, which vary from process to process.
    """
    alphabet = fsm.alphabet
    # a character the regexes never name stands for interegular's "anything else"
    other = next(c for c in "abcdefghijklmnopqrstuvwxyz0123456789~" if c not in alphabet)
    names = {fsm.initial: ""}
    queue = deque([fsm.initial])
    while queue:
        state = queue.popleft()
        if state in fsm.finals:
            return names[state]
        steps = sorted(
            (other if symbol is anything_else else str(symbol), target)
            for transition, target in fsm.map.get(state, {}).items()
            for symbol in alphabet.by_transition[transition]
        )
        for char, target in steps:
            if target not in names and fsm.islive(target):
                names[target] = names[state] + char
                queue.append(target)
    raise ValueError("an automaton that is not empty accepts some name")  # unreachable


@check
def check_overlapping_hostnames(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when one node name matches the hostnames of two static pools of a cluster.

    NFD would apply both pools' rules to that node (two pool labels, MIG configs and taints in
    conflict, the last rule winning), and the node would count in both pools' capacity.
    """
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        named = [p for p in cluster.pools.values() if not p.karpenter_made and p.spec.hostnames]
        machines = [automata(p.spec.hostnames) for p in named]  # each pool's, made once
        for index, pool in enumerate(named):
            for earlier, theirs in zip(named[:index], machines[:index], strict=True):
                mine = machines[index]
                node = None if mine is None or theirs is None else _shared(theirs, mine)
                if node is not None:
                    message = (
                        f"a node named {node!r} would belong to pool {earlier.name} and to this pool: "
                        "each node must match the hostnames of one pool only (NFD would give it both "
                        "pools' labels, and it would count in both pools' capacity)"
                    )
                    loc = ("nodePools", pool.index, "hostnames")
                    yield cluster.located.source.diagnostic(loc, message)


@check
def check_unlabelled_static_pools(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a static pool selected by nodeGroup or labels lacks labels gpuplan cannot put on its nodes."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        components = cluster.spec.components
        if not pool.label_selected or (
            components.gpu_operator is None and components.kueue is None
        ):
            continue
        # The pool label only serves selectors of pools gpuplan labels; these are selected by their own labels.
        needed = {k: v for k, v in pool.node_labels.items() if k != POOL_LABEL}
        given = pool.given_labels
        for key, value in needed.items():
            if key in pool.spec.labels and pool.spec.labels[key] != value:
                # A config label the pool states with another value: a layout changed, its label did not.
                message = (
                    f"pool {pool.name}: its nodes carry {key}={pool.spec.labels[key]}, but the config gpuplan writes for "
                    f"its MIG layout or sharing is {value}: set {key}: {value} here and on the node group"
                )
                yield cluster.located.source.diagnostic(
                    ("nodePools", pool.index, "labels", key), message
                )
        missing = {k: v for k, v in needed.items() if k not in given}
        if not missing:
            continue
        wanted = ", ".join(f"{k}={v}" for k, v in missing.items())
        fix = "list the nodes' names in hostnames"
        if cluster.spec.provider in NODE_GROUP_LABELS:
            fix = (
                "set them as Kubernetes labels of the node group (node names are no use on a cloud)"
            )
        message = (
            f"pool {pool.name} selects its nodes by labels only, so gpuplan labels none of them: "
            f"they must already carry {wanted}; say so by adding these to labels, or {fix}"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "labels"), message)


@check
def check_flavor_labels_unset(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a pool's ResourceFlavor selects labels nothing sets (gpuplan validate warns on the flavor alike)."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for loc, what, labels, nodes in cluster.unset_labels():
            wanted = ", ".join(f"{k}={v}" for k, v in labels.items())
            message = (
                f"{what}: its ResourceFlavor selects {wanted}, which no NodePool, NodeFeatureRule or node group "
                f"sets: until someone labels its {nodes} nodes (gpuplan requirements lists them), Kueue admits work "
                "no node takes; label them, or select them by their node group's label"
            )
            yield _warning(cluster.located.source, loc, message)


@check
def check_static_pool_taints(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on static-pool taints nobody applies: refused by nfd-master, or defaulted on nodes gpuplan does not label."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        if cluster.nfd_labelled(pool):
            for t_index, taint in enumerate(pool.taints):
                reason = taint_refused(taint["key"])
                if reason is None:
                    continue
                loc = (
                    ("nodePools", pool.index, "taints", t_index)
                    if pool.spec.taints
                    else ("nodePools", pool.index, "name")
                )
                message = (
                    f"{reason}, so taint {taint['key']} of pool {pool.name} is not applied by gpuplan's NodeFeatureRule: "
                    "taint the nodes when they register (kubelet --register-with-taints), or use a prefixed key"
                )
                yield _warning(cluster.located.source, loc, message)
        elif pool.label_selected and pool.spec.taints is None:
            defaults = ", ".join(
                f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in pool.taints
            )
            where = "the node group" if pool.spec.node_group is not None else "the nodes"
            message = (
                f"pool {pool.name}'s taints default to {defaults}, which gpuplan cannot put on nodes it does not label "
                f"(no NodeFeatureRule selects them): taint {where} so and say so with taints: [...], or write "
                "taints: [] if its nodes carry none (then other pods may land on them)"
            )
            yield _warning(cluster.located.source, ("nodePools", pool.index, "name"), message)


# Node names clouds give (../shared/facts/upstream-components.md): EKS ip-10-...ec2.internal or i-...,
# AKS aks-<pool>-<id>-vmss...: chosen at launch, so a regex written ahead rarely names a pool's nodes.
_CLOUD_NODE_NAMES = {
    "aws": "ip-10-0-1-2.ec2.internal or i-0123...",
    "azure": "aks-<pool>-<id>-vmss000000",
}


@check
def check_cloud_hostnames(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on hostnames regexes on aws and azure: select a static pool by its node group (nodeGroup)."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        provider = cluster.spec.provider
        if provider not in _CLOUD_NODE_NAMES or not pool.spec.hostnames:
            continue
        label = NODE_GROUP_LABELS[provider]
        message = (
            f"{provider} names nodes at launch ({_CLOUD_NODE_NAMES[provider]}), so a hostname regex rarely "
            f"selects pool {pool.name}: select its nodes by node group instead, nodeGroup: <group> "
            f"(the {label} label), and drop hostnames"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "hostnames"), message)


@check
def check_nfd_version_bundled(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on components.nfd where the GPU Operator's chart installs NFD: its own subchart's version runs."""
    for cluster in (fleet.clusters[name] for name in sorted(fleet.clusters)):
        operator = cluster.spec.components.gpu_operator
        if cluster.spec.components.nfd is None or getattr(operator, "nfd", None) != "bundled":
            continue
        message = (
            "the GPU Operator chart installs NFD here (gpuOperator.nfd: bundled), at the version of its "
            "node-feature-discovery subchart: set gpuOperator.nfd: standalone for NFD's own Application "
            "at this version, or remove components.nfd"
        )
        yield cluster.located.source.diagnostic(("components", "nfd", "version"), message)
