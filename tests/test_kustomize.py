"""output/ builds the way Argo CD builds it: `kubectl kustomize` on every folder gives exactly gpuplan's files.

The same holds for the golden case that renders every component at an older release
(tests/cases/bootstrap-older-releases), so both releases of each component's Application build.

Argo CD runs kustomize on a folder that holds a kustomization.yaml. Each folder of output/ with one
must build, and the objects it builds must be exactly the objects of the files gpuplan wrote below it
(no file left out of a kustomization, none listed twice, nothing changed on the way).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT

OUTPUT = PROJECT / "output"
OLDER_RELEASES = PROJECT / "tests/cases/bootstrap-older-releases/expected"
KUSTOMIZE_FILE = "kustomization.yaml"

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not installed"
)


def _folders(root: Path = OUTPUT) -> list[Path]:
    return sorted(p.parent for p in root.rglob(KUSTOMIZE_FILE))


def _key(obj: dict) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (
        obj.get("apiVersion", ""),
        obj.get("kind", ""),
        meta.get("namespace", ""),
        meta.get("name", ""),
    )


def _written(folder: Path) -> dict[tuple[str, str, str, str], dict]:
    """Return the objects of every YAML file below a folder that gpuplan wrote (kustomizations excepted)."""
    found: dict[tuple[str, str, str, str], dict] = {}
    for path in sorted(folder.rglob("*.yaml")):
        if path.name == KUSTOMIZE_FILE:
            continue
        nested = next(
            (
                p
                for p in path.parents
                if p != folder and (p / KUSTOMIZE_FILE).exists() and folder in p.parents
            ),
            None,
        )
        if nested is not None:
            continue  # built by its own kustomization (tested on its own)
        for obj in yaml.safe_load_all(path.read_text()):
            if obj is not None:
                assert _key(obj) not in found, f"{path}: {_key(obj)} written twice"
                found[_key(obj)] = obj
    return found


def _built(folder: Path) -> dict[tuple[str, str, str, str], dict]:
    run = subprocess.run(
        ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, (
        f"kubectl kustomize {folder.relative_to(PROJECT)} failed:\n{run.stderr}"
    )
    built: dict[tuple[str, str, str, str], dict] = {}
    for obj in yaml.safe_load_all(run.stdout):
        if obj is not None:
            assert _key(obj) not in built, f"{_key(obj)} built twice"
            built[_key(obj)] = obj
    return built


def test_output_has_kustomizations() -> None:
    names = {f.relative_to(OUTPUT).as_posix() for f in _folders()}
    assert "argocd" in names
    assert {p.name for p in OUTPUT.iterdir() if p.is_dir()} <= {n.split("/")[0] for n in names}


@pytest.mark.parametrize(
    "folder",
    _folders() + _folders(OLDER_RELEASES),
    ids=lambda p: p.relative_to(PROJECT).as_posix(),
)
def test_kustomize_builds_exactly_the_written_files(folder: Path) -> None:
    written = _written(folder)
    built = _built(folder)
    assert sorted(built) == sorted(written), "kustomize must build exactly the files gpuplan wrote"
    for key, obj in written.items():
        assert built[key] == obj, f"{key} changed on the way through kustomize"
