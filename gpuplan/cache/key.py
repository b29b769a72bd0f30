"""What a render depends on, as one key: inputs by content, gpuplan and the CRDs by identity.

- every file under the input folders (clusters/, tenants/, extra/, patches/, values/), by path
  and content; a symbolic link anywhere in them makes the run uncacheable (its target may change
  without the link changing);
- gpuplan's version and every file of the installed package by path, size and mtime (what
  Python's own bytecode cache trusts), the Python version and the name (with version) of every
  installed distribution, so an upgrade or an edited source never reuses a record;
- the CRD folder of --crds / GPUPLAN_CRDS by path, size and mtime of each file;
- the output path the Argo CD Applications point at.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

import gpuplan

INPUT_FOLDERS = ("clusters", "tenants", "extra", "patches", "values")


class Uncacheable(Exception):
    """The inputs cannot be identified safely: render without the cache."""


def _tree(digest: hashlib._Hash, base: str, content: bool, prefix: str = "") -> None:
    """Feed every file under `base` (relative path, then content or stat) into `digest`."""
    with os.scandir(base) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        if entry.is_symlink():
            raise Uncacheable(f"{entry.path} is a symbolic link")
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _tree(digest, entry.path, content, f"{relative}/")
            continue
        if content:
            with open(entry.path, "rb") as handle:
                data = handle.read()
            digest.update(f"{relative}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            digest.update(data)
        else:
            st = entry.stat(follow_symlinks=False)
            line = f"{relative}\0{st.st_size}\0{st.st_mtime_ns}\0"
            digest.update(line.encode("utf-8", "surrogateescape"))


def crds_folder(option: Path | None) -> Path | None:
    """Return the CRD folder of --crds, else GPUPLAN_CRDS (as gpuplan.pipeline.crds_folder)."""
    value = os.environ.get("GPUPLAN_CRDS")
    return option if option is not None else (Path(value) if value else None)


@lru_cache(maxsize=1)
def code_key() -> str:
    """Return the identity of gpuplan's code and of every installed distribution (by its version)."""
    digest = hashlib.sha256(f"gpuplan {gpuplan.__version__}\0{sys.version}\0".encode())
    _tree(digest, os.path.dirname(gpuplan.__file__), content=False)
    for entry in sys.path:  # ruamel.yaml, pydantic and the rest: a new version, a new key
        with contextlib.suppress(OSError):
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith(".dist-info"))
            digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def environment_key(option: Path | None) -> str:
    """Return the identity of gpuplan itself and the CRDs it validates against (--crds or GPUPLAN_CRDS)."""
    crds = crds_folder(option)
    digest = hashlib.sha256(f"{code_key()}\0".encode())
    digest.update(f"crds\0{os.path.realpath(crds) if crds else ''}\0".encode())
    if crds is not None and crds.is_dir():
        _tree(digest, str(crds), content=False)
    return digest.hexdigest()[:32]


def input_key(root: Path, environment: str, where: str) -> str:
    """Return the key of one render: the inputs' content, gpuplan's identity, the output path."""
    digest = hashlib.sha256(f"{environment}\0{where}\0".encode("utf-8", "surrogateescape"))
    for folder in INPUT_FOLDERS:
        base = root / folder
        if base.is_symlink():
            raise Uncacheable(f"{base} is a symbolic link")
        digest.update(f"\0{folder}\0".encode())
        if base.is_dir():
            _tree(digest, str(base), content=True)
    return digest.hexdigest()[:32]
