"""Argo CD's sync of the rendered example, simulated from the bootstrap root (issue 35, points 1 and 2):
every Application becomes healthy (no wave waits on something only a later wave creates), and when one
cluster's operators never become healthy, no other cluster's Application waits on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.emit.bootstrap.installs import installs
from gpuplan.pipeline import compile_fleet
from gpuplan.validate.argosync import coupled, stuck
from tests.conftest import PROJECT, copy_example, run

OUTPUT = PROJECT / "output"


def _files(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.relative_to(out).as_posix(): [d for d in yaml.safe_load_all(p.read_text()) if d]
        for p in sorted(out.rglob("*.yaml"))
    }


@pytest.fixture(scope="module")
def fleet_installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    compiled = compile_fleet(copy_example(tmp_path_factory.mktemp("argosync") / "repo"))
    return dict(installs(compiled.fleet))


def _root(files: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return files["argocd/bootstrap/root.yaml"][0]


def _clusters(files: dict[str, list[dict[str, Any]]]) -> dict[str, set[str]]:
    """Return cluster -> its Applications (by the gpuplan.io/cluster label)."""
    found: dict[str, set[str]] = {}
    for docs in files.values():
        for obj in docs:
            label = (obj.get("metadata", {}).get("labels") or {}).get("gpuplan.io/cluster")
            if obj.get("kind") == "Application" and label:
                found.setdefault(label, set()).add(obj["metadata"]["name"])
    return found


def test_every_application_of_the_example_becomes_healthy(fleet_installs: dict[str, Any]) -> None:
    files = _files(OUTPUT)
    every = {a for apps in _clusters(files).values() for a in apps}
    never, created = stuck(files, _root(files), "output", fleet_installs, expected=every)
    assert never == []
    assert every <= created  # each cluster's operators and its own Application get created


def test_no_cluster_waits_on_another(fleet_installs: dict[str, Any]) -> None:
    files = _files(OUTPUT)
    clusters = _clusters(files)
    assert len(clusters) > 1
    assert coupled(files, _root(files), "output", fleet_installs, clusters) == {}


def test_the_adapter_syncs_after_the_config_map_it_mounts(fleet_installs: dict[str, Any]) -> None:
    """Before issue 35 the adapter (wave -5) mounted a ConfigMap of the cluster's folder (wave 0)."""
    files = _files(OUTPUT)
    adapter = files["argocd/h100-prod/prometheus-adapter.yaml"][0]
    early = {
        **adapter,
        "metadata": {**adapter["metadata"], "annotations": {"argocd.argoproj.io/sync-wave": "-5"}},
    }
    never, _ = stuck(
        {**files, "argocd/h100-prod/prometheus-adapter.yaml": [early]},
        _root(files),
        "output",
        fleet_installs,
    )
    assert "h100-prod-prometheus-adapter" in never
    assert "gpuplan-root-h100-prod" in never  # its root never gets past wave -5
    # Only h100-prod is held (and the fleet's root's health, which shows it; nothing waits on it).
    assert not [a for a in never if "h100-prod" not in a and a != "gpuplan-root"]


def test_one_root_for_the_whole_fleet_couples_the_clusters(fleet_installs: dict[str, Any]) -> None:
    """The layout before issue 35: one root syncing every cluster's operators and Applications."""
    files = _files(OUTPUT)
    every = [
        path
        for path, docs in files.items()
        if path.startswith("argocd/")
        and path.count("/") == 2
        and docs
        and docs[0].get("kind") == "Application"
    ]
    flat = {
        "argocd/kustomization.yaml": [
            {"resources": [p.removeprefix("argocd/") for p in sorted(every)]}
        ]
    }
    found = coupled({**files, **flat}, _root(files), "output", fleet_installs, _clusters(files))
    assert set(found) == set(_clusters(files))  # any cluster's broken operator stalls the others


TEAM_APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: team-queues
  namespace: argocd
  annotations: {{argocd.argoproj.io/sync-wave: "-1"}}
spec:
  project: gpu-platform
  source: {{repoURL: "https://git.example.com/platform/gpu-fleet.git", targetRevision: main, path: {path}}}
  destination: {destination}
"""


def _render_with_own_app(tmp_path: Path, path: str, destination: str) -> str:
    root = copy_example(tmp_path)
    own = root / "extra" / "h100-prod" / "application-team-queues.yaml"
    own.write_text(TEAM_APP.format(path=path, destination=destination))
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert not (root / "output").exists()  # nothing written
    assert "Traceback" not in result.stderr and "please report" not in result.stderr
    return result.stderr


def test_render_refuses_a_fleet_whose_cluster_waits_on_another(tmp_path: Path) -> None:
    """An own Application in h100-prod's folder (wave -1) that syncs into dgx-onprem: every render proves it."""
    err = _render_with_own_app(tmp_path, "output/dgx-onprem", "{name: dgx-onprem}")
    assert (
        "output/argocd/h100-prod/cluster.yaml:3:1: error: Application/h100-prod: Application h100-prod waits on "
        "cluster dgx-onprem: while dgx-onprem's Applications are not healthy it never is (it waits on Application "
        "team-queues, which waits on NetworkAttachmentDefinition data-plane, whose CRD Application "
        "dgx-onprem-multus installs)"
    ) in err


def test_render_refuses_a_bootstrap_that_deadlocks(tmp_path: Path) -> None:
    """An own Application that syncs its own cluster's folder waits on itself: the root never gets healthy."""
    err = _render_with_own_app(
        tmp_path, "output/h100-prod", '{server: "https://kubernetes.default.svc"}'
    )
    assert (
        "output/argocd/h100-prod/cluster.yaml:3:1: error: Application/h100-prod: Argo CD's sync from the bootstrap "
        "root never makes Application h100-prod healthy: it waits on Application team-queues"
    ) in err
