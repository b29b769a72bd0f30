"""`gpuplan requirements`: golden text and Terraform output per case, the formats' own rules, exit codes.

Goldens: tests/cases/<case>/requirements/{text.txt,terraform.tf}, and the example fleet's in
tests/golden/requirements-example.{txt,tf}; `pytest --update-golden` rewrites them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuplan.plan.gke import machine_type
from gpuplan.requirements.hcl import Block, Expr, identifier, render
from tests.conftest import EXAMPLE, run

CASES = Path(__file__).resolve().parent / "cases"
GOLDEN = {"text": "text.txt", "terraform": "terraform.tf"}
CASE_NAMES = (
    "cluster-autoscaler-eks",
    "cluster-autoscaler-aks",
    "gke-stack",
    "bootstrap-older-releases",  # Karpenter self-hosted on AKS: its identity's credential and roles
    "monitoring-existing",  # what the cluster's own Prometheus must select
)


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_requirements(case: str, fmt: str, update_golden: bool) -> None:
    result = run("requirements", "--root", str(CASES / case / "input"), "--format", fmt)
    assert result.code == 0, result.stderr
    golden = CASES / case / "requirements" / GOLDEN[fmt]
    if update_golden:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def _blocks(text: str) -> dict[str, str]:
    """Return each top-level resource block of Terraform text by its `type.name`."""
    found = re.findall(r'^resource "([^"]+)" "([^"]+)" \{\n(.*?)^\}$', text, re.M | re.S)
    return {f"{kind}.{name}": body for kind, name, body in found}


def test_terraform_braces_balance_and_names_are_identifiers() -> None:
    for case in CASE_NAMES:
        text = run("requirements", "--root", str(CASES / case / "input"), "--format", "terraform")
        body = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text.stdout)  # braces inside strings do not count
        assert body.count("{") == body.count("}") and body.count("[") == body.count("]"), case
        for key in _blocks(text.stdout):
            assert re.fullmatch(r"[a-z_][a-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*", key), key


def test_eks_terraform_tags_the_node_groups_asg_for_scale_from_zero() -> None:
    text = run(
        "requirements",
        "--root",
        str(CASES / "cluster-autoscaler-eks" / "input"),
        "--format",
        "terraform",
    ).stdout
    blocks = _blocks(text)
    spot = blocks["aws_autoscaling_group_tag.ca_explicit_h100_spot"]
    assert re.search(
        r'"k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" += "8"', spot
    )
    assert (
        "aws_eks_node_group.ca_explicit_h100_spot.resources[0].autoscaling_groups[0].name" in spot
    )
    group = blocks["aws_eks_node_group.ca_explicit_h100_spot"]
    assert 'capacity_type   = "SPOT"' in group and "min_size     = 0" in group
    assert "ignore_changes = [scaling_config[0].desired_size]" in group


def test_gke_terraform_carries_partition_sharing_and_total_limits() -> None:
    text = run(
        "requirements", "--root", str(CASES / "gke-stack" / "input"), "--format", "terraform"
    ).stdout
    blocks = _blocks(text)
    mig = blocks["google_container_node_pool.gke_serving_a100_mig"]
    assert 'gpu_partition_size = "1g.10gb"' in mig and "node_count = 2" in mig
    shared = blocks["google_container_node_pool.gke_serving_l4_shared"]
    assert "total_min_node_count = 1" in shared and "total_max_node_count = 10" in shared
    assert 'gpu_sharing_strategy       = "TIME_SHARING"' in shared
    assert "max_shared_clients_per_gpu = 4" in shared
    assert 'gpu_driver_version = "DEFAULT"' in shared


def test_aks_profile_sets_the_priority_expander_and_the_pools_limits() -> None:
    root = CASES / "cluster-autoscaler-aks" / "input"
    text = run("requirements", "--root", str(root)).stdout.splitlines()
    assert (
        "  az aks update --name prod-aks-weu --cluster-autoscaler-profile expander=priority "
        "skip-nodes-with-system-pods=true scale-down-delay-after-add=30m scale-down-unneeded-time=20m"
    ) in text
    assert (
        "  az aks nodepool update --cluster-name prod-aks-weu --name a100od --enable-cluster-autoscaler "
        "--min-count 1 --max-count 4"
    ) in text
    tf = _blocks(run("requirements", "--root", str(root), "--format", "terraform").stdout)
    assert 'expander                    = "priority"' in tf["azurerm_kubernetes_cluster.aks_ca"]
    assert (
        'priority             = "Spot"'
        in tf["azurerm_kubernetes_cluster_node_pool.aks_ca_a100_spot"]
    )


def test_hcl_strings_escape_quotes_and_template_sequences() -> None:
    block = Block("resource", ("x", identifier("9a-b")))
    block.set("a", 'say "hi" ${x} %{y}').set("ref", Expr("each.key")).set("m", {"k.io/a": "b"})
    assert render(block) == [
        'resource "x" "_9a_b" {',
        '  a   = "say \\"hi\\" $${x} %%{y}"',
        "  ref = each.key",
        "  m = {",
        '    "k.io/a" = "b"',
        "  }",
        "}",
    ]


def test_unknown_format_is_a_usage_error() -> None:
    result = run("requirements", "--root", str(CASES / "gke-stack" / "input"), "--format", "yaml")
    assert result.code == 2 and "yaml" in result.stderr


def test_a_fleet_without_node_group_needs_says_so_in_terraform() -> None:
    root = CASES / "cluster-autoscaler-eks" / "input"
    result = run(
        "requirements", "--root", str(root), "--cluster", "ca-explicit", "--format", "terraform"
    )
    assert result.code == 0 and result.stdout.startswith("# ca-explicit: pool h100-spot")
    empty = run(
        "requirements",
        "--root",
        str(CASES / "gpu-operator-azure" / "input"),
        "--format",
        "terraform",
    )
    assert empty.code == 0, empty.stderr
    assert empty.stdout == "# no node group needs anything set\n"


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
@pytest.mark.parametrize("case", CASE_NAMES)
def test_terraform_output_parses_and_is_already_formatted(case: str) -> None:
    """`terraform fmt -` parses the blocks (exit 2 on a syntax error) and leaves them unchanged."""
    text = (CASES / case / "requirements" / GOLDEN["terraform"]).read_text()
    done = subprocess.run(
        ["terraform", "fmt", "-"], input=text, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == text


def test_self_hosted_aks_karpenter_gets_its_credential_and_node_roles_and_a_subnet_role_elsewhere(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASES / "bootstrap-older-releases" / "input", root)
    cluster = root / "clusters" / "aks-self.yaml"
    own = "resourceGroups/MC_ml-platform_aks-self_westeurope/providers/Microsoft.Network"
    cluster.write_text(
        cluster.read_text().replace(own, "resourceGroups/net-shared/providers/Microsoft.Network")
    )
    result = run(
        "requirements", "--root", str(root), "--cluster", "aks-self", "--format", "terraform"
    )
    assert result.code == 0, result.stderr
    blocks = _blocks(result.stdout)
    credential = blocks["azurerm_federated_identity_credential.aks_self_karpenter"]
    assert 'subject                   = "system:serviceaccount:kube-system:karpenter"' in credential
    assert 'audience                  = ["api://AzureADTokenExchange"]' in credential
    assert (
        "issuer                    = azurerm_kubernetes_cluster.aks_self.oidc_issuer_url"
        in credential
    )
    roles = {
        name: body for name, body in blocks.items() if name.startswith("azurerm_role_assignment.")
    }
    scopes = sorted(
        re.search(r'scope += "([^"]+)"', b).group(1).rsplit("/", 1)[1] for b in roles.values()
    )  # type: ignore[union-attr]
    assert scopes == ["MC_ml-platform_aks-self_westeurope"] * 3 + ["net-shared"]
    subnet = roles["azurerm_role_assignment.aks_self_karpenter_subnet_network_contributor"]
    assert 'role_definition_name = "Network Contributor"' in subnet
    assert (
        "principal_id         = azurerm_user_assigned_identity.aks_self_karpenter.principal_id"
        in subnet
    )


EXAMPLE_GOLDEN = {"text": "requirements-example.txt", "terraform": "requirements-example.tf"}


@pytest.mark.parametrize("fmt", sorted(EXAMPLE_GOLDEN))
def test_golden_requirements_of_the_example_fleet(fmt: str, update_golden: bool) -> None:
    """The repository's own fleet: every node group (autoscaled or fixed, EKS, AKS, GKE) in both formats."""
    result = run("requirements", "--root", str(EXAMPLE), "--format", fmt)
    assert result.code == 0, result.stderr
    golden = Path(__file__).resolve().parent / "golden" / EXAMPLE_GOLDEN[fmt]
    if update_golden:
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()
    again = run("requirements", "--root", str(EXAMPLE), "--format", fmt)
    assert again.stdout == result.stdout  # byte-deterministic


def test_fixed_size_node_groups_get_their_labels_and_taints_in_terraform() -> None:
    blocks = _blocks(run("requirements", "--root", str(EXAMPLE), "--format", "terraform").stdout)
    eks = blocks["aws_eks_node_group.h100_prod_h100_infer"]
    assert '"nvidia.com/mig.config" = "gpuplan-7x1g.10gb"' in eks
    assert 'effect = "NO_SCHEDULE"' in eks and "scaling_config" not in eks
    aks = blocks["azurerm_kubernetes_cluster_node_pool.edge_inference_nvl_shared"]
    assert 'node_taints = ["nvidia.com/gpu=present:NoSchedule"]' in aks
    assert '"nvidia.com/device-plugin.config" = "nvl-shared"' in aks
    assert "auto_scaling_enabled" not in aks  # not autoscaled: no sizes gpuplan would own


def test_gke_node_pools_name_their_machine_type() -> None:
    root = str(CASES / "gke-stack" / "input")
    text = run("requirements", "--root", root).stdout.splitlines()
    assert "  machine type for 8x A100-SXM4-80GB per node: a2-ultragpu-8g" in text
    assert any(
        "node-pools create a100-mig --cluster gke-serving --machine-type a2-ultragpu-8g " in line
        for line in text
    )
    tf = _blocks(run("requirements", "--root", root, "--format", "terraform").stdout)
    assert (
        'machine_type = "a2-ultragpu-8g"' in tf["google_container_node_pool.gke_serving_a100_mig"]
    )
    assert (
        'machine_type = "g2-standard-4"' in tf["google_container_node_pool.gke_serving_l4_shared"]
    )
    # GKE labels its nodes with the accelerator itself: no node_config label for it
    assert "gke-accelerator" not in tf["google_container_node_pool.gke_serving_l4_shared"]


@pytest.mark.parametrize(
    ("model", "count", "accelerator", "expected"),
    [
        ("H100-SXM5-80GB", 8, "nvidia-h100-80gb", "a3-highgpu-8g"),
        ("H100-SXM5-80GB", 8, "nvidia-h100-mega-80gb", "a3-megagpu-8g"),
        ("H100-SXM5-80GB", 2, "nvidia-h100-80gb", "a3-highgpu-2g"),
        ("H200-141GB", 8, "nvidia-h200-141gb", "a3-ultragpu-8g"),
        ("A100-SXM4-40GB", 16, "nvidia-tesla-a100", "a2-megagpu-16g"),
        ("L4", 2, "nvidia-l4", "g2-standard-24"),
        ("GB200", 4, "nvidia-gb200", "a4x-highgpu-4g"),
        ("B200", 8, "nvidia-b200", "a4-highgpu-8g"),
    ],
)
def test_machine_type_follows_from_the_gpu_and_its_count(
    model: str, count: int, accelerator: str, expected: str
) -> None:
    assert machine_type(model, count, accelerator).name == expected


def test_a_gpu_count_or_model_without_a_gke_machine_type_says_so(tmp_path: Path) -> None:
    three = machine_type("H100-SXM5-80GB", 3, "nvidia-h100-80gb")
    assert three.name is None
    assert three.text == (
        "no GKE machine type has 3 H100-SXM5-80GB (nvidia-h100-80gb) per node: "
        "its machine types have 1, 2, 4, 8; set gpusPerNode to one of them"
    )
    assert machine_type("L40S", 4, None).text == (
        "Compute Engine offers no L40S GPU (no GKE accelerator type)"
    )
    t4 = machine_type("T4", 4, "nvidia-tesla-t4")
    assert t4.name is None and "N1 machine type" in t4.text
    root = tmp_path / "repo"
    shutil.copytree(CASES / "gke-stack" / "input", root)
    cluster = root / "clusters" / "gke-serving.yaml"
    cluster.write_text(cluster.read_text().replace("gpusPerNode: 1\n", "gpusPerNode: 3\n", 1))
    result = run("requirements", "--root", str(root))
    assert result.code == 0, result.stderr
    assert (
        "  machine type for 3x L4 per node: no GKE machine type has 3 L4 (nvidia-l4) per node: "
        "its machine types have 1, 2, 4, 8; set gpusPerNode to one of them"
    ) in result.stdout.splitlines()
    assert "--machine-type" not in result.stdout.split("l4-shared", 1)[1]
    check = run("check", "--root", str(root))
    [warning] = [x for x in check.stderr.splitlines() if "no GKE machine type" in x]
    assert re.match(
        r"^clusters/gke-serving\.yaml:\d+:\d+: warning: nodePools\[1\]\.gpusPerNode: ", warning
    )
    tf = run("requirements", "--root", str(root), "--format", "terraform").stdout
    assert (
        "# machine_type: no GKE machine type has 3 L4"
        in _blocks(tf)["google_container_node_pool.gke_serving_l4_shared"]
    )
