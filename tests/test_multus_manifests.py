"""Multus runs the image of its release, not the manifest's moving `snapshot-thick` tag.

The upstream manifest of each supported tag ships in gpuplan/manifests/ (scripts/fetch_manifests.py);
gpuplan renders it with the release's image into output/<cluster>/multus/, which the Multus
Application syncs from the fleet's repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan.components import REGISTRY
from gpuplan.components.multus import MultusRelease
from gpuplan.emit.bootstrap.multus import UPSTREAM_IMAGE, daemon_objects
from gpuplan.manifests import DATA
from tests.conftest import PROJECT

SCRIPT = PROJECT / "scripts" / "fetch_manifests.py"
RELEASES = [r for r in REGISTRY["multus"].releases if isinstance(r, MultusRelease)]


def _images(objs: list[dict]) -> list[str]:
    found = []
    for obj in objs:
        if obj.get("kind") == "DaemonSet":
            pod = obj["spec"]["template"]["spec"]
            found += [c["image"] for c in pod.get("initContainers", []) + pod["containers"]]
    return found


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_the_daemon_runs_the_release_image(release: MultusRelease) -> None:
    assert release.image == f"ghcr.io/k8snetworkplumbingwg/multus-cni:{release.version}-thick"
    images = _images(list(daemon_objects(release)))
    assert images == [release.image, release.image]  # the init container and the daemon
    shipped = (DATA / "multus" / release.version / "multus-daemonset-thick.yml").read_text()
    assert shipped.count(f"image: {UPSTREAM_IMAGE}") == 2  # what upstream ships at the tag


def test_shipped_manifests_match_their_sources_records() -> None:
    records = json.loads((DATA / "SOURCES.json").read_text())["files"]
    assert {r["version"] for r in records if r["component"] == "multus"} == {
        r.version for r in RELEASES
    }
    for record in records:
        data = (DATA / record["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == record["sha256"], record["file"]
        assert len(record["commit"]) == 40 and record["tag"] == record["version"]
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_check_mode_finds_a_changed_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(DATA, copy)
    changed = copy / "multus" / RELEASES[0].version / "multus-daemonset-thick.yml"
    changed.write_text(changed.read_text() + "\n# edited\n")
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import fetch_manifests
    finally:
        sys.path.remove(str(SCRIPT.parent))
    monkeypatch.setattr(fetch_manifests, "DATA", copy)
    assert fetch_manifests.check() == 1


def test_rendered_output_runs_no_moving_image() -> None:
    """Every Multus DaemonSet gpuplan wrote (output/ and the goldens) runs a release image."""
    seen = set()
    for path in sorted(PROJECT.glob("output/*/multus/daemonset-*.yaml")) + sorted(
        PROJECT.glob("tests/cases/*/expected/*/multus/daemonset-*.yaml")
    ):
        images = _images(list(yaml.safe_load_all(path.read_text())))
        assert images and UPSTREAM_IMAGE not in images, path
        seen.update(images)
    assert {r.image for r in RELEASES} <= seen  # both releases are golden
