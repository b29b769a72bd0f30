"""Rendering on another machine gives the same bytes (spec/output.md, "Exactness").

Two renders in separate processes that differ in everything a machine can differ in: hash seed,
locale (and with it Python's default encoding), time zone, current directory, the way --root is
written, and the order in which the input files were created (so directory listings can come
back in another order). Their output trees must be byte-identical, file for file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.synth import write_fleet
from tests.conftest import PROJECT, copy_example


def _locales() -> set[str]:
    try:
        listed = subprocess.run(
            ["locale", "-a"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return set()
    return {name.strip().lower().replace("utf-8", "utf8") for name in listed.splitlines()}


def _second_locale() -> dict[str, str]:
    """en_US.UTF-8 where the machine has it; else the plain C locale with Python's UTF-8 crutches
    off (PEP 538 coercion, PEP 540 UTF-8 mode), so any locale-encoded I/O would show."""
    if "en_us.utf8" in _locales():
        return {"LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8"}
    return {"LANG": "C", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


MACHINE_A = {"PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
MACHINE_B = {"PYTHONHASHSEED": "2718281", "TZ": "Pacific/Auckland", **_second_locale()}
VARIABLES = (
    "PYTHONHASHSEED",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PYTHONCOERCECLOCALE",
    "PYTHONUTF8",
    "PYTHONIOENCODING",
)


def _env(machine: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES and not k.startswith("LC_")}
    env["PYTHONPATH"] = str(PROJECT) + os.pathsep + env.get("PYTHONPATH", "")
    return env | machine


def render(root_arg: str, cwd: Path, machine: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "gpuplan", "render", "--root", root_arg],
        cwd=cwd, env=_env(machine), capture_output=True, text=True, encoding="utf-8", errors="replace", check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def copy_reversed(source: Path, target: Path) -> None:
    """Copy the input files into a fresh folder, creating folders and files in reverse order."""
    files = sorted(
        p.relative_to(source)
        for p in source.rglob("*.yaml")
        if "output" not in p.relative_to(source).parts
    )
    for relative in reversed(files):
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target / relative)


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _example(root: Path) -> Path:
    copy_example(root)
    cluster = root / "clusters" / "h100-prod.yaml"
    text = cluster.read_text(encoding="utf-8")
    marked = text.replace(
        "{name: production, value: 1000}",
        '{name: production, value: 1000, description: "Produktion – höchste Priorität ✓"}',
    )
    assert marked != text
    cluster.write_text(marked, encoding="utf-8")
    return root


def _synthetic(root: Path) -> Path:
    return write_fleet(root, 2, 4, 9, changed_tenant=3)


@pytest.mark.parametrize("make", [_example, _synthetic], ids=["example", "synthetic"])
def test_two_machines_render_byte_identical_output(tmp_path: Path, make: object) -> None:
    first = make(tmp_path / "first")  # type: ignore[operator]
    second = tmp_path / "elsewhere" / "second"
    copy_reversed(first, second)
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    one = render(".", first, MACHINE_A)
    two = render(os.path.relpath(second, cwd), cwd, MACHINE_B)

    a, b = tree(first / "output"), tree(second / "output")
    assert a, "nothing rendered"
    assert sorted(a) == sorted(b), f"different files: {sorted(set(a) ^ set(b))[:10]}"
    differing = [p for p in a if a[p] != b[p]]
    assert differing == [], f"{len(differing)} files differ, e.g. {differing[:5]}"
    diagnostics = [
        line for line in one.stderr.splitlines() if ": warning: " in line or ": error: " in line
    ]
    assert diagnostics == [
        line for line in two.stderr.splitlines() if ": warning: " in line or ": error: " in line
    ]


def test_the_non_ascii_description_reaches_the_output(tmp_path: Path) -> None:
    """The example's non-ASCII text is really rendered, so the locale comparison above means something."""
    root = _example(tmp_path / "repo")
    render(".", root, MACHINE_B)
    texts = [p.read_text(encoding="utf-8") for p in (root / "output").rglob("*.yaml")]
    assert any("höchste Priorität ✓" in t for t in texts)
