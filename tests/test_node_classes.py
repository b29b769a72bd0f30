"""Node classes vs pools: a Karpenter pool's nodes run the image of its node class (own manifests in
extra/ included), and a Grace superchip pool asks for arm64 nodes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import copy_example, edit, run

NODE_CLASS = "extra/h100-prod/ec2nodeclass-gpu.yaml"
CLUSTER = "clusters/h100-prod.yaml"


def test_bottlerocket_node_class_warns_on_its_pools(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    edit(root, NODE_CLASS, "alias: al2023@latest", "alias: bottlerocket@latest")
    result = run("check", "--root", str(root))
    assert result.code == 0, result.stderr
    assert (
        "clusters/h100-prod.yaml:102:7: warning: nodePools[3].karpenter: pool 'l40s-dev': Bottlerocket's NVIDIA "
        "variant (the image of its node class gpu (extra/h100-prod/ec2nodeclass-gpu.yaml)) runs its own device plugin"
    ) in result.stderr
    assert "pool 'h100-train'" not in result.stderr  # its node class, gpu-efa, runs al2023


def test_example_node_classes_run_no_second_device_plugin(tmp_path: Path) -> None:
    result = run("check", "--strict", "--root", str(copy_example(tmp_path)))
    assert result.code == 0, result.stderr
    assert "bottlerocket-device-plugin" not in result.stderr


def test_pool_os_against_its_node_class_is_an_error(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    edit(root, NODE_CLASS, "alias: al2023@latest", "alias: bottlerocket@latest")
    edit(
        root,
        CLUSTER,
        "    gpu: L40S\n",
        "    gpu: L40S\n    os: al2023\n",
    )
    before = (
        {p: p.read_bytes() for p in (root / "output").rglob("*")}
        if (root / "output").exists()
        else {}
    )
    result = run("render", "--root", str(root))
    assert result.code == 1
    assert (
        "clusters/h100-prod.yaml:97:9: error: nodePools[3].os: pool 'l40s-dev' says os: al2023, but its node class "
        "gpu (extra/h100-prod/ec2nodeclass-gpu.yaml) launches bottlerocket nodes"
    ) in result.stderr
    assert not (root / "output").exists() or before == {
        p: p.read_bytes() for p in (root / "output").rglob("*")
    }


def test_grace_pool_on_amd64_nodes_is_an_error(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    edit(root, CLUSTER, "    gpu: L40S\n", "    gpu: GB200\n")
    edit(root, CLUSTER, "instanceTypes: [g6e.12xlarge]", "instanceTypes: [p6e-gb200.36xlarge]")
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert (
        "clusters/h100-prod.yaml:102:7: error: nodePools[3].karpenter: GB200 is a Grace superchip: its hosts are "
        "arm64, and the pool's NodePool asks for amd64 nodes"
    ) in result.stderr
    edit(
        root,
        CLUSTER,
        "instanceTypes: [p6e-gb200.36xlarge]",
        "instanceTypes: [p6e-gb200.36xlarge]\n      architecture: arm64",
    )
    assert "Grace superchip" not in run("check", "--root", str(root)).stderr
