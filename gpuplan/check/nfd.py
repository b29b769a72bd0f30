"""NFD rules for static pools: what nfd-master sets and matches, and pools it leaves unlabelled.

Rules nfd-master enforces on the NodeFeatureRules gpuplan emits (its label namespace policy, Go's
regexp syntax), and wiring that would validate but never label a node.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check
from gpuplan.check.karpenter import _domain, _in_domain, _pools, _warning
from gpuplan.diagnostics import Diagnostic
from gpuplan.fleet import Fleet
from gpuplan.pools import POOL_LABEL

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


@check
def check_unlabelled_static_pools(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when a static pool names no hostnames: gpuplan then labels none of its nodes."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        components = cluster.spec.components
        if pool.spec.hostnames or (components.gpu_operator is None and components.kueue is None):
            continue
        # The pool label only serves selectors of pools gpuplan labels; these are selected by their own labels.
        needed = {k: v for k, v in pool.node_labels.items() if k != POOL_LABEL}
        missing = {k: v for k, v in needed.items() if pool.spec.labels.get(k) != v}
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


# The label each cloud puts on a node with its node group (../shared/facts/upstream-components.md).
NODE_GROUP_LABELS = {
    "aws": "eks.amazonaws.com/nodegroup",
    "azure": "kubernetes.azure.com/agentpool",
    "gcp": "cloud.google.com/gke-nodepool",
}
# Node names those clouds give (same facts file): EKS ip-10-...ec2.internal or i-..., AKS
# aks-<pool>-<id>-vmss...: chosen at launch, so a regex written ahead rarely names a pool's nodes.
_CLOUD_NODE_NAMES = {
    "aws": "ip-10-0-1-2.ec2.internal or i-0123...",
    "azure": "aks-<pool>-<id>-vmss000000",
}


@check
def check_cloud_hostnames(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn on hostnames regexes on aws and azure: select a static pool by its node-group label."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        provider = cluster.spec.provider
        if provider not in _CLOUD_NODE_NAMES or not pool.spec.hostnames:
            continue
        label = NODE_GROUP_LABELS[provider]
        message = (
            f"{provider} names nodes at launch ({_CLOUD_NODE_NAMES[provider]}), so a hostname regex rarely "
            f"selects pool {pool.name}: select its nodes by node group instead, labels: {{{label}: <group>}} "
            "(and drop hostnames)"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "hostnames"), message)
