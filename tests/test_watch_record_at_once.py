"""render --watch: the spare's record scans the output here and its copy in a forked worker at
once (gpuplan.spare._scanned), both into one inotify instance (gpuplan.notify).

A change to either tree after its scan must spoil the watch (the worker's watches are the
instance's, kept after it exits), the two scans together must never hold more watches than the
Watch's budget, and a share refused on either side lets every watch go.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuplan import notify, safefs, spare, twocores
from gpuplan.write import OWNED_MARK

pytestmark = pytest.mark.skipif(
    notify.libc() is None or not twocores.available(), reason="needs inotify and fork"
)

FOLDERS = ("a", "a/b", "c")


def _output(tmp_path: Path) -> Path:
    """Make an output of gpuplan's files in three folders and one file of a user's."""
    out = tmp_path / "output"
    for folder in FOLDERS:
        (out / folder).mkdir(parents=True)
        for name in ("x.yaml", "y.yaml"):
            (out / folder / name).write_text(f"{OWNED_MARK}\nkind: {folder}/{name}\n")
    (out / "notes.txt").write_text("mine\n")  # hard-linked into the copy: one inode, one watch
    return out


def _entries(out: Path) -> int:
    """Return how many watches a scan of the output asks for: its folders (itself too), files."""
    return 1 + sum(len(dirs) + len(files) for _, dirs, files in os.walk(out))


def _held(watch: notify.Watch) -> int:
    """Return how many watches the kernel holds for the instance (proc(5), fdinfo)."""
    assert watch._fd is not None
    with open(f"/proc/self/fdinfo/{watch._fd}") as info:
        return sum(line.startswith("inotify wd:") for line in info)


def _recorded(out: Path) -> spare.Spare:
    spare.ensure(out)
    return spare._spares[str(out.absolute())]


@pytest.fixture(autouse=True)
def _no_spare_left() -> Any:
    yield
    spare.drop_all()


def _budget(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, watches: int) -> None:
    """Give each Watch a budget of `watches` (a quarter of max_user_watches)."""
    limit = tmp_path / "max_user_watches"
    limit.write_text(f"{4 * watches}\n")
    monkeypatch.setattr(notify, "MAX_USER_WATCHES", str(limit))


@pytest.mark.parametrize("short", [0, 1, 2])
@pytest.mark.parametrize("worker", ["forked", "failed"])
def test_both_scans_together_hold_at_most_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: int, worker: str
) -> None:
    """The copy holds one file more (.gitignore); `short` watches too few: refused in the
    worker (1) or on both sides (2). A failed worker: its half scanned here, with its share."""
    out = _output(tmp_path)
    need = 2 * _entries(out) + 1
    _budget(monkeypatch, tmp_path, need - short)
    if worker == "failed":
        monkeypatch.setattr(twocores, "_worker", lambda *args: os._exit(1))
    made = _recorded(out)
    assert made.watch is not None
    if short:
        assert not made.watch.quiet() and made.watch._fd is None  # every watch let go
        assert spare.view(out) is None
        return
    assert made.watch.quiet()
    assert _held(made.watch) == need - 1  # the user's file: one inode in both trees
    assert spare.view(out) is made.tree


class _WithoutUnshare:
    """libc as notify uses it, but no unshare(2) (a sandbox that refuses it)."""

    def __init__(self, libc: Any) -> None:
        self._libc = libc

    def __getattr__(self, name: str) -> Any:
        if name == "unshare":
            raise AttributeError(name)
        return getattr(self._libc, name)


def _edit_in_place(path: Path) -> None:
    """Rewrite a file's bytes, its size kept (only its mtime and ctime tell)."""
    data = path.read_bytes()
    path.write_bytes(data.replace(b"kind", b"KIND", 1))


@pytest.mark.parametrize("own", [True, False])
@pytest.mark.parametrize(
    ("tree", "change"),
    [
        ("output", "edit"),
        ("output", "add"),
        ("copy", "edit"),
        ("copy", "add"),
        ("copy", "none"),
    ],
)
def test_a_change_to_either_tree_after_its_scan_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree: str, change: str, own: bool
) -> None:
    """Made right after the tree's scan, before the record is made: the output's scan runs
    here, the copy's in the worker (its watches outlive it). `own`: each scan names what it
    watches from a working folder of its own, else through /proc/self/fd."""
    out = _output(tmp_path)
    if not own:
        libc = notify._Libc.get()
        monkeypatch.setattr(notify._Libc, "calls", _WithoutUnshare(libc))
    copy = tmp_path / spare.name_for("output")
    target = out if tree == "output" else copy
    changes: dict[str, Callable[[], object]] = {
        "edit": lambda: _edit_in_place(target / "a/b/x.yaml"),
        "add": lambda: (target / "c/z.yaml").write_text("new\n"),
        "none": lambda: None,
    }
    real = safefs.scan
    ino = {}

    def scan(dir_fd: int, *args: Any, **kwargs: Any) -> safefs.Listing:
        found = real(dir_fd, *args, **kwargs)
        if kwargs.get("opened") is not None and os.fstat(dir_fd).st_ino == ino.get("target"):
            changes[change]()
        return found

    monkeypatch.setattr(safefs, "scan", scan)
    here = os.getcwd()
    real_copy = spare._copy

    def copy_then_mark(*args: Any) -> spare.Spare | None:
        ino["target"] = target.stat().st_ino  # the copy exists now
        return real_copy(*args)

    monkeypatch.setattr(spare, "_copy", copy_then_mark)
    made = _recorded(out)
    assert os.getcwd() == here  # the scans' working folders were their own
    assert made.watch is not None
    assert made.watch.quiet() == (change == "none"), (tree, change)
    assert (spare.view(out) is not None) == (change == "none")


def test_a_thread_of_its_own_folder_moves_no_other() -> None:
    here = os.getcwd()

    def job(own: bool) -> str:
        assert own
        os.chdir("/")
        return os.getcwd()

    assert notify.own_folder(job) == "/"
    assert os.getcwd() == here

    def fails(own: bool) -> None:
        raise ValueError("in the thread")

    with pytest.raises(ValueError, match="in the thread"):
        notify.own_folder(fails)
