"""Issue 35, point 11: what users hit that gpuplan left out (the IPoIB CNI binary, flavor labels
nothing sets, a stale MIG config label on a node-group pool)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import copy_example, edit, run


def test_requirements_lists_the_ipoib_cni_binary(tmp_path: Path) -> None:
    result = run("requirements", "--root", str(copy_example(tmp_path)), "--cluster", "dgx-onprem")
    assert result.code == 0, result.stderr
    assert (
        "dgx-onprem: network ib-storage (ipoib), nodes of pool(s) dgx-h100, h100-mixed\n"
        "  the IPoIB parent interface ib0 on every node\n"
        "  the ipoib CNI binary in /opt/cni/bin (Mellanox/ipoib-cni v1.2.2, images/ipoib-cni-daemonset.yaml)"
    ) in result.stdout


def test_flavor_labels_nothing_sets_fail_a_strict_check(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    ignore = (
        "    ignore:\n      - code: flavor-labels-unset\n"
        "        reason: the site's provisioning labels the CPU hosts (gpuplan requirements lists the label)\n"
    )
    edit(root, "clusters/dgx-onprem.yaml", ignore, "")
    assert (
        run("check", "--root", str(root)).code == 0
    )  # a warning: accepted where it stands, or --strict fails
    result = run("check", "--strict", "--root", str(root))
    assert result.code == 1
    assert (
        "clusters/dgx-onprem.yaml:104:13: warning: cpuPools[0].labels: CPU pool cpu-nodes: its ResourceFlavor selects "
        "example.com/node-class=cpu, which no NodePool, NodeFeatureRule or node group sets"
    ) in result.stderr
    listed = run("requirements", "--root", str(root), "--cluster", "dgx-onprem")
    assert (
        "dgx-onprem: CPU pool cpu-nodes, 4 node(s) no NodePool, NFD rule or node group labels\n"
        "  kubectl label node <each of them> example.com/node-class=cpu"
    ) in listed.stdout


def test_stale_mig_config_label_is_a_user_error(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    edit(
        root,
        "clusters/h100-prod.yaml",
        "labels: {nvidia.com/mig.config: gpuplan-7x1g.10gb}",
        "labels: {nvidia.com/mig.config: gpuplan-3x2g.20gb}",
    )
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert not (root / "output").exists()
    assert "please report" not in result.stderr and "output/" not in result.stderr
    assert (
        "clusters/h100-prod.yaml:72:37: error: nodePools[1].labels.nvidia.com/mig.config: pool h100-infer: its nodes "
        "carry nvidia.com/mig.config=gpuplan-3x2g.20gb, but the config gpuplan writes for its MIG layout or sharing "
        "is gpuplan-7x1g.10gb"
    ) in result.stderr
