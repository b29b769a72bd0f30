"""A spare copy of the output that a long-running render (`render --watch`) keeps beside it, so
that writing a change costs the files that changed, not the whole tree.

A render builds the new tree in a staging folder and swaps it in whole (gpuplan.write): making
every folder and hard-linking every unchanged file of a large output takes most of a small
change's time. The watch instead keeps the old tree the swap gives back and brings it up to date
with the new output while it waits for the next edit: every file a hard link to the output's own
file, every folder the same. The next render patches that spare (unlinks the files that change,
writes their new bytes, unlinks the files no longer rendered) and swaps it in: the same tree a
fresh staging folder would have held, in one atomic step as before.

The spare is used only when nothing can have changed since it was made, else it is removed and
the render stages a fresh tree:
- the output's scan at write time equals the one taken when the spare was made: the same files,
  folders, no links or special files, and each file's lstat signature (inode, size, mtime, ctime)
  unchanged; the spare's files are those same inodes, so their bytes are the output's;
- each folder of the spare has the inode, mtime and ctime it had when it was made: adding,
  removing or renaming an entry changes its folder's mtime and ctime.

A new file is always created with O_EXCL after the old name is unlinked, never opened for
writing in place: an inode the spare shares with the live output is never written.

The spare is named `.<output>.gpuplan-spare-PID`: a killed watch leaves it to the next run's
clean-up (gpuplan.staging), and a watch that ends removes it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuplan import safefs
from gpuplan.staging import SPARE

Stamp = tuple[int, int, int]  # a folder's inode, mtime and ctime


@dataclass(frozen=True)
class Spare:
    """A spare tree beside one output, and what the output and the spare held when it was made."""

    name: str
    files: tuple[str, ...]
    dirs: tuple[str, ...]
    signatures: dict[str, safefs.Signature]
    folders: dict[str, Stamp]  # the spare's folders ("" is its root)


_spares: dict[str, Spare] = {}  # output path (absolute, normalized) -> its spare


def name_for(out_name: str) -> str:
    """Return the spare folder's name of an output folder in this process."""
    return f".{out_name}{SPARE}{os.getpid()}"


def take(parent_fd: int, out: Path, staging: str, tree: safefs.Listing) -> bool:
    """Put the output's spare under the staging name if it is still a copy of `tree`; else remove it.

    `tree` is the output's scan at write time, with each file's lstat. True: the staging folder
    now holds a copy of the output to patch.
    """
    spare = _spares.pop(str(out), None)
    if spare is None:
        return False
    if _current(parent_fd, spare, tree):
        fd = os.open(spare.name, safefs.DIR_FLAGS, dir_fd=parent_fd)
        try:
            os.unlink(IGNORE, dir_fd=fd)  # the copy's own: never swapped into the output
        finally:
            os.close(fd)
        os.rename(spare.name, staging, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        return True
    safefs.remove_tree(parent_fd, spare.name)
    return False


def _current(parent_fd: int, spare: Spare, tree: safefs.Listing) -> bool:
    if tree.links or tree.other or len(tree.stats) != len(tree.files):
        return False
    if tuple(tree.files) != spare.files or tuple(tree.dirs) != spare.dirs:
        return False
    if any(safefs.signature(tree.stats[p]) != spare.signatures[p] for p in spare.files):
        return False
    try:
        fd = os.open(spare.name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return False
    try:
        for relative, stamp in spare.folders.items():
            st = (
                os.fstat(fd)
                if not relative
                else os.stat(relative, dir_fd=fd, follow_symlinks=False)
            )
            if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) != stamp:
                return False
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def patch(
    staging_fd: int,
    unlink: list[str],
    files: dict[str, bytes],
    kept_empty: set[str],
    write_new: Callable[[int, str, bytes], None],
) -> None:
    """Turn a copy of the output into the new tree: unlink what goes or changes, write the new bytes.

    `unlink` are the copy's files the new tree does not hold or holds with new bytes; `files` the
    new bytes to write; folders left empty go, except `kept_empty` (a user's empty folders, which
    a fresh staging folder keeps too).
    """
    gone, new = safefs.by_folder(unlink), safefs.by_folder(files)

    def unlink_in(folders: list[str]) -> None:
        with safefs.Walk(staging_fd) as walk:
            for folder in folders:
                fd = walk.open(folder)
                for name in gone[folder]:
                    os.unlink(name, dir_fd=fd)

    def write_in(folders: list[str]) -> None:
        with safefs.Walk(staging_fd, create=True) as walk:  # folders emptied below come back
            for folder in folders:
                fd = walk.open(folder)
                for name in new[folder]:
                    write_new(fd, name, files[f"{folder}/{name}" if folder else name])

    safefs.by_two_threads(sorted(gone), unlink_in)
    for folder in sorted(gone, key=lambda f: -f.count("/")):
        while folder and folder not in kept_empty:  # as a fresh staging tree would not make it
            try:
                os.rmdir(folder, dir_fd=staging_fd)
            except OSError:
                break  # not empty: neither are its parents
            folder = folder.rpartition("/")[0]
    safefs.by_two_threads(sorted(new), write_in)


def keep(parent: Path, out_name: str, old: str) -> None:
    """Make the old tree a swap gave back into the output's spare (best effort: else remove it)."""
    _adopt(parent, out_name, old)


def ensure(out: Path) -> None:
    """Give an output a spare if it has none (a watch whose first runs wrote nothing)."""
    out = Path(os.path.normpath(out.absolute()))
    if str(out) not in _spares:
        _adopt(out.parent, out.name, None)


def _adopt(parent: Path, out_name: str, old: str | None) -> None:
    """Bring a tree (the old one a swap gave back, or a new empty folder) up to date as the spare."""
    out = Path(os.path.normpath(parent / out_name))
    try:
        parent_fd = os.open(parent, safefs.DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return
    name = name_for(out_name)
    try:
        safefs.remove_tree(parent_fd, name)
        if old is not None:
            os.rename(old, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        else:
            mode = os.stat(out_name, dir_fd=parent_fd, follow_symlinks=False).st_mode
            os.mkdir(name, stat.S_IMODE(mode), dir_fd=parent_fd)
        made = _mirror(parent_fd, out_name, name)
        if made is None:
            safefs.remove_tree(parent_fd, name)
        else:
            _spares[str(out)] = made
    except OSError:
        with contextlib.suppress(OSError):
            safefs.remove_tree(parent_fd, name)
            if old is not None:
                safefs.remove_tree(parent_fd, old)
    finally:
        os.close(parent_fd)


def drop_all() -> list[Path]:
    """Remove every spare of this process; return their outputs (their files' ctimes changed)."""
    outputs = [Path(out) for out in sorted(_spares)]
    for out in outputs:
        spare = _spares.pop(str(out))
        with contextlib.suppress(OSError):
            parent_fd = os.open(out.parent, safefs.DIR_FLAGS & ~os.O_NOFOLLOW)
            try:
                safefs.remove_tree(parent_fd, spare.name)
            finally:
                os.close(parent_fd)
    return outputs


def _mirror(parent_fd: int, out_name: str, name: str) -> Spare | None:
    """Bring a tree up to date with the output (hard links to its files); None if it cannot be."""
    out_fd = os.open(out_name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    spare_fd = os.open(name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    try:
        live, _ = _survey(out_fd)
        if live.links or live.other:
            return None  # links are compared by name only: stage a fresh tree each time
        if IGNORE in live.files:
            return None  # the output's own root .gitignore: the copy could not hide itself
        mine, _ = _survey(spare_fd)
        inodes = {p: live.stats[p].st_ino for p in live.files}
        extra_dirs = set(mine.dirs) - set(live.dirs)
        stale = [
            p
            for p in [*mine.files, *mine.links, *mine.other]
            if (p not in mine.stats or inodes.get(p) != mine.stats[p].st_ino)
            and not _under(p, extra_dirs)
        ]
        for folder in sorted(extra_dirs):
            if not _under(folder, extra_dirs):
                safefs.remove_tree(spare_fd, folder)
        with safefs.Walk(spare_fd) as walk:
            for folder, names in sorted(safefs.by_folder(stale).items()):
                fd = walk.open(folder)
                for entry in names:
                    os.unlink(entry, dir_fd=fd)
        have = {p for p in mine.files if p not in stale and not _under(p, extra_dirs)}
        missing = [p for p in live.files if p not in have]
        with safefs.Walk(out_fd) as src, safefs.Walk(spare_fd, create=True) as dst:
            for folder in live.dirs:
                dst.open(folder)  # a user's empty folder too
            for folder, names in sorted(safefs.by_folder(missing).items()):
                source, target = src.open(folder), dst.open(folder)
                for entry in names:
                    os.link(
                        entry, entry, src_dir_fd=source, dst_dir_fd=target, follow_symlinks=False
                    )
        _write_ignore(spare_fd)
        live, _ = _survey(out_fd)  # as they are now: linking changed every file's ctime
        mine, folders = _survey(spare_fd)
        if IGNORE not in mine.files:
            return None
        mine.files.remove(IGNORE)
        if (
            live.links
            or live.other
            or mine.links
            or mine.other
            or mine.files != live.files
            or mine.dirs != live.dirs
            or any(mine.stats[p].st_ino != live.stats[p].st_ino for p in live.files)
        ):
            return None
        signatures = {p: safefs.signature(live.stats[p]) for p in live.files}
        return Spare(name, tuple(live.files), tuple(live.dirs), signatures, folders)
    finally:
        os.close(out_fd)
        os.close(spare_fd)


IGNORE = ".gitignore"
IGNORE_TEXT = b"# gpuplan render --watch: a copy of the output while it runs, never to commit\n*\n"


def _write_ignore(spare_fd: int) -> None:
    """Hide the copy from git (`git add -A` beside a running watch must not commit it)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(IGNORE, dir_fd=spare_fd)
    fd = os.open(IGNORE, os.O_WRONLY | os.O_CREAT | safefs.NEW_FILE_FLAGS, 0o644, dir_fd=spare_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write(IGNORE_TEXT)


def _under(path: str, folders: set[str]) -> bool:
    """Tell whether a path lies below any of the folders."""
    parent = path.rpartition("/")[0]
    while parent:
        if parent in folders:
            return True
        parent = parent.rpartition("/")[0]
    return False


def _survey(dir_fd: int) -> tuple[safefs.Listing, dict[str, Stamp]]:
    """Scan a tree with every file's lstat, and return each folder's stamp ("" is the root)."""
    listing = safefs.scan(dir_fd, known=lambda relative, st: True)
    folders: dict[str, Stamp] = {}
    for relative in ["", *listing.dirs]:
        st = (
            os.fstat(dir_fd)
            if not relative
            else os.stat(relative, dir_fd=dir_fd, follow_symlinks=False)
        )
        folders[relative] = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    return listing, folders
