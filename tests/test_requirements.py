"""`gpuplan requirements`: golden text and Terraform output per case, the formats' own rules, exit codes.

Goldens: tests/cases/<case>/requirements/{text.txt,terraform.tf}; `pytest --update-golden` rewrites them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuplan.requirements.hcl import Block, Expr, identifier, render
from tests.conftest import run

CASES = Path(__file__).resolve().parent / "cases"
GOLDEN = {"text": "text.txt", "terraform": "terraform.tf"}
CASE_NAMES = (
    "cluster-autoscaler-eks",
    "cluster-autoscaler-aks",
    "gke-stack",
    "bootstrap-older-releases",  # Karpenter self-hosted on AKS: its identity's credential and roles
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
