"""Where a repository made by `gpuplan init` installs gpuplan from: the version the user ran.

`gpuplan init --install-from` chooses the source its workflow and pre-commit hook install from:

- `index` (the default): `gpuplan==VERSION` from the package index pip is set up for (PyPI, or
  PIP_INDEX_URL). The caveat: that version must be published there; a source build (a version
  with `+` or `dev`) never is.
- `git`: this repository at its tag `vVERSION`, which must have been pushed.
- the path of a gpuplan wheel of the same version: init copies it into the new repository
  (WHEELS/); the workflow installs it from the checkout, and the pre-commit hook runs the gpuplan
  installed on the machine (`pip install WHEELS/<file>`), since pre-commit installs a hook's
  dependencies in a folder of its own where a path of the repository means nothing
  (pre-commit/pre-commit v4.6.2, pre_commit/languages/python.py: `pip install . <deps>` with the
  store's copy of the hook repository as working directory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gpuplan.cache.key import INPUT_FOLDERS

# Where pre-commit fetches gpuplan's hooks (.pre-commit-hooks.yaml at that repository's root).
HOOK_REPO = "https://github.com/gpuplan/gpuplan"
WHEELS = "wheels"
SOURCES = ("index", "git")  # or the path of a wheel
# Every input folder gpuplan renders from: a change in any of them must re-render.
FILES = f"^({'|'.join(INPUT_FOLDERS)})/"
_HOOK = """\
      - id: gpuplan-render
        name: gpuplan render
        entry: gpuplan render
        language: {language}{dependencies}
        pass_filenames: false
        files: {files}
"""


@dataclass(frozen=True)
class Installation:
    """How a new repository installs gpuplan: pip's argument and the pre-commit `repos:` entry."""

    requirement: str  # as written after `pip install` (quoted when it holds a space)
    pre_commit: str
    wheel: Path | None = None  # to copy into WHEELS/
    caveat: str = ""


def is_release(version: str) -> bool:
    """Tell whether a version can be on an index or a tag (not a local or development build)."""
    return "+" not in version and "dev" not in version


def installation(source: str, version: str) -> Installation:
    """Return how a repository installs gpuplan `version` from `source` (index, git or a wheel)."""
    if source == "index":
        requirement = f"gpuplan=={version}"
        hook = _HOOK.format(
            language="python",
            dependencies=f"\n        additional_dependencies: [{requirement!r}]",
            files=FILES,
        )
        return Installation(requirement, _local(hook), caveat=_unreleased(version, "the index"))
    if source == "git":
        tag = f"v{version}"
        requirement = f'"gpuplan @ git+{HOOK_REPO}@{tag}"'
        entry = (
            f"  - repo: {HOOK_REPO}\n    rev: {tag}\n    hooks:\n"
            f"      - id: gpuplan-render\n        files: {FILES}\n"
        )
        return Installation(requirement, entry, caveat=_unreleased(version, f"tag {tag}"))
    wheel = Path(source)
    if not re.fullmatch(rf"gpuplan-{re.escape(version)}-[^/]*\.whl", wheel.name):
        raise ValueError(
            f"--install-from {source}: expected index, git or the path of a gpuplan {version} "
            f"wheel (gpuplan-{version}-*.whl), the version you are running"
        )
    if not wheel.is_file():
        raise ValueError(f"--install-from {source}: no such file")
    hook = _HOOK.format(language="system", dependencies="", files=FILES)
    return Installation(f"./{WHEELS}/{wheel.name}", _local(hook), wheel)


def _local(hook: str) -> str:
    return f"  - repo: local\n    hooks:\n{hook}"


def _unreleased(version: str, where: str) -> str:
    if is_release(version):
        return ""
    return (
        f"gpuplan {version} is not a release, so {where} cannot have it: run init with "
        f"--install-from PATH of a wheel (`pip wheel --no-deps .` in gpuplan's repository), "
        f"or pin a release"
    )
