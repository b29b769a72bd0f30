"""`gpuplan init`: a new fleet repository with an example, its CI workflow and pre-commit hook."""

from __future__ import annotations

import shutil
import sys
from importlib.resources import files
from pathlib import Path

from gpuplan import __version__
from gpuplan.commands.installation import WHEELS, Installation, installation
from gpuplan.commands.options import Options
from gpuplan.commands.render import render_fleet
from gpuplan.exitcode import ExitCode

# Repository path -> the template in gpuplan/templates it is written from.
FILES = {
    "clusters/gpu-cluster.yaml": "init-cluster.yaml",
    "tenants/team-a.yaml": "init-tenant.yaml",
    "README.md": "init-README.md",
    "extra/README.md": "init-extra-README.md",  # own manifests (gpuplan.overlay)
    ".github/workflows/gpuplan.yml": "init-workflow.yml",
    ".pre-commit-config.yaml": "init-pre-commit-config.yaml",
    ".gitignore": "init-gitignore",
}
INPUT_FOLDERS = ("clusters", "tenants")


def template_text(name: str, how: Installation | None = None) -> str:
    """Return an init template with how to install gpuplan filled in (default: from the index)."""
    how = how or installation("index", __version__)
    text = (files("gpuplan") / "templates" / name).read_text(encoding="utf-8")
    return text.replace("__GPUPLAN_REQUIREMENT__", how.requirement).replace(
        "__GPUPLAN_HOOKS__", how.pre_commit.rstrip("\n")
    )


def _refusal(target: Path) -> str | None:
    """Return why init must not write into target, or None when it may."""
    if target.exists() and not target.is_dir():
        return f"{target} exists and is not a folder"
    taken = [f"{name}/" for name in INPUT_FOLDERS if (target / name).exists()]
    if taken:
        return f"{target} already has {' and '.join(taken)}: gpuplan init only creates new repositories"
    return None


def _write_new(path: Path, text: str) -> bool:
    """Create a file that does not exist yet; return False (and leave it alone) if it does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        return False
    return True


def init_repo(target: Path, source: str = "index") -> int:
    """Create a gpuplan repository in target (new or without inputs), render it, return the exit code.

    Its workflow and pre-commit hook install this gpuplan's version from source: the package
    index, this repository's git tag, or the path of a wheel (gpuplan.commands.installation).
    """
    try:
        how = installation(source, __version__)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.USAGE
    reason = _refusal(target)
    if reason is not None:
        sys.stderr.write(f"error: {reason}; nothing was written\n")
        return ExitCode.FAILED
    kept = [
        relative
        for relative, name in FILES.items()
        if not _write_new(target / relative, template_text(name, how))
    ]
    for relative in kept:
        sys.stderr.write(f"kept your {relative} (gpuplan init never overwrites a file)\n")
    if how.wheel is not None:
        (target / WHEELS).mkdir(exist_ok=True)
        shutil.copyfile(how.wheel, target / WHEELS / how.wheel.name)
    sys.stderr.write(f"created a gpuplan repository in {target}\n")
    if how.caveat:
        sys.stderr.write(f"note: {how.caveat}\n")
    code = render_fleet(Options(root=target))
    if code != ExitCode.OK:
        return code
    sys.stderr.write(
        "next: edit clusters/ and tenants/, run `gpuplan render`, and commit clusters/, tenants/ and output/\n"
    )
    return ExitCode.OK
