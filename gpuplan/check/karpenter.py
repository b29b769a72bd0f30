"""Who labels a pool's nodes: Karpenter NodePools (autoscaled pools), NFD rules (static pools).

Rules the components enforce on the objects gpuplan emits (the NodePool CRD's CEL validations,
nfd-master's label namespace policy, Go's regexp syntax), and wiring that would validate but
never work at run time. That an autoscaled pool needs components.karpenter and a provider
Karpenter serves is checked in fleet.py (`_pool_shape`).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check import check
from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile, format_path
from gpuplan.emit import karpenter as karpenter_emit
from gpuplan.emit import nfd
from gpuplan.fleet import INSTANCE_GPUS, ClusterPlan, Fleet
from gpuplan.model.common import LABEL_VALUE
from gpuplan.pools import GPU, PoolPlan


def _warning(source: SourceFile, loc: Key, message: str, at_key: bool = False) -> Diagnostic:
    line, col = source.position(loc, at_key)
    return Diagnostic(source.path, line, col, Severity.WARNING, format_path(loc), message)


def _pools(fleet: Fleet, autoscaled: bool) -> Iterator[tuple[ClusterPlan, PoolPlan]]:
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        for pool in cluster.pools.values():
            if pool.spec.nodes.autoscaled == autoscaled:
                yield cluster, pool


def _domain(key: str) -> str:
    return key.rpartition("/")[0]


def _in_domain(key: str, domain: str) -> bool:
    prefix = _domain(key)
    return prefix == domain or prefix.endswith("." + domain)


# --- Karpenter -------------------------------------------------------------------------------


@check
def check_karpenter_version(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on Karpenter before v1.0: it serves karpenter.sh/v1beta1, which gpuplan does not emit."""
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        karpenter = cluster.spec.components.karpenter
        if karpenter is not None and not karpenter_emit.supported(karpenter.version):
            message = (
                f"Karpenter {karpenter.version} serves NodePools as karpenter.sh/v1beta1; gpuplan emits "
                "karpenter.sh/v1 (Karpenter v1.0.0 and later) only: upgrade Karpenter"
            )
            yield cluster.located.source.diagnostic(("components", "karpenter", "version"), message)


@check
def check_instance_type_gpus(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error when a known instance type has another GPU count than the pool's gpusPerNode."""
    for cluster, pool in _pools(fleet, autoscaled=True):
        spec = pool.spec.karpenter
        if spec is None:
            continue
        for t_index, instance_type in enumerate(spec.instance_types):
            count = INSTANCE_GPUS.get(instance_type)
            if count is not None and count != pool.gpus_per_node:
                loc = ("nodePools", pool.index, "karpenter", "instanceTypes", t_index)
                message = (
                    f"{instance_type} has {count} GPUs, but the pool's nodes have {pool.gpus_per_node} (gpusPerNode): "
                    "the pool's capacity and its NodePool's nvidia.com/gpu limit would be wrong"
                )
                yield cluster.located.source.diagnostic(loc, message)


@check
def check_karpenter_values(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on instance types or zones that are not label values (NodePool requirement values)."""
    for cluster, pool in _pools(fleet, autoscaled=True):
        spec = pool.spec.karpenter
        if spec is None:
            continue
        for field, values in (("instanceTypes", spec.instance_types), ("zones", spec.zones)):
            for v_index, value in enumerate(values):
                if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
                    loc = ("nodePools", pool.index, "karpenter", field, v_index)
                    message = f"{value[:80]!r} is not a Kubernetes label value, which a NodePool requirement value must be"
                    yield cluster.located.source.diagnostic(loc, message)


@check
def check_karpenter_labels(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on pool labels the NodePool CRD refuses in template labels (karpenter.sh, hostname)."""
    for cluster, pool in _pools(fleet, autoscaled=True):
        if cluster.spec.components.karpenter is None:
            continue
        for key in pool.spec.labels:
            reason = None
            if key == "kubernetes.io/hostname":
                reason = "Karpenter sets kubernetes.io/hostname itself"
            elif _in_domain(key, "karpenter.sh") and key != "karpenter.sh/capacity-type":
                reason = 'the label domain "karpenter.sh" is reserved for Karpenter'
            if reason is not None:
                loc = ("nodePools", pool.index, "labels", key)
                yield cluster.located.source.diagnostic(loc, f"{reason}; the NodePool would be rejected", at_key=True)


@check
def check_karpenter_known_resources(fleet: Fleet) -> Iterator[Diagnostic]:
    """Warn when an autoscaled pool's GPUs are advertised under a name Karpenter cannot predict.

    Karpenter launches a node for a pending pod only if some instance type's predicted resources
    fit the pod's requests, and its instance-type model knows physical `nvidia.com/gpu` only.
    Pods asking for `nvidia.com/mig-*` or `nvidia.com/gpu.shared` never make it launch a node.
    """
    for cluster, pool in _pools(fleet, autoscaled=True):
        if cluster.spec.components.karpenter is None:
            continue
        unknown = [name for name in pool.resources if name != GPU]
        if not unknown:
            continue
        names = ", ".join(unknown)
        message = (
            f"Karpenter predicts nodes of pool {pool.name} to offer {GPU} only, so pending pods that ask for "
            f"{names} never make it launch a node (and Karpenter keeps no minimum of nodes): the pool grows "
            "only when other pods trigger it; make it a static pool ({count: N})"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "sharing"), message)


# --- NFD (static pools) ----------------------------------------------------------------------

_KUBERNETES_IO = "kubernetes.io"
_NFD_ALLOWED = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")


@check
def check_nfd_label_keys(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on labels nfd-master never sets (kubernetes.io); warn on unprefixed ones (it prefixes them)."""
    for cluster, pool in _pools(fleet, autoscaled=False):
        if not nfd.labelled(cluster, pool):
            continue
        for key in pool.spec.labels:
            loc = ("nodePools", pool.index, "labels", key)
            if not _domain(key):
                message = (
                    f"NFD puts unprefixed labels under feature.node.kubernetes.io/: the nodes get "
                    f"feature.node.kubernetes.io/{key}, not {key}; give the key a prefix (example.com/{key})"
                )
                yield _warning(cluster.located.source, loc, message, at_key=True)
            elif _in_domain(key, _KUBERNETES_IO) and not any(_in_domain(key, d) for d in _NFD_ALLOWED):
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
        if not nfd.labelled(cluster, pool):
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
        missing = {k: v for k, v in pool.node_labels.items() if pool.spec.labels.get(k) != v}
        if not missing:
            continue
        wanted = ", ".join(f"{k}={v}" for k, v in missing.items())
        message = (
            f"pool {pool.name} selects its nodes by labels only, so gpuplan labels none of them: "
            f"they must already carry {wanted}; say so by adding these to labels, or list the nodes' names in hostnames"
        )
        yield _warning(cluster.located.source, ("nodePools", pool.index, "labels"), message)
