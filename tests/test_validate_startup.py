"""`gpuplan validate` starts without the heavy layers: pydantic, the input model, kubernetes_validate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "pydantic",
    "gpuplan.model.cluster",  # the input models (names and quantities are plain functions)
    "gpuplan.model.tenant",
    "gpuplan.pipeline",
    "kubernetes_validate",
    "prompt_toolkit",
    "typer",
    "importlib.metadata",
    "gpuplan.runtime.workers",
    "gpuplan.gpus",
)


def _modules_after(code: str) -> set[str]:
    """Run code in a fresh interpreter; return the names in its sys.modules."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("code", ["import gpuplan.commands.validate", "import gpuplan.cli"])
def test_validate_command_imports_nothing_heavy(code: str) -> None:
    loaded = _modules_after(code)
    assert not [
        name for name in loaded for heavy in HEAVY if name == heavy or name.startswith(heavy + ".")
    ]


def test_validate_run_with_cel_imports_no_repl_nor_model(tmp_path: Path) -> None:
    manifest = tmp_path / "queue.yaml"
    manifest.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: a100\n",
        encoding="utf-8",
    )
    code = (
        "import sys\nfrom gpuplan.commands.validate import validate\n"
        f"from pathlib import Path\nassert validate([Path({str(manifest)!r})], None, None, 'text', False) == 0\n"
    )
    loaded = _modules_after(code)
    assert "cel" in loaded
    assert not [
        name for name in loaded for heavy in HEAVY if name == heavy or name.startswith(heavy + ".")
    ]


def test_cel_cli_still_importable_after_the_lazy_import() -> None:
    loaded = _modules_after("import gpuplan.validate.cel\nimport cel.cli")
    assert "cel.cli" in loaded


def test_old_import_paths_still_work() -> None:
    from gpuplan.commands import Options, render_fleet
    from gpuplan.model.common import DNS1123_SUBDOMAIN, LABEL_NAME, LABEL_VALUE
    from gpuplan.model.names import DNS1123_SUBDOMAIN as moved
    from gpuplan.validate import CrdIndex, Validator, check_references, newest

    assert DNS1123_SUBDOMAIN is moved and LABEL_NAME.fullmatch("a.b") and LABEL_VALUE.fullmatch("")
    assert callable(render_fleet) and Options(Path(".")).output == Path("output")
    assert CrdIndex and Validator and check_references and newest()
    with pytest.raises(AttributeError):
        import gpuplan.validate as package

        package.no_such_name  # noqa: B018


def test_version_is_still_printed() -> None:
    from tests.conftest import run

    result = run("--version")
    assert result.code == 0
    assert (
        result.stdout.startswith("gpuplan, version ")
        and result.stdout.strip() != "gpuplan, version"
    )
