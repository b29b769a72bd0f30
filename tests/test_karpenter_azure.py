"""Self-hosted Karpenter on AKS: the settings its controller needs, refused at their line when missing
or malformed; the bootstrap token only ever referenced (the Application values are golden-tested in
tests/cases/bootstrap-older-releases (v1.12.2) and bootstrap-node-classes (v1.6.8))."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import PROJECT, run

CASE = PROJECT / "tests/cases/bootstrap-older-releases/input"
CLUSTER = "clusters/aks-self.yaml"


def _repo(tmp_path: Path, old: str = "", new: str = "") -> Path:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    path = root / CLUSTER
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return root


def _line_of(root: Path, needle: str) -> int:
    lines = (root / CLUSTER).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_a_missing_required_setting_is_an_error_at_the_azure_section(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        "      sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpuplanExampleKeyOnlyForTests azureuser\n",
    )
    result = run("check", "--root", str(root))
    assert result.code == 1
    line = _line_of(root, "clusterEndpoint:")  # the section's first key
    assert (
        f"{CLUSTER}:{line}:7: error: components.karpenter.azure.sshPublicKey: missing required field 'sshPublicKey'"
        in result.stderr
    ), result.stderr


def test_a_malformed_subnet_id_is_an_error_at_its_line(tmp_path: Path) -> None:
    root = _repo(tmp_path, "/subnets/aks-subnet", "/subnet/aks-subnet")
    result = run("check", "--root", str(root))
    assert result.code == 1
    line = _line_of(root, "vnetSubnetId:")
    assert (
        f"{CLUSTER}:{line}:21: error: components.karpenter.azure.vnetSubnetId" in result.stderr
    ), result.stderr


def test_plugin_none_with_overlay_mode_is_refused(tmp_path: Path) -> None:
    root = _repo(
        tmp_path, "{plugin: azure, pluginMode: overlay", "{plugin: none, pluginMode: overlay"
    )
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert "pluginMode must be none when plugin is none" in result.stderr, result.stderr


def test_self_hosted_without_azure_settings_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    path = root / CLUSTER
    text = path.read_text()
    start, end = text.index("    azure:"), text.index("    nodeClass:")
    path.write_text(text[:start] + text[end:])
    result = run("check", "--root", str(root))
    assert result.code == 1
    line = _line_of(root, "selfHosted: true")
    assert (
        f"{CLUSTER}:{line}:5: error: components.karpenter.selfHosted: a self-hosted Karpenter on AKS needs components.karpenter.azure"
        in result.stderr
    ), result.stderr


def test_azure_settings_without_self_hosting_are_unused(tmp_path: Path) -> None:
    root = _repo(tmp_path, "    selfHosted: true\n")
    result = run("check", "--root", str(root))
    assert result.code == 0, result.stderr
    line = _line_of(root, "    azure:")
    assert (
        f"{CLUSTER}:{line}:5: warning: components.karpenter.azure: AKS Node Auto Provisioning runs Karpenter here"
        in result.stderr
    )


def test_azure_settings_on_an_aws_cluster_are_an_error(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    azure = (root / CLUSTER).read_text()
    block = azure[azure.index("    azure:") : azure.index("    nodeClass:")]
    eks = root / "clusters/eks-old.yaml"
    text = eks.read_text()
    eks.write_text(text.replace("    nodeClass:", block + "    nodeClass:", 1))
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert (
        "error: components.karpenter.azure: azure Karpenter settings on a cluster whose provider is aws"
        in result.stderr
    ), result.stderr


def test_the_bootstrap_token_is_referenced_never_written_and_required_by_requirements(
    tmp_path: Path,
) -> None:
    root = _repo(tmp_path)
    assert run("render", "--root", str(root)).code == 0
    app = yaml.safe_load((root / "output/argocd/aks-self/karpenter.yaml").read_text())
    env = app["spec"]["source"]["helm"]["valuesObject"]["controller"]["env"]
    token = next(e for e in env if e["name"] == "KUBELET_BOOTSTRAP_TOKEN")
    assert token == {
        "name": "KUBELET_BOOTSTRAP_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "karpenter-bootstrap-token", "key": "token"}},
    }
    result = run("requirements", "--root", str(root))
    assert result.code == 0
    assert (
        "  Secret karpenter-bootstrap-token in namespace kube-system, key token = <token-id>.<token-secret>"
        in result.stdout
    )
    assert "subject = system:serviceaccount:kube-system:karpenter" in result.stdout
