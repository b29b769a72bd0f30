"""What a render depends on, as one key: inputs by content, gpuplan and the CRDs by identity.

- every file under the input folders (clusters/, tenants/, extra/, patches/, values/), by path
  and content hash; a symbolic link anywhere in them makes the run uncacheable (its target may
  change without the link changing), and so does any other special file (a fifo would block the
  read) or a file larger than any input gpuplan reads. A file's hash is read again unless the
  last record saw the file with the same lstat, taken long enough after its last change (see
  `trusted`);
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
import stat
import sys
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import gpuplan
from gpuplan.writer import safefs
from gpuplan.writer.safefs import Signature, signature

INPUT_FOLDERS = ("clusters", "tenants", "extra", "patches", "values")


class Uncacheable(Exception):
    """The inputs cannot be identified safely: render without the cache."""


def _files(base: str, prefix: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (relative path, entry) of every file under `base`, in name order, folders before
    what follows them (__pycache__ folders left out); raise Uncacheable on a symbolic link."""
    with os.scandir(base) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        if entry.is_symlink():
            raise Uncacheable(f"{entry.path} is a symbolic link")
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                yield from _files(entry.path, f"{relative}/")
            continue
        yield relative, entry


def _tree(digest: hashlib._Hash, base: str) -> None:
    """Feed every file under `base` (relative path, size and mtime) into `digest`."""
    for relative, entry in _files(base):
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
    _tree(digest, os.path.dirname(gpuplan.__file__))
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
        _tree(digest, str(crds))
    return digest.hexdigest()[:32]


class InputFile(NamedTuple):
    """One input file as the stat pass found it."""

    relative: str  # "tenants/ml.yaml"
    path: str  # where to read it
    signature: Signature  # its lstat before it is read


# A file's timestamps are those of a coarse clock (a tick of up to ~10 ms on Linux; 2 s on FAT),
# so a file changed twice within one tick may keep its lstat. A signature is trusted only when
# the file's last change (mtime and ctime) lies this long before the moment the signature was
# taken: any later change then gives the file a newer ctime. The rule git applies to its index
# ("racily clean" entries, Documentation/technical/racy-git.txt in git/git).
SETTLED_NS = 3_000_000_000


def input_files(root: Path) -> list[InputFile]:
    """Return every file under the input folders, in key order, each with its lstat.

    Raises Uncacheable on a symbolic link (a folder or a file).
    """
    found: list[InputFile] = []
    for folder in INPUT_FOLDERS:
        base = root / folder
        if base.is_symlink():
            raise Uncacheable(f"{base} is a symbolic link")
        if base.is_dir():
            for relative, entry in _files(str(base), f"{folder}/"):
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):  # a fifo is never opened: it would block
                    raise Uncacheable(f"{entry.path} is not a regular file")
                found.append(InputFile(relative, entry.path, signature(st)))
    return found


def trusted(signature: Signature, taken_ns: int) -> bool:
    """Tell whether a signature taken at taken_ns still names the content read then (see SETTLED_NS)."""
    return max(signature[2], signature[3]) + SETTLED_NS < taken_ns


def content_digest(path: str) -> str:
    """Return the content hash of one input file (a file larger than any input gpuplan reads,
    such as a stray 1 GiB dump, makes the run uncacheable: it is not read)."""
    data = safefs.read_input(path)
    if len(data) > safefs.INPUT_BYTES:
        raise Uncacheable(f"{path} is larger than {safefs.INPUT_BYTES >> 20} MiB")
    return hashlib.sha256(data).hexdigest()[:32]


def input_digests(files: list[InputFile], known: Mapping[str, str]) -> list[str]:
    """Return each file's content hash: from `known` (relative path -> hash of a file whose
    signature is unchanged and trusted), else read now."""
    return [known.get(f.relative) or content_digest(f.path) for f in files]


def input_key(environment: str, where: str, files: list[InputFile], digests: list[str]) -> str:
    """Return the key of one render: the inputs' content, gpuplan's identity, the output path."""
    digest = hashlib.sha256(f"{environment}\0{where}\0".encode("utf-8", "surrogateescape"))
    for item, content in zip(files, digests, strict=True):
        digest.update(f"{item.relative}\0{content}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]
