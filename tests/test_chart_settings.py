"""Issue 35, "also wrong, smaller": what gpuplan's objects replace or leave open in the charts it
installs (Kueue's own Configuration tuning, the DRA driver chart's DeviceClasses), and KAI's MIG names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuplan.plan.kai_quota import gpu_units
from tests.conftest import copy_example, run

CASES = Path(__file__).parent / "cases"


def _kueue_config(root: Path, cluster: str) -> dict:
    app = yaml.safe_load((root / "output" / "argocd" / cluster / "kueue.yaml").read_text())
    values = app["spec"]["source"]["helm"]["valuesObject"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_example(tmp_path_factory.mktemp("fleet"))
    result = run("render", "--root", str(root))
    assert result.code == 0, result.stderr
    return root


def test_kueue_v0_14_keeps_the_charts_client_qps_and_burst(rendered: Path) -> None:
    config = _kueue_config(rendered, "dgx-onprem")  # Kueue v0.14.8
    assert config["clientConnection"] == {"qps": 50, "burst": 100}
    assert config["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 5


def test_kueue_v0_19_keeps_its_charts_tuning(rendered: Path) -> None:
    config = _kueue_config(rendered, "h100-prod")  # Kueue v0.19.2
    assert config["clientConnection"] == {"qps": 300, "burst": 500}
    assert config["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 10


def test_dra_chart_classes_get_no_quota_in_tenant_namespaces(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "--root", str(CASES / "dra-kueue" / "input"), "--out", str(out))
    assert result.code == 0, result.stderr
    quotas = [
        yaml.safe_load(p.read_text()) for p in out.glob("*/namespaces/*/resourcequota-*.yaml")
    ]
    tenants = [q for q in quotas if "scopeSelector" not in q["spec"]]  # not the critical-pods guard
    assert len(tenants) == 3
    for quota in tenants:
        hard = quota["spec"]["hard"]
        for name in ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"):
            assert hard[f"{name}.deviceclass.resource.k8s.io/devices"] == "0"


@pytest.mark.parametrize(
    ("resource", "gpus"),
    [("nvidia.com/mig-3g.40gb", 3), ("nvidia.com/mig-1g.10gb+me", 0), ("nvidia.com/gpu", 1)],
)
def test_kai_counts_mig_names_as_kai_does(resource: str, gpus: int) -> None:
    assert gpu_units(resource) == gpus
