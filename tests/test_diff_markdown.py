"""The pull-request comment read as GitHub reads it (markdown-it-py with GFM tables and HTML)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gpuplan.diff.markdown import MAX_COMMENT, as_markdown, marker
from gpuplan.diff.sides import from_folders, from_git
from tests.conftest import copy_example
from tests.test_diff import edit_yaml

GFM = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


pytestmark = pytest.mark.usefixtures("git_identity")  # tests/conftest.py: a git author


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def realistic_change(root: Path) -> None:
    """One pull request: relayout pool h100-mixed, bump the driver, rename tenant ml-research."""

    def relayout(cluster: dict[str, Any]) -> None:
        pool = next(p for p in cluster["nodePools"] if p["name"] == "h100-mixed")
        pool["sharing"]["mig"]["devices"][1]["layout"] = {"3g.40gb": 1, "1g.10gb": 4}
        cluster["components"]["gpuOperator"]["driverVersion"] = "580.95.05"

    edit_yaml(root / "clusters/dgx-onprem.yaml", relayout)
    tenant = root / "tenants/ml-research.yaml"
    text = tenant.read_text().replace("name: ml-research\n", "name: ml-science\n", 1)
    tenant.unlink()
    (root / "tenants/ml-science.yaml").write_text(text)


@pytest.fixture(scope="module")
def comment(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = copy_example(tmp_path_factory.mktemp("pr") / "repo")
    git(root, "init", "-q")
    git(root, "add", "--", *(p.name for p in root.iterdir() if p.name != ".git"))
    git(root, "commit", "-q", "-m", "fleet")
    realistic_change(root)
    result = from_git(root, "HEAD", None)
    result.marker = marker(".")
    return as_markdown(result)


def sections(tokens: list[Token]) -> dict[str, list[Token]]:
    """Return the tokens under each h3 heading, by the heading's text."""
    out: dict[str, list[Token]] = {}
    current = None
    heading = False
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h3":
            current, heading = tokens[index + 1].content, True
            out[current] = []
        elif heading:
            heading = token.type != "heading_close"
        elif current is not None:
            out[current].append(token)
    return out


def items(tokens: list[Token]) -> list[str]:
    """Return the inline text of each top-level list item."""
    return [
        tokens[i + 2].content
        for i, t in enumerate(tokens)
        if t.type == "list_item_open" and t.level == 1
    ]


def table(tokens: list[Token]) -> list[list[str]]:
    """Return the first table: header row, then body rows, as cell texts."""
    rows: list[list[str]] = []
    inside = False
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            inside = True
        elif token.type == "table_close" and inside:
            break
        elif inside and token.type == "tr_open":
            rows.append([])
        elif inside and token.type in ("th_open", "td_open"):
            rows[-1].append(tokens[index + 1].content)
    return rows


def test_the_comment_opens_with_the_sticky_marker_and_the_summary(comment: str) -> None:
    tokens = GFM.parse(comment)
    assert tokens[0].type == "html_block" and tokens[0].content == "<!-- gpuplan-diff: . -->\n"
    summary = tokens[2].content  # the paragraph after the marker
    assert summary.startswith("**gpuplan**: ") and "2 disruptive, 2 risks" in summary


def test_disruptions_come_first_with_their_blast_radius(comment: str) -> None:
    tokens = GFM.parse(comment)
    headings = [
        tokens[i + 1].content
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h3"
    ]
    assert headings[:5] == [
        "⚠️ Disruptive changes (2)",
        "Risks to review (2)",
        "MIG layouts",
        "Renames",
        "Capacity",
    ]
    assert headings[5:] == ["dgx-onprem", "gb200-train"]  # then the details, per cluster
    found = sections(tokens)
    relayout, driver = items(found["⚠️ Disruptive changes (2)"])
    assert relayout.startswith(
        "`mig-relayout` **dgx-onprem** pool h100-mixed: MIG layout GPUs 0–3: 1x7g.80gb; GPUs 4–7: 2x1g.10gb + 1x2g.20gb + 1x3g.40gb -> GPUs 0–3: 1x7g.80gb; GPUs 4–7: 4x1g.10gb + 1x3g.40gb"
    )
    assert relayout.endswith("_reaches 2 nodes, 16 GPUs; tenant vision_")
    assert driver.startswith(
        "`driver-upgrade` **dgx-onprem** GPU driver 580.82.07 -> 580.95.05 on pool h100-mixed"
    )
    rename, kai = items(found["Risks to review (2)"])
    assert rename.startswith("`renamed` **dgx-onprem** tenant ml-research is renamed to ml-science")
    assert kai.startswith("`renamed` **gb200-train** tenant ml-research is renamed to ml-science")
    assert "tenant-removed" not in comment and "quota-cut" not in comment  # a rename is neither


def test_the_counts_table_is_per_cluster_and_kind(comment: str) -> None:
    rows = table(GFM.parse(comment))
    assert rows[0] == ["cluster", "kind", "changed", "added", "removed", "renamed"]
    kinds = {row[1]: row for row in rows[1:]}
    assert kinds["ClusterQueue"] == ["dgx-onprem", "ClusterQueue", "0", "0", "0", "1"]
    assert kinds["NVIDIADriver"][2] == "1" and kinds["ConfigMap"][2] == "1"


def test_the_mig_layout_is_drawn_per_memory_slice(comment: str) -> None:
    found = sections(GFM.parse(comment))["MIG layouts"]
    title = next(t.content for t in found if t.type == "inline")
    assert title.startswith(
        "**dgx-onprem · pool h100-mixed (H100-SXM5-80GB)**: GPUs 0–3: 1x7g.80gb"
    )
    rows = table(found)
    assert rows[0] == ["layout", "GPUs", "0", "1", "2", "3", "4", "5", "6", "7"]
    assert rows[1:] == [
        ["before", "GPUs 0–3", "`7g.80gb`", "⋯", "⋯", "⋯", "⋯", "⋯", "⋯", "⋯"],
        ["before", "GPUs 4–7", "`2g.20gb`", "⋯", "`1g.10gb`", "`1g.10gb`", "`3g.40gb`", "⋯", "⋯", "⋯"],
        ["after", "GPUs 0–3", "`7g.80gb`", "⋯", "⋯", "⋯", "⋯", "⋯", "⋯", "⋯"],
        ["after", "GPUs 4–7", "`1g.10gb`", "`1g.10gb`", "`1g.10gb`", "`1g.10gb`", "`3g.40gb`", "⋯", "⋯", "⋯"],
    ]  # fmt: skip


def test_the_rename_is_paired_and_its_real_changes_listed(comment: str) -> None:
    found = sections(GFM.parse(comment))
    line, kai = items(found["Renames"])
    assert line.startswith("**dgx-onprem**: tenant `ml-research` → `ml-science` (3 objects renamed")
    # On a KAI cluster the tenant's leaf Queue pairs the rename (nothing else changes in it).
    assert kai.startswith("**gb200-train**: tenant `ml-research` → `ml-science` (3 objects renamed")
    kai_rows = {row[0]: row for row in table(found["gb200-train"])[1:]}
    assert kai_rows["`Queue/ml-research` → `Queue/ml-science`"][1] == "renamed"
    objects = {row[0]: row for row in table(found["dgx-onprem"])[1:]}
    assert objects["`ClusterQueue/ml-research` → `ClusterQueue/ml-science`"][1:] == [
        "renamed",
        "0 + 1 renamed reference",
    ]
    html = GFM.render(comment)
    assert (
        "<code>ResourceQuota/ml-research/ml-science</code>: 1 field change" in html
    )  # the quota's real change, 2g.20gb gone
    assert html.count("<details>") == sum(
        1
        for cluster in ("dgx-onprem", "gb200-train")
        for row in table(found[cluster])[1:]
        if not row[2].startswith("0")
    )


def test_every_table_row_has_its_header_width(comment: str) -> None:
    tokens = GFM.parse(comment)
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            rows = table(tokens[index:])
            assert {len(r) for r in rows} == {len(rows[0])}


# a comment that must be cut


def namespace(name: str) -> dict[str, Any]:
    annotations = {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {"gpuplan.io/tenant": "t"},
            "annotations": annotations,
        },
    }


def test_truncation_keeps_every_disruption_and_says_what_it_cut(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    names = [f"tenant-namespace-with-a-long-name-{i:04}" for i in range(700)]
    for name in names:
        (old / f"{name}.yaml").write_text(yaml.safe_dump(namespace(name)))
    for i in range(150):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:03}", "namespace": "n"},
        }
        (old / f"cm-{i:03}.yaml").write_text(
            yaml.safe_dump(body | {"data": {f"k{j}": "x" * 120 for j in range(30)}})
        )
        (new / f"cm-{i:03}.yaml").write_text(
            yaml.safe_dump(body | {"data": {f"k{j}": "y" * 120 for j in range(30)}})
        )
    result = from_folders(old, new)
    assert len(result.disruptions) == 700
    text = as_markdown(result)
    assert len(text) <= MAX_COMMENT
    assert all(name in text for name in names)  # every disruption is named
    found = sections(GFM.parse(text))
    assert len(items(found["⚠️ Disruptive changes (700)"])) == 700
    last = GFM.parse(text)[-2].content
    assert last.startswith(
        "_Shortened to fit one comment: object tables, MIG slice drawings, counts per kind, finding messages."
    )
    assert "Every disruption and risk is listed above" in last


def test_a_comment_that_fits_is_not_cut(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "ns.yaml").write_text(yaml.safe_dump(namespace("a")))
    text = as_markdown(from_folders(old, new))
    assert (
        "Shortened" not in text
        and "`namespace-removed`" in text
        and "Argo CD keeps the namespace" in text
    )
