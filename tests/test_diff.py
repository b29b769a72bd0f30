"""`gpuplan diff`: git REF vs working tree, two folders, disruptions, redaction, truncation."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.commands.diff import diff
from gpuplan.diff.disruptions import find
from gpuplan.diff.markdown import Limits, as_markdown
from gpuplan.diff.objects import Entry, Side, compare, format_path, key_of
from gpuplan.diff.sides import from_folders
from tests.conftest import copy_example, run, snapshot

RESET = "MIG manager will reset the GPUs of pool h100-mixed's nodes"


pytestmark = pytest.mark.usefixtures("git_identity")  # tests/conftest.py: a git author


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def committed_example(root: Path) -> Path:
    """Return a git repository holding the example fleet, committed."""
    copy_example(root)
    git(root, "init", "-q")
    git(
        root, "add", "--", *(p.name for p in root.iterdir() if p.name != ".git")
    )  # every input folder copy_example wrote
    git(root, "commit", "-q", "-m", "example fleet")
    return root


def edit_yaml(path: Path, change: Any) -> Any:
    """Load a YAML input, let `change` edit it, write it back; return what `change` returns."""
    document = yaml.safe_load(path.read_text())
    result = change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return result


def raise_team_a_quota(root: Path) -> tuple[int, int]:
    """Give team-a 8 more GPUs of pool h100-train; return the old and new quota."""

    def change(tenant: dict[str, Any]) -> tuple[int, int]:
        quota = next(q for q in tenant["allocations"][0]["quotas"] if q["pool"] == "h100-train")
        old = quota["gpus"]
        quota["gpus"] = old + 8
        return old, old + 8

    return edit_yaml(root / "tenants/team-a.yaml", change)


def change_mig_layout(root: Path) -> None:
    """Re-partition GPUs 4-7 of pool h100-mixed (drops the unused 2g.20gb slice)."""

    def change(cluster: dict[str, Any]) -> None:
        pool = next(p for p in cluster["nodePools"] if p["name"] == "h100-mixed")
        pool["sharing"]["mig"]["devices"][1]["layout"] = {"3g.40gb": 1, "1g.10gb": 4}

    edit_yaml(root / "clusters/dgx-onprem.yaml", change)


def change_fleet(root: Path) -> tuple[int, int]:
    """Raise a quota, change a MIG layout and remove tenant ml-research in the working tree."""
    quotas = raise_team_a_quota(root)
    change_mig_layout(root)
    (root / "tenants/ml-research.yaml").unlink()
    return quotas


def call(capsys: pytest.CaptureFixture[str], **options: Any) -> tuple[int, str, str]:
    """Run `gpuplan diff` in-process; return the exit code, stdout and stderr."""
    defaults: dict[str, Any] = {
        "root": Path("."),
        "base": None,
        "old_dir": None,
        "new_dir": None,
        "fmt": "text",
        "exit_code": False,
        "crds": None,
    }
    code = diff(**(defaults | options))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    root = committed_example(tmp_path_factory.mktemp("changed") / "repo")
    old, new = change_fleet(root)
    return root, old, new


def test_markdown_shows_old_and_new_values_and_names_every_disruption(
    changed: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    root, old, new = changed
    code, out, err = call(capsys, root=root, base="HEAD", fmt="markdown")
    assert code == 0, err
    marker, first = out.splitlines()[:2]
    assert marker == "<!-- gpuplan-diff: . -->"
    assert re.fullmatch(
        r"\*\*gpuplan\*\*: \d+ objects changed, \d+ added, \d+ removed in 3 clusters( and argocd)?; \d+ disruptive, \d+ risks?",
        first,
    ), first
    assert f'.nominalQuota: "{old}" -> "{new}"' in out  # old and new on one line
    assert RESET in out
    assert "namespace ml-research of tenant ml-research is removed" in out and "Prune=false" in out
    assert "tenant ml-research is removed from the cluster" in out
    assert f"| h100-prod | h100-train | `nvidia.com/gpu` | tenant team-a | {old} | {new} |" in out
    assert "### dgx-onprem" in out and "### h100-prod" in out and "<details>" in out


def test_markdown_field_changes_are_one_line_each(
    changed: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = changed
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="markdown")
    blocks = re.findall(r"```text\n(.*?)\n```", out, re.DOTALL)
    assert blocks
    for line in "\n".join(blocks).splitlines():
        assert re.fullmatch(r"\S+: .+ -> .+", line), line


def test_base_leaves_the_working_tree_and_the_repository_untouched(
    changed: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = changed
    before, status = snapshot(root), git(root, "status", "--porcelain")
    code, _, _ = call(capsys, root=root, base="HEAD", fmt="json")
    assert code == 0
    assert snapshot(root) == before
    assert git(root, "status", "--porcelain") == status
    assert not (root / "output").exists()


def test_text_has_one_line_per_field_and_json_has_paths_and_disruptions(
    changed: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    root, old, new = changed
    _, text, _ = call(capsys, root=root, base="HEAD", fmt="text")
    assert re.search(
        rf'^~ h100-prod ClusterQueue/team-a spec\.resourceGroups\[\d+\]\.flavors\[\d+\]\.resources\[\d+\]\.nominalQuota: "{old}" -> "{new}"$',
        text,
        re.MULTILINE,
    )
    assert (
        "- dgx-onprem Namespace/ml-research\n" in text
        and "- dgx-onprem ClusterQueue/ml-research\n" in text
    )
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    document = json.loads(out)
    assert (
        document["summary"]["removed"]
        == sum(1 for o in document["objects"] if o["change"] == "removed")
        > 0
    )
    queue = next(
        o for o in document["objects"] if o["kind"] == "ClusterQueue" and o["name"] == "team-a"
    )
    assert {"old": str(old), "new": str(new)}.items() <= next(
        f for f in queue["fields"] if f["path"].endswith("nominalQuota") and f["old"] == str(old)
    ).items()
    codes = {d["code"] for d in document["disruptions"]}
    assert {"mig-relayout", "namespace-removed", "tenant-removed"} <= codes
    assert (
        "disruptive" in {d["severity"] for d in document["disruptions"]} <= {"disruptive", "risk"}
    )


def test_exit_code_is_1_with_differences(
    changed: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, _ = changed
    assert call(capsys, root=root, base="HEAD", exit_code=True)[0] == 1


def test_identical_inputs_give_no_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")
    assert call(capsys, root=root, base="HEAD", exit_code=True)[:2] == (0, "no changes\n")
    code, out, _ = call(capsys, root=root, base="HEAD", fmt="markdown", exit_code=True)
    assert code == 0 and out.startswith("<!-- gpuplan-diff: . -->\n**gpuplan**: no changes\n")


def test_a_quota_cut_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = committed_example(tmp_path / "repo")
    git(root, "tag", "before")
    old, new = raise_team_a_quota(root)
    git(root, "commit", "-q", "-am", "more GPUs for team-a")
    code, out, _ = call(
        capsys, root=root, base="before", fmt="markdown"
    )  # base: a tag; working tree = HEAD
    assert code == 0 and "Warnings" not in out
    (root / "tenants/team-a.yaml").write_text(git(root, "show", "before:tenants/team-a.yaml"))
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="text")
    warning = next(
        line
        for line in out.splitlines()
        if line.startswith(
            "! [quota-cut] h100-prod: quota cut for tenant team-a (ClusterQueue/team-a): "
        )
    )
    assert (
        f"nvidia.com/gpu on pool h100-train {new} -> {old} (cause: tenant team-a's own quota)"
        in warning
    )


def test_a_bad_ref_or_no_repository_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")
    code, out, err = call(capsys, root=root, base="no-such-ref")
    assert (code, out) == (2, "") and "no-such-ref: no such commit" in err
    assert call(capsys, root=root, base="--output=/tmp/x")[0] == 2
    plain = copy_example(tmp_path / "plain")
    code, _, err = call(capsys, root=plain, base="HEAD")
    assert code == 2 and "not inside" in err


@pytest.mark.parametrize(
    "options",
    [{}, {"base": "HEAD", "old_dir": Path("a"), "new_dir": Path("b")}, {"old_dir": Path("a")}],
)
def test_neither_or_both_modes_is_a_usage_error(
    options: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = call(capsys, **options)
    assert (code, out) == (2, "") and "--base REF" in err


def test_input_errors_say_which_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = committed_example(tmp_path / "repo")
    good = (root / "tenants/team-a.yaml").read_text()
    (root / "tenants/team-a.yaml").write_text(
        good.replace("name: team-a", "name: team-a\nbogus: 1", 1)
    )
    code, out, err = call(capsys, root=root, base="HEAD")
    assert (
        (code, out) == (1, "")
        and "the fleet in the working tree has errors" in err
        and "bogus" in err
    )
    git(root, "commit", "-q", "-am", "broken")
    (root / "tenants/team-a.yaml").write_text(good)
    code, _, err = call(capsys, root=root, base="HEAD")
    assert code == 1 and "the fleet at HEAD" in err and "working tree" not in err


def test_two_folders_compare_rendered_outputs_like_base_mode(
    changed: tuple[Path, int, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, old, new = changed
    before = committed_example(tmp_path / "before")
    assert run("render", "--root", str(before), "--out", str(tmp_path / "old")).code == 0
    assert run("render", "--root", str(root), "--out", str(tmp_path / "new")).code == 0
    code, out, _ = call(
        capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="json", exit_code=True
    )
    folders = json.loads(out)
    _, out, _ = call(capsys, root=root, base="HEAD", fmt="json")
    base = json.loads(out)
    assert code == 1
    assert [
        (o["cluster"], o["kind"], o["name"], o["change"], o["fields"]) for o in folders["objects"]
    ] == [(o["cluster"], o["kind"], o["name"], o["change"], o["fields"]) for o in base["objects"]]
    same = ("code", "severity", "cluster", "subject", "message")
    assert [{k: d[k] for k in same} for d in folders["disruptions"]] == [
        {k: d[k] for k in same} for d in base["disruptions"]
    ]
    h100 = next(d for d in base["disruptions"] if d["code"] == "mig-relayout")
    assert (
        h100["blastRadius"]["nodes"] == 2 and h100["blastRadius"]["gpus"] == 16
    )  # from the fleet: 2 nodes x 8 GPUs
    _, out, _ = call(capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="markdown")
    assert (
        f"| h100-prod | h100-train | `nvidia.com/gpu` | tenant team-a | {old} | {new} |" in out
    )  # from the ClusterQueues


def test_two_folders_ignore_comments_and_file_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    (old / "x").mkdir(parents=True)
    new.mkdir()
    (old / "x/a.yaml").write_text(
        "# Generated by gpuplan\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\ndata: {k: v}\n"
    )
    (new / "all.yml").write_text(
        "---\n# another header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: n\n  name: a\ndata:\n  k: v\n--- just text\n"
    )
    assert call(capsys, old_dir=old, new_dir=new, exit_code=True)[:2] == (0, "no changes\n")


def secret(data: dict[str, str], string_data: dict[str, str] | None = None) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "team-a"},
        "data": data,
    }
    return yaml.safe_dump(body | ({"stringData": string_data} if string_data else {}))


def test_secret_values_never_appear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
    (old / "secret.yaml").write_text(secret({"password": "aHVudGVyMg=="}))
    (new / "secret.yaml").write_text(
        secret(
            {"password": "c3dvcmRmaXNo", "extra": "ZXh0cmEtdmFsdWU="},
            {"token": "plain-token-value"},
        )
    )
    (old / "other.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "gone"},
                "stringData": {"k": "old-gone-value"},
            }
        )
    )
    for fmt in ("text", "json", "markdown"):
        code, out, _ = call(capsys, old_dir=old, new_dir=new, fmt=fmt)
        assert code == 0 and "<redacted>" in out, fmt
        for value in (
            "aHVudGVyMg",
            "c3dvcmRmaXNo",
            "ZXh0cmEtdmFsdWU",
            "plain-token-value",
            "old-gone-value",
            "hunter2",
            "swordfish",
        ):
            assert value not in out, (fmt, value)
    _, out, _ = call(capsys, old_dir=old, new_dir=new, fmt="text")
    assert '~ Secret/team-a/creds data.password: "<redacted>" -> "<redacted>"' in out
    assert '~ Secret/team-a/creds stringData: (absent) -> {"token": "<redacted>"}' in out


def config_maps(folder: Path, count: int, fields: int, value: str) -> None:
    folder.mkdir()
    for index in range(count):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{index:03}", "namespace": "n"},
            "data": {f"k{i:02}": value for i in range(fields)},
        }
        (folder / f"cm-{index:03}.yaml").write_text(yaml.safe_dump(body))


def test_long_diffs_are_truncated_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_maps(tmp_path / "old", 150, 30, "a")
    config_maps(tmp_path / "new", 150, 30, "b")
    code, out, _ = call(capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="markdown")
    assert code == 0 and out.startswith(
        "<!-- gpuplan-diff: . -->\n**gpuplan**: 150 objects changed, 0 added, 0 removed\n"
    )
    assert "_10 more field changes not shown._" in out  # 30 fields, 20 shown
    assert out.count("<details>") == 50 and "_100 objects left out of this comment in all" in out
    small = as_markdown(
        from_folders(tmp_path / "old", tmp_path / "new"), Limits(objects=2, fields=3)
    )
    assert (
        small.count("<details>") == 2
        and "_27 more field changes not shown._" in small
        and "_148 objects left out" in small
    )
    _, text, _ = call(capsys, old_dir=tmp_path / "old", new_dir=tmp_path / "new", fmt="text")
    assert text.count("\n~ ") + 1 == 150 * 30  # text is complete


def test_a_huge_diff_still_fits_in_one_comment(tmp_path: Path) -> None:
    config_maps(tmp_path / "old", 120, 30, "x" * 150)
    config_maps(tmp_path / "new", 120, 30, "y" * 150)
    text = as_markdown(from_folders(tmp_path / "old", tmp_path / "new"))
    assert len(text) <= 60_000 and "objects left out of this comment" in text


# disruptions found from objects alone


def side(*objects: dict[str, Any], scope: str = "c1") -> Side:
    return {
        key_of(o, scope, "f.yaml"): Entry(key_of(o, scope, "f.yaml"), o, "f.yaml") for o in objects
    }


def disruptions(old: Side, new: Side) -> list[tuple[str, str, str]]:
    return [(d.kind, d.subject, d.message) for d in find(old, new, compare(old, new))]


def node_pool(pool: str, mig: str | None) -> dict[str, Any]:
    labels = {"gpuplan.io/pool": pool} | ({"nvidia.com/mig.config": mig} if mig else {})
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool},
        "spec": {"template": {"metadata": {"labels": labels}}},
    }


def mig_parted(configs: dict[str, Any]) -> dict[str, Any]:
    text = yaml.safe_dump({"version": "v1", "mig-configs": configs})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "mig", "namespace": "gpu-operator"},
        "data": {"config.yaml": text},
    }


def test_a_mig_config_whose_content_changes_resets_the_pool_using_it() -> None:
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    other = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]
    old = side(
        node_pool("p1", "custom"),
        node_pool("p2", "other"),
        mig_parted({"custom": layout, "other": other}),
    )
    new = side(
        node_pool("p1", "custom"),
        node_pool("p2", "other"),
        mig_parted({"custom": other, "other": other}),
    )
    found = disruptions(old, new)
    assert [(k, s) for k, s, _ in found] == [("mig-relayout", "p1")]
    assert "MIG manager will reset the GPUs of pool p1's nodes" in found[0][2]


def test_a_label_change_on_a_node_pool_is_a_mig_layout_change() -> None:
    found = disruptions(side(node_pool("p1", None)), side(node_pool("p1", "gpuplan-7x1g.10gb")))
    assert (
        found[0][:2] == ("mig-relayout", "p1")
        and "no MIG configuration -> gpuplan-7x1g.10gb (not defined in the mig-parted ConfigMap)"
        in found[0][2]
    )


def test_a_pool_removed_is_one_warning_naming_its_objects() -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "p1"},
        "spec": {"nodeLabels": {"gpuplan.io/pool": "p1"}},
    }
    found = disruptions(side(flavor, node_pool("p1", None)), side())
    assert [(k, s) for k, s, _ in found] == [("pool-removed", "p1")]
    assert (
        "ResourceFlavor/p1" in found[0][2]
        and "NodePool/p1" in found[0][2]
        and "Karpenter" in found[0][2]
    )


def test_quota_cuts_and_lowered_priorities() -> None:
    def quota(hard: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"hard": hard},
        }

    def priority(value: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "prod"},
            "value": value,
        }

    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns", "labels": {"gpuplan.io/tenant": "team-a"}},
    }
    old = side(
        namespace,
        quota({"requests.nvidia.com/gpu": "8", "requests.cpu": "2", "requests.memory": "1Gi"}),
        priority(1000),
    )
    new = side(
        namespace, quota({"requests.nvidia.com/gpu": "4", "requests.cpu": "2000m"}), priority(100)
    )
    found = disruptions(old, new)
    assert [k for k, _, _ in found] == ["quota-cut", "priority-lowered"]
    assert (
        "namespace ns of tenant team-a" in found[0][2]
        and "requests.nvidia.com/gpu 8 -> 4" in found[0][2]
    )
    assert (
        "cpu" not in found[0][2] and "memory" not in found[0][2]
    )  # 2 == 2000m; a limit lifted is no cut
    assert "1000 -> 100" in found[1][2]


def test_an_api_version_upgrade_is_a_change_of_the_same_object() -> None:
    queue = {"kind": "ClusterQueue", "metadata": {"name": "team-a"}, "spec": {"cohort": "c"}}
    changes = compare(
        side({"apiVersion": "kueue.x-k8s.io/v1beta1"} | queue),
        side({"apiVersion": "kueue.x-k8s.io/v1beta2"} | queue),
    )
    assert [(c.status, [(f.path, f.old, f.new) for f in c.fields]) for c in changes] == [
        ("changed", [("apiVersion", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")])
    ]


def test_field_paths_are_written_the_kubernetes_way() -> None:
    assert (
        format_path(["spec", "resourceGroups", 0, "flavors", 1, "resources", 2, "nominalQuota"])
        == "spec.resourceGroups[0].flavors[1].resources[2].nominalQuota"
    )
    assert (
        format_path(["metadata", "labels", "nvidia.com/mig.config"])
        == "metadata.labels['nvidia.com/mig.config']"
    )


def test_a_base_without_inputs_is_an_empty_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    copy_example(root)
    code, out, err = call(capsys, root=root, base="HEAD", fmt="json")
    assert code == 0 and "empty fleet" in err
    assert {o["change"] for o in json.loads(out)["objects"]} == {"added"}


def test_own_manifests_and_patches_at_the_base_are_compared_not_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path / "repo")
    own = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "site-notes", "namespace": "team-a"},
        "data": {"owner": "platform"},
    }
    (root / "extra/h100-prod").mkdir(parents=True, exist_ok=True)
    (root / "extra/h100-prod/notes.yaml").write_text(yaml.safe_dump(own))
    patch = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "h100-train"},
        "spec": {"template": {"spec": {"expireAfter": "720h"}}},
    }
    (root / "patches/h100-prod").mkdir(parents=True, exist_ok=True)
    (root / "patches/h100-prod/expire.yaml").write_text(yaml.safe_dump(patch))
    git(root, "add", "extra", "patches")
    git(root, "commit", "-q", "-m", "own manifest and a patch")
    assert call(capsys, root=root, base="HEAD", exit_code=True)[:2] == (0, "no changes\n")
    (root / "extra/h100-prod/notes.yaml").write_text(
        yaml.safe_dump(own | {"data": {"owner": "ml-platform"}})
    )
    (root / "patches/h100-prod/expire.yaml").write_text(
        yaml.safe_dump(patch | {"spec": {"template": {"spec": {"expireAfter": "336h"}}}})
    )
    code, out, err = call(capsys, root=root, base="HEAD", fmt="json")
    assert code == 0, err
    document = json.loads(out)
    changed = {
        (o["kind"], o["name"]): [(f["path"], f["old"], f["new"]) for f in o["fields"]]
        for o in document["objects"]
    }
    assert changed == {
        ("ConfigMap", "site-notes"): [("data.owner", "platform", "ml-platform")],
        ("NodePool", "h100-train"): [("spec.template.spec.expireAfter", "720h", "336h")],
    }
    [drift] = document["disruptions"]
    assert (drift["code"], drift["subject"]) == (
        "nodes-replaced",
        "h100-train",
    ) and "expireAfter" in drift["message"]
    sources = {o["name"]: o["sources"] for o in document["objects"]}
    assert (
        "extra/h100-prod/notes.yaml" in sources["site-notes"]
    )  # the reviewer sees which input changed it
    assert "patches/h100-prod/expire.yaml" in sources["h100-train"]
    _, comment, _ = call(capsys, root=root, base="HEAD", fmt="markdown")
    assert "<code>patches/h100-prod/expire.yaml</code>" in comment
    assert "<code>extra/h100-prod/notes.yaml</code>" in comment
