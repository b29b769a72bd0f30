"""gpuplan.quick: `render --check` answered from the render cache before click is imported.

Its answers must be the CLI's own, word for word and code for code, and anything it does not
answer must reach the CLI with nothing printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan import process, quick
from tests.conftest import run
from tests.test_cache import Fleet


class Left(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _quick(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int | None, str]:
    """Return quick.answer's exit code (None: it left it to the CLI) and what it printed."""

    def leave(code: int) -> None:
        raise Left(code)

    monkeypatch.setattr(process, "leave", leave)
    capsys.readouterr()
    try:
        quick.answer(argv)
        code = None
    except Left as left:
        code = left.code
    return code, capsys.readouterr().err


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    Fleet().write(root)
    done = run("render", "--root", str(root))
    assert done.code == 0, done.stderr
    return root


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--strict"],  # the small fleet has warnings: exit 1
        ["--format", "json"],
        ["--format=github"],
    ],
)
def test_its_answers_are_the_clis(
    tmp_path: Path,
    cache_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
) -> None:
    root = _repo(tmp_path)
    argv = ["render", "--root", str(root), "--check", *flags]
    for _ in range(2):  # as rendered, then with a hand edit the full comparison words
        code, err = _quick(argv, capsys, monkeypatch)
        cli = run(*argv)
        assert code is not None
        assert (code, err) == (cli.code, cli.stderr)
        target = root / "output/c00/kueue/clusterqueue-t0.yaml"
        target.write_text(target.read_text() + "# edited\n")
    if "--strict" not in flags:  # (with --strict, the warnings fail it first)
        assert "would change: c00/kueue/clusterqueue-t0.yaml" in err


def test_what_the_record_cannot_answer_goes_to_the_cli_unprinted(
    tmp_path: Path,
    cache_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = _repo(tmp_path)
    tenant = root / "tenants/t0.yaml"
    tenant.write_text(tenant.read_text().replace("gpus: 1", "gpus: 3"))  # an input changed
    assert _quick(["render", "--root", str(root), "--check"], capsys, monkeypatch) == (None, "")
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", "off")
    assert _quick(["render", "--root", str(root), "--check"], capsys, monkeypatch) == (None, "")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["render"],  # not a check
        ["check", "--check"],
        ["--version"],
        ["render", "--check", "--cluster", "c00"],
        ["render", "--check", "--no-cache"],
        ["render", "--check", "--watch"],
        ["render", "--check", "--check"],
        ["render", "--check", "--strict", "--strict"],
        ["render", "--check", "--root"],  # no value
        ["render", "--check", "--root", "--strict"],  # click would take "--strict" as the folder
        ["render", "--check", "--root="],
        ["render", "--check", "--root", "missing"],
        ["render", "--check", "--crds", "missing"],
        ["render", "--check", "--format", "yaml"],
        ["render", "--check", "--strict=1"],
        ["render", "--check", "-h"],
        ["render", "--check", "extra"],
    ],
)
def test_anything_else_is_left_to_the_cli(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert quick.parse(argv) is None


def test_a_plain_form_gives_the_options_its_flags_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clusters").mkdir()
    (tmp_path / "crds").mkdir()
    options = quick.parse(["render", "--strict", "--crds=crds", "--check", "--out", "elsewhere"])
    assert options is not None
    assert (options.root, options.out, options.crds) == (Path("."), Path("elsewhere"), Path("crds"))
    assert (options.strict, options.fmt, options.clusters) == (True, "text", ())
    file = tmp_path / "a-file"
    file.write_text("")
    assert quick.parse(["render", "--check", "--out", str(file)]) is None  # click: "is a file"


def test_a_cached_check_starts_without_click(tmp_path: Path, cache_home: Path) -> None:
    root = _repo(tmp_path)
    env = {**os.environ, "GPUPLAN_CACHE_DIR": str(cache_home)}
    for argv, imported in (
        (["render", "--root", str(root), "--check"], False),
        (["render", "--root", str(root), "--check", "--no-cache"], True),  # the CLI's to answer
    ):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "gpuplan", *argv],
            env=env,
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert done.returncode == 0, done.stderr
        assert "up to date" in done.stderr
        assert (" click" in done.stderr) == imported
        if not imported:  # nor ctypes (render --watch's inotify and the swap take it when used)
            assert " ctypes" not in done.stderr


@pytest.mark.parametrize("flags", [[], ["--strict"]])
def test_recorded_findings_print_as_a_compiled_check_prints_them(
    tmp_path: Path, cache_home: Path, flags: list[str]
) -> None:
    """The record keeps its findings as the text format prints them: a cached check must print
    what a check that compiles prints, word for word, with the same exit code."""
    root = _repo(tmp_path)
    argv = ["render", "--root", str(root), "--check", *flags]
    cached, compiled = run(*argv), run(*argv, "--no-cache")
    assert "warning:" in compiled.stderr
    assert (cached.code, cached.stderr) == (compiled.code, compiled.stderr)
    target = root / "output/c00/kueue/clusterqueue-t0.yaml"
    target.write_text(target.read_text() + "# edited\n")  # the full comparison, same findings
    cached, compiled = run(*argv), run(*argv, "--no-cache")
    assert (cached.code, cached.stderr) == (compiled.code, compiled.stderr)
