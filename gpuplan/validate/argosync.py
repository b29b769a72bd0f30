"""A simulation of Argo CD syncing a rendered fleet from its bootstrap root, to prove it converges.

The rules modelled, from argoproj/argo-cd v3.5.1 (gitops-engine is in-tree at that tag):
- an Application's objects sync by phase, then wave (`argocd.argoproj.io/sync-wave`, default 0), a
  hook (`argocd.argoproj.io/hook`) in its own phase before (PreSync) or after (PostSync) the others
  (gitops-engine/pkg/sync/sync_tasks.go Less, sync_phase.go syncPhases, syncwaves/waves.go Wave);
- while more than one wave is left, the sync waits until every task of the current wave is healthy;
  a Degraded one fails the sync, which `retry.limit: -1` retries without end: either way the later
  waves never run (gitops-engine/pkg/sync/sync_context.go Sync: "if (a) we are multi-step and we have
  any running tasks ... then wait"); the last wave only needs to be applied ("successful EVEN if those
  objects subsequently degrade");
- an Application's health is its objects' health (the argocd-cm health check gpuplan writes:
  docs/operator-manual/health.md "Argocd App"), so a parent waits on a child Application until all
  the child's objects are healthy, and each Application syncs on its own once it exists.

What the objects need, modelled: a custom resource needs the CRD an Application of its cluster installs
(`installs`), healthy once that Application is; a kind no Application installs is the cluster's own
(an existing Prometheus Operator's ServiceMonitor and PrometheusRule, AKS Node Auto Provisioning's
Karpenter kinds): the graph check allows only those the pipeline declares (prove.Installs.external;
a render note names an existing Prometheus'), and here they are present from the start; a chart
whose values mount an existing ConfigMap (the Prometheus Adapter's `rules.existing`) needs that
ConfigMap applied. `broken` Applications never become
healthy: simulating each cluster's operators broken in turn proves no other cluster waits on them.
Pure: rendered files in, the Applications that never become healthy out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HOOK = "argocd.argoproj.io/hook"
PHASES = {"PreSync": 0, "Sync": 1, "PostSync": 2}
CLUSTER_LABEL = "gpuplan.io/cluster"
IN_CLUSTER = ("https://kubernetes.default.svc", "in-cluster")  # Argo CD's own cluster: server, name
# The fleet's bootstrap root, where gpuplan's emitter writes it (emit/bootstrap/roots.py: validate/ reads
# the rendered tree, never the emitter).
ROOT = "argocd/bootstrap/root.yaml"
Key = tuple[str, str, str, str]  # (cluster, kind, namespace, name)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def step(obj: Mapping[str, Any]) -> tuple[int, int]:
    """Return the (phase, wave) an object syncs in."""
    annotations = _meta(obj).get("annotations") or {}
    phase = PHASES.get(str(annotations.get(HOOK, "Sync")).split(",")[0], 1)
    try:
        return phase, int(annotations.get(SYNC_WAVE, 0))
    except ValueError:
        return phase, 0


@dataclass
class App:
    """One Application: where its objects land, and the steps of its sync."""

    name: str
    cluster: str  # the destination, as Argo CD names it: server or name
    objects: list[dict[str, Any]]
    # the objects of each step, in sync order (phase, wave)
    waves: list[list[dict[str, Any]]] = field(repr=False)
    needs: list[Key] = field(default_factory=list)  # what a chart source needs applied
    done: int = -1  # index of the last step applied


def in_waves(objects: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Return objects grouped by the step they sync in, the steps in sync order."""
    grouped: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for obj in objects:
        grouped.setdefault(step(obj), []).append(obj)
    return [grouped[s] for s in sorted(grouped)]


class Tree:
    """The rendered files as Argo CD reads them: each folder's objects and their sync steps.

    Made once per proof and handed to each simulation of it (the files do not change between them).
    """

    def __init__(self, files: Mapping[str, Sequence[dict[str, Any]]]) -> None:
        self.files = files
        self.folders: dict[str, tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]] = {}

    def folder(self, folder: str) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
        """Return the objects a kustomization folder builds, and the same grouped in waves."""
        found = self.folders.get(folder)
        if found is None:
            objects = objects_of(self.files, folder)
            found = self.folders[folder] = (objects, in_waves(objects))
        return found


def objects_of(files: Mapping[str, Sequence[dict[str, Any]]], folder: str) -> list[dict[str, Any]]:
    """Return the objects a kustomization folder builds (resources: files and folders, recursively)."""
    found: list[dict[str, Any]] = []
    for document in files.get(posixpath.join(folder, "kustomization.yaml"), ()):
        for entry in document.get("resources") or []:
            path = posixpath.normpath(posixpath.join(folder, str(entry)))
            found += objects_of(files, path) if path not in files else list(files[path])
    return found


def destination(app: Mapping[str, Any]) -> str:
    target = (app.get("spec") or {}).get("destination") or {}
    return str(target.get("server") or target.get("name") or "")


class Simulation:
    """Argo CD syncing from a root Application until nothing moves."""

    def __init__(
        self,
        files: Mapping[str, Sequence[dict[str, Any]]] | Tree,
        output_path: str,
        installs: Mapping[str, Collection[tuple[str, str]]],
        broken: Collection[str] = (),
    ) -> None:
        self.tree = files if isinstance(files, Tree) else Tree(files)
        self.output_path = output_path
        self.installs, self.broken = installs, set(broken)
        self.apps: dict[str, App] = {}
        self.applied: set[Key] = set()
        self.visiting: set[str] = set()
        # Health while nothing is applied: found once per Application (cleared by every step), the
        # same answer a walk gives; an answer that met a cycle of Applications is not kept.
        self.health: dict[str, bool] = {}
        self.cycles = 0  # how many walks met an Application already being walked
        self.installed_by: dict[tuple[str, str, str], list[str]] = {}

    def add(self, obj: Mapping[str, Any], parent: App | None = None) -> None:
        """Create an Application: its source read from the rendered tree, or a chart with its needs.

        Its cluster is gpuplan's cluster label: each cluster's Argo CD may name its own API server
        https://kubernetes.default.svc, so destinations alike are not one cluster. An own Application
        without the label is on its parent's cluster when it names the in-cluster server, else on
        the destination it names (a cluster name matches gpuplan's label).
        """
        name = str(_meta(obj).get("name"))
        spec = obj.get("spec") or {}
        source = spec.get("source") or {}
        where = str((_meta(obj).get("labels") or {}).get(CLUSTER_LABEL) or destination(obj))
        if (
            parent is not None
            and where in IN_CLUSTER
            and not (_meta(obj).get("labels") or {}).get(CLUSTER_LABEL)
        ):
            where = parent.cluster
        namespace = str((spec.get("destination") or {}).get("namespace", ""))
        needs: list[Key] = []
        objects: list[dict[str, Any]] = []
        waves: list[list[dict[str, Any]]] = []
        if source.get("chart"):
            existing = ((source.get("helm") or {}).get("valuesObject") or {}).get("rules") or {}
            if existing.get("existing"):
                needs.append((where, "ConfigMap", namespace, str(existing["existing"])))
        else:
            path = str(source.get("path", ""))
            objects, waves = self.tree.folder(
                posixpath.relpath(path, self.output_path) if path else ""
            )
        self.apps[name] = App(name, where, objects, waves, needs)

    def healthy(self, name: str) -> bool:
        """Tell whether an Application is healthy: all its steps applied and each object healthy.

        An Application that waits on itself, through its children, is never healthy (no recursion loop).
        """
        if name in self.health:
            return self.health[name]
        app = self.apps.get(name)
        if name in self.visiting:
            self.cycles += 1
            return False
        if app is None or name in self.broken:
            return False
        if app.done < len(app.waves) - 1:
            return False
        if any(need not in self.applied for need in app.needs):
            return False
        self.visiting.add(name)
        cycles = self.cycles
        try:
            found = all(self.object_healthy(app, o) for o in app.objects)
        finally:
            self.visiting.discard(name)
        if self.cycles == cycles:
            self.health[name] = found
        return found

    def installers(self, app: App, obj: Mapping[str, Any]) -> list[str]:
        """Return the Applications of the object's cluster that install its CRD (none: the platform's)."""
        kind, group = str(obj.get("kind", "")), str(obj.get("apiVersion", "")).rpartition("/")[0]
        key = (app.cluster, group, kind)
        found = self.installed_by.get(key)
        if found is None:
            found = self.installed_by[key] = [
                n
                for n, kinds in self.installs.items()
                if (group, kind) in kinds and n in self.apps and self.apps[n].cluster == app.cluster
            ]
        return found

    def object_healthy(self, app: App, obj: Mapping[str, Any]) -> bool:
        if obj.get("kind") == "Application":
            return self.healthy(str(_meta(obj).get("name")))
        mine = self.installers(app, obj)
        return not mine or any(self.healthy(n) for n in mine)

    def reason(self, name: str, seen: frozenset[str] = frozenset()) -> str:
        """Say what a stuck Application waits on, following the chain of Applications it waits on
        ("": nothing more to say, as for a broken one)."""
        app = self.apps.get(name)
        if app is None:
            return "its creation: the Application that lists it never syncs that far"
        if name in self.broken or name in seen:
            return ""
        missing = [n for n in app.needs if n not in self.applied]
        if missing:
            _, kind, namespace, other = missing[0]
            return f"{kind} {namespace}/{other}, which nothing applies before it"
        for obj in sorted(app.objects, key=step):
            if self.object_healthy(app, obj):
                continue
            if obj.get("kind") == "Application":
                child = str(_meta(obj).get("name"))
                what = f"Application {child}"
            else:
                child = self.installers(app, obj)[0]
                what = f"{obj.get('kind')} {_meta(obj).get('name')}, whose CRD Application {child} installs"
            more = self.reason(child, seen | {name})
            return f"{what}, which waits on {more}" if more else what
        return ""

    def run(self, root: Mapping[str, Any]) -> None:
        """Sync from the root until no Application can move on."""
        self.add(root)
        moved = True
        while moved:
            moved = False
            for app in list(self.apps.values()):
                while app.done < len(app.waves) - 1 and app.name not in self.broken:
                    current = app.waves[app.done] if app.done >= 0 else []
                    if any(not self.object_healthy(app, o) for o in current):
                        break  # the sync waits on its running tasks (or fails and retries)
                    app.done += 1
                    self.health.clear()
                    for obj in app.waves[app.done]:
                        self.apply(app, obj)
                    moved = True

    def apply(self, app: App, obj: Mapping[str, Any]) -> None:
        meta = _meta(obj)
        key = (
            app.cluster,
            str(obj.get("kind")),
            str(meta.get("namespace", "")),
            str(meta.get("name")),
        )
        self.applied.add(key)
        self.health.clear()
        if obj.get("kind") == "Application" and str(meta.get("name")) not in self.apps:
            self.add(obj, app)
            self.installed_by.clear()  # a new Application may install a kind

    def stuck(self, expected: Collection[str] = ()) -> list[str]:
        """Return the Applications that never become healthy (an expected one never created too)."""
        return sorted(name for name in set(self.apps) | set(expected) if not self.healthy(name))


def stuck(
    files: Mapping[str, Sequence[dict[str, Any]]] | Tree,
    root: Mapping[str, Any],
    output_path: str,
    installs: Mapping[str, Collection[tuple[str, str]]],
    broken: Collection[str] = (),
    expected: Collection[str] = (),
) -> tuple[list[str], set[str]]:
    """Return the Applications that never become healthy (of those created and `expected`), and
    every Application created."""
    simulation = Simulation(files, output_path, installs, broken)
    simulation.run(root)
    return simulation.stuck(expected), set(simulation.apps)


def coupled(
    files: Mapping[str, Sequence[dict[str, Any]]],
    root: Mapping[str, Any],
    output_path: str,
    installs: Mapping[str, Collection[tuple[str, str]]],
    clusters: Mapping[str, Collection[str]],
) -> dict[str, list[str]]:
    """Return per cluster the other clusters' Applications that stay stuck when its operators are broken.

    `clusters`: cluster name -> its Applications (operators and its own).
    """
    found: dict[str, list[str]] = {}
    tree = Tree(files)
    for name, mine in sorted(clusters.items()):
        others = {a for other, apps in clusters.items() if other != name for a in apps}
        never, _ = stuck(tree, root, output_path, installs, set(mine), others)
        hit = sorted(a for a in never if a in others)
        if hit:
            found[name] = hit
    return found
