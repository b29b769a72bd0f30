"""Topology levels on a per-node label (a rack label differs node by node): perNode (issue 37)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import copy_example, run

FABRIC = "    labels: {example.com/fabric: ib-rack-02}\n"
LEVEL = "      - {level: rack, nodeLabel: example.com/fabric}\n"


def with_rack(tmp_path: Path, level: str, labels: str = "") -> Path:
    """The example's dgx-h100 pool with its rack level on example.com/rack."""
    root = copy_example(tmp_path / "repo")
    path = root / "clusters/dgx-onprem.yaml"
    text = path.read_text()
    assert FABRIC in text and LEVEL in text
    path.write_text(text.replace(FABRIC, labels).replace(LEVEL, level))
    return root


def test_a_per_node_rack_label_is_taken_as_stated(tmp_path: Path) -> None:
    root = with_rack(
        tmp_path, "      - {level: rack, nodeLabel: example.com/rack, perNode: true}\n"
    )
    result = run("render", "--root", str(root))
    assert result.code == 0, result.stderr
    topology = next((root / "output/dgx-onprem").rglob("topology-*.yaml")).read_text()
    assert "nodeLabel: example.com/rack" in topology


def test_a_rack_label_no_node_carries_names_per_node(tmp_path: Path) -> None:
    root = with_rack(tmp_path, "      - {level: rack, nodeLabel: example.com/rack}\n")
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert "no node of pool dgx-h100 carries label example.com/rack" in result.stderr
    assert "say perNode: true" in result.stderr


def test_a_per_node_label_with_one_value_in_labels_is_an_error(tmp_path: Path) -> None:
    level = "      - {level: rack, nodeLabel: example.com/fabric, perNode: true}\n"
    root = with_rack(tmp_path, level, FABRIC)
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert (
        "example.com/fabric is per node (perNode), but the pool's labels give all its nodes one value"
        in result.stderr
    )
