"""`gpuplan validate --watch`: validates again after each change, with the validators compiled once."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.runtime import watch
from gpuplan.validate import choose
from tests.conftest import run

GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"
BAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: 5\n"


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Count the Validators built (each one compiles its schemas)."""
    made: list[object] = []
    real = choose.Validator

    def counting(*args: object, **kwargs: object) -> object:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(choose, "Validator", counting)
    return made


def _edits(monkeypatch: pytest.MonkeyPatch, manifest: Path, texts: list[str | None]) -> None:
    """Instead of sleeping between looks, apply the next edit (None: leave the file alone)."""
    pending = list(texts)

    def sleep(wake: object, seconds: float) -> None:
        text = pending.pop(0)
        if text is not None:
            manifest.write_text(text, encoding="utf-8")

    monkeypatch.setattr(watch, "pause", sleep)


def test_watch_revalidates_each_change_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: list[object]
) -> None:
    manifest = tmp_path / "settings.yaml"
    manifest.write_text(GOOD, encoding="utf-8")
    _edits(monkeypatch, manifest, [BAD, None, GOOD])
    result = run("validate", str(tmp_path), "--watch", "--interval", "0.1", "--max-cycles", "4")
    assert result.code == 0  # the last run saw the fixed file
    assert result.stderr.count("watching for changes") == 3  # runs 1, 2 and 4: look 3 saw no change
    assert result.stderr.count("1 objects in 1 files are valid") == 2
    assert (
        f"{manifest}:6:3: error: ConfigMap/settings data[mode]: must be string (got integer) [manifest]"
        in result.stderr
    )
    assert len(compiled) == 1


def test_watch_exits_with_the_last_runs_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: list[object]
) -> None:
    manifest = tmp_path / "settings.yaml"
    manifest.write_text(GOOD, encoding="utf-8")
    _edits(monkeypatch, manifest, [BAD])
    result = run("validate", str(manifest), "--watch", "--max-cycles", "2")
    assert result.code == 1
    assert result.stderr.count("watching for changes") == 2
    assert len(compiled) == 1


def test_max_cycles_must_be_positive(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text(GOOD, encoding="utf-8")
    result = run("validate", str(tmp_path), "--watch", "--max-cycles", "0")
    assert result.code == 2
    assert "--max-cycles" in result.stderr
