"""A spare copy of the output that a long-running render (`render --watch`) keeps beside it, so
that writing a change costs the files that changed, not the whole tree.

A render builds the new tree in a staging folder and swaps it in whole (gpuplan.write): making
every folder and linking every unchanged file of a large output takes most of a small change's
time. The watch instead keeps a second tree with the output's content, patches it and swaps it
in: the same tree a fresh staging folder would have held, in one atomic step as before. The old
tree the swap gives back is brought up to date with the same patch while the watch waits for
the next edit, and becomes the next spare.

Each file gpuplan wrote has an inode of its own in the spare (one link), and a changed file is
written over in place: on ext4, creating and unlinking thousands of files costs several times
what rewriting them does (measured here: 4,000 files in 2,000 folders, 0.25-0.9 s to unlink
and create them again, 0.04 s to rewrite them in place). A file is rewritten in place only when
it is a regular file with one link, so no inode the live output can reach is ever written; any
other entry is unlinked and a new file created with O_EXCL. A user's own files in the output are
hard links in the spare (their owner and mode stay theirs) and are never written.

The spare is used only when nothing can have changed since it was brought up to date, else it is
removed and the render stages a fresh tree:
- the output's scan at write time equals the one recorded then: the same files and folders, no
  links or special files, and each file's lstat signature (inode, size, mtime, ctime) unchanged;
- the spare's files are exactly the recorded ones, each with its recorded signature: any write
  into it changes a file's ctime.

Both are proven without a look at every file while the spare's watch (gpuplan.notify: every
folder and file of both trees, watched before they were scanned for the record) has seen no
event and the output's and the spare's names still name the folders watched: the record then
stands for a scan of the output (`view`, the run's scan; `holds`, at write time). Else they are
proven by stat as above. The record is never changed once made (the next record replaces it).

The spare is named `.<output>.gpuplan-spare-PID` and holds a `.gitignore` of its own: a killed
watch leaves it to the next run's clean-up (gpuplan.staging), and a watch that ends removes it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from gpuplan import notify, safefs, twocores, warm
from gpuplan.staging import SPARE

if TYPE_CHECKING:
    from gpuplan.write import OutputTree

Signatures = dict[str, safefs.Signature]
Stamp = tuple[int, int, int, int]  # a folder's inode, mode, mtime and ctime
Identity = tuple[int, int]  # a folder's device and inode
T = TypeVar("T")


@dataclass(frozen=True)
class Spare:
    """A spare tree beside one output, and what both held when it was last brought up to date."""

    name: str
    live: Signatures  # the output's files
    dirs: tuple[str, ...]  # the output's folders (and the spare's)
    mine: Signatures  # the spare's files, its .gitignore included
    stamps: dict[str, Stamp]  # the output's folders: a chmod or an entry changes theirs
    tree: OutputTree  # the output as recorded: its scan, and which files are gpuplan's
    roots: tuple[Identity, Identity]  # the output's and the spare's own folder
    watch: notify.Watch | None  # every folder of both trees, from before they were scanned


@dataclass(frozen=True)
class Patch:
    """What one write changed: the spare it patched, the files written and removed."""

    taken: Spare
    files: dict[str, bytes]
    removed: tuple[str, ...]
    kept_empty: frozenset[str]
    written: Signatures  # the written files' signatures in the tree swapped in

    def swapped_in(self) -> Signatures:
        """Return each file's signature in the tree swapped in, as the write left it: the
        spare's recorded files it did not remove (renaming their folder changes none of the
        four numbers), and those it wrote."""
        gone = set(self.removed)
        found = {p: s for p, s in self.taken.mine.items() if p not in gone and p != IGNORE}
        found.update(self.written)
        return found


_spares: dict[str, Spare] = {}  # output path (absolute, normalized) -> its spare
_swapped: dict[str, Patch] = {}  # output path -> the patch its last write swapped in


def _key(out: Path) -> str:
    """Return an output's key in this module's tables: its absolute, normalized path."""
    return os.path.normpath(out.absolute())


def swapped(out: Path, done: Patch | None) -> None:
    """Note the patch a write just swapped into the output (for `written_signatures`); None
    forgets an earlier one."""
    if done is None:
        _swapped.pop(_key(out), None)
    else:
        _swapped[_key(out)] = done


def written_signatures(out: Path) -> Signatures | None:
    """Return, once, the signatures of the output's files as the last write swapped them in
    (Patch.swapped_in), or None after a write that did not use the spare.

    The render's record takes them instead of an lstat of every file. A file changed since is
    recorded with the signature it had when written, which its lstat then no longer matches: its
    content is compared, as for any file not as recorded. Only a signature taken from a file
    as it is now could vouch for content gpuplan did not write, and none is taken here.
    """
    done = _swapped.pop(_key(out), None)
    return done.swapped_in() if done is not None else None


def name_for(out_name: str) -> str:
    """Return the spare folder's name of an output folder in this process."""
    return f".{out_name}{SPARE}{os.getpid()}"


def take(
    parent_fd: int, out: Path, staging: str, tree: safefs.Listing, checked: bool = False
) -> Spare | None:
    """Put the output's spare under the staging name if it still holds the output of `tree`;
    else remove it.

    `tree` is the output's scan at write time, with each file's lstat (`checked`: `unchanged`
    just found the output as the spare recorded it). Returns the spare taken: the staging folder
    then holds a copy of the output to patch.
    """
    spare = _spares.pop(str(out), None)
    if spare is None:
        return None
    from gpuplan.cache.output import as_recorded  # (it imports gpuplan.write, which imports this)

    watched = _watched(spare, parent_fd, out.name)  # the spare's files as recorded, unlooked
    if spare.watch is not None:  # spent: closed once the result is printed (tens of
        spare.watch.spend()  # thousands of watches take a while to drop)
        if not warm.later(spare.watch.close):
            spare.watch.close()
    if (checked or _recorded_as(spare, tree)) and (
        watched or as_recorded(out.parent / spare.name, spare.mine)
    ):
        fd = os.open(spare.name, safefs.DIR_FLAGS, dir_fd=parent_fd)
        try:
            os.unlink(IGNORE, dir_fd=fd)  # the copy's own: never swapped into the output
        finally:
            os.close(fd)
        os.rename(spare.name, staging, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        return spare
    safefs.remove_big_tree(parent_fd, spare.name)
    return None


def view(out: Path) -> OutputTree | None:
    """Return the output as its spare recorded it, when the spare's watch proves that both trees
    still hold what it recorded (no event since: gpuplan.notify), else None.

    The tree is the one made when the spare was recorded, never changed since (the spare is
    replaced, not changed, by the next record): it stands for the output as long as the watch
    stays quiet, which `holds` asks again at write time.
    """
    out = Path(os.path.normpath(out.absolute()))
    spare = _spares.get(str(out))
    if spare is None or spare.watch is None:
        return None
    try:
        with _parent(out.parent) as parent_fd:
            return spare.tree if _watched(spare, parent_fd, out.name) else None
    except OSError:
        return None


def holds(parent_fd: int, out: Path) -> bool:
    """Tell whether the output's spare watch still proves both trees hold what it recorded."""
    spare = _spares.get(str(out))
    return spare is not None and _watched(spare, parent_fd, out.name)


def _watched(spare: Spare, parent_fd: int, out_name: str) -> bool:
    """Tell whether no event came since the spare was recorded, and the output's and the
    spare's names still name the folders watched."""
    if spare.watch is None or not spare.watch.quiet():
        return False
    try:
        roots = (_identity(parent_fd, out_name), _identity(parent_fd, spare.name))
    except OSError:
        return False
    return roots == spare.roots


def _identity(dir_fd: int, name: str) -> Identity:
    return _identity_of(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))


def _identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else (-1, -1)


def _close(spare: Spare) -> None:
    if spare.watch is not None:
        spare.watch.close()


def unchanged(out: Path, tree: safefs.Listing) -> bool:
    """Tell whether the output has a spare, and both a scan of it (`tree`) and the output now
    are exactly what the spare recorded (in one quick pass: gpuplan.cache.output.as_recorded)."""
    spare = _spares.get(str(out))
    if spare is None or not _recorded_as(spare, tree):
        return False
    from gpuplan.cache.output import as_recorded

    return as_recorded(out, spare.live, spare.dirs) and _stamps_hold(out, spare.stamps)


def _stamps_hold(out: Path, stamps: dict[str, Stamp]) -> bool:
    """Tell whether each folder of the output keeps its recorded stamp (a scan's read-only
    folders, found from their modes, are then what a new scan would find)."""
    try:
        fd = os.open(out, safefs.DIR_FLAGS)
    except OSError:
        return False
    try:
        return all(_stamp(fd, folder) == stamp for folder, stamp in stamps.items())
    except OSError:
        return False
    finally:
        os.close(fd)


def _stamp(dir_fd: int, folder: str) -> Stamp:
    st = os.stat(folder, dir_fd=dir_fd, follow_symlinks=False)
    return (st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


def _recorded_as(spare: Spare, tree: safefs.Listing) -> bool:
    """Tell whether a scan of the output holds exactly what the spare recorded of it."""
    if tree.links or tree.other or len(tree.stats) != len(tree.files):
        return False
    if len(tree.files) != len(spare.live) or tuple(tree.dirs) != spare.dirs:
        return False
    return all(safefs.signature(tree.stats[p]) == spare.live.get(p) for p in tree.files)


def patch(
    staging_fd: int,
    taken: Spare,
    removed: list[str],
    files: dict[str, bytes],
    kept_empty: set[str],
    write_new: Callable[[int, str, bytes], None],
) -> Patch:
    """Turn a copy of the output into the new tree: remove what goes, write the new bytes.

    `removed` are the copy's files the new tree does not hold; `files` the new bytes to write;
    folders left empty go, except `kept_empty` (a user's empty folders, which a fresh staging
    folder keeps too). Returns what the next spare needs to catch up with it.
    """
    written = apply(staging_fd, removed, files, kept_empty, write_new)
    return Patch(taken, files, tuple(removed), frozenset(kept_empty), written)


def apply(
    tree_fd: int,
    removed: Collection[str],
    files: dict[str, bytes],
    kept_empty: Collection[str],
    write_new: Callable[[int, str, bytes], None],
) -> Signatures:
    """Unlink `removed`, write `files` (in place where that is safe: see the module doc) and
    remove the folders left empty but `kept_empty`; return the written files' signatures."""
    gone, new = safefs.by_folder(removed), safefs.by_folder(files)
    written: Signatures = {}

    def unlink_in(folders: list[str]) -> None:
        with safefs.Walk(tree_fd) as walk:
            for folder in folders:
                fd = walk.open(folder)
                for name in gone[folder]:
                    os.unlink(name, dir_fd=fd)

    def write_in(folders: list[str]) -> None:
        with safefs.Walk(tree_fd, create=True) as walk:  # folders emptied below come back
            for folder in folders:
                fd = walk.open(folder)
                for name in new[folder]:
                    relative = f"{folder}/{name}" if folder else name
                    written[relative] = _put(fd, name, files[relative], write_new)

    safefs.by_two_threads(sorted(gone), unlink_in)
    for folder in sorted(gone, key=lambda f: -f.count("/")):
        while folder and folder not in kept_empty:  # as a fresh staging tree would not make it
            try:
                os.rmdir(folder, dir_fd=tree_fd)
            except OSError:
                break  # not empty: neither are its parents
            folder = folder.rpartition("/")[0]
    safefs.by_two_threads(sorted(new), write_in)
    return written


def _put(
    dir_fd: int, name: str, data: bytes, write_new: Callable[[int, str, bytes], None]
) -> safefs.Signature:
    """Write one file's new bytes: over the old ones in place when the old file is a regular
    file with one link (no other name reaches it), else as a new file; return its signature."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        fd = -1
    except OSError:  # a link, a folder, a file we may not write: replaced below
        fd = -2
    if fd >= 0:
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                _overwrite(fd, data)
                return safefs.signature(os.fstat(fd))
        finally:
            os.close(fd)
    if fd != -1:
        os.unlink(name, dir_fd=dir_fd)
    write_new(dir_fd, name, data)
    return safefs.signature(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))


def _overwrite(fd: int, data: bytes) -> None:
    """Write a file's new bytes over its old ones, from the start, and cut what is left."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.ftruncate(fd, len(data))


def keep(parent: Path, out_name: str, old: str, done: Patch) -> None:
    """Bring the old tree a swap gave back up to date with the patch swapped in, as the output's
    next spare (best effort: else remove it)."""

    def build(parent_fd: int, name: str) -> Spare | None:
        safefs.remove_tree(parent_fd, name)
        os.rename(old, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        fd = os.open(name, safefs.DIR_FLAGS, dir_fd=parent_fd)
        try:
            from gpuplan.write import _write_new  # (gpuplan.write imports this module)

            apply(fd, done.removed, done.files, done.kept_empty, _write_new)
            _write_ignore(fd)
        finally:
            os.close(fd)
        # The output as the swap left it: the spare's files before the patch, and those written.
        expected = done.swapped_in()
        owned = done.taken.tree.owned_set.difference(done.removed).union(done.written)
        return _record(parent_fd, out_name, name, expected, owned)

    _make(Path(os.path.normpath(parent / out_name)), build, old)


def ensure(out: Path) -> None:
    """Give an output a spare if it has none: a full copy, each of gpuplan's files with its own
    inode (a watch's first run, or after a write that could not use the spare)."""
    out = Path(os.path.normpath(out.absolute()))
    if str(out) in _spares:
        return

    def build(parent_fd: int, name: str) -> Spare | None:
        safefs.remove_big_tree(parent_fd, name)
        mode = os.stat(out.name, dir_fd=parent_fd, follow_symlinks=False).st_mode
        os.mkdir(name, stat.S_IMODE(mode), dir_fd=parent_fd)
        return _copy(parent_fd, out.name, name)

    _make(out, build)


def _make(out: Path, build: Callable[[int, str], Spare | None], old: str | None = None) -> None:
    """Make the output's spare beside it with build(parent fd, spare name) and keep it; when
    that fails or gives None, remove what it left (and the old tree `old`, if still there)."""
    name = name_for(out.name)
    with contextlib.suppress(OSError), _parent(out.parent) as parent_fd:
        try:
            made = build(parent_fd, name)
        except OSError:
            made = None
        if made is not None:
            replaced = _spares.pop(str(out), None)
            if replaced is not None:
                _close(replaced)
            _spares[str(out)] = made
            return
        safefs.remove_big_tree(parent_fd, name)
        if old is not None:
            safefs.remove_big_tree(parent_fd, old)


@contextlib.contextmanager
def _parent(folder: Path) -> Iterator[int]:
    """Open an output's parent folder (links to it followed: a repository on a linked disk)."""
    fd = os.open(folder, safefs.DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        yield fd
    finally:
        os.close(fd)


def retire(parent: Path, old: str) -> None:
    """Remove the old tree of a write that could not use the spare (it shares the new output's
    inodes: the render's record waits for this); `ensure` then gives the output a fresh spare."""
    with contextlib.suppress(OSError), _parent(parent) as parent_fd:
        safefs.remove_big_tree(parent_fd, old)


def drop_all() -> None:
    """Remove every spare of this process."""
    for out in sorted(_spares):
        spare = _spares.pop(out)
        _close(spare)
        with contextlib.suppress(OSError), _parent(Path(out).parent) as parent_fd:
            safefs.remove_big_tree(parent_fd, spare.name)


def _copy(parent_fd: int, out_name: str, name: str) -> Spare | None:
    """Fill an empty spare from the output: gpuplan's files copied, a user's files hard-linked."""
    from gpuplan.write import OWNED_MARK, _write_new

    mark = OWNED_MARK.encode()
    out_fd = os.open(out_name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    spare_fd = os.open(name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    try:
        live = safefs.scan(out_fd, known=_every)
        if live.links or live.other or IGNORE in live.files:
            return None  # links are compared by name only; a root .gitignore: no way to hide
        before = {p: safefs.signature(live.stats[p]) for p in live.files}
        copied: set[str] = set()

        def fill(folders: list[str]) -> None:
            with safefs.Walk(out_fd) as src, safefs.Walk(spare_fd, create=True) as dst:
                for folder in folders:
                    source, target = src.open(folder), dst.open(folder)
                    for entry in groups.get(folder, ()):
                        try:
                            ours = safefs.read_head(source, entry, len(mark)) == mark
                        except OSError:  # unreadable: a user's (a scan never finds it ours)
                            ours = False
                        if ours:
                            _write_new(target, entry, safefs.read_all(source, entry))
                            copied.add(f"{folder}/{entry}" if folder else entry)
                        else:
                            safefs.carry_over(source, target, entry)

        groups = safefs.by_folder(live.files)
        safefs.by_two_threads(sorted({*groups, *live.dirs}), fill)
        _write_ignore(spare_fd)
    finally:
        os.close(out_fd)
        os.close(spare_fd)
    # A user's file linked into the spare changed its ctime: its signature is the one seen now.
    expected = {p: s for p, s in before.items() if p in copied}
    return _record(parent_fd, out_name, name, expected, copied, linked=set(before) - copied)


def _record(
    parent_fd: int,
    out_name: str,
    name: str,
    expected: Signatures,
    owned: Collection[str],
    linked: Collection[str] = (),
) -> Spare | None:
    """Return the spare as both trees are now, or None unless the output still holds the files
    the spare was brought up to date with (`expected`, by signature; `owned` are gpuplan's files
    among them; `linked` are a user's files, the same inodes on both sides) and the spare holds
    the same files and folders.

    Each folder and file of both trees is watched (gpuplan.notify) before it is scanned (a
    file before its lstat): a change after its scan is an event, one before it is in the scan.
    """
    watch = notify.Watch.start()
    try:
        spare = _scanned(parent_fd, out_name, name, expected, owned, linked, watch)
    except BaseException:
        if watch is not None:
            watch.close()
        raise
    if spare is None and watch is not None:
        watch.close()
    return spare


class _Seen(NamedTuple):
    """What the spare's scan found, as a forked worker sends it back (gpuplan.twocores)."""

    files: list[str]
    dirs: list[str]
    odd: bool  # a link or a special file
    signatures: Signatures
    intact: bool  # every watch asked for was added (notify.Watch.intact)


def _scanned(
    parent_fd: int,
    out_name: str,
    name: str,
    expected: Signatures,
    owned: Collection[str],
    linked: Collection[str],
    watch: notify.Watch | None,
) -> Spare | None:
    """Scan the output here and the spare in a forked worker at once (gpuplan.twocores), each
    folder and file watched before it is scanned (a file before its lstat).

    Two processes, not two threads: the scans are one short system call per file (an lstat, an
    inotify_add_watch), and two threads hand the GIL back and forth at each (measured: the two
    scans slower on two threads than one after the other). The worker inherits the Watch's
    inotify descriptor, so its watches are the Watch's; its copy of the Watch counts its own
    share of the budget (`divide`), so the two never hold more than the Watch may, and it tells
    whether each watch it asked for was added. twocores.both returns only once the worker is
    done or killed.
    """
    out_fd = os.open(out_name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    spare_fd = os.open(name, safefs.DIR_FLAGS, dir_fd=parent_fd)
    try:
        here, there = watch.divide() if watch is not None else (0, 0)  # the spare: one file more
        found, mine = twocores.both(
            lambda: _with_share(
                watch, here, lambda own: _output(out_fd, watch, own, expected, owned, linked)
            ),
            lambda: _with_share(watch, there, lambda own: _copy_seen(spare_fd, watch, own)),
        )
        roots = (_identity_of(os.fstat(out_fd)), _identity_of(os.fstat(spare_fd)))
    finally:
        os.close(out_fd)
        os.close(spare_fd)
    if watch is not None and not mine.intact:
        watch.close()  # the worker's copy was refused a watch: let them all go (never quiet)
    if found is None or mine.odd or IGNORE not in mine.signatures:
        return None
    tree, stamps = found
    live = tree.listing
    if mine.dirs != live.dirs or [p for p in mine.files if p != IGNORE] != live.files:
        return None
    if any(mine.signatures[p][0] != live.stats[p].st_ino for p in linked):
        return None
    return Spare(
        name, tree.signatures, tuple(live.dirs), mine.signatures, stamps, tree, roots, watch
    )


def _with_share(watch: notify.Watch | None, share: int, job: Callable[[bool], T]) -> T:
    """Return job(own): with a watch, given `share` of its budget (`divide`) and run in a thread
    whose working folder is its own when `own` (notify.own_folder), to name what it watches
    from there."""
    if watch is None:
        return job(False)
    watch.take(share)
    return notify.own_folder(job)


def _output(
    out_fd: int,
    watch: notify.Watch | None,
    own: bool,
    expected: Signatures,
    owned: Collection[str],
    linked: Collection[str],
) -> tuple[OutputTree, dict[str, Stamp]] | None:
    """Scan the output and take its folders' stamps; None unless it holds exactly the files the
    spare was brought up to date with (`expected` by signature, `linked` a user's), and no link
    or special file. What the spare keeps of it is made here, while the worker still scans."""
    from gpuplan.write import OutputTree  # (gpuplan.write imports this module)

    live = safefs.scan(out_fd, known=_every, opened=_opened(watch, own))
    stamps = {folder: _stamp(out_fd, folder) for folder in live.dirs}
    if live.links or live.other:
        return None
    ours = frozenset(owned)
    tree = OutputTree(live, tuple(p for p in live.files if p in ours), watched=True)
    signatures = tree.signatures
    if signatures.keys() != set(expected).union(linked):
        return None
    if any(signatures[p] != s for p, s in expected.items()):
        return None  # the output changed while the spare caught up
    _ = tree.foreign, tree.empty_folders  # made now, while the watch waits
    return tree, stamps


def _opened(watch: notify.Watch | None, own: bool) -> Callable[[int, str | None], bool] | None:
    """Return what a scan calls on each folder and file before it looks at it: watch it."""
    return None if watch is None else functools.partial(watch.add, here=own)


def _copy_seen(spare_fd: int, watch: notify.Watch | None, own: bool) -> _Seen:
    """Scan the spare; return what the record needs of it."""
    mine = safefs.scan(spare_fd, known=_every, opened=_opened(watch, own))
    stats = mine.stats
    signatures = dict(zip(mine.files, map(safefs.SIGNATURE, map(stats.__getitem__, mine.files))))
    intact = watch is None or watch.intact()
    return _Seen(mine.files, mine.dirs, bool(mine.links or mine.other), signatures, intact)


def _every(relative: str, st: os.stat_result) -> bool:
    """Keep every file's lstat (safefs.scan's `known`: no file's first bytes are read)."""
    return True


IGNORE = ".gitignore"
IGNORE_TEXT = b"# gpuplan render --watch: a copy of the output while it runs, never to commit\n*\n"


def _write_ignore(spare_fd: int) -> None:
    """Hide the copy from git (`git add -A` beside a running watch must not commit it)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(IGNORE, dir_fd=spare_fd)
    fd = os.open(IGNORE, os.O_WRONLY | os.O_CREAT | safefs.NEW_FILE_FLAGS, 0o644, dir_fd=spare_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write(IGNORE_TEXT)
