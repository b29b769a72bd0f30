"""The input files of a git revision, written into a fresh folder without ever leaving it.

A revision's tree is hostile input: `gpuplan check --base <branch>` and `diff --base` run on a
branch someone else pushed, and git keeps trees that no checkout would make (`git mktree` accepts
entries named `..`, two entries of one name, a link beside a folder of the same name; `git fetch`
keeps them unless fsck is turned on). So, before anything is written:
- every path component is a plain name: not empty, `.` or `..`;
- no two paths meet, also where a disk ignores case (names equal once casefolded): no file twice,
  no file that is also a folder;
- a symbolic link is refused (the working tree's loader refuses links too) and never re-created;
- only the YAML files the loaders read are fetched from git, each at most the loader's bound.
Then each file is created with O_EXCL | O_NOFOLLOW relative to its folder's fd, every folder made
and opened one component at a time with O_NOFOLLOW (gpuplan.writer.safefs), so nothing lands outside
the target even if the checks above missed a case.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuplan.diagnostics import Diagnostic, error
from gpuplan.writer import safefs

LINK_MODE = "120000"
FILE_MODES = ("100644", "100755")
READ = (
    ".yaml",
    ".yml",
)  # what gpuplan.inputs.load and gpuplan.overlay read; the rest is never opened


@dataclass(frozen=True)
class Entry:
    """One blob of `git ls-tree -r -l`: its mode, object name, size and path."""

    mode: str
    blob: str
    size: int
    path: str


class UnsafeTree(Exception):
    """The revision holds entries that cannot be written safely; each is a finding."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(f"{len(diagnostics)} unsafe entries")
        self.diagnostics = diagnostics


def shown(path: str) -> str:
    """Return a path fit for a terminal line (control characters escaped)."""
    return path if path.isprintable() else ascii(path)


def _read(entry: Entry) -> bool:
    name = entry.path.rpartition("/")[2]
    return name.endswith(READ) and not name.startswith(".")


def refusals(entries: Iterable[Entry]) -> list[Diagnostic]:
    """Return an error for each entry that is not a plain file at a path of its own."""
    found: list[Diagnostic] = []
    files: dict[str, str] = {}  # casefolded path -> path
    folders: dict[str, str] = {}
    for entry in entries:
        parts = entry.path.split("/")
        where = shown(entry.path)
        if any(part in ("", ".", "..") for part in parts):
            found.append(error(where, 0, 0, "", "a path component is empty, '.' or '..'"))
            continue
        if entry.mode == LINK_MODE:
            found.append(error(where, 0, 0, "", "a symbolic link: gpuplan does not follow links"))
            continue
        if entry.mode not in FILE_MODES:
            found.append(error(where, 0, 0, "", f"not a regular file (git mode {entry.mode})"))
            continue
        key = entry.path.casefold()
        other = files.get(key) or folders.get(key)
        if other is not None:
            found.append(
                error(
                    where, 0, 0, "", f"the same path as {shown(other)} (names equal but for case)"
                )
            )
            continue
        files[key] = entry.path
        for end in range(1, len(parts)):
            folder = "/".join(parts[:end])
            clash = files.get(folder.casefold())
            if clash is not None:
                found.append(error(where, 0, 0, "", f"{shown(clash)} is a file, not a folder"))
                break
            folders.setdefault(folder.casefold(), folder)
    return found


def export(entries: list[Entry], contents: Callable[[list[str]], list[bytes]], target: Path) -> int:
    """Write the YAML files among entries into target (a new, empty folder); return how many.

    contents(blobs) returns the bytes of the named blobs. Raise UnsafeTree, with nothing written,
    when an entry is refused (see the module's rules).
    """
    problems = refusals(entries)
    wanted = [e for e in entries if _read(e)]
    problems += [
        error(shown(e.path), 0, 0, "", f"file is larger than {safefs.INPUT_BYTES >> 20} MiB")
        for e in wanted
        if e.size > safefs.INPUT_BYTES
    ]
    if problems:
        raise UnsafeTree(problems)
    data = dict(zip((e.path for e in wanted), contents([e.blob for e in wanted]), strict=True))
    base = os.open(target, safefs.DIR_FLAGS)
    try:
        with safefs.Walk(base, create=True) as walk:
            for folder, names in sorted(safefs.by_folder(data).items()):
                fd = walk.open(folder)
                for name in names:
                    _create(fd, name, data[f"{folder}/{name}" if folder else name])
    finally:
        os.close(base)
    return len(data)


def _create(dir_fd: int, name: str, content: bytes) -> None:
    """Create a new file in a folder, never through a link and never over an existing entry."""
    flags = os.O_WRONLY | os.O_CREAT | safefs.NEW_FILE_FLAGS
    with os.fdopen(os.open(name, flags, 0o600, dir_fd=dir_fd), "wb") as handle:
        handle.write(content)
