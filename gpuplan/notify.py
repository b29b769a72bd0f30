"""Tell, without looking at every file, whether anything in a set of folders changed: Linux inotify.

`render --watch` keeps a spare copy of the output (gpuplan.spare) and records what both trees hold
while it waits. Proving at the next run that both still hold it by stat takes one lstat per file
(two trees of 18k files: ~0.1 s); a Watch instead asks the kernel to queue an event for every
change in each watched folder, so the proof is one non-blocking read of an empty queue.

A folder's watch reports (inotify(7)) an entry made, removed or renamed in it (IN_CREATE,
IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO), a file in it written or truncated (IN_MODIFY,
IN_CLOSE_WRITE), the metadata of the folder or of a file in it changed, a chmod, a touch or a new
hard link included (IN_ATTRIB), and the folder itself removed or renamed (IN_DELETE_SELF,
IN_MOVE_SELF). A folder's watch sees a change made through a name in it only: a file written
through a hard link in another folder is an event only on the file's own watch, so each file is
watched too (its inode, through any name: a new link to it changes its link count, IN_ATTRIB).
A full queue queues IN_Q_OVERFLOW instead. Any event at all spoils the watch for good: the
caller then proves by stat, as without it.

What inotify does not see, and how that is kept out:
- writes through a shared mmap(2) (inotify(7), "Limitations and caveats") of a file mapped
  before the watch began: a file opened for writing after it is an event when closed
  (IN_CLOSE_WRITE); editors and git write(2);
- changes made by another host to a network file system: a watch is made only on a local file
  system, by its statfs(2) type (LOCAL below);
- a folder put in place of a watched one under its name (the watched one moved away first: that
  move is an event); the caller compares the roots' inode with the recorded one too.
A watch is added through /proc/self/fd/N of a folder the caller opened (never through a link), so
it is on the very folder scanned; or, in a thread whose working folder is its own, by name from
that folder, made the open folder first (`own_folder`). Anything unexpected (no inotify, no
/proc, no room for more watches) gives no Watch: the caller proves by stat.

Watches are the user's to share: fs.inotify.max_user_watches bounds them per user, across every
process (inotify(7), "/proc interfaces"), and an editor or a file syncer that finds none left stops
seeing changes. A Watch therefore holds at most a quarter of that limit (`budget`), and one that
would need more, or that the kernel refuses one, lets all of its watches go at once. A forked
worker that adds watches to the same instance (its copy of the descriptor) counts a share of the
budget of its own (`divide`); its watches go once the Watch is closed and the worker is done.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import ctypes

T = TypeVar("T")

# The event bits and flags: linux include/uapi/linux/inotify.h (and inotify(7)).
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
# Every change of an entry of a folder or of the watched folder or file itself (reads are not
# events); MASK: of a folder only.
CHANGES = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
MASK = CHANGES | IN_ONLYDIR
IN_DONT_FOLLOW = 0x02000000
# A file's own watch: its inode changed through any of its names, or given another name (a hard
# link made in a folder not watched changes its link count: IN_ATTRIB).
FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_DONT_FOLLOW

# statfs(2) f_type of the local file systems whose every change the kernel reports to inotify
# (linux include/uapi/linux/magic.h): ext2/3/4, xfs, btrfs, tmpfs, f2fs.
LOCAL = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010})


class _Libc:
    """libc's inotify and fstatfs calls, looked up once (None when not there)."""

    calls: ctypes.CDLL | None = None
    tried = False

    @classmethod
    def get(cls) -> ctypes.CDLL | None:
        if not cls.tried:
            cls.tried = True
            import ctypes  # (not at import: a cached `render --check` watches nothing)

            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                for name in ("inotify_init1", "inotify_add_watch", "fstatfs"):
                    getattr(libc, name)
                libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
                cls.calls = libc
        return cls.calls


def libc() -> ctypes.CDLL | None:
    """Return libc with its inotify calls typed, or None when there is no inotify."""
    return _Libc.get()


def local(fd: int) -> bool:
    """Tell whether an open folder is on a local file system whose changes inotify reports."""
    libc = _Libc.get()
    if libc is None:
        return False
    import ctypes

    buffer = ctypes.create_string_buffer(256)  # struct statfs (120 bytes on 64-bit Linux)
    if libc.fstatfs(fd, buffer) != 0:
        return False
    f_type = struct.unpack_from("l", buffer.raw)[0] & 0xFFFFFFFF  # __fsword_t, first
    return f_type in LOCAL


MAX_USER_WATCHES = "/proc/sys/fs/inotify/max_user_watches"


def budget() -> int:
    """Return how many watches one Watch may hold: a quarter of the user's limit (0 when unknown)."""
    try:
        with open(MAX_USER_WATCHES, "rb") as handle:
            return max(0, int(handle.read()) // 4)
    except (OSError, ValueError):
        return 0


class Watch:
    """An inotify instance over some folders; `quiet` while no event has been queued since."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._spoiled = False
        self._left = budget()  # watches it may still add

    @classmethod
    def start(cls) -> Watch | None:
        """Return a new Watch with no folder yet, or None when inotify is not there."""
        libc = _Libc.get()
        if libc is None or not os.path.isdir("/proc/self/fd"):
            return None
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        return cls(fd) if fd >= 0 else None

    def add(self, dir_fd: int, name: str | None = None, here: bool = False) -> bool:
        """Watch an open folder (the very one: through /proc/self/fd), or with `name` the file of
        that name in it (never through a link); False (and the watch spoiled) when it cannot be
        watched.

        With `here`, the folder is first made the working folder and named from it ("." or the
        file's name): only in a thread whose working folder is its own (`own_folder`).
        inotify_add_watch(2) has no *at form, and a path through /proc/self/fd/N takes the
        kernel's lookup several steps more (measured: 18k files, 0.125 s against 0.07 s).
        """
        libc = _Libc.get()
        if self._fd is None or libc is None or (name is None and not local(dir_fd)):
            self._spoiled = True
            return False
        if self._left <= 0:  # more than its share of the user's watches: let them all go
            self.close()
            return False
        self._left -= 1
        if here:
            os.fchdir(dir_fd)
            path = b"." if name is None else name.encode("utf-8", "surrogateescape")
        elif name is None:
            path = f"/proc/self/fd/{dir_fd}".encode()
        else:
            path = f"/proc/self/fd/{dir_fd}/{name}".encode("utf-8", "surrogateescape")
        if libc.inotify_add_watch(self._fd, path, MASK if name is None else FILE_MASK) < 0:
            self.close()  # ENOSPC (the user's watches are used up): give back those it took
            return False
        return True

    def divide(self) -> tuple[int, int]:
        """Split what the Watch may still add into two shares, and hold neither until `take`
        gives one back: two scans at once, one in a forked worker (gpuplan.twocores) whose copy
        of the Watch counts apart from this one, never hold more than the Watch may.

        The second share is the larger (by one when the count is odd)."""
        left, self._left = self._left, 0
        return left // 2, left - left // 2

    def take(self, share: int) -> None:
        """Let the Watch add `share` more watches (one of the shares `divide` gave)."""
        self._left += share

    def intact(self) -> bool:
        """Tell whether every watch asked for was added (the queue is not read: a forked
        worker's read would take the events its parent's `quiet` must see)."""
        return self._fd is not None and not self._spoiled

    def quiet(self) -> bool:
        """Tell whether no event was queued since the folders were watched (reads the queue)."""
        if self._fd is None or self._spoiled:
            return False
        try:
            if os.read(self._fd, 65536):
                self._spoiled = True
        except BlockingIOError:
            return True  # nothing queued
        except OSError:
            self._spoiled = True
        return not self._spoiled

    def spend(self) -> None:
        """Never be quiet again (the caller is about to change what is watched)."""
        self._spoiled = True

    def close(self) -> None:
        """Stop watching (the watch is then never quiet)."""
        self._spoiled = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


CLONE_FS = 0x200  # linux include/uapi/linux/sched.h: the working folder (and root, umask) shared


def own_folder(job: Callable[[bool], T]) -> T:
    """Return job(own) run in a new thread, `own` telling whether the thread's working folder
    is its own (unshare(2) CLONE_FS, refused by some sandboxes): then it may change it (`add`
    with `here`) and no other thread's moves. The thread's folder goes with it.

    Returns only once the thread is done, even when a signal comes meanwhile (its exception is
    then raised): nothing is watched after the call.
    """
    import threading  # (not at import: a cached `render --check` watches nothing)

    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        libc, own = _Libc.get(), False
        with contextlib.suppress(AttributeError):  # (a libc without unshare: not our own)
            own = libc is not None and libc.unshare(CLONE_FS) == 0
        try:
            done.append(job(own))
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(error)

    thread = threading.Thread(target=run, name="gpuplan-watch")
    thread.start()
    try:
        thread.join()
    finally:
        thread.join()
    if failed:
        raise failed[0]
    return done[0]
