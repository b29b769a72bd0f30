"""File operations that never leave a folder: every step is taken relative to a directory fd.

The writer must never write, rename or delete anything outside the output folder, whatever links,
files or permissions it finds there. Paths are therefore never resolved by the kernel in one go:
each folder is opened component by component with O_NOFOLLOW, and files are created with
O_EXCL | O_NOFOLLOW relative to their folder's fd, so a symbolic link is never followed, even one
that appears between a check and the write.
"""

from __future__ import annotations

import contextlib
import errno
import operator
import os
import shutil
import signal
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class Listing:
    """Every entry under a folder, by relative path with '/', found without following links."""

    files: list[str] = field(default_factory=list)  # regular files
    dirs: list[str] = field(default_factory=list)  # real folders (not links)
    links: list[str] = field(default_factory=list)  # symbolic links, dangling or not
    other: list[str] = field(default_factory=list)  # fifos, sockets, devices
    read_only: list[str] = field(default_factory=list)  # folders whose owner may not write
    heads: dict[str, bytes] = field(default_factory=dict)  # regular file -> its first bytes
    stats: dict[str, os.stat_result] = field(default_factory=dict)  # regular file -> its lstat
    vouched: set[str] = field(default_factory=set)  # files `known` vouched for: head not read
    _kinds: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def kind(self, relative: str) -> str | None:
        """Return 'file', 'dir', 'link' or 'other' for an entry, or None if there is none."""
        if len(self._kinds) != len(self.files) + len(self.dirs) + len(self.links) + len(self.other):
            self._kinds.clear()
            for name, entries in (
                ("file", self.files),
                ("dir", self.dirs),
                ("link", self.links),
                ("other", self.other),
            ):
                self._kinds.update(dict.fromkeys(entries, name))
        return self._kinds.get(relative)


def writable(st: os.stat_result) -> bool:
    """Tell whether a folder's mode lets its owner write (root included: a read-only folder is a wish)."""
    return bool(st.st_mode & stat.S_IWUSR)


# Given a regular file's relative path and lstat, whether its first bytes are already known.
Known = Callable[[str, os.stat_result], bool]
Signature = tuple[int, int, int, int]


# one C call: quick for a pass over many files
SIGNATURE: Callable[[os.stat_result], Signature] = operator.attrgetter(
    "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"
)


# What identifies an unchanged file without reading it: its lstat's (inode, size, mtime, ctime).
# ctime cannot be set back by any tool short of changing the clock, so a file whose lstat gives
# the same four numbers holds the bytes it held when they were taken.
signature = SIGNATURE


def scan(
    dir_fd: int,
    head: int = 0,
    known: Known | None = None,
    opened: Callable[[int, str | None], object] | None = None,
) -> Listing:
    """List everything under an open folder without following any link (and each file's first bytes).

    With `known`, each regular file's lstat is kept in `stats`, and the first bytes of the files
    `known` vouches for are not read (the render cache: a file whose stat is as recorded).
    `opened` is given each folder's fd (the folder's own first) before its entries are listed,
    and each regular file's folder fd and name before its lstat is taken.
    """
    listing = Listing()
    _scan(dir_fd, "", listing, head, known, opened)
    for entries in (listing.files, listing.dirs, listing.links, listing.other, listing.read_only):
        entries.sort()
    return listing


def _scan(
    dir_fd: int,
    prefix: str,
    listing: Listing,
    head: int,
    known: Known | None,
    opened: Callable[[int, str | None], object] | None,
) -> None:
    if opened is not None:
        opened(dir_fd, None)
    with os.scandir(dir_fd) as entries:
        found = list(entries)  # in the folder's order: scan sorts every list at the end
    for entry in found:
        relative = prefix + entry.name
        if entry.is_symlink():
            listing.links.append(relative)
        elif entry.is_dir(follow_symlinks=False):
            listing.dirs.append(relative)
            if not writable(entry.stat(follow_symlinks=False)):
                listing.read_only.append(relative)
            child = os.open(entry.name, DIR_FLAGS, dir_fd=dir_fd)
            try:
                _scan(child, relative + "/", listing, head, known, opened)
            finally:
                os.close(child)
        elif entry.is_file(follow_symlinks=False):
            listing.files.append(relative)
            if opened is not None:
                opened(dir_fd, entry.name)
            if known is not None:
                st = listing.stats[relative] = entry.stat(follow_symlinks=False)
                if known(relative, st):
                    listing.vouched.add(relative)
                    continue
            if head:
                with contextlib.suppress(
                    OSError
                ):  # unreadable: its owner's, carried over untouched
                    listing.heads[relative] = read_head(dir_fd, entry.name, head)
        else:
            listing.other.append(relative)


def open_dir(base_fd: int, relative: str, create: bool = False) -> int:
    """Open a folder below `base_fd` one component at a time, never through a link."""
    fd = os.dup(base_fd)
    try:
        for part in relative.split("/") if relative else []:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


class Walk:
    """Open folders below a base fd, visited in sorted order: each component is opened (and with
    `create` made) once while the walk stays below it, never through a link.

    The fd open returns belongs to the walk: it stays open until the walk leaves that folder.
    """

    def __init__(self, base_fd: int, create: bool = False) -> None:
        self.base_fd, self.create = base_fd, create
        self._open: list[tuple[str, int]] = []  # the folders from the base down to the last one

    def open(self, relative: str) -> int:
        """Return an fd of a folder below the base (the base itself for "")."""
        while self._open and not _below(relative, self._open[-1][0]):
            os.close(self._open.pop()[1])
        done, fd = self._open[-1] if self._open else ("", self.base_fd)
        rest = relative[len(done) + 1 :] if done else relative
        for part in rest.split("/") if rest else []:
            if self.create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            done = f"{done}/{part}" if done else part
            self._open.append((done, fd))
        return fd

    def close(self) -> None:
        """Close every folder the walk holds open."""
        while self._open:
            os.close(self._open.pop()[1])

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _below(relative: str, folder: str) -> bool:
    return relative == folder or relative.startswith(f"{folder}/")


def read_head(dir_fd: int, name: str, size: int) -> bytes:
    """Return the first bytes of a regular file in a folder (never through a link)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_all(dir_fd: int, name: str) -> bytes:
    """Return a regular file's bytes (never through a link)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


INPUT_BYTES = (
    4 * 1024 * 1024
)  # no input file is read beyond this (gpuplan.inputs.load refuses larger)


class NotRegular(OSError):
    """An input path is a link, a fifo, a socket or a device: gpuplan never opens it."""


def read_input(path: str | os.PathLike[str]) -> bytes:
    """Return a regular file's bytes, at most INPUT_BYTES + 1 of them (so a caller can tell it is
    too large), never through a link and never blocking on a fifo or device.

    Raise NotRegular for anything but a regular file (a special file is not even opened), or
    OSError when it cannot be read.
    """
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise NotRegular(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the lstat
            raise NotRegular(path)
        return handle.read(INPUT_BYTES + 1)


def by_folder(paths: Iterable[str]) -> dict[str, list[str]]:
    """Group relative paths by their folder ("a/b/c.yaml" -> "a/b": ["c.yaml"]), so each is opened once."""
    groups: dict[str, list[str]] = {}
    for relative in paths:
        folder, _, name = relative.rpartition("/")
        groups.setdefault(folder, []).append(name)
    return groups


def each_file(base_fd: int, relatives: Iterable[str]) -> Iterator[tuple[int, str, str]]:
    """Yield (folder fd, name, relative path) for files below a folder, opening each folder once
    (never through a link); the fd is valid until the next item."""
    with Walk(base_fd) as walk:
        for folder, names in sorted(by_folder(relatives).items()):
            fd = walk.open(folder)
            for name in names:
                yield fd, name, f"{folder}/{name}" if folder else name


THREADS_FROM = 64  # folders; below this a second thread costs more than it saves


def by_two_threads(folders: list[str], work: Callable[[list[str]], None]) -> None:
    """Run work(part) over two halves of the folders (every other one) in two threads.

    Creating and unlinking files is the kernel's work, done with the GIL released: two threads
    over different folders take about half the time (seen here: 2,000 folders, one new file each,
    110-200 us a file on one thread, 60 us on two). Each half opens its own folders; a folder
    both halves make (a shared parent) is made once, the other mkdir finding it there. The call
    returns once both halves are done, even when one fails or a signal arrives (its exception is
    then raised): nothing is written after it returns.
    """
    if len(folders) < THREADS_FROM:
        work(folders)
        return
    import concurrent.futures  # (not at import: `render --check` starts without it)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as other:
        second = other.submit(work, folders[1::2])
        try:
            work(folders[0::2])
        finally:
            concurrent.futures.wait([second])
        second.result()


def read_files(base_fd: int, relatives: list[str]) -> dict[str, bytes]:
    """Return the bytes of regular files below a folder, opening each folder once."""
    return {relative: read_all(fd, name) for fd, name, relative in each_file(base_fd, relatives)}


def carry_over(src_fd: int, dst_fd: int, name: str) -> None:
    """Put an entry of one folder into another: a hard link, else a copy; a link stays a link."""
    try:
        os.link(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        return
    except OSError:
        pass  # another file system, or protected_hardlinks for a file someone else owns
    st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
        return
    source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
    with os.fdopen(source, "rb") as reader:
        target = os.open(
            name, os.O_WRONLY | os.O_CREAT | NEW_FILE_FLAGS, stat.S_IMODE(st.st_mode), dir_fd=dst_fd
        )
        with os.fdopen(target, "wb") as writer:
            shutil.copyfileobj(reader, writer)


def remove_big_tree(parent_fd: int, name: str) -> None:
    """Remove a folder below `parent_fd` as remove_tree does, its second-level folders (an old
    output's `<cluster>/<component>`) in two threads first (by_two_threads: unlinking is the
    kernel's work, done without the GIL)."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        remove_tree(parent_fd, name)
        return
    try:
        second = [f"{top}/{sub}" for top in _folders_at(fd, "") for sub in _folders_at(fd, top)]

        def remove(folders: list[str]) -> None:
            with Walk(fd) as walk:
                for folder in folders:
                    top, _, sub = folder.partition("/")
                    with contextlib.suppress(OSError):
                        shutil.rmtree(sub, dir_fd=walk.open(top), ignore_errors=True)

        by_two_threads(second, remove)
    finally:
        os.close(fd)
    remove_tree(parent_fd, name)  # the rest


def _folders_at(base_fd: int, relative: str) -> list[str]:
    """Return the names of the real folders (not links) in a folder below base_fd, sorted."""
    try:
        fd = open_dir(base_fd, relative)
    except OSError:
        return []
    try:
        with os.scandir(fd) as listing:
            return sorted(e.name for e in listing if e.is_dir(follow_symlinks=False))
    finally:
        os.close(fd)


def remove_tree(parent_fd: int, name: str) -> None:
    """Remove a folder below `parent_fd` (shutil's fd-based walk never follows links)."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=parent_fd, ignore_errors=True)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (they arrive afterwards) around steps that must not stop halfway."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def open_home(home: Path, create: bool) -> int:
    """Open the cache folder: made private (0700), never a link, and only if it is the user's own.

    What the cache holds decides what is rendered, so a folder another user owns or may write
    to is not trusted (as ssh treats ~/.ssh): OSError, and the run goes without the cache.
    """
    if create:
        home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    parent = os.open(home.parent, DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(home.name, 0o700, dir_fd=parent)
        fd = os.open(home.name, DIR_FLAGS, dir_fd=parent)
    finally:
        os.close(parent)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        raise OSError(errno.EPERM, "not a private folder of this user", str(home))
    return fd


def replace(dir_fd: int, data: bytes, name: str) -> None:
    """Write a file of a folder in one step: a temporary file renamed over it."""
    temporary = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=dir_fd)
    try:
        out = os.open(temporary, os.O_WRONLY | os.O_CREAT | NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
