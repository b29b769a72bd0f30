"""Prove the emitted manifests before anything is written: schemas, CEL rules, the components'
webhook rules, and every reference between objects (the `validate` engine, applied to a render)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from gpuplan.components import namespaces_of
from gpuplan.components.metrics import known_metrics
from gpuplan.crds import UnknownCrdSet, cluster_components, fleet_components, index_for
from gpuplan.diagnostics import Diagnostic, Severity, error
from gpuplan.model.manifest import Manifest
from gpuplan.plan.fleet import ClusterPlan, Fleet
from gpuplan.validate import CrdIndex, UnknownKubernetesVersion, Validator, check_references, newest
from gpuplan.validate.admission import admission_problems
from gpuplan.validate.argosync import CLUSTER_LABEL, ROOT, Simulation, Tree
from gpuplan.validate.buckets import bucket_of
from gpuplan.validate.collectors import narrowed
from gpuplan.validate.engine import MISSING_CRD
from gpuplan.validate.graph import (
    check_cluster,
    check_projects,
    cluster_scoped,
    expand_application_sets,
)
from gpuplan.validate.locate import locate, problem_path
from gpuplan.validate.promql import query_problems as promql_problems
from gpuplan.writer.tree import header
from gpuplan.writer.yamlout import dump

T = TypeVar("T")
BUG = "(gpuplan emitted an invalid object: please report this bug)"


def _validators(
    fleet: Fleet, extra: CrdIndex | None
) -> tuple[dict[str, Validator], list[Diagnostic]]:
    """One Validator per cluster, with the CRDs of its own component versions (``extra`` overrides)."""
    validators: dict[str, Validator] = {}
    problems = []
    for name, cluster in fleet.clusters.items():
        try:
            versions = cluster_components(cluster.spec)
            validators[name] = Validator(
                index_for(versions, extra),
                cluster.spec.kubernetes_version,
                cel=True,
                webhooks=True,
                crds_label=crds_label(versions),
                kueue=versions.get("kueue"),
            )
        except UnknownKubernetesVersion as exc:
            problems.append(cluster.located.source.diagnostic(("kubernetesVersion",), str(exc)))
        except UnknownCrdSet as exc:
            problems.append(cluster.located.source.diagnostic(("components",), str(exc)))
    versions = fleet_components()
    validators[""] = Validator(
        index_for(versions, extra),
        newest(),
        cel=True,
        webhooks=True,
        crds_label=crds_label(versions),
    )
    return validators, problems


def crds_label(versions: dict[str, str]) -> str:
    """Name component versions in a message: "kueue v0.14.4, nfd v0.19.0"."""
    return ", ".join(f"{name} {version}" for name, version in sorted(versions.items()))


# Where a finding about an object the user supplied or patched belongs (gpuplan.overlay), or None.
Place = Callable[[Manifest, str, str, Severity], "Diagnostic | None"]


def _at(
    item: Manifest,
    path: str,
    message: str,
    severity: Severity = Severity.ERROR,
    place: Place | None = None,
    bug: bool = True,
) -> Diagnostic:
    placed = place(item, path, message, severity) if place is not None else None
    if placed is not None:
        return placed
    message = f"{message} {BUG}" if bug else message
    line, col = locate(dump(item.obj, header(item)), problem_path(path, message))
    where = f"{item.kind}/{item.name}" + (f" {path}" if path else "")
    return Diagnostic(f"output/{item.path}", line, col, severity, where, message)


class Proven(Protocol):
    """Objects already proven valid by the same gpuplan against the same schemas (gpuplan.cache)."""

    def unproven(self, items: list[Manifest], against: str) -> list[Manifest]:
        """Return the objects not proven valid against these schemas (the others' proofs are used)."""

    def add(self, item: Manifest, against: str) -> None:
        """Remember that this object is valid against these schemas."""

    def forget_kinds(self, kinds: set[str]) -> None:
        """Forget the objects of kinds with CEL rules that were skipped (their notes must repeat)."""


def _against(validator: Validator) -> str:
    return f"{validator.kubernetes_version}\0{validator.crds_label}"


class _Groups:
    """The objects of a render by cluster (None: argocd/), Kustomizations aside, in order."""

    def __init__(self, manifests: list[Manifest]) -> None:
        groups: dict[tuple[str | None, bool], list[Manifest]] = {}
        for item in manifests:
            groups.setdefault(_cluster_of(item), []).append(item)
        self.by_cluster: dict[str | None, list[Manifest]] = {
            cluster: items
            for (cluster, kustomization), items in groups.items()
            if not kustomization
        }
        self.folders = {  # the folders of the Kustomizations
            m.path.rpartition("/")[0]
            for (_, kustomization), items in groups.items()
            if kustomization
            for m in items
            if "/" in m.path
        }
        self._kinds: dict[str | None, dict[str, list[dict[str, Any]]]] = {}

    def by_kind(self, cluster: str | None) -> dict[str, list[dict[str, Any]]]:
        """Return the objects of a cluster by kind (gpuplan.validate.buckets.objects_by_kind)."""
        if cluster not in self._kinds:
            found: dict[str, list[dict[str, Any]]] = {}
            for item in self.by_cluster.get(cluster, []):
                found.setdefault(bucket_of(item.obj), []).append(item.obj)
            self._kinds[cluster] = found
        return self._kinds[cluster]


def _cluster_of(item: Manifest) -> tuple[str | None, bool]:
    return item.cluster, item.obj.get("kind") == "Kustomization"


def schema_problems(
    manifests: Iterable[Manifest],
    fleet: Fleet,
    index: CrdIndex | None,
    place: Place | None = None,
    proven: Proven | None = None,
    groups: _Groups | None = None,
) -> tuple[list[Diagnostic], list[str]]:
    """Validate each object against its schema, CEL rules and webhook rules."""
    validators, problems = _validators(fleet, index)
    notes: list[str] = []
    manifests = manifests if isinstance(manifests, list) else list(manifests)
    groups = groups if groups is not None else _Groups(manifests)
    todo: set[int] = set()  # the objects to validate: those not proven already
    for cluster, items in groups.by_cluster.items():
        validator = validators.get(cluster or "")
        if validator is not None:
            unproven = items if proven is None else proven.unproven(items, _against(validator))
            todo.update(map(id, unproven))
    for item in manifests if todo else ():  # in order
        if id(item) not in todo:
            continue
        validator = validators[item.cluster or ""]
        # A missing CRD is the user's to supply (--crds), not a bug of what gpuplan emitted.
        found = validator.validate(item.obj)
        problems += [
            _at(item, p.path, p.message, place=place, bug=p.code != MISSING_CRD) for p in found
        ]
        if proven is not None and not found:
            proven.add(item, _against(validator))
    if proven is not None:
        proven.forget_kinds({r.kind for v in validators.values() for r in v.skipped_rules})
    for validator in validators.values():
        for rule in validator.skipped_rules:
            notes.append(
                f"CEL rule of {rule.kind} at {rule.path} was not evaluated ({rule.reason}): {rule.rule}"
            )
    return problems, sorted(set(notes))


def _node_labels(cluster: ClusterPlan) -> list[dict[str, str]]:
    """Return label sets static pools without hostnames carry (the user labels their nodes)."""
    cpu = [
        dict(p.labels) for p in cluster.spec.cpu_pools
    ]  # CPU pools select nodes by labels they carry already
    return [p.selector_labels for p in cluster.pools.values() if p.label_selected] + cpu


def _external_namespaces(cluster: ClusterPlan) -> list[str]:
    return namespaces_of(cluster.spec)  # the components' own namespaces (component registry)


def _in_repos(obj: dict, repos: set[str]) -> bool:
    """Tell whether an object is no Application, or one whose path-bearing source is in these repositories."""
    source = (obj.get("spec") or {}).get("source") or {}
    return (
        obj.get("kind") != "Application" or "path" not in source or source.get("repoURL") in repos
    )


class Installs(NamedTuple):
    """What the operator Applications install (gpuplan.emit.bootstrap.installs, handed in by the
    pipeline): Application name -> CRD kinds, and -> cluster-scoped kinds its chart creates;
    cluster name -> the kinds the platform provides."""

    crds: dict[str, set[tuple[str, str]]]
    cluster_kinds: dict[str, set[tuple[str, str]]]
    external: dict[str, set[tuple[str, str]]]


def graph_problems(
    manifests: list[Manifest], fleet: Fleet, made: Installs, groups: _Groups | None = None
) -> list[Diagnostic]:
    """Check the deployment graph: CRDs before their objects, namespaces created, projects allowing it all."""
    groups = groups if groups is not None else _Groups(manifests)
    fleet_items = groups.by_cluster.get(None, [])
    apps = [m.obj for m in fleet_items if m.kind == "Application"] + expand_application_sets(
        m.obj for m in fleet_items
    )
    projects = [m.obj for m in fleet_items if m.kind == "AppProject"]
    names = sorted(name for name in groups.by_cluster if name is not None)
    installs = made.crds
    found = []
    for name in names:
        cluster = fleet.clusters.get(name)
        if cluster is not None:
            external = made.external.get(name, set())
            found += [
                (groups.by_cluster[name], p)
                for p in check_cluster(
                    name,
                    [],
                    apps,
                    installs,
                    external,
                    namespaces_of(cluster.spec),
                    by_kind=groups.by_kind(name),
                )
            ]
    # The projects read a cluster's cluster-scoped objects only.
    scoped = {name: _cluster_scoped(name, groups.by_kind(name)) for name in names}
    found += [(fleet_items, p) for p in check_projects(apps, projects, scoped, made.cluster_kinds)]
    problems = []
    indexes: dict[int, _Index] = {}
    for items, problem in found:
        index = indexes.setdefault(id(items), _Index(items))
        at = index.get(problem.kind, problem.namespace, problem.name)
        if at is not None:
            problems.append(_at(at, problem.path, problem.message, bug=False))
        else:
            problems.append(
                error(f"output/{problem.cluster or 'argocd'}", 0, 0, problem.kind, problem.message)
            )
    return problems


def _cluster_scoped(name: str, by_kind: dict[str, list[dict[str, Any]]]) -> list[Mapping[str, Any]]:
    """Return a cluster's objects without a namespace."""
    return [obj for bucket in by_kind.values() for obj in bucket if cluster_scoped(obj)]


class _Index:
    """The objects by (kind, namespace, name), made at the first lookup (most runs have none)."""

    def __init__(self, items: list[Manifest]) -> None:
        self.items = items
        self.table: dict[tuple[str, str, str], Manifest] | None = None

    def get(self, kind: str, namespace: str, name: str) -> Manifest | None:
        if self.table is None:
            self.table = {(m.kind, m.namespace or "", m.name): m for m in self.items}
        return self.table.get((kind, namespace, name))


def reference_problems(
    manifests: list[Manifest],
    fleet: Fleet,
    output_path: str,
    place: Place | None = None,
    groups: _Groups | None = None,
) -> list[Diagnostic]:
    """Check every reference between the objects of each cluster, and Applications -> paths."""
    problems: list[Diagnostic] = []
    groups = groups if groups is not None else _Groups(manifests)
    for name, items in sorted(groups.by_cluster.items(), key=lambda kv: kv[0] or ""):
        cluster = fleet.clusters.get(name) if name else None
        if cluster is not None:
            operator = cluster.spec.components.gpu_operator
            report = check_references(
                (),
                operator_namespace=operator.namespace if operator else None,
                node_labels=_node_labels(cluster),
                external_namespaces=_external_namespaces(cluster),
                by_kind=groups.by_kind(name),
            )
        else:
            paths = {posixpath.join(output_path, c) for c in fleet.clusters} | {
                posixpath.join(output_path, "argocd")
            }
            # ...and every folder with a kustomization (output/<cluster>/multus/, synced on its own).
            paths |= {posixpath.join(output_path, folder) for folder in groups.folders}
            # Paths are checked in the fleet's own repositories; upstream ones are pinned facts.
            repos = {c.spec.gitops.repo_url for c in fleet.clusters.values()}
            report = check_references(
                [m.obj for m in items if _in_repos(m.obj, repos)], paths=paths
            )
        index = _Index(items)
        for problem in report.problems:
            found = index.get(problem.kind, problem.namespace, problem.name)
            severity = Severity.ERROR if problem.severity == "error" else Severity.WARNING
            if found is not None:
                problems.append(_at(found, problem.path, problem.message, severity, place))
            else:
                problems.append(error(f"output/{name or ''}", 0, 0, problem.kind, problem.message))
    return problems


def verify(
    manifests: list[Manifest],
    fleet: Fleet,
    index: CrdIndex | None,
    installs: Installs,
    output_path: str = "output",
    place: Place | None = None,
    proven: Proven | None = None,
) -> tuple[list[Diagnostic], list[str]]:
    """Return every problem of the emitted objects, and notes on what could not be checked."""
    groups = _Groups(manifests)
    problems, notes = schema_problems(manifests, fleet, index, place, proven, groups)
    problems += reference_problems(manifests, fleet, output_path, place, groups)
    problems += graph_problems(manifests, fleet, installs, groups)
    problems += query_problems(manifests, fleet, place, groups)
    problems += admission_problems(manifests, fleet)
    problems += sync_problems(manifests, fleet, installs, output_path)
    return problems, notes


def sync_problems(
    manifests: list[Manifest], fleet: Fleet, installs: Installs, output_path: str = "output"
) -> list[Diagnostic]:
    """Simulate Argo CD's sync of the rendered tree from its bootstrap root (gpuplan.validate.argosync):
    an error on each Application that never becomes healthy, and on each that waits on another cluster
    (found by breaking each cluster's Applications in turn), naming what it waits on.

    Only a whole fleet is simulated: a render of some clusters (--cluster) has the others' folders absent.
    """
    if {m.cluster for m in manifests if m.cluster} != set(fleet.clusters):
        return []
    files: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        files.setdefault(m.path, []).append(m.obj)
    root = files.get(ROOT)
    if not root:
        return []
    apps = {m.name: m for m in manifests if m.kind == "Application"}
    clusters: dict[str, set[str]] = {}
    for name, m in apps.items():
        label = ((m.obj.get("metadata") or {}).get("labels") or {}).get(CLUSTER_LABEL)
        if label:
            clusters.setdefault(str(label), set()).add(name)
    every = {a for names in clusters.values() for a in names}
    problems = []
    tree = Tree(files)
    simulation = Simulation(tree, output_path, installs.crds)
    simulation.run(root[0])
    for name in simulation.stuck(every):
        if name in apps:
            message = (
                f"Argo CD's sync from the bootstrap root never makes Application {name} healthy"
            )
            more = simulation.reason(name)
            problems.append(
                _at(
                    apps[name], "", f"{message}: it waits on {more}" if more else message, bug=False
                )
            )
    if problems:
        return problems
    for cluster, mine in sorted(clusters.items()):
        broken = Simulation(tree, output_path, installs.crds, mine)
        broken.run(root[0])
        others = every - mine
        for name in broken.stuck(others):
            if name in apps and name in others:
                message = (
                    f"Application {name} waits on cluster {cluster}: while {cluster}'s Applications are not "
                    f"healthy it never is (it waits on {broken.reason(name)}); each cluster's sync must depend "
                    "on its own Applications only"
                )
                problems.append(_at(apps[name], "", message, bug=False))
    return problems


QUERY_KINDS = (
    "PrometheusRule",
    "ConfigMap",
)  # the kinds that hold queries (gpuplan.validate.promql)


def query_problems(
    manifests: list[Manifest],
    fleet: Fleet,
    place: Place | None = None,
    groups: _Groups | None = None,
) -> list[Diagnostic]:
    """Return the monitoring queries that are unbalanced or name metrics the cluster's exporters lack."""
    groups = groups if groups is not None else _Groups(manifests)
    found: list[tuple[Manifest, str, str, bool]] = []
    for name, items in groups.by_cluster.items():
        cluster = fleet.clusters.get(name) if name else None
        if cluster is None:
            continue
        by_kind = groups.by_kind(name)
        # What the exporter collects: the effective ClusterPolicy's list (gpuplan.validate.collectors).
        known, why = narrowed(
            known_metrics(cluster), by_kind.get("ClusterPolicy", []), by_kind.get("ConfigMap", [])
        )
        for kind in QUERY_KINDS:
            bucket = by_kind.get(kind, [])
            wrong = _numbered(bucket, [_queries(known, why, obj) for obj in bucket])
            if wrong:
                of_kind = [m for m in items if m.obj.get("kind") == kind]  # as the bucket
                # A metric the user's collector list leaves out is the user's to add, not a bug.
                user = set(why.values())
                found += [
                    (of_kind[i], path, message, message not in user) for i, path, message in wrong
                ]
    found.sort(key=lambda f: f[0].path)  # in the order of the objects (sorted by path)
    return [_at(item, path, message, place=place, bug=bug) for item, path, message, bug in found]


def _queries(
    known: dict[str, frozenset[str]], why: dict[str, str], obj: dict[str, Any]
) -> list[tuple[str, str]]:
    return promql_problems(obj, known, why)


def _numbered(
    _objects: Sequence[Any], found: list[list[tuple[str, str]]]
) -> list[tuple[int, str, str]]:
    """Return (index of the object, field path, message) of each wrong query of the objects."""
    return [(i, path, message) for i, wrong in enumerate(found) for path, message in wrong]
