"""The writer: all-or-nothing replacement, ownership by header, scope, path safety."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuplan.writer import safefs
from gpuplan.writer import tree as write
from gpuplan.writer.tree import OWNED_MARK, WriteError, compare, write_tree
from tests.conftest import snapshot

A = (OWNED_MARK + "\nkind: A\n").encode()
B = (OWNED_MARK + "\nkind: B\n").encode()


def test_first_write_then_replace_and_prune(tmp_path: Path) -> None:
    out = tmp_path / "output"
    write_tree(out, {"c1/a.yaml": A, "c1/b.yaml": B})
    write_tree(out, {"c1/a.yaml": B})
    assert snapshot(out) == {"c1/a.yaml": B}
    assert [p.name for p in tmp_path.iterdir()] == ["output"]  # no staging left behind


def test_foreign_files_and_symlinks_are_kept_untouched(tmp_path: Path) -> None:
    out = tmp_path / "output"
    write_tree(out, {"c1/a.yaml": A})
    (out / "notes.md").write_text("mine")
    elsewhere = tmp_path / "secret"
    elsewhere.write_text("do not follow")
    os.symlink(elsewhere, out / "link")
    write_tree(out, {"c1/a.yaml": B})
    assert (out / "notes.md").read_text() == "mine"
    assert os.readlink(out / "link") == str(elsewhere)
    assert elsewhere.read_text() == "do not follow"


def test_scope_limits_pruning_to_the_rendered_clusters(tmp_path: Path) -> None:
    out = tmp_path / "output"
    write_tree(out, {"c1/a.yaml": A, "c2/a.yaml": A})
    write_tree(out, {"c1/b.yaml": B}, scope=("c1/",))
    assert snapshot(out) == {"c1/b.yaml": B, "c2/a.yaml": A}


def test_failure_while_staging_leaves_old_output_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "output"
    write_tree(out, {"c1/a.yaml": A})
    before = snapshot(out)

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write, "_exchange", boom)
    with pytest.raises(WriteError, match="No space left on device"):
        write_tree(out, {"c1/a.yaml": B})
    assert snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["output"]


def test_stale_staging_of_a_killed_render_is_cleaned(tmp_path: Path) -> None:
    out = tmp_path / "output"
    stale = tmp_path / ".output.gpuplan-staging-999999999"
    stale.mkdir()
    (stale / "half.yaml").write_bytes(A)
    write_tree(out, {"c1/a.yaml": A})
    assert not stale.exists()


@pytest.mark.parametrize("path", ["../x.yaml", "/etc/passwd", "a/../../x", "a\\b.yaml", ""])
def test_paths_outside_the_output_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(WriteError, match="outside the output folder"):
        write.safe_relative(path)


def test_compare_reports_added_changed_removed(tmp_path: Path) -> None:
    out = tmp_path / "output"
    write_tree(out, {"a.yaml": A, "b.yaml": A})
    changes = compare(out, {"a.yaml": A, "b.yaml": B, "c.yaml": A})
    assert (changes.added, changes.changed, changes.removed) == (["c.yaml"], ["b.yaml"], [])
    changes = compare(out, {"a.yaml": A})
    assert changes.removed == ["b.yaml"]


def test_output_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "output")
    with pytest.raises(WriteError, match="symbolic link"):
        write_tree(tmp_path / "output", {"a.yaml": A})


def test_a_fallback_swap_killed_between_its_renames_is_put_back(tmp_path: Path) -> None:
    out = tmp_path / "output"
    write_tree(out, {"c1/a.yaml": A})
    os.rename(out, tmp_path / ".output.gpuplan-retired-999999999")  # as if killed mid-swap
    write.clean_stale(out)
    assert snapshot(out) == {"c1/a.yaml": A}
    assert [p.name for p in tmp_path.iterdir()] == ["output"]


@pytest.mark.parametrize("folders", [3, 80])  # one thread; two (safefs.THREADS_FROM)
def test_a_big_tree_is_removed_whole_and_never_through_a_link(tmp_path: Path, folders: int) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "keep.txt").write_text("not ours\n")
    (outside / "deep" / "keep.txt").write_text("not ours either\n")
    old = tmp_path / "parent" / ".output.gpuplan-staging-1"
    for i in range(folders):
        (old / f"c{i % 9}" / f"part{i}" / "deep").mkdir(parents=True)
        (old / f"c{i % 9}" / f"part{i}" / "deep" / "file.yaml").write_text("x\n")
        (old / f"c{i % 9}" / f"file{i}.yaml").write_text("x\n")
    (old / "top.yaml").write_text("x\n")
    (old / "c0" / "linked").symlink_to(outside)  # a link where a folder of the second level goes
    (old / "c1" / "part1" / "linked").symlink_to(outside / "deep")
    (old / "c2").rename(old / "c2-real")
    (old / "c2").symlink_to(outside)  # and one at the first level
    parent_fd = os.open(tmp_path / "parent", os.O_RDONLY | os.O_DIRECTORY)
    try:
        safefs.remove_big_tree(parent_fd, old.name)
    finally:
        os.close(parent_fd)
    assert not old.exists() and not old.is_symlink()
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == [
        "deep",
        "deep/keep.txt",
        "keep.txt",
    ]
