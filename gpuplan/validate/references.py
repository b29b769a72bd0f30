"""References between the objects of ONE cluster: every name an object uses must resolve.

Each object can be valid on its own and the cluster still not work: a LocalQueue naming
a ClusterQueue that does not exist admits nothing, a ClusterQueue whose ResourceFlavor
is missing stays inactive (Kueue's FlavorNotFound), a node labelled with a mig-parted
config the MIG manager does not know keeps failing to reconfigure. The API server
accepts all of these, so gpuplan checks them before writing.

``check_references(objects, ...)`` runs every check in ``CHECKS`` and returns a
``ReferenceReport``: problems (each naming its object and field path, with a severity)
and the checks that could not run, with why.

Decisions:
- A ClusterQueue's cohort (or a Cohort's parent) without a Cohort object is normal in
  Kueue (the cohort exists implicitly), so it is only checked when the set defines
  Cohort objects at all, and then it is a *warning*: a probable typo, not a rejection.
- ClusterPolicy is cluster-scoped, so the ConfigMaps it names are looked up in
  ``operator_namespace`` when given, else in any namespace if exactly one ConfigMap has
  that name (several: a warning, nothing more can be checked).
- ``nvidia.com/mig.config`` values must be configs of the custom mig-parted ConfigMap
  (its ``config.yaml``) or, with no custom ConfigMap configured, NVIDIA's built-in names.
  Without a ClusterPolicy in the set the label values are not checked (said so).
- ResourceFlavor node labels must be set by a Karpenter NodePool (template labels,
  ``In``/``Exists`` requirements, ``karpenter.sh/nodepool``), an NFD NodeFeatureRule
  or ``node_labels`` (labels nodes are known to carry, e.g. static pools or GPU feature
  discovery); with none of those the check is skipped and said so.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import yaml

from gpuplan.model.names import NODE_GROUP_LABELS
from gpuplan.validate.buckets import OTHER, objects_by_kind

Severity = Literal["error", "warning"]
KUEUE = "kueue.x-k8s.io"
KARPENTER = "karpenter.sh"
NFD = "nfd.k8s-sigs.io"
NFD_DEFAULT_PREFIX = "feature.node.kubernetes.io/"  # NFD's namespace for unprefixed labels
NODEPOOL_LABEL = "karpenter.sh/nodepool"  # Karpenter labels every node with its pool
# The GPU Operator's names, as in gpuplan.emit.gpu_operator_objects (which cites the
# sources); repeated so validation does not import the emitters it checks.
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_PARTED_CONFIG_KEY = "config.yaml"
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_ANY = object()  # a label whose value is only known on the node


@dataclass(frozen=True, order=True)
class ReferenceProblem:
    """A reference of one object that does not resolve."""

    kind: str
    namespace: str
    name: str
    path: str
    message: str
    severity: Severity = "error"
    # The object named is not among the objects: the API server accepts the reference, which
    # may resolve to an object created elsewhere (`validate` warns; a render, seeing all, errs).
    external: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        ref = f"{self.namespace}/{self.name}" if self.namespace else self.name
        where = f"{self.path}: " if self.path else ""
        return f"{self.severity}: {self.kind} {ref}: {where}{self.message}"


@dataclass
class ReferenceReport:
    """What check_references found, and which checks it could not run."""

    problems: list[ReferenceProblem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[ReferenceProblem]:
        """The problems of severity error."""
        return [p for p in self.problems if p.severity == "error"]


class ClusterObjects:
    """The objects of one cluster, indexed for the checks, with what the caller knows."""

    def __init__(
        self,
        objects: Iterable[Any],
        *,
        paths: Collection[str] | None = None,
        operator_namespace: str | None = None,
        node_labels: Iterable[Mapping[str, str]] = (),
        external_namespaces: Iterable[str] = (),
        by_kind: dict[str, list[dict]] | None = None,
    ):
        self._objects = None if by_kind is not None else [o for o in objects if isinstance(o, dict)]
        self._kinds = by_kind
        self.paths = None if paths is None else {_norm(p) for p in paths}
        self.operator_namespace = operator_namespace
        self.node_labels = [dict(labels) for labels in node_labels]
        self.external_namespaces = set(external_namespaces)
        self.skipped: list[str] = []
        self._gpu: list[_GpuConfig | None] = []

    @property
    def objects(self) -> list[dict]:
        """Every object (given by kind: kind by kind)."""
        if self._objects is None:
            self._objects = [o for bucket in self.by_kind.values() for o in bucket]
        return self._objects

    def of(self, group: str, kind: str) -> list[dict]:
        """The objects of one group and kind (any version), in input order."""
        if kind == OTHER:
            return []
        return [o for o in self.by_kind.get(kind, ()) if _group(o) == group]

    @property
    def by_kind(self) -> dict[str, list[dict]]:
        """The objects by kind, in input order (each check asks for a few kinds of thousands)."""
        if self._kinds is None:
            self._kinds = objects_by_kind(self._objects or [])
        return self._kinds

    def names(self, group: str, kind: str) -> set[str]:
        """The names of the objects of one group and kind."""
        return {_name(o) for o in self.of(group, kind)}

    def skip(self, note: str) -> None:
        """Record a check that could not run."""
        self.skipped.append(note)

    @property
    def gpu(self) -> _GpuConfig | None:
        """The GPU Operator configuration the first ClusterPolicy points at (made once)."""
        if not self._gpu:
            policies = sorted(self.of("nvidia.com", "ClusterPolicy"), key=_name)
            self._gpu.append(_GpuConfig(self, policies[0]) if policies else None)
        return self._gpu[0]

    def namespaced(self) -> list[tuple[dict, str]]:
        """(object, namespace) of every namespaced object."""
        return [(o, namespace) for o in self.objects if (namespace := _namespace(o))]


Check = Callable[[ClusterObjects], list[ReferenceProblem]]


def check_references(
    objects: Iterable[Any],
    *,
    paths: Collection[str] | None = None,
    operator_namespace: str | None = None,
    node_labels: Iterable[Mapping[str, str]] = (),
    external_namespaces: Iterable[str] = (),
    by_kind: dict[str, list[dict]] | None = None,
) -> ReferenceReport:
    """Check every reference between the objects of one cluster.

    ``paths``: the repository paths that exist (for Argo CD Applications; None skips).
    ``operator_namespace``: where the GPU Operator and its ConfigMaps live.
    ``node_labels``: label sets nodes are known to carry besides NodePools and NFD rules.
    ``external_namespaces``: namespaces that exist without a Namespace object in the set.
    ``by_kind``: the objects already grouped by kind (objects_by_kind), instead of ``objects``.
    """
    cluster = ClusterObjects(
        objects,
        paths=paths,
        operator_namespace=operator_namespace,
        node_labels=node_labels,
        external_namespaces=external_namespaces,
        by_kind=by_kind,
    )
    problems: list[ReferenceProblem] = []
    for check in CHECKS:
        problems += check(cluster)
    return ReferenceReport(sorted(set(problems)), cluster.skipped)


# --- Kueue ----------------------------------------------------------------------------------


def check_local_queues(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """LocalQueue.spec.clusterQueue names an existing ClusterQueue."""
    queues = cluster.names(KUEUE, "ClusterQueue")
    return [
        _problem(
            lq,
            "spec.clusterQueue",
            f'ClusterQueue "{target}" does not exist: the LocalQueue admits no workload',
            external=True,
        )
        for lq in cluster.of(KUEUE, "LocalQueue")
        if (target := _get(lq, "spec", "clusterQueue")) and target not in queues
    ]


def check_flavor_references(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """Every flavor of a ClusterQueue or Cohort names an existing ResourceFlavor."""
    flavors = cluster.names(KUEUE, "ResourceFlavor")
    problems = []
    for obj in cluster.of(KUEUE, "ClusterQueue") + cluster.of(KUEUE, "Cohort"):
        for i, group in enumerate(_list(_get(obj, "spec", "resourceGroups"))):
            for j, flavor in enumerate(_list(_get(group, "flavors"))):
                name = _get(flavor, "name")
                if isinstance(name, str) and name not in flavors:
                    inactive = (
                        " (the ClusterQueue stays inactive: FlavorNotFound)"
                        if obj["kind"] == "ClusterQueue"
                        else ""
                    )
                    problems.append(
                        _problem(
                            obj,
                            f"spec.resourceGroups[{i}].flavors[{j}].name",
                            f'ResourceFlavor "{name}" does not exist{inactive}',
                            external=True,
                        )
                    )
    return problems


def check_cohort_references(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """Cohort names resolve to Cohort objects, when the set defines any (warnings)."""
    cohorts = cluster.names(KUEUE, "Cohort")
    if not cohorts:
        return []  # Kueue's implicit cohorts: nothing to resolve against
    problems = []
    for cq in cluster.of(KUEUE, "ClusterQueue"):
        for key in ("cohortName", "cohort"):
            name = _get(cq, "spec", key)
            if isinstance(name, str) and name and name not in cohorts:
                problems.append(
                    _problem(
                        cq,
                        f"spec.{key}",
                        f'Cohort "{name}" is not among the '
                        "Cohort objects; Kueue creates it implicitly, without "
                        "their settings (a typo?)",
                        "warning",
                    )
                )
    for cohort in cluster.of(KUEUE, "Cohort"):
        name = _get(cohort, "spec", "parentName")
        if isinstance(name, str) and name and name not in cohorts:
            problems.append(
                _problem(
                    cohort,
                    "spec.parentName",
                    f'Cohort "{name}" is not among '
                    "the Cohort objects; Kueue creates it implicitly (a typo?)",
                    "warning",
                )
            )
    return problems


# --- GPU Operator ---------------------------------------------------------------------------


class _GpuConfig:
    """What one ClusterPolicy configures: the mig-parted and device-plugin ConfigMaps."""

    def __init__(self, cluster: ClusterObjects, policy: dict):
        self.cluster = cluster
        self.policy = policy
        self.problems: list[ReferenceProblem] = []
        self.mig_name = _get(policy, "spec", "migManager", "config", "name") or None
        self.plugin_name = _get(policy, "spec", "devicePlugin", "config", "name") or None
        self.mig_map = self._config_map(self.mig_name, "spec.migManager.config.name")
        self.plugin_map = self._config_map(self.plugin_name, "spec.devicePlugin.config.name")
        self.mig_configs = self._mig_configs()

    def _config_map(self, name: Any, path: str) -> dict | None:
        """The ConfigMap ``name`` the ClusterPolicy uses at ``path`` (a Problem if none)."""
        if not isinstance(name, str):
            return None
        found = [cm for cm in self.cluster.of("", "ConfigMap") if _name(cm) == name]
        namespace = self.cluster.operator_namespace
        if namespace is not None:
            here = [cm for cm in found if _namespace(cm) == namespace]
            if here:
                return here[0]
            elsewhere = sorted({_namespace(cm) for cm in found})
            hint = f" (there is one in {', '.join(elsewhere)})" if elsewhere else ""
            self.problems.append(
                _problem(
                    self.policy,
                    path,
                    f'ConfigMap "{name}" does not '
                    f'exist in the operator namespace "{namespace}"{hint}',
                    external=True,
                )
            )
            return None
        if len(found) == 1:
            return found[0]
        if not found:
            self.problems.append(
                _problem(self.policy, path, f'ConfigMap "{name}" does not exist', external=True)
            )
        else:
            spaces = ", ".join(sorted(_namespace(cm) for cm in found))
            self.problems.append(
                _problem(
                    self.policy,
                    path,
                    f'ConfigMap "{name}" exists in '
                    f"several namespaces ({spaces}); give the operator "
                    "namespace to check it",
                    "warning",
                )
            )
        return None

    def _mig_configs(self) -> set[str] | None:
        """The config names of the custom mig-parted ConfigMap; None when unknown."""
        cm = self.mig_map
        if cm is None:
            return None
        data: dict[str, Any] = cm["data"] if isinstance(cm.get("data"), dict) else {}
        if MIG_PARTED_CONFIG_KEY not in data:
            self.problems.append(
                _problem(
                    cm,
                    "data",
                    f'missing key "{MIG_PARTED_CONFIG_KEY}": '
                    "MIG manager reads its mig-parted config from it",
                )
            )
            return None
        where = f"data[{MIG_PARTED_CONFIG_KEY}]"
        try:
            doc = yaml.safe_load(str(data[MIG_PARTED_CONFIG_KEY]))
        except yaml.YAMLError as exc:
            self.problems.append(_problem(cm, where, f"is not valid YAML: {_first_line(exc)}"))
            return None
        configs = doc.get("mig-configs") if isinstance(doc, dict) else None
        if not isinstance(configs, dict):
            self.problems.append(_problem(cm, where, 'has no "mig-configs" mapping'))
            return None
        return {str(k) for k in configs}

    def mig_label_error(self, value: str) -> str | None:
        """Why a nvidia.com/mig.config value names no config; None when it does (or unknown)."""
        if self.mig_name is None:
            if value in builtin_mig_configs():
                return None
            return (
                f'"{value}" is not one of NVIDIA\'s built-in mig-parted configs (all-disabled, '
                "all-enabled, all-balanced, all-<profile>), and ClusterPolicy "
                f'"{_name(self.policy)}" names no custom one (spec.migManager.config.name)'
            )
        if self.mig_configs is None or value in self.mig_configs:
            return None  # a missing or broken ConfigMap is reported once, on its own
        return (
            f'"{value}" is not a config of the mig-parted ConfigMap {_ref(self.mig_map)} '
            f"(has: {_names(self.mig_configs)})"
        )

    def plugin_label_error(self, value: str) -> str | None:
        """Why a nvidia.com/device-plugin.config value names no config; None when it does."""
        if self.plugin_name is None:
            return (
                f'ClusterPolicy "{_name(self.policy)}" names no device-plugin ConfigMap '
                f'(spec.devicePlugin.config.name), so there is no config "{value}"'
            )
        if self.plugin_map is None:
            return None
        keys = _data_keys(self.plugin_map)
        if value in keys:
            return None
        return (
            f'"{value}" is not a key of the device-plugin ConfigMap {_ref(self.plugin_map)} '
            f"(has: {_names(keys)})"
        )


def check_cluster_policy(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """ClusterPolicy ConfigMaps exist; their default configs are keys of them."""
    gpu = cluster.gpu
    if gpu is None:
        return []
    problems = list(gpu.problems)
    default = _get(gpu.policy, "spec", "migManager", "config", "default")
    if default and gpu.mig_configs is not None and default not in gpu.mig_configs:
        problems.append(
            _problem(
                gpu.policy,
                "spec.migManager.config.default",
                f'"{default}" is not a config of the mig-parted ConfigMap '
                f"{_ref(gpu.mig_map)} (has: {_names(gpu.mig_configs)})",
            )
        )
    default = _get(gpu.policy, "spec", "devicePlugin", "config", "default")
    if default and gpu.plugin_map is not None and default not in _data_keys(gpu.plugin_map):
        problems.append(
            _problem(
                gpu.policy,
                "spec.devicePlugin.config.default",
                f'"{default}" is not a key of the device-plugin ConfigMap '
                f"{_ref(gpu.plugin_map)} (has: "
                f"{_names(_data_keys(gpu.plugin_map))})",
            )
        )
    return problems


def check_node_label_values(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """mig.config and device-plugin.config labels that pools set (or flavors select) name existing configs."""
    found = [
        (obj, path, key, value)
        for obj, path, key, value in _label_settings(cluster)
        if key in (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL)
    ]
    # A static pool selected by labels its node group sets (no NodePool or NFD rule sets them):
    # the flavor that selects it names the config those nodes must carry.
    for flavor in cluster.of(KUEUE, "ResourceFlavor"):
        labels = _get(flavor, "spec", "nodeLabels")
        for key, value in labels.items() if isinstance(labels, dict) else []:
            if key in (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL):
                found.append((flavor, f"spec.nodeLabels[{key}]", key, value))
    if not found:
        return []
    gpu = cluster.gpu
    if gpu is None:
        cluster.skip(
            f"{MIG_CONFIG_LABEL} and {DEVICE_PLUGIN_CONFIG_LABEL} label values not "
            "checked: no ClusterPolicy among the objects"
        )
        return []
    problems = []
    for obj, path, key, value in found:
        if not isinstance(value, str):
            continue
        error = (gpu.mig_label_error if key == MIG_CONFIG_LABEL else gpu.plugin_label_error)(value)
        if error:
            problems.append(_problem(obj, path, error))
    return problems


@lru_cache(maxsize=1)
def builtin_mig_configs() -> frozenset[str]:
    """NVIDIA's mig-parted config names: all-disabled, all-enabled and per-GPU layouts."""
    from gpuplan.gpus import catalog  # the GPU catalog, read only when a MIG config is referenced
    from gpuplan.gpus.mig import nvidia_layouts

    names = {"all-disabled", "all-enabled", "all-balanced"}
    for model in catalog.names():
        gpu = catalog.lookup(model)
        if gpu is not None:
            names |= set(nvidia_layouts(gpu))
    return frozenset(names)


# --- node labels ----------------------------------------------------------------------------


def check_flavor_labels(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """Every ResourceFlavor node label is one some node source sets."""
    flavors = cluster.of(KUEUE, "ResourceFlavor")
    has_sources = (
        cluster.of(KARPENTER, "NodePool")
        or cluster.of(NFD, "NodeFeatureRule")
        or cluster.node_labels
    )
    if not flavors:
        return []
    if not has_sources:
        cluster.skip(
            "ResourceFlavor nodeLabels not checked: no NodePool, NodeFeatureRule or "
            "known node labels to match them against"
        )
        return []
    provided = _provided_labels(cluster)
    problems = []
    for flavor in flavors:
        labels = _get(flavor, "spec", "nodeLabels")
        if isinstance(labels, dict) and set(labels) & set(NODE_GROUP_LABELS.values()):
            continue  # a cloud node group's nodes: the cloud and the group set these labels
        for key, value in labels.items() if isinstance(labels, dict) else []:
            values = provided.get(key, set())
            if _ANY not in values and value not in values:
                problems.append(
                    _problem(
                        flavor,
                        f"spec.nodeLabels[{key}]",
                        f"no NodePool, "
                        f"NodeFeatureRule or known node sets {key}={value}: "
                        "workloads of this flavor can never be placed",
                        external=True,
                    )
                )
    return problems


def _label_settings(cluster: ClusterObjects) -> Iterable[tuple[dict, str, str, Any]]:
    """(object, path, key, value) of every label a NodePool template or NFD rule sets."""
    for pool in cluster.of(KARPENTER, "NodePool"):
        labels = _get(pool, "spec", "template", "metadata", "labels")
        for key, value in labels.items() if isinstance(labels, dict) else []:
            yield pool, f"spec.template.metadata.labels[{key}]", key, value
    for rule_set in cluster.of(NFD, "NodeFeatureRule"):
        for i, rule in enumerate(_list(_get(rule_set, "spec", "rules"))):
            labels = _get(rule, "labels")
            for key, value in labels.items() if isinstance(labels, dict) else []:
                full = key if "/" in key else NFD_DEFAULT_PREFIX + key
                yield rule_set, f"spec.rules[{i}].labels[{key}]", full, value


def _provided_labels(cluster: ClusterObjects) -> dict[str, set[Any]]:
    """Label key -> the values nodes may carry (_ANY: any value)."""
    provided: dict[str, set[Any]] = {}
    for _obj, _path, key, value in _label_settings(cluster):
        dynamic = isinstance(value, str) and value.startswith("@")  # NFD: a feature's value
        provided.setdefault(key, set()).add(_ANY if dynamic else value)
    for pool in cluster.of(KARPENTER, "NodePool"):
        provided.setdefault(NODEPOOL_LABEL, set()).add(_name(pool))
        for req in _list(_get(pool, "spec", "template", "spec", "requirements")):
            key, operator = _get(req, "key"), _get(req, "operator")
            if operator == "In":
                provided.setdefault(key, set()).update(_list(_get(req, "values")))
            elif operator == "Exists":
                provided.setdefault(key, set()).add(_ANY)
    for labels in cluster.node_labels:
        for key, value in labels.items():
            provided.setdefault(key, set()).add(value)
    return provided


# --- Karpenter ------------------------------------------------------------------------------


def check_node_class_references(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """A NodePool's nodeClassRef names a node class of the set, when the set has that kind.

    Without any object of the referenced kind the node class is taken to exist in the cluster
    already (made by other tooling), so nothing is checked (not listed as skipped: the usual
    case for fleets that keep node classes outside gpuplan).
    """
    problems = []
    for pool in cluster.of(KARPENTER, "NodePool"):
        ref = _get(pool, "spec", "template", "spec", "nodeClassRef")
        if not isinstance(ref, dict) or not all(
            isinstance(ref.get(k), str) for k in ("group", "kind", "name")
        ):
            continue
        names = cluster.names(ref["group"], ref["kind"])
        if names and ref["name"] not in names:
            problems.append(
                _problem(
                    pool,
                    "spec.template.spec.nodeClassRef.name",
                    f'{ref["kind"]} "{ref["name"]}" does not exist (has: {_names(names)}): '
                    "Karpenter launches no node for this NodePool",
                )
            )
    return problems


# --- namespaces and repository paths --------------------------------------------------------


def check_namespaces(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """Namespaced objects live in namespaces the set creates (when it creates any)."""
    created = cluster.names("", "Namespace")
    namespaced = cluster.namespaced()
    if not created:
        if namespaced:
            cluster.skip("namespaces not checked: no Namespace objects among the objects")
        return []
    known = created | BUILTIN_NAMESPACES | cluster.external_namespaces
    if cluster.operator_namespace:
        known.add(cluster.operator_namespace)
    return [
        _problem(
            o,
            "metadata.namespace",
            f'Namespace "{namespace}" does not exist (no Namespace object creates it)',
            external=True,
        )
        for o, namespace in namespaced
        if namespace not in known
    ]


def check_application_paths(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """Argo CD Applications point at repository paths that exist."""
    sources = []
    for app in cluster.of("argoproj.io", "Application"):
        if isinstance(_get(app, "spec", "source", "path"), str):
            sources.append((app, "spec.source.path", app["spec"]["source"]["path"]))
        for i, source in enumerate(_list(_get(app, "spec", "sources"))):
            if isinstance(_get(source, "path"), str):
                sources.append((app, f"spec.sources[{i}].path", source["path"]))
    if not sources:
        return []
    if cluster.paths is None:
        cluster.skip("Argo CD Application paths not checked: no repository paths given")
        return []
    return [
        _problem(app, path, f'path "{value}" does not exist in the repository')
        for app, path, value in sources
        if _norm(value) not in cluster.paths
    ]


# --- Multus and the SR-IOV network device plugin ----------------------------------------------

NAD_GROUP = "k8s.cni.cncf.io"
NAD_RESOURCE = "k8s.v1.cni.cncf.io/resourceName"  # Multus injects this device-plugin resource
SRIOV_CONFIG = "sriovdp-config"  # the plugin's ConfigMap (sriov-network-device-plugin deployments/)
SRIOV_LINK_TYPES = {"sriov": "ether", "ib-sriov": "infiniband"}  # CNI type -> the VFs' link type


def _vf_pools(config_map: dict) -> dict[str, set[str]] | None:
    """Return <prefix>/<name> -> link types of the plugin's resource pools; None when unreadable."""
    try:
        config = json.loads(str(_get(config_map, "data", "config.json")))
    except ValueError:
        return None
    pools: dict[str, set[str]] = {}
    for entry in _list(_get(config, "resourceList")):
        if not isinstance(entry, dict):
            continue
        # README "Configurations": resourcePrefix defaults to intel.com.
        name = f"{entry.get('resourcePrefix') or 'intel.com'}/{entry.get('resourceName')}"
        selectors = entry.get("selectors")
        selectors = selectors if isinstance(selectors, list) else [selectors]
        pools[name] = {
            t for sel in selectors if isinstance(sel, dict) for t in _list(sel.get("linkTypes"))
        }
    return pools


def check_vf_resources(cluster: ClusterObjects) -> list[ReferenceProblem]:
    """An sriov / ib-sriov NetworkAttachmentDefinition's resource is a VF pool of the SR-IOV plugin, of its link type."""
    maps = [m for m in cluster.of("", "ConfigMap") if _name(m) == SRIOV_CONFIG]
    pools = _vf_pools(maps[0]) if len(maps) == 1 else None
    problems = []
    for nad in cluster.of(NAD_GROUP, "NetworkAttachmentDefinition"):
        try:
            cni = json.loads(str(_get(nad, "spec", "config")))
        except ValueError:
            continue  # the schema and the CNI config's own checks report it
        link = SRIOV_LINK_TYPES.get(str(cni.get("type"))) if isinstance(cni, dict) else None
        resource = _get(nad, "metadata", "annotations", NAD_RESOURCE)
        if link is None or not isinstance(resource, str):
            continue
        path = f"metadata.annotations.{NAD_RESOURCE}"
        if pools is None:
            message = f"no SR-IOV network device plugin ConfigMap {SRIOV_CONFIG} advertises {resource}: pods attaching it never schedule"
            problems.append(_problem(nad, path, message, external=True))
        elif resource not in pools:
            message = f"the SR-IOV network device plugin advertises {_names(pools) or 'nothing'}, not {resource}: pods attaching it never schedule"
            problems.append(_problem(nad, path, message))
        elif pools[resource] and link not in pools[resource]:
            message = f"{resource} is a pool of {', '.join(sorted(pools[resource]))} VFs, and {cni.get('type')} needs {link} ones"
            problems.append(_problem(nad, path, message))
    return problems


CHECKS: tuple[Check, ...] = (
    check_local_queues,
    check_flavor_references,
    check_cohort_references,
    check_cluster_policy,
    check_node_label_values,
    check_flavor_labels,
    check_node_class_references,
    check_namespaces,
    check_application_paths,
    check_vf_resources,
)


# --- helpers --------------------------------------------------------------------------------


def _problem(
    obj: dict, path: str, message: str, severity: Severity = "error", *, external: bool = False
) -> ReferenceProblem:
    """A ReferenceProblem of ``obj``."""
    return ReferenceProblem(
        str(obj.get("kind", "")), _namespace(obj), _name(obj), path, message, severity, external
    )


def _get(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]... or None when any step is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list:
    """``value`` when it is a list, else []."""
    return value if isinstance(value, list) else []


def _group(obj: dict) -> str:
    """The API group of an object ("" for core)."""
    api = obj.get("apiVersion")
    return api.rpartition("/")[0] if isinstance(api, str) else ""


def _name(obj: dict) -> str:
    """metadata.name, or ""."""
    name = _get(obj, "metadata", "name")
    return name if isinstance(name, str) else ""


def _namespace(obj: dict) -> str:
    """metadata.namespace, or ""."""
    namespace = _get(obj, "metadata", "namespace")
    return namespace if isinstance(namespace, str) else ""


def _ref(obj: dict | None) -> str:
    """namespace/name of an object."""
    if obj is None:
        return "?"
    return f"{_namespace(obj)}/{_name(obj)}" if _namespace(obj) else _name(obj)


def _data_keys(config_map: dict) -> set[str]:
    """The keys of a ConfigMap's data and binaryData."""
    keys: set[str] = set()
    for part in ("data", "binaryData"):
        if isinstance(config_map.get(part), dict):
            keys |= {str(k) for k in config_map[part]}
    return keys


def _names(names: Iterable[str], limit: int = 8) -> str:
    """A short sorted list of names for a message."""
    ordered = sorted(names)
    shown = ", ".join(ordered[:limit])
    return shown + (f", ... ({len(ordered)} in all)" if len(ordered) > limit else "") or "none"


def _norm(path: str) -> str:
    """A repository path without ./, duplicate or trailing slashes ("." is the root)."""
    return posixpath.normpath(path.strip().strip("/") or ".")


def _first_line(exc: BaseException) -> str:
    """The first line of an error message."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
