"""What a new user meets around the commands: an unquoted kubernetesVersion, running from a
subfolder, and the gpuplan version (single-sourced from the package metadata)."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from gpuplan import __version__
from gpuplan.pipeline import compile_fleet
from tests.conftest import PROJECT, copy_example, run


def with_version(root: Path, written: str) -> Path:
    path = root / "clusters/h100-prod.yaml"
    text = path.read_text()
    assert 'kubernetesVersion: "1.33"' in text
    path.write_text(text.replace('kubernetesVersion: "1.33"', f"kubernetesVersion: {written}", 1))
    return root


@pytest.mark.parametrize(
    ("written", "read"), [("1.30", "1.30"), ("1.33", "1.33"), ('"1.30"', "1.30")]
)
def test_an_unquoted_kubernetes_version_is_read_as_written(
    tmp_path: Path, written: str, read: str
) -> None:
    root = with_version(copy_example(tmp_path), written)
    result = compile_fleet(root, emit_output=False)
    assert result.fleet is not None
    assert result.fleet.clusters["h100-prod"].spec.kubernetes_version == read


def test_a_kubernetes_version_that_is_not_one_is_refused_with_a_hint_to_quote_it(
    tmp_path: Path,
) -> None:
    root = with_version(copy_example(tmp_path), "1.3e1")
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert (
        'clusters/h100-prod.yaml:2:20: error: kubernetesVersion: 13.0 is a number in YAML, which drops trailing zeros: quote it, kubernetesVersion: "13.0"'
        in result.stderr
    )


def test_commands_run_from_a_subfolder_find_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_example(tmp_path / "repo")
    (root / ".git").mkdir()
    monkeypatch.chdir(root / "tenants")
    result = run("check")
    assert result.code == 0, result.stderr
    assert "fleet is valid" in result.stderr
    assert run("render").code == 0
    assert (root / "output/h100-prod/kustomization.yaml").is_file() and not (
        root / "tenants/output"
    ).exists()


def test_the_search_stops_at_the_repository_it_is_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_example(tmp_path)  # clusters/ above the repository must not be taken
    inner = tmp_path / "other-repo" / "sub"
    inner.mkdir(parents=True)
    (tmp_path / "other-repo" / ".git").mkdir()
    monkeypatch.chdir(inner)
    result = run("check")
    assert result.code == 1 and "h100-prod" not in result.stderr


def test_the_version_is_single_sourced_from_the_package_metadata() -> None:
    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
    assert __version__ == importlib.metadata.version("gpuplan") == declared
    assert run("--version").stdout.strip() == f"gpuplan, version {declared}"
    changelog = (PROJECT / "CHANGELOG.md").read_text().splitlines()
    assert f"## {declared}" in changelog  # each release has its entry
