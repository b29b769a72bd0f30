"""A repository's inputs at a git revision, read from git's object store.

The working tree, the index and HEAD are never touched: `diff --base` and `check --base` read
the revision's input folders and export them into a temporary folder.
"""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

from gpuplan.inputs import snapshot

# the input folders: the fleet, then the overlay (gpuplan.overlay.FOLDERS: extra/, patches/, values/)
INPUT_FOLDERS = ("clusters", "tenants", "extra", "patches", "values")


class UsageError(Exception):
    """The command was called wrongly, or REF names no commit (exit 2)."""


def _git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git in the repository at root."""
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, check=False
        )
    except FileNotFoundError as exc:
        raise UsageError("--base needs git, which is not installed") from exc


def repository_path(folder: Path) -> str:
    """Return a folder's path inside its git repository (`.` at the top or outside any repository)."""
    try:
        found = _git(folder, "rev-parse", "--show-prefix")
    except UsageError:
        return "."
    prefix = (
        found.stdout.decode(errors="replace").strip().rstrip("/") if found.returncode == 0 else ""
    )
    return prefix or "."


def resolve(root: Path, ref: str) -> str:
    """Return the commit a REF names, or raise UsageError."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--base {ref!r}: not a git revision")
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"--base needs a git repository: {root} is not inside one")
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(f"--base {ref}: no such commit in the git repository at {root}")
    return found.stdout.decode().strip()


def _listing(root: Path, commit: str) -> list[snapshot.Entry]:
    """Return every blob under the input folders at a commit (paths relative to root)."""
    found = _git(root, "ls-tree", "-r", "-l", "-z", commit, "--", *INPUT_FOLDERS)
    if found.returncode != 0:
        raise UsageError(f"git ls-tree {commit}: {found.stderr.decode(errors='replace').strip()}")
    out = []
    for record in found.stdout.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, kind, blob, size = meta.decode().split()
            if kind == "blob":
                out.append(snapshot.Entry(mode, blob, int(size), os.fsdecode(path)))
    return out


def _blobs(root: Path, blobs: list[str]) -> list[bytes]:
    """Return the contents of blobs, read in one `git cat-file --batch`."""
    if not blobs:
        return []
    found = _git(root, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
    out, data, position = [], found.stdout, 0
    for _ in blobs:
        end = data.index(b"\n", position)
        size = int(data[position:end].split(b" ")[2])
        out.append(data[end + 1 : end + 1 + size])
        position = end + 1 + size + 1
    return out


def export_inputs(root: Path, commit: str, target: Path) -> int:
    """Write the input files as they are at a commit into target (gpuplan.inputs.snapshot: a
    hostile tree raises snapshot.UnsafeTree); return the file count."""
    return snapshot.export(_listing(root, commit), partial(_blobs, root), target)
