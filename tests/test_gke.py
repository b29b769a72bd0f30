"""GKE's own GPU stack: MIG partitions and time-shared GPUs counted as nvidia.com/gpu, Kueue flavors on
GKE's node labels, no GPU Operator unless the cluster opts out, and the node pool's gcloud flags."""

from __future__ import annotations

import shutil
from pathlib import Path

from ruamel.yaml import YAML

from gpuplan.pipeline import compile_fleet
from tests.conftest import run

CASE = Path(__file__).resolve().parent / "cases" / "gke-stack"
KUEUE = CASE / "expected" / "gke-serving" / "kueue"


def _load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def test_mig_partitions_are_gpus_in_the_capacity() -> None:
    fleet = compile_fleet(CASE / "input", emit_output=False).fleet
    assert fleet is not None
    pools = fleet.clusters["gke-serving"].pools
    # gpu-partition-size=1g.10gb: 7 partitions on each of 8 A100s, each advertised as nvidia.com/gpu.
    assert {n: r.per_node for n, r in pools["a100-mig"].resources.items()} == {"nvidia.com/gpu": 56}
    # time-sharing, 4 clients per GPU: the single L4 is advertised 4 times as nvidia.com/gpu.
    assert {n: r.per_node for n, r in pools["l4-shared"].resources.items()} == {"nvidia.com/gpu": 4}
    assert (
        pools["l4-shared"].nodes_least == 1
    )  # GKE's cluster autoscaler keeps the node pool's minimum


def test_flavors_select_gkes_node_labels() -> None:
    mig = _load(KUEUE / "resourceflavor-a100-mig.yaml")["spec"]["nodeLabels"]
    assert mig["cloud.google.com/gke-gpu-partition-size"] == "1g.10gb"
    assert mig["cloud.google.com/gke-nodepool"] == "a100-mig"
    shared = _load(KUEUE / "resourceflavor-l4-shared.yaml")["spec"]["nodeLabels"]
    assert shared["cloud.google.com/gke-gpu-sharing-strategy"] == "time-sharing"
    assert shared["cloud.google.com/gke-max-shared-clients-per-gpu"] == "4"
    assert "nvidia.com/mig.config" not in mig and "nvidia.com/device-plugin.config" not in shared


def test_quota_is_in_gkes_resource_name() -> None:
    queue = _load(KUEUE / "clusterqueue-gke-apps.yaml")["spec"]
    flavors = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for g in queue["resourceGroups"]
        for f in g["flavors"]
    }
    assert flavors["a100-mig"]["nvidia.com/gpu"] == "112"
    assert flavors["l4-shared"]["nvidia.com/gpu"] == "40"


def test_no_gpu_operator_or_autoscaler_application_on_googles_stack() -> None:
    apps = sorted(p.name for p in (CASE / "expected" / "argocd" / "gke-serving").iterdir())
    assert apps == [
        "cluster.yaml",
        "kueue.yaml",
        "kustomization.yaml",
    ]  # cluster.yaml: its own folder


def test_opting_out_of_googles_stack_brings_the_gpu_operator(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE / "input", root)
    cluster = root / "clusters" / "gke-serving.yaml"
    cluster.write_text(
        cluster.read_text().replace(
            "components:\n", "components:\n  gpuOperator:\n    version: v26.7.0\n"
        )
    )
    result = run("requirements", "--root", str(root))
    assert result.code == 0, result.stderr
    assert "gpu-driver-version=disabled" in result.stdout
    # The GPU Operator's MIG manager and device plugin partition and share: GKE is asked for neither.
    assert "gpu-partition-size" not in result.stdout and "time-sharing" not in result.stdout
    terraform = run("requirements", "--root", str(root), "--format", "terraform").stdout
    assert 'gpu_driver_version = "INSTALLATION_DISABLED"' in terraform
    assert "gpu_partition_size" not in terraform and "gpu_sharing_config" not in terraform
    out = tmp_path / "out"
    rendered = run("render", "--root", str(root), "--out", str(out))
    assert (out / "argocd" / "gke-serving" / "gpu-operator.yaml").is_file(), rendered.stderr


def test_requirements_print_the_node_pool_flags() -> None:
    result = run("requirements", "--root", str(CASE / "input"))
    assert result.code == 0, result.stderr
    assert (
        "  gcloud container node-pools create l4-shared --cluster gke-serving --machine-type g2-standard-4 "
        "--accelerator type=nvidia-l4,count=1,gpu-driver-version=default,"
        "gpu-sharing-strategy=time-sharing,max-shared-clients-per-gpu=4 --node-taints nvidia.com/gpu=present:NoSchedule "
        "--enable-autoscaling --total-min-nodes 1 --total-max-nodes 10"
    ) in result.stdout.splitlines()
    assert "gpu-partition-size=1g.10gb" in result.stdout


def test_time_sharing_passes_at_48_clients_and_fails_at_49(tmp_path: Path) -> None:
    """GKE's documented bound (cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass,
    gpuSharing.maxSharedClientsPerGPU 2-48): the check passes exactly at it and trips one past it."""
    for replicas, trips in ((48, False), (49, True)):
        root = tmp_path / str(replicas)
        shutil.copytree(CASE / "input", root)
        cluster = root / "clusters" / "gke-serving.yaml"
        cluster.write_text(cluster.read_text().replace("replicas: 4,", f"replicas: {replicas},"))
        result = run("check", "--root", str(root))
        # (the tenants' cpu quota no longer fits the shares either way; only the GKE bound is asserted)
        assert ("[gke-time-sharing]" in result.stderr) == trips, result.stderr
        assert ("at most 48 clients" in result.stderr) == trips


def test_priority_on_a_gke_pool_is_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE / "input", root)
    cluster = root / "clusters" / "gke-serving.yaml"
    cluster.write_text(
        cluster.read_text().replace(
            "autoscaler: cluster-autoscaler}", "autoscaler: cluster-autoscaler, priority: 30}"
        )
    )
    result = run("check", "--root", str(root))
    assert result.code == 0 and "[gke-expander-priority]" in result.stderr
