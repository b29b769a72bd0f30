"""Golden files: each tests/cases/<case>/input renders to exactly tests/cases/<case>/expected/,
or fails with exactly the diagnostics in tests/cases/<case>/errors.txt.

`pytest --update-golden` rewrites expected/ (or errors.txt) on purpose; review the diff before
committing it. A case's args.txt holds more `render` flags, one line (`--strict`: a case whose
warnings, such as an unused ignore entry, fail the render and so are recorded in errors.txt).
Two kinds of case run another command, for the codes only it reports:
- a case with base/ (the inputs at the base revision) commits base/ to a git repository, puts
  input/ in its working tree and runs `gpuplan check --base HEAD` (a version bump's
  `upgrade-skip`);
- a case with validate.txt runs `gpuplan validate` on the files it names under input/.
"""

from __future__ import annotations

import difflib
import functools
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.components import REGISTRY
from tests.conftest import GIT_ENV, Run, run, snapshot

CASES = Path(__file__).resolve().parent / "cases"
ERRORS = "errors.txt"
ARGS = "args.txt"
EXPECTED = "expected"
BASE = "base"
VALIDATE = "validate.txt"


def _case_dirs() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if (p / "input").is_dir()) if CASES.is_dir() else []


def _diagnostics(stderr: str) -> str:
    """Return stderr without the notes that depend on the environment (such as the CRD folder)."""
    lines = [line for line in stderr.splitlines() if line and not line.startswith("note: ")]
    return "".join(f"{line}\n" for line in lines)


def _first_difference(expected: dict[str, bytes], actual: dict[str, bytes]) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    report = []
    if missing:
        report.append("files no longer rendered: " + ", ".join(missing))
    if extra:
        report.append("files rendered but not expected: " + ", ".join(extra))
    for name in sorted(set(expected) & set(actual)):
        if expected[name] != actual[name]:
            diff = difflib.unified_diff(
                expected[name].decode(errors="replace").splitlines(keepends=True),
                actual[name].decode(errors="replace").splitlines(keepends=True),
                fromfile=f"expected/{name}",
                tofile=f"rendered/{name}",
            )
            changed = sum(1 for n in set(expected) & set(actual) if expected[n] != actual[n])
            report.append(f"{changed} file(s) differ; the first is {name}:\n" + "".join(diff))
            break
    return "\n".join(report)


def test_there_are_cases() -> None:
    cases = _case_dirs()
    assert len([c for c in cases if (c / EXPECTED).is_dir()]) >= 6
    assert len([c for c in cases if (c / ERRORS).is_file()]) >= 2


def _against_base(case: Path, repo: Path) -> Run:
    """Commit the case's base/ in a new repository, put its input/ in the working tree instead
    and run `gpuplan check --base HEAD` there."""
    shutil.copytree(case / BASE, repo)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    for path in repo.iterdir():
        if path.is_dir() and path.name != ".git":
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()
    shutil.copytree(case / "input", repo, dirs_exist_ok=True)
    return run("check", "--root", str(repo), "--base", "HEAD")


@pytest.mark.parametrize("case", _case_dirs(), ids=lambda p: p.name)
def test_golden(
    case: Path, tmp_path: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    args = (case / ARGS).read_text().split() if (case / ARGS).is_file() else []
    if (case / BASE).is_dir():
        result = _against_base(case, tmp_path / "repo")
    elif (case / VALIDATE).is_file():
        monkeypatch.chdir(case / "input")  # the diagnostics name the files as given
        result = run("validate", *(case / VALIDATE).read_text().split())
    else:
        result = run("render", "--root", str(case / "input"), "--out", str(out), *args)
    assert "Traceback" not in result.stdout + result.stderr
    expected_dir, errors_file = case / EXPECTED, case / ERRORS

    if update_golden:
        shutil.rmtree(expected_dir, ignore_errors=True)
        errors_file.unlink(missing_ok=True)
        if result.code == 0:
            shutil.copytree(out, expected_dir)
        else:
            errors_file.write_text(_diagnostics(result.stderr))

    if errors_file.is_file():
        assert not expected_dir.exists(), f"{case.name}: has both {ERRORS} and {EXPECTED}/"
        assert result.code == 1, f"{case.name} must fail but exited {result.code}:\n{result.stderr}"
        assert not out.exists(), "a failed render wrote output"
        want = errors_file.read_text()
        got = _diagnostics(result.stderr)
        assert got == want, "diagnostics differ:\n" + "".join(
            difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), f"{case.name}/{ERRORS}", "stderr"
            )
        )
        return

    assert expected_dir.is_dir(), (
        f"{case.name}: no {EXPECTED}/ or {ERRORS}; run pytest --update-golden"
    )
    assert result.code == 0, result.stderr
    expected, actual = snapshot(expected_dir), snapshot(out)
    assert actual == expected, _first_difference(expected, actual)


# Issue #15: each component's Application is golden, values included, at every release gpuplan knows
# of these components (the chart version, or the tag a manifest is synced at).
RELEASE_REVISIONS: dict[str, Any] = {
    "cluster-autoscaler": lambda r: r.chart.version,
    "kai-scheduler": lambda r: r.chart.version,
    "nfd": lambda r: r.chart.version,
    "monitoring": lambda r: r.stack_chart.version,
    "dra-driver": lambda r: r.chart.version,
}


@functools.cache
def _golden_revisions() -> dict[str, set[str]]:
    """Return the targetRevisions of the golden Applications, by their gpuplan.io/component label."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(CASES.glob("*/expected/argocd/**/*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj and obj.get("kind") == "Application":
                component = obj["metadata"].get("labels", {}).get("gpuplan.io/component")
                found[component].add(str(obj["spec"]["source"]["targetRevision"]))
    return found


@pytest.mark.parametrize("name", sorted(RELEASE_REVISIONS))
def test_each_release_of_a_component_has_a_golden_application(name: str) -> None:
    revisions = {RELEASE_REVISIONS[name](r) for r in REGISTRY[name].releases}
    assert len(revisions) >= 2, f"{name}: issue #15 wants two releases"
    assert revisions <= _golden_revisions()[name]


def test_each_multus_release_has_a_golden_whereabouts_application() -> None:
    # Multus itself is synced from the fleet's repository (tests/test_multus_manifests.py checks
    # that both releases' daemons are golden); Whereabouts comes with each Multus release.
    wheres = {r.whereabouts_chart.version for r in REGISTRY["multus"].releases}  # type: ignore[attr-defined]
    assert len(wheres) >= 2 and wheres <= _golden_revisions()["whereabouts"]
