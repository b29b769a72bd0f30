"""The output folder against a render's record: what differs, found by stat and, when stat differs, by content.

A recorded file whose (inode, size, mtime, ctime) is unchanged is the file gpuplan wrote (ctime
cannot be set back by any tool short of changing the clock); any other file is read and hashed,
so a hand edit is always found. Entries are reached through directory fds, never through links.
"""

from __future__ import annotations

import itertools
import operator
import os
import stat
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from gpuplan.runtime import workers
from gpuplan.writer import safefs
from gpuplan.writer.safefs import Signature as Signature  # re-exported: the record uses output.*
from gpuplan.writer.safefs import signature
from gpuplan.writer.tree import Changes, OutputTree, digest, owned_in, read_tree, refuse_unsafe


def stat_files(out: Path, paths: Iterable[str]) -> dict[str, Signature]:
    """Return the signature of files below the output folder (never through a link)."""
    root = os.open(out, safefs.DIR_FLAGS)
    try:
        return {
            relative: signature(os.stat(name, dir_fd=fd, follow_symlinks=False))
            for fd, name, relative in safefs.each_file(root, paths)
        }
    finally:
        os.close(root)


def same_files(
    out: Path,
    recorded: dict[str, tuple[str, Signature]],
    signatures: Mapping[str, Signature] | None = None,
) -> tuple[set[str], dict[str, Signature]]:
    """Return the recorded files still on disk as recorded (by signature, else by content).

    Also returns the new signatures of the files found the same by content (worth recording).
    `signatures` holds those already taken (the scan's: OutputTree.signatures); the others are
    taken here.
    """
    seen: dict[str, Signature] = {}
    known = signatures or {}
    # one C-level pass (a warm render's every file): each path whose signature is the recorded one
    found = map(operator.eq, map(known.get, recorded), map(_SECOND, recorded.values()))
    same = set(itertools.compress(recorded, found))
    if len(same) == len(recorded):
        return same, seen
    unsure = {p: entry for p, entry in recorded.items() if p not in same}
    root = os.open(out, safefs.DIR_FLAGS)
    try:
        for fd, name, relative in safefs.each_file(root, unsure):
            content, before = unsure[relative]
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if signature(st) == before:
                same.add(relative)
            elif stat.S_ISREG(st.st_mode) and _holds(fd, name, content):
                same.add(relative)
                seen[relative] = signature(st)
    finally:
        os.close(root)
    return same, seen


def _holds(fd: int, name: str, content: str) -> bool:
    """Tell whether a regular file holds the recorded content (never through a link)."""
    return digest(safefs.read_all(fd, name)) == content


class _Differs(Exception):
    """The output is not exactly as recorded."""


def as_recorded(
    out: Path, recorded: dict[str, Signature], folders: Collection[str] | None = None
) -> bool:
    """Tell whether the output holds exactly the recorded files, each with its recorded lstat,
    and no other file, link or special entry; with `folders`, also exactly those folders (else
    folders, empty or not, are not compared).

    The quick answer of the common case, one pass and nothing read: when it is False, the full
    comparison (`changes`) finds and words what differs. The output itself is opened with
    O_NOFOLLOW, and every folder below it relative to its parent, as everywhere in the writer.
    """
    try:
        fd = os.open(out, safefs.DIR_FLAGS)
    except OSError:
        return False
    expected = frozenset(folders) if folders is not None else None
    try:
        with os.scandir(fd) as listing:
            top = sorted(e.name for e in listing if e.is_dir(follow_symlinks=False))
        # The top folder's own files here; its folders split over two cores (every other one).
        mine, theirs = workers.both(
            lambda: _count(fd, recorded, expected, top[::2], top=True),
            lambda: _count(fd, recorded, expected, top[1::2]),
            short=True,
        )
        wanted = len(recorded) + (len(expected) if expected is not None else 0)
        return -1 not in (mine, theirs) and mine + theirs == wanted
    except OSError:
        return False
    finally:
        os.close(fd)


def _count(
    fd: int,
    recorded: dict[str, Signature],
    folders: frozenset[str] | None,
    names: list[str],
    top: bool = False,
) -> int:
    """Count the recorded files (and with `folders`, the folders) found as recorded in some of
    the top folder's folders (and with `top`, its own files); -1 when anything differs."""
    try:
        count = _matched(fd, "", recorded, folders, files_only=True) if top else 0
        for name in names:
            count += _below(fd, name, "", recorded, folders)
    except (_Differs, OSError):
        return -1
    return count


def _below(
    dir_fd: int,
    name: str,
    prefix: str,
    recorded: dict[str, Signature],
    folders: frozenset[str] | None,
) -> int:
    """_matched in the folder `name` of a folder (counted itself with `folders`)."""
    count = 0
    if folders is not None:
        if prefix + name not in folders:
            raise _Differs(prefix + name)
        count = 1
    child = os.open(name, safefs.DIR_FLAGS, dir_fd=dir_fd)
    try:
        return count + _matched(child, f"{prefix}{name}/", recorded, folders)
    finally:
        os.close(child)


def _matched(
    dir_fd: int,
    prefix: str,
    recorded: dict[str, Signature],
    folders: frozenset[str] | None,
    files_only: bool = False,
) -> int:
    """Count the recorded files (and folders) below a folder found as recorded; raise _Differs
    on anything else (with `files_only`, the folder's subfolders are left alone)."""
    count = 0
    with os.scandir(dir_fd) as listing:
        entries = list(listing)
    get = recorded.get
    for entry in entries:  # files first: nearly every entry is one
        if entry.is_file(follow_symlinks=False):
            if signature(entry.stat(follow_symlinks=False)) != get(prefix + entry.name):
                raise _Differs(prefix + entry.name)  # (a path not recorded: None)
            count += 1
            continue
        if not entry.is_dir(follow_symlinks=False):
            raise _Differs(prefix + entry.name)  # a link or a special file
        if not files_only:
            count += _below(dir_fd, entry.name, prefix, recorded, folders)
    return count


_SECOND = operator.itemgetter(1)


def changes(
    out: Path, recorded: dict[str, tuple[str, Signature]], scope: tuple[str, ...] = ()
) -> tuple[Changes, dict[str, Signature], OutputTree]:
    """Compare the output on disk with the recorded files; refuse an output gpuplan must not write.

    Returns the changes a render would make, the new signatures of files found the same by
    content, and the output tree. Raises WriteError as gpuplan.writer.tree.compare does, OSError when
    the output cannot be read.
    """

    def as_recorded(relative: str, st: os.stat_result) -> bool:
        # A file whose lstat is the one recorded is the file gpuplan wrote (see the module doc):
        # its first bytes (gpuplan's mark) need not be read.
        entry = recorded.get(relative)
        return entry is not None and signature(st) == entry[1]

    tree = read_tree(out, known=as_recorded)
    refuse_unsafe(out, tree, recorded)
    owned = owned_in(tree, scope)
    present = {p: recorded[p] for p in recorded if p in owned}
    same, seen = same_files(out, present, tree.signatures) if present else (set(), {})
    added = sorted(p for p in recorded if p not in owned)
    changed = sorted(p for p in present if p not in same)
    removed = sorted(p for p in owned if p not in recorded)
    return Changes(added, changed, removed), seen, tree
