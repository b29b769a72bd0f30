"""The writer's checks over every file of a render, made in one pass: render_files names the
first bad or repeated path in the manifests' order, and compare takes a file the render cache
vouches for (`held`: its content hash, by its lstat) without reading it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.model.manifest import Manifest
from gpuplan.writer import safefs
from gpuplan.writer import tree as write
from gpuplan.writer.tree import OWNED_MARK, WriteError, compare, digest, render_files


def _manifest(path: str) -> Manifest:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    return Manifest(path=path, obj=obj, sources=("tenants/a.yaml",))


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["a/x.yaml", "a/x.yaml", "../b.yaml"], "two objects would be written to a/x.yaml"),
        (["../b.yaml", "a/x.yaml", "a/x.yaml"], "refusing to write outside the output folder"),
        (["a/x.yaml", "a/./y.yaml"], "refusing to write outside the output folder: 'a/./y.yaml'"),
    ],
)
def test_the_first_problem_in_the_manifests_order_is_named(paths: list[str], message: str) -> None:
    with pytest.raises(WriteError, match=message.replace(".", r"\.")):
        render_files([_manifest(p) for p in paths])


def test_only_the_files_not_reused_are_made() -> None:
    files = render_files([_manifest("a/x.yaml"), _manifest("a/y.yaml")], reuse={"a/x.yaml"})
    assert list(files) == ["a/y.yaml"]
    assert files["a/y.yaml"].startswith(OWNED_MARK.encode())


def _output(tmp_path: Path) -> Path:
    out = tmp_path / "output"
    (out / "a").mkdir(parents=True)
    (out / "a/x.yaml").write_bytes(f"{OWNED_MARK}\nold\n".encode())
    return out


def test_a_file_held_by_its_hash_is_compared_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _output(tmp_path)
    new = f"{OWNED_MARK}\nnew\n".encode()

    def no_read(*args: object) -> dict[str, bytes]:
        raise AssertionError("read a file its hash answers for")

    monkeypatch.setattr(safefs, "read_files", no_read)
    same = compare(out, {"a/x.yaml": new}, held={"a/x.yaml": digest(new)})
    assert not same.any
    other = compare(out, {"a/x.yaml": new}, held={"a/x.yaml": digest(b"old")})
    assert other.changed == ["a/x.yaml"]


def test_a_file_not_held_is_read(tmp_path: Path) -> None:
    out = _output(tmp_path)
    old = (out / "a/x.yaml").read_bytes()
    assert not compare(out, {"a/x.yaml": old}).any
    assert compare(out, {"a/x.yaml": old + b"#\n"}).changed == ["a/x.yaml"]


def test_a_link_where_a_new_file_goes_is_refused_but_not_an_owned_file(tmp_path: Path) -> None:
    """refuse_unsafe looks only at the targets that are not gpuplan's files on disk."""
    out = _output(tmp_path)
    (out / "b").symlink_to(tmp_path, target_is_directory=True)
    tree = write.read_tree(out)
    looked: list[str] = []
    kind = tree.listing.kind
    tree.listing.kind = lambda relative: looked.append(relative) or kind(relative)  # type: ignore[method-assign]
    write.refuse_unsafe(out, tree, ["a/x.yaml"])
    assert looked == []  # gpuplan's file and its folder: not looked at
    with pytest.raises(WriteError, match="b is a symbolic link"):
        write.refuse_unsafe(out, tree, ["a/x.yaml", "b/y.yaml"])
