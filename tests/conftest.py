"""Shared fixtures: the CLI run in-process, temporary repositories, the upstream CRDs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplan.cli import cli
from gpuplan.validate.crds import CrdIndex

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE = PROJECT  # the repository's own example fleet: clusters/ and tenants/


def pytest_configure(config: pytest.Config) -> None:
    """Make a relative GPUPLAN_CRDS (.ci/run's ../shared/crds) absolute for subprocesses elsewhere."""
    value = os.environ.get("GPUPLAN_CRDS")
    if value and not os.path.isabs(value):
        os.environ["GPUPLAN_CRDS"] = str((PROJECT / value).resolve())
    if "GPUPLAN_CACHE_DIR" not in os.environ:
        # The render cache of this run only: tests neither read nor fill the developer's own cache.
        os.environ["GPUPLAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuplan-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("GPUPLAN_CACHE_DIR"), True))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files of tests/cases on purpose",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# The components ../shared/crds holds (what GPUPLAN_CRDS points at in CI).
SHARED_CRDS = ("argo-cd", "gpu-operator", "kai-scheduler", "karpenter", "karpenter-provider-aws",
               "kueue", "multus", "nfd", "volcano")  # fmt: skip


def newest_shipped_crds(folder: Path) -> Path:
    """Copy the newest shipped CRD set of the components ../shared/crds has into folder/<component>/."""
    from gpuplan.crds import DATA, shipped_sets

    for component, versions in shipped_sets().items():
        if component not in SHARED_CRDS:
            continue  # e.g. the Azure provider: ../shared/crds has NodePool from core and AWS only
        (folder / component).mkdir(parents=True)
        for path in sorted((DATA / component / versions[-1]).glob("*.json.gz")):
            if path.name.startswith(("multikueue", "provisioningrequestconfigs")):
                continue  # Kueue kinds ../shared/crds does not hold (tests sample every kind it has)
            shutil.copy(path, folder / component / path.name)
    return folder


@pytest.fixture(scope="session")
def crds_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The upstream CRDs: GPUPLAN_CRDS when set (CI: ../shared/crds), else the newest shipped sets."""
    value = os.environ.get("GPUPLAN_CRDS")
    if not value:
        return newest_shipped_crds(tmp_path_factory.mktemp("crds"))
    path = Path(value)
    if not path.is_absolute():
        path = (PROJECT / path).resolve()
    if not path.is_dir():
        pytest.skip(f"GPUPLAN_CRDS={value} is not a folder")
    return path


@pytest.fixture(scope="session")
def crds(crds_dir: Path) -> CrdIndex:
    """The upstream CRDs of crds_dir, loaded once (GPUPLAN_CRDS, else the newest shipped sets)."""
    return CrdIndex.load(crds_dir)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


# A git author for the tests' commits, whatever the machine's git configuration says.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "gpuplan tests", "GIT_AUTHOR_EMAIL": "tests@example.com",
    "GIT_COMMITTER_NAME": "gpuplan tests", "GIT_COMMITTER_EMAIL": "tests@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
}  # fmt: skip


@pytest.fixture(scope="module")
def git_identity() -> Iterator[None]:
    """Set GIT_ENV for a module whose tests commit (`pytestmark = usefixtures("git_identity")`)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in GIT_ENV.items():
            patch.setenv(name, value)
        yield


def run(*args: str, env: dict[str, str] | None = None) -> Run:
    """Run the gpuplan CLI in-process and capture exit code, stdout and stderr."""
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def copy_example(target: Path) -> Path:
    """Copy the repository's example fleet (inputs, with the own manifests its NodePools need) into a temporary repository."""
    for folder in ("clusters", "tenants", "extra"):
        shutil.copytree(EXAMPLE / folder, target / folder)
    return target


def edit(root: Path, relative: str, old: str, new: str) -> None:
    """Replace the first `old` in a repository file with `new` (the text must be there)."""
    path = root / relative
    text = path.read_text()
    assert old in text, f"{relative} has no {old!r}"
    path.write_text(text.replace(old, new, 1))


def snapshot(folder: Path) -> dict[str, bytes]:
    """Return every file under a folder with its bytes (to prove nothing was touched)."""
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_repo(root: Path, files: dict[str, str]) -> Path:
    """Write a repository from relative path -> text."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "clusters").mkdir(exist_ok=True)
    (root / "tenants").mkdir(exist_ok=True)
    return root


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "repo")


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A render cache of the test's own ($GPUPLAN_CACHE_DIR)."""
    home = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(home))
    return home
