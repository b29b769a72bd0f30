"""render --watch: the output's spare watches both trees (gpuplan.notify), and while no event
came its record stands for a scan of the output (gpuplan.spare.view).

Every record taken as the output must equal a fresh scan of it; any change of the output or of
its copy between two runs (a file edited in place with its size kept, a file added, a folder
replaced by a link) makes the next run scan, and that run writes what a cold render writes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gpuplan import notify, safefs, spare
from gpuplan.staging import SPARE
from gpuplan.write import OutputTree, read_tree
from tests.conftest import snapshot
from tests.test_cache import Fleet
from tests.test_render_watch import (
    _cold,
    _edit,
    _repo,
    between_runs,
    cold_render,
    touch_all,
    watch_for,
)

pytestmark = pytest.mark.usefixtures("cache_home")


def _as_scanned(tree: OutputTree) -> tuple[object, ...]:
    """Return what a scan of the output tells the render: entries, modes, lstats, owners."""
    listing = tree.listing
    return (
        listing.files,
        listing.dirs,
        listing.links,
        listing.other,
        listing.read_only,
        tree.signatures,
        sorted(tree.owned),
    )


def checked_views(monkeypatch: pytest.MonkeyPatch, out: Path) -> list[bool]:
    """Check every record spare.view gives against a fresh scan of the output; return, for
    each run, whether the record was used."""
    used: list[bool] = []
    real = spare.view

    def view(where: Path) -> OutputTree | None:
        found = real(where)
        used.append(found is not None)
        if found is not None:
            fresh = read_tree(out, known=lambda relative, st: False)
            assert _as_scanned(found) == _as_scanned(fresh)
        return found

    monkeypatch.setattr(spare, "view", view)
    return used


def test_each_record_taken_for_the_output_is_what_a_scan_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    edits = [("quota", 2), ("add", 3), ("pools", 0), ("remove", 3), ("cohort", 1)]
    between_runs(monkeypatch, [_edit(root, fleet, change) for change in edits])
    code, stderr = watch_for(root, len(edits) + 1)
    assert code == 0, stderr
    assert used == [False] + [True] * len(edits)  # each run after the first: no scan
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def _same_size_edit(path: Path) -> None:
    """Edit a file in place, its size kept (only its mtime and ctime tell)."""
    data = path.read_bytes()
    with open(path, "r+b") as handle:
        handle.write(data.replace(b"kind", b"KIND", 1))


@pytest.mark.parametrize("where", ["output", "copy"])
def test_a_file_edited_in_place_between_runs_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """In the output (rendered again, as a cold render does) or in its copy (never swapped in)."""
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    folder = root / ("output" if where == "output" else f".output{SPARE}{os.getpid()}")
    target = folder / "c00/kustomization.yaml"  # an object the edits leave unchanged
    steps = [_edit(root, fleet, ("quota", 2))]
    steps += [_edit(root, fleet, ("quota", 4), lambda: _same_size_edit(target))]
    between_runs(monkeypatch, steps)
    code, stderr = watch_for(root, 3)
    assert code == 0, stderr
    assert used == [False, True, False]
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def test_a_file_edited_through_a_link_made_elsewhere_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hard link in a folder nobody watches: the edit is an event of the file's own watch."""
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    elsewhere = tmp_path / "kustomization.yaml"

    def link_and_edit() -> None:
        os.link(root / "output/c00/kustomization.yaml", elsewhere)
        _same_size_edit(elsewhere)

    steps = [_edit(root, fleet, ("quota", 2))]
    steps += [_edit(root, fleet, ("quota", 4), link_and_edit)]
    between_runs(monkeypatch, steps)
    code, stderr = watch_for(root, 3)
    assert code == 0, stderr
    assert used == [False, True, False]
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def test_a_file_added_between_runs_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    mine = root / "output/c00/kueue/notes.txt"
    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), lambda: mine.write_text("mine\n"))])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert used == [False, False]
    assert "c00/kueue/notes.txt: warning: not written by gpuplan" in stderr
    ours = snapshot(root / "output")
    assert ours.pop("c00/kueue/notes.txt") == b"mine\n"
    assert ours == _cold(tmp_path, fleet)


def test_a_folder_replaced_by_a_link_between_runs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a cold render refuses it: gpuplan never writes through a link in the output."""
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    folder, elsewhere = root / "output/c00/kueue", tmp_path / "elsewhere"

    def replace() -> None:
        shutil.copytree(folder, elsewhere)
        shutil.rmtree(folder)
        folder.symlink_to(elsewhere, target_is_directory=True)

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), replace)])
    code, stderr = watch_for(root, 2)
    assert used == [False, False]
    assert code == 1
    assert "c00/kueue is a symbolic link" in stderr, stderr
    assert folder.is_symlink()
    fleet.write(tmp_path / "cold")
    shutil.rmtree(tmp_path / "cold/output", ignore_errors=True)
    shutil.copytree(root / "output", tmp_path / "cold/output", symlinks=True)
    cold = cold_render(tmp_path / "cold")
    assert cold.code == 1 and "c00/kueue is a symbolic link" in cold.stderr
    assert snapshot(elsewhere) == snapshot(tmp_path / "cold/output/c00/kueue")  # not written


def test_an_output_renamed_away_and_back_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy put in place of the output under its name is not the folder watched."""
    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")

    def replace() -> None:
        os.rename(root / "output", tmp_path / "old")
        shutil.copytree(tmp_path / "old", root / "output")
        _same_size_edit(root / "output/c00/kueue/clusterqueue-t0.yaml")

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2), replace)])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert used == [False, False]
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


def test_a_watch_is_quiet_until_something_changes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/f").write_text("one\n")
    cases = {
        "edit": lambda: (tmp_path / "a/f").write_text("two\n"),
        "chmod": lambda: os.chmod(tmp_path / "a", 0o555),
        "touch": lambda: os.utime(tmp_path / "a/f"),
        "add": lambda: (tmp_path / "a/g").write_text(""),
        "read": lambda: (tmp_path / "a/f").read_text(),
        "link": lambda: os.link(tmp_path / "a/f", tmp_path / "elsewhere"),
    }
    for name, change in cases.items():
        watch = notify.Watch.start()
        assert watch is not None
        fd = os.open(tmp_path / "a", safefs.DIR_FLAGS)  # (not tmp_path: elsewhere is not in it)
        try:
            safefs.scan(fd, opened=watch.add)
        finally:
            os.close(fd)
        assert watch.quiet(), name
        change()
        assert watch.quiet() == (name == "read"), name
        assert watch.quiet() == (name == "read"), name  # spoiled for good
        watch.close()
        os.chmod(tmp_path / "a", 0o755)
        (tmp_path / "elsewhere").unlink(missing_ok=True)
        assert not watch.quiet()


def test_a_folder_that_cannot_be_watched_spoils_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a local file system (a change from another host would queue no event)."""
    monkeypatch.setattr(notify, "local", lambda fd: False)
    watch = notify.Watch.start()
    assert watch is not None
    fd = os.open(tmp_path, safefs.DIR_FLAGS)
    try:
        assert not watch.add(fd)
    finally:
        os.close(fd)
    assert not watch.quiet()
    watch.close()


def test_a_watch_holds_at_most_its_share_of_the_users_watches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quarter of fs.inotify.max_user_watches: one that needs more gives back all it took."""
    limit = tmp_path / "max_user_watches"
    for name in "abc":
        (tmp_path / "tree" / name).mkdir(parents=True)
    monkeypatch.setattr(notify, "MAX_USER_WATCHES", str(limit))
    for value, fits in (("16\n", True), ("12\n", False), ("", False)):  # 4 folders: 4 watches
        limit.write_text(value)
        watch = notify.Watch.start()
        assert watch is not None
        fd = os.open(tmp_path / "tree", safefs.DIR_FLAGS)
        try:
            safefs.scan(fd, opened=watch.add)
        finally:
            os.close(fd)
        assert watch.quiet() == fits, value
        assert (watch._fd is not None) == fits, value  # the watches it took are given back
        watch.close()


def test_without_a_watch_each_run_scans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, fleet = _repo(tmp_path)
    monkeypatch.setattr(notify.Watch, "start", classmethod(lambda cls: None))
    used = checked_views(monkeypatch, root / "output")
    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2))])
    code, stderr = watch_for(root, 2)
    assert code == 0, stderr
    assert used == [False, False]
    assert snapshot(root / "output") == _cold(tmp_path, fleet)


__all__ = ["Fleet"]


def test_an_input_saved_unchanged_is_answered_without_a_look_at_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record answers (the same inputs), and the spare's record stands for the output."""
    import gpuplan.cache.output

    root, fleet = _repo(tmp_path)
    used = checked_views(monkeypatch, root / "output")
    looked: list[bool] = []
    real = gpuplan.cache.output.as_recorded

    def as_recorded(*args: object) -> bool:
        looked.append(True)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(gpuplan.cache.output, "as_recorded", as_recorded)

    def add_mine() -> None:
        (root / "output/c00/notes.txt").write_text("mine\n")
        touch_all(root)

    between_runs(monkeypatch, [_edit(root, fleet, ("quota", 2)), lambda: touch_all(root), add_mine])
    code, stderr = watch_for(root, 4)
    assert code == 0, stderr
    assert used == [False, True, True, False]  # render; answered; answered after notes.txt
    assert looked == [True]  # only once the watch saw the user's file
    assert "c00/notes.txt: warning: not written by gpuplan" in stderr
