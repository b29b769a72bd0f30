"""output/argocd/ as the docs document it (docs/concepts/bootstrap-order.md), and the argocd-cm patch with Argo CD's Application health
check: exactly upstream's fragment, merged without dropping the keys argocd-cm already holds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuplan.emit.bootstrap import health
from tests.conftest import PROJECT

PAGE = PROJECT / "docs/concepts/bootstrap-order.md"  # the bootstrap order: what installs what
ARGOCD = PROJECT / "output/argocd"
# An expected output with an ApplicationSet, which the example fleet does not use.
APPSET_CASE = PROJECT / "tests/cases/bootstrap-older-releases/expected/argocd"


def _section() -> str:
    return PAGE.read_text()


def _pattern(folder: Path, path: Path) -> str:
    """Return how the docs' layout names a file of an argocd/ folder."""
    relative = path.relative_to(folder)
    parts = relative.parts
    if len(parts) == 2 and parts[0] not in ("bootstrap", "argocd-cm"):
        return "<cluster>/<component>.yaml"
    name = relative.as_posix()
    if name.startswith("appproject-"):
        return "appproject-<project>.yaml"
    if name.startswith("applicationset-"):
        return "applicationset-<name>.yaml"
    if len(parts) == 1 and name != "kustomization.yaml":
        return "<cluster>.yaml"
    return name


@pytest.mark.parametrize("folder", [ARGOCD, APPSET_CASE], ids=["example", "application-set"])
def test_the_docs_document_every_file_kind_of_output_argocd(folder: Path) -> None:
    layout = _section().split("```text\noutput/argocd/", 1)[1].split("```", 1)[0]
    documented = set(re.findall(r"^  (\S+)", layout, re.MULTILINE))
    found = {_pattern(folder, p) for p in folder.rglob("*.yaml")}
    assert found <= documented, f"undocumented in {PAGE.name}: {sorted(found - documented)}"


def test_the_docs_snippet_is_the_rendered_health_check() -> None:
    snippet = (
        _section().split("exactly as upstream documents it:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    )
    rendered = yaml.safe_load((ARGOCD / "argocd-cm/argocd-cm.yaml").read_text())
    assert yaml.safe_load(snippet)["data"] == rendered["data"] == {health.KEY: health.SCRIPT}
    assert (
        rendered["metadata"]["labels"]["app.kubernetes.io/part-of"] == "argocd"
    )  # Argo CD watches only these


def test_the_root_does_not_sync_argocd_cm() -> None:
    synced = yaml.safe_load((ARGOCD / "kustomization.yaml").read_text())["resources"]
    assert not any(r.startswith(("argocd-cm", "bootstrap")) for r in synced)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_the_patch_adds_the_check_and_keeps_argocd_cms_other_keys(tmp_path: Path) -> None:
    live = tmp_path / "argocd-cm.yaml"
    live.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": {"app.kubernetes.io/part-of": "argocd"}},
        "data": {"url": "https://argocd.example.com", "dex.config": "connectors: []"},
    }))  # fmt: skip
    run = subprocess.run(
        ["kubectl", "patch", "-f", str(live), "--local", "--type", "merge", "--patch-file",
         str(ARGOCD / "argocd-cm/argocd-cm.yaml"), "-o", "yaml"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    patched = yaml.safe_load(run.stdout)
    assert patched["data"] == {
        "url": "https://argocd.example.com",
        "dex.config": "connectors: []",
        health.KEY: health.SCRIPT,
    }
