"""`gpuplan init` writes a valid new repository and never touches an existing one; the hooks and
workflows gpuplan ships (pre-commit hooks, the repository's own CI) are what they claim to be."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuplan import __version__
from gpuplan.commands.init import FILES, init_repo
from gpuplan.commands.installation import FILES as HOOK_FILES
from gpuplan.commands.installation import HOOK_REPO
from tests.conftest import PROJECT, run, snapshot

EXPECTED = (
    "clusters/gpu-cluster.yaml",
    "tenants/team-a.yaml",
    "README.md",
    "extra/README.md",
    ".github/workflows/gpuplan.yml",
    ".pre-commit-config.yaml",
    ".gitignore",
)


@pytest.fixture
def fresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    target = tmp_path / "fleet"
    assert init_repo(target) == 0
    capsys.readouterr()
    return target


def _workflow(root: Path) -> dict:
    document = yaml.safe_load((root / ".github/workflows/gpuplan.yml").read_text())
    document["on"] = document.pop(True)  # YAML 1.1 reads the key `on` as true
    return document


def _steps(document: dict) -> list[dict]:
    return [step for job in document["jobs"].values() for step in job["steps"]]


def test_init_writes_the_files_and_a_current_output(fresh: Path) -> None:
    for relative in EXPECTED:
        assert (fresh / relative).is_file(), relative
    assert list((fresh / "output").rglob("*.yaml")), "init renders output/"
    result = run("render", "--check", "--root", str(fresh))
    assert result.code == 0, result.stderr
    assert "up to date" in result.stderr


def test_init_example_is_clean_even_with_strict(fresh: Path) -> None:
    result = run("check", "--strict", "--root", str(fresh))
    assert result.code == 0, result.stderr


def test_init_example_validates_against_the_upstream_crds(fresh: Path, crds_dir: Path) -> None:
    result = run("render", "--check", "--root", str(fresh), "--crds", str(crds_dir))
    assert result.code == 0, result.stderr
    assert "not validated against CRDs" not in result.stderr


def test_init_example_has_kueue_gpu_operator_exclusive_and_mig_pools(fresh: Path) -> None:
    cluster = yaml.safe_load((fresh / "clusters/gpu-cluster.yaml").read_text())
    tenant = yaml.safe_load((fresh / "tenants/team-a.yaml").read_text())
    assert {"kueue", "gpuOperator"} <= set(cluster["components"])
    sharing = [pool.get("sharing", "exclusive") for pool in cluster["nodePools"]]
    assert "exclusive" in sharing and any(isinstance(s, dict) and "mig" in s for s in sharing)
    assert [a["cluster"] for a in tenant["allocations"]] == [cluster["name"]]
    assert (
        fresh / "output" / cluster["name"] / "kueue" / f"clusterqueue-{tenant['name']}.yaml"
    ).is_file()


def test_init_workflow_checks_drift_and_comments_the_diff(fresh: Path) -> None:
    document = _workflow(fresh)
    assert "pull_request" in document["on"]
    assert document["permissions"]["pull-requests"] == "write"
    assert set(document["permissions"].values()) <= {"read", "write"}
    steps = _steps(document)
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    runs = "\n".join(s.get("run", "") for s in steps)
    assert f"pip install gpuplan=={__version__}" in runs
    assert "gpuplan render --check" in runs
    assert 'gpuplan diff --base "origin/$BASE_REF" --format markdown' in runs
    comment = next(s for s in steps if "gh api" in s.get("run", ""))
    assert comment["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert comment["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert "--edit-last" not in runs  # it could edit another workflow's comment
    assert not [
        s["uses"] for s in steps if "uses" in s and not s["uses"].startswith("actions/")
    ]  # no third-party action


def test_init_pre_commit_config_installs_this_version_from_the_index(fresh: Path) -> None:
    config = yaml.safe_load((fresh / ".pre-commit-config.yaml").read_text())
    (repo,) = config["repos"]
    assert repo["repo"] == "local"  # no tag of gpuplan's repository needed
    (hook,) = repo["hooks"]
    assert hook["language"] == "python" and hook["entry"] == "gpuplan render"
    assert hook["additional_dependencies"] == [f"gpuplan=={__version__}"]
    assert hook["files"] == HOOK_FILES and hook["pass_filenames"] is False


@pytest.mark.parametrize("changed", ["extra/c/x.yaml", "patches/c/p.yaml", "values/c/v.yaml"])
def test_the_hooks_run_when_any_input_changes(fresh: Path, changed: str) -> None:
    # the input folders gpuplan renders from (overlay: extra/, patches/, values/)
    config = yaml.safe_load((fresh / ".pre-commit-config.yaml").read_text())
    shipped = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    for hook in [*config["repos"][0]["hooks"], *shipped]:
        assert re.search(hook["files"], changed), hook
        assert not re.search(hook["files"], "output/c/x.yaml")


def test_init_from_git_pins_the_tag_of_this_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert init_repo(tmp_path / "fleet", "git") == 0
    assert "note:" not in capsys.readouterr().err  # a release: the tag can exist
    config = yaml.safe_load((tmp_path / "fleet/.pre-commit-config.yaml").read_text())
    hooks = {h["id"] for h in yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())}
    (repo,) = config["repos"]
    assert (repo["repo"], repo["rev"]) == (HOOK_REPO, f"v{__version__}")
    assert {h["id"] for h in repo["hooks"]} <= hooks
    assert all(h["files"] == HOOK_FILES for h in repo["hooks"])
    runs = "\n".join(s.get("run", "") for s in _steps(_workflow(tmp_path / "fleet")))
    assert f'pip install "gpuplan @ git+{HOOK_REPO}@v{__version__}"' in runs


def test_init_from_a_wheel_copies_it_and_installs_it_from_the_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = tmp_path / f"gpuplan-{__version__}-py3-none-any.whl"
    wheel.write_bytes(b"a wheel")
    assert init_repo(tmp_path / "fleet", str(wheel)) == 0
    root = tmp_path / "fleet"
    assert (root / "wheels" / wheel.name).read_bytes() == b"a wheel"
    runs = "\n".join(s.get("run", "") for s in _steps(_workflow(root)))
    assert f"pip install ./wheels/{wheel.name}" in runs
    assert f"pip install ./wheels/{wheel.name}" in (root / "README.md").read_text()
    (repo,) = yaml.safe_load((root / ".pre-commit-config.yaml").read_text())["repos"]
    # pre-commit installs a hook's dependencies elsewhere: the hook runs the installed gpuplan
    assert [(h["language"], h["entry"]) for h in repo["hooks"]] == [("system", "gpuplan render")]


@pytest.mark.parametrize(
    ("wheel", "message"),
    [
        ("gpuplan-0.0.1-py3-none-any.whl", "wheel (gpuplan-"),  # another version
        ("pypi", "expected index, git or the path"),
        (f"missing/gpuplan-{__version__}-py3-none-any.whl", "no such file"),
    ],
)
def test_init_refuses_a_source_it_cannot_install_this_version_from(
    tmp_path: Path, wheel: str, message: str
) -> None:
    result = run("init", str(tmp_path / "fleet"), "--install-from", wheel)
    assert result.code == 2 and message in result.stderr
    assert not (tmp_path / "fleet").exists()


def test_init_readme_says_how_to_render_check_and_diff(fresh: Path) -> None:
    text = (fresh / "README.md").read_text()
    for command in ("gpuplan render", "gpuplan render --check", "gpuplan check", "gpuplan diff"):
        assert command in text
    assert "__GPUPLAN" not in text


def test_init_gitignore_ignores_the_report_and_render_leftovers(fresh: Path) -> None:
    lines = (fresh / ".gitignore").read_text().splitlines()
    assert "gpuplan-report.html" in lines
    assert "output/" not in lines and "output" not in lines  # output/ is committed


@pytest.mark.parametrize("folder", ["clusters", "tenants"])
def test_init_refuses_a_repository_with_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str
) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "mine.yaml").write_text("name: mine\n")
    (tmp_path / "README.md").write_text("my readme\n")
    before = snapshot(tmp_path)
    assert init_repo(tmp_path) == 1
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "output").exists()
    err = capsys.readouterr().err
    assert f"already has {folder}/" in err and "nothing was written" in err


def test_init_twice_refuses_and_changes_nothing(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(fresh)
    assert init_repo(fresh) == 1
    assert snapshot(fresh) == before
    assert "already has clusters/ and tenants/" in capsys.readouterr().err


def test_init_refuses_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "fleet"
    target.write_text("not a folder\n")
    assert init_repo(target) == 1
    assert target.read_text() == "not a folder\n"
    assert "is not a folder" in capsys.readouterr().err


def test_init_keeps_existing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh git repository often has a README and .gitignore already: they are kept as they are."""
    (tmp_path / "README.md").write_text("my readme\n")
    (tmp_path / ".gitignore").write_text("secrets/\n")
    assert init_repo(tmp_path) == 0
    assert (tmp_path / "README.md").read_text() == "my readme\n"
    assert (tmp_path / ".gitignore").read_text() == "secrets/\n"
    assert (tmp_path / "clusters/gpu-cluster.yaml").is_file()
    err = capsys.readouterr().err
    assert "kept your README.md" in err and "kept your .gitignore" in err


def test_init_templates_are_package_data() -> None:
    """pyproject ships gpuplan/templates/* only: no subfolders, no dot files."""
    folder = PROJECT / "gpuplan" / "templates"
    assert set(FILES) == set(EXPECTED)
    for name in FILES.values():
        assert "/" not in name and not name.startswith("."), name
        assert (folder / name).is_file(), name


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gpuplan-render-check", "gpuplan-render"}
    assert hooks["gpuplan-render-check"]["entry"] == "gpuplan render --check"
    assert hooks["gpuplan-render"]["entry"] == "gpuplan render"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False
        assert hook["files"] == HOOK_FILES
        assert hook["name"]


def test_project_ci_runs_ci_run_on_push_and_pull_request() -> None:
    document = yaml.safe_load((PROJECT / ".github/workflows/ci.yml").read_text())
    assert set(document[True]) == {"push", "pull_request"}
    steps = _steps(document)
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert str(python["with"]["python-version"]) == "3.11"
    (ci,) = [s for s in steps if s.get("run", "").strip() == ".ci/run"]
    # .ci/run defaults GPUPLAN_CRDS to ../shared/crds: the CRDs are checked out beside the repository.
    checkouts = [
        s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/checkout@")
    ]
    assert ci["working-directory"] == "main" and checkouts == ["main", "shared/crds"]
    assert "../shared/crds" in (PROJECT / ".ci/run").read_text()


# The workflow's sticky comment, run against a fake GitHub (a `gh` that serves comments from a file)

FAKE_GH = r"""#!/usr/bin/env python3
import json, os, subprocess, sys
state_file = os.environ["FAKE_GH_STATE"]
state = json.load(open(state_file))
args = sys.argv[1:]
assert args.pop(0) == "api"
method, jq, fields, paginate, endpoint = "GET", None, {}, False, None
while args:
    arg = args.pop(0)
    if arg == "--method":
        method = args.pop(0)
    elif arg == "--jq":
        jq = args.pop(0)
    elif arg == "-F":
        name, value = args.pop(0).split("=", 1)
        fields[name] = open(value[1:]).read() if value.startswith("@") else value
    elif arg == "--paginate":
        paginate = True
    else:
        endpoint = arg
state["calls"].append([method, endpoint])
parts = endpoint.split("/")
if method == "GET":
    comments = state["comments"]
    pages = [comments[i:i + 2] for i in range(0, len(comments), 2)] or [[]]  # 2 per page
    for page in pages if paginate else pages[:1]:
        out = json.dumps(page)
        if jq:
            out = subprocess.run(["jq", "-r", jq], input=out, capture_output=True, text=True, check=True).stdout
        sys.stdout.write(out)
elif method == "PATCH":
    found = next(c for c in state["comments"] if str(c["id"]) == parts[-1])
    found["body"] = fields["body"]
elif method == "POST":
    state["comments"].append({"id": 100 + len(state["comments"]), "user": {"login": "github-actions[bot]", "type": "Bot"}, "body": fields["body"]})
json.dump(state, open(state_file, "w"))
"""
MARKER = "<!-- gpuplan-diff: . -->"


def _comment_step(fresh: Path) -> tuple[str, dict[str, str]]:
    """Return the run script of the comment step (as GitHub expands it) and its env."""
    step = next(s for s in _steps(_workflow(fresh)) if "gh api" in s.get("run", ""))
    script = step["run"]
    env = {"GH_TOKEN": "t", "PR": "7", "REPO": "acme/fleet", "BASE_REF": "main"}
    return script, env


def _run_comment_step(fresh: Path, tmp: Path, comments: list[dict], body: str) -> dict:
    """Run the comment step with fake `gpuplan` and `gh` on PATH; return the fake GitHub's state."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gpuplan.md").write_text(body)
    (bin_dir / "gpuplan").write_text(f"#!/bin/sh\ncat '{bin_dir / 'gpuplan.md'}'\n")
    for tool in ("gh", "gpuplan"):
        (bin_dir / tool).chmod(0o755)
    state = tmp / "state.json"
    state.write_text(json.dumps({"comments": comments, "calls": []}))
    script, env = _comment_step(fresh)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp,
        env=env | {"PATH": path, "FAKE_GH_STATE": str(state)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(state.read_text())


def _comment(number: int, login: str, body: str) -> dict:
    return {
        "id": number,
        "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
        "body": body,
    }


needs_tools = pytest.mark.skipif(
    not (shutil.which("bash") and shutil.which("jq")),
    reason="needs bash and jq to run the workflow's comment step against a fake gh",
)


@needs_tools
def test_the_workflow_posts_one_comment_then_updates_it_in_place(
    fresh: Path, tmp_path: Path
) -> None:
    first = _run_comment_step(fresh, tmp_path, [], f"{MARKER}\n**gpuplan**: 1 object changed\n")
    assert [c["body"] for c in first["comments"]] == [f"{MARKER}\n**gpuplan**: 1 object changed\n"]
    second = _run_comment_step(
        fresh, tmp_path, first["comments"], f"{MARKER}\n**gpuplan**: 2 objects changed\n"
    )
    assert [c["body"] for c in second["comments"]] == [
        f"{MARKER}\n**gpuplan**: 2 objects changed\n"
    ]
    assert second["calls"][-1] == [
        "PATCH",
        f"repos/acme/fleet/issues/comments/{first['comments'][0]['id']}",
    ]


@needs_tools
def test_the_workflow_never_edits_another_tools_or_a_persons_comment(
    fresh: Path, tmp_path: Path
) -> None:
    others = [
        _comment(1, "github-actions[bot]", "**coverage**: 93%"),  # another workflow's last comment
        _comment(2, "alice", f"{MARKER}\nquoting the bot"),  # a person quoting the marker
        _comment(
            3,
            "github-actions[bot]",
            "<!-- gpuplan-diff: fleets/other -->\n**gpuplan**: another path",
        ),
        _comment(4, "renovate[bot]", "update deps"),
        _comment(
            5, "github-actions[bot]", f"{MARKER}\n**gpuplan**: old"
        ),  # gpuplan's own, on page 3
    ]
    state = _run_comment_step(
        fresh, tmp_path, [dict(c) for c in others], f"{MARKER}\n**gpuplan**: new\n"
    )
    bodies = {c["id"]: c["body"] for c in state["comments"]}
    assert bodies == {c["id"]: c["body"] for c in others[:4]} | {5: f"{MARKER}\n**gpuplan**: new\n"}
    assert ["GET", "repos/acme/fleet/issues/7/comments"] in state["calls"]


@needs_tools
def test_the_workflow_keeps_one_comment_per_repository_path(fresh: Path, tmp_path: Path) -> None:
    other = _comment(
        3, "github-actions[bot]", "<!-- gpuplan-diff: fleets/other -->\n**gpuplan**: another path"
    )
    state = _run_comment_step(fresh, tmp_path, [dict(other)], f"{MARKER}\n**gpuplan**: this path\n")
    assert [c["body"] for c in state["comments"]] == [
        other["body"],
        f"{MARKER}\n**gpuplan**: this path\n",
    ]


def test_init_pins_the_installed_version_and_says_when_it_is_no_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    from gpuplan.commands import init as command

    assert __version__ == importlib.metadata.version(
        "gpuplan"
    )  # the installed one, from the package metadata
    assert init_repo(tmp_path / "a") == 0
    assert (
        f"pip install gpuplan=={__version__}"
        in (tmp_path / "a/.github/workflows/gpuplan.yml").read_text()
    )
    assert "is not a release" not in capsys.readouterr().err
    monkeypatch.setattr(command, "__version__", "0.1.1.dev3+g1234abc")
    assert init_repo(tmp_path / "b") == 0
    assert (
        "pip install gpuplan==0.1.1.dev3+g1234abc"
        in (tmp_path / "b/.github/workflows/gpuplan.yml").read_text()
    )
    assert "note: gpuplan 0.1.1.dev3+g1234abc is not a release" in capsys.readouterr().err
