"""Hostile inputs of issue #34, each test named by what it attacks.

A base revision's git tree that writes outside the repository, input folders that are links to
someone else's files, a planted CRD cache, a patch that grows exponentially, patches to what the
proofs rest on, a tenant in a provider's namespace, a fifo or a huge stray file among the inputs,
shell text in a printed command, a context value inside a workflow script, and three smaller ones.
Each asserts the refusal (exit code, diagnostic) and that nothing outside stayed untouched.
Timeouts and memory limits only stop a child that would otherwise hang or eat the machine.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from gpuplan.diff.markdown import marker
from tests.conftest import PROJECT, run, snapshot, write_repo
from tests.test_bad_inputs import TENANT
from tests.test_security import STATIC

C, T = "clusters/c1.yaml", "tenants/team-a.yaml"
CASES = PROJECT / "tests" / "cases"
HANG = 300  # seconds: only to stop a hung child, never a speed target
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _repo(root: Path, **more: str) -> Path:
    return write_repo(root, {C: STATIC, T: TENANT, **more})


def _gpuplan(
    *args: str, env: dict[str, str] | None = None, memory: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run gpuplan in a child process (bounded in address space when memory is given)."""

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "gpuplan", *args],
        env=dict(os.environ, PYTHONPATH=str(PROJECT), **(env or {})),
        capture_output=True,
        text=True,
        timeout=HANG,
        preexec_fn=limit,
    )


# --- 1. a base revision's tree writes anywhere --------------------------------------------------


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, **GIT_ENV),
        timeout=HANG,
    )
    return done.stdout.strip()


def _blob(root: Path, text: str) -> str:
    return _git(root, "hash-object", "-w", "--stdin", stdin=text)


def _tree(root: Path, *entries: tuple[str, str, str]) -> str:
    """Make a tree of (mode, object, name) entries as given: git mktree checks none of the names."""
    kinds = {"040000": "tree"}
    lines = "".join(
        f"{mode} {kinds.get(mode, 'blob')} {obj}\t{name}\n" for mode, obj, name in entries
    )
    return _git(root, "mktree", stdin=lines)


def _entries(root: Path, tree: str) -> list[tuple[str, str, str]]:
    """Return the entries of an existing tree (to add hostile ones beside them)."""
    out = []
    for line in _git(root, "ls-tree", tree).splitlines():
        meta, name = line.split("\t", 1)
        mode, _, obj = meta.split()
        out.append((mode, obj, name))
    return out


@pytest.fixture
def based(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A valid committed repository; temporary folders go to tmp_path/tmp (where a '..' lands)."""
    root = _repo(tmp_path / "repo")
    _git(root, "init", "-q")
    _git(root, "add", "clusters", "tenants")
    _git(root, "commit", "-qm", "base")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return root


def _hostile_commit(root: Path, clusters: list, tenants: list, top: list) -> str:
    """Commit a tree made of HEAD's clusters/ and tenants/ plus hostile entries."""
    base_clusters = _entries(root, "HEAD:clusters")
    base_tenants = _entries(root, "HEAD:tenants")
    tree = _tree(
        root,
        ("040000", _tree(root, *base_clusters, *clusters), "clusters"),
        ("040000", _tree(root, *base_tenants, *tenants), "tenants"),
        *top,
    )
    return _git(root, "commit-tree", tree, "-m", "hostile")


def _dot_dot(root: Path, tmp: Path) -> tuple[str, list[Path]]:
    """clusters/../../escaped.yaml: from the temporary export folder into its parent."""
    escaped = _tree(root, ("100644", _blob(root, "name: x\n"), "escaped.yaml"))
    up = _tree(root, ("040000", escaped, ".."))
    return _hostile_commit(root, [("040000", up, "..")], [], []), [tmp / "tmp" / "escaped.yaml"]


def _link_and_blob(root: Path, tmp: Path) -> tuple[str, list[Path]]:
    """tenants/team-b.yaml twice: a link to a file outside, then a blob written through it."""
    victim = tmp / "victim.txt"
    victim.write_text("precious\n")
    link = ("120000", _blob(root, str(victim)), "team-b.yaml")
    blob = ("100644", _blob(root, "name: team-b\n"), "team-b.yaml")
    return _hostile_commit(root, [], [link, blob], []), [victim]


def _link_and_folder(root: Path, tmp: Path) -> tuple[str, list[Path]]:
    """extra twice: a link to a folder outside, then a folder whose file lands in it."""
    outside = tmp / "outside"
    outside.mkdir()
    inner = _tree(root, ("100644", _blob(root, "kind: ConfigMap\n"), "dropped.yaml"))
    folder = _tree(root, ("040000", inner, "c1"))
    top = [("120000", _blob(root, str(outside)), "extra"), ("040000", folder, "extra")]
    return _hostile_commit(root, [], [], top), [outside]


def _names_equal_but_for_case(root: Path, tmp: Path) -> tuple[str, list[Path]]:
    """tenants/team-c.yaml and tenants/team-c.YAML: one file on a case-insensitive disk, where
    the second (never read on a case-sensitive one) would replace the first."""
    one = ("100644", _blob(root, "name: team-c\n"), "team-c.yaml")
    two = ("100644", _blob(root, "name: team-c\nowners: [group:system:masters]\n"), "team-c.YAML")
    return _hostile_commit(root, [], [one, two], []), []


def _linked_extra_folder(root: Path, tmp: Path) -> tuple[str, list[Path]]:
    """extra/c1 as a link to a folder outside the repository, which holds a Secret."""
    outside = tmp / "secrets"
    outside.mkdir()
    (outside / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: team-a}\n"
    )
    extra = _tree(root, ("120000", _blob(root, str(outside)), "c1"))
    return _hostile_commit(root, [], [], [("040000", extra, "extra")]), []


ATTACKS = {
    "dot-dot": (_dot_dot, "a path component is empty, '.' or '..'"),
    "link-and-blob": (_link_and_blob, "a symbolic link"),
    "link-and-folder": (_link_and_folder, "a symbolic link"),
    "names-equal-but-for-case": (_names_equal_but_for_case, "names equal but for case"),
    "linked-extra-folder": (_linked_extra_folder, "a symbolic link"),
}


@pytest.mark.parametrize("command", ["check", "diff"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_hostile_base_tree_is_refused_and_writes_nothing_outside(
    based: Path, tmp_path: Path, attack: str, command: str
) -> None:
    make, message = ATTACKS[attack]
    commit, outside = make(based, tmp_path)
    before = {p: snapshot(p) if p.is_dir() else p.read_bytes() for p in outside if p.exists()}
    result = run(command, "--root", str(based), "--base", commit)
    assert result.code == 1, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    for path in outside:
        now = (snapshot(path) if path.is_dir() else path.read_bytes()) if path.exists() else None
        assert now == before.get(path), f"{path} was written by the base's export"
    assert os.listdir(tmp_path / "tmp") == []  # the export folder went, nothing beside it


def test_a_plain_base_tree_still_compares(based: Path) -> None:
    (based / T).write_text(
        TENANT.replace("gpus: 8\n      - pool: infer", "gpus: 4\n      - pool: infer")
    )
    result = run("diff", "--root", str(based), "--base", "HEAD")
    assert result.code == 0, result.stderr
    assert "quota" in result.stdout.lower()


# --- 2. symlinked input folders ------------------------------------------------------------------

SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: team-a}\nstringData: {k: v}\n"
PATCH = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {stolen: 'yes'}}\n"


@pytest.mark.parametrize(
    ("link", "files"),
    [
        ("extra/c1", {"secret.yaml": SECRET}),
        ("patches/c1", {"namespace.yaml": PATCH}),
        ("values/c1", {"gpu-operator.yaml": "driver: {enabled: false}\n"}),
        ("tenants", {"team-a.yaml": TENANT, "team-b.yaml": "name: team-b\n"}),
    ],
)
def test_a_symlinked_input_folder_is_refused_and_not_read(
    tmp_path: Path, link: str, files: dict[str, str]
) -> None:
    root = _repo(tmp_path / "repo")
    assert run("render", "--root", str(root)).code == 0
    before = snapshot(root / "output")
    outside = tmp_path / "outside"
    write_repo(outside, files)
    target = root / link
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside, target_is_directory=True)
    result = run("render", "--root", str(root))
    assert result.code == 1, result.stderr
    assert f"{link}: error: a symbolic link: gpuplan does not follow links" in result.stderr
    assert snapshot(root / "output") == before


# --- 3. the CRD cache ----------------------------------------------------------------------------

BOGUS_FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {bogus: 1}\n"


def _permissive(docs: list) -> list:
    for doc in docs:
        for version in doc["spec"]["versions"]:
            version["schema"] = {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            }
            version.pop("additionalPrinterColumns", None)
    return docs


@pytest.mark.parametrize("shared", ["world-writable", "a link"])
def test_a_planted_crd_cache_entry_is_never_read(tmp_path: Path, shared: str) -> None:
    crd = gzip.decompress(
        (PROJECT / "gpuplan/crds/kueue/v0.19.2/resourceflavors.kueue.x-k8s.io.json.gz").read_bytes()
    )
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "resourceflavors.json").write_bytes(crd)
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)  # (mkdir's mode is cut by the umask)
    name = f"{__import__('hashlib').sha256(crd).hexdigest()}.json"
    (planted / name).write_text(json.dumps(_permissive([json.loads(crd)])))
    cache = tmp_path / "cache"
    cache.mkdir()
    if shared == "a link":
        (cache / "crd-json").symlink_to(planted, target_is_directory=True)
    else:
        planted.rename(cache / "crd-json")
    manifest = tmp_path / "manifests" / "flavor.yaml"
    manifest.parent.mkdir()
    manifest.write_text(BOGUS_FLAVOR)
    env = {"GPUPLAN_CACHE_DIR": str(cache), "GPUPLAN_CRDS": ""}
    result = _gpuplan("validate", str(manifest.parent), "--crds", str(crds), env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bogus" in result.stdout + result.stderr


# --- 4. exponential patches ----------------------------------------------------------------------

GROWING = (
    "target: {kind: Namespace, name: team-a}\n"
    "jsonPatch:\n"
    "  - {op: add, path: /metadata/annotations/grow, value: [1]}\n"
    + "  - {op: copy, from: /metadata/annotations/grow, path: /metadata/annotations/grow/-}\n"
    * 60
)


def test_an_exponentially_growing_patch_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo", **{"patches/c1/grow.yaml": GROWING})
    result = _gpuplan("check", "--root", str(root), memory=2 * 1024**3)
    assert result.returncode == 1, result.stderr[-2000:]
    assert re.search(
        r"patches/c1/grow\.yaml:\d+:\d+: error: jsonPatch\[\d+\]\.from: cannot apply: the patch copies more than a patch file may hold",
        result.stderr,
    ), result.stderr[-2000:]


# --- 5. what a patch may change --------------------------------------------------------------------


def _json_patch(kind: str, name: str, path: str, value: object, namespace: str = "") -> str:
    target = {"kind": kind, "name": name} | ({"namespace": namespace} if namespace else {})
    return yaml.safe_dump(
        {"target": target, "jsonPatch": [{"op": "replace", "path": path, "value": value}]}
    )


def test_patches_to_kai_queues_priorities_and_role_bindings_are_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    kai = tmp_path / "kai"
    shutil.copytree(CASES / "kai-queues" / "input", kai)
    write_repo(
        kai,
        {
            "patches/kai/quota.yaml": _json_patch(
                "Queue", "vision", "/spec/resources/gpu/quota", 999
            ),
            "patches/kai/limit.yaml": _json_patch(
                "Queue", "vision", "/spec/resources/gpu/limit", -1
            ),
            "patches/kai/parent.yaml": _json_patch("Queue", "vision", "/spec/parentQueue", "other"),
        },
    )
    subject = [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}
    ]
    static = _repo(
        tmp_path / "static",
        **{
            "patches/c1/priority.yaml": _json_patch("PriorityClass", "research", "/value", 1000000),
            "patches/c1/subjects.yaml": _json_patch(
                "RoleBinding", "tenant-owners", "/subjects", subject, "team-a"
            ),
        },
    )
    errors = run("check", "--root", str(kai)).stderr + run("check", "--root", str(static)).stderr
    for patch, field in [
        ("kai/quota", "spec.resources"),
        ("kai/limit", "spec.resources"),
        ("kai/parent", "spec.parentQueue"),
        ("c1/priority", "value"),
        ("c1/subjects", "subjects"),
    ]:
        assert re.search(
            rf"patches/{patch}\.yaml:\d+:\d+: error: .*the patch changes {re.escape(field)}\S* of \w+ '[\w-]+', which gpuplan owns: \S",
            errors,
        ), errors


# --- 6. provider-run namespaces --------------------------------------------------------------------

PROVIDER = [
    "gmp-system",
    "gmp-public",
    "aws-observability",
    "amazon-cloudwatch",
    "gatekeeper-system",
    "azure-arc",
]


def test_a_tenant_cannot_claim_a_namespace_its_provider_runs(tmp_path: Path) -> None:
    tenant = TENANT.replace("owners:", f"namespaces: [{', '.join(PROVIDER)}]\nowners:")
    root = write_repo(tmp_path / "repo", {C: STATIC, T: tenant})
    result = run("check", "--root", str(root))
    assert result.code == 1
    for index, namespace in enumerate(PROVIDER):
        assert re.search(
            rf"{T}:2:\d+: error: namespaces\[{index}\]: namespace '{namespace}' is run by (GKE|EKS|AKS) ",
            result.stderr,
        ), result.stderr


# --- 7. scanning the inputs ------------------------------------------------------------------------


def test_a_fifo_among_the_inputs_never_blocks_render(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    (root / "extra" / "c1").mkdir(parents=True)
    os.mkfifo(root / "extra" / "c1" / "pipe")  # no writer ever comes: opening it would block
    os.mkfifo(root / "tenants" / "pipe.yaml")
    env = {"GPUPLAN_CACHE_DIR": str(tmp_path / "cache")}
    result = _gpuplan("render", "--root", str(root), env=env)
    assert result.returncode == 1, result.stderr
    assert "tenants/pipe.yaml:1:1: error: not a regular file" in result.stderr


def test_a_huge_stray_file_is_never_read_whole(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    (root / "extra" / "c1").mkdir(parents=True)
    with open(root / "extra" / "c1" / "dump.bin", "wb") as handle:
        handle.truncate(1024**3)  # sparse: 1 GiB that costs no disk
    with open(root / "tenants" / "huge.yaml", "wb") as handle:
        handle.truncate(1024**3)
    env = {"GPUPLAN_CACHE_DIR": str(tmp_path / "cache")}
    result = _gpuplan("render", "--root", str(root), env=env, memory=768 * 1024**2)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "tenants/huge.yaml:1:1: error: file is larger than 4 MiB" in result.stderr
    (root / "tenants" / "huge.yaml").unlink()
    result = _gpuplan("render", "--root", str(root), env=env, memory=768 * 1024**2)
    assert result.returncode == 0, result.stderr[-2000:]


# --- 8. printed commands ---------------------------------------------------------------------------

FAKE_CLI = '#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGV_FILE"\n'


@pytest.mark.parametrize(
    ("case", "cli", "where"),
    [
        ("cluster-autoscaler-aks", "az", "    clusterName: prod-aks-weu\n"),
        ("gke-stack", "gcloud", "  clusterAutoscaler:\n"),
    ],
)
def test_a_printed_command_runs_nothing_a_cluster_name_holds(
    tmp_path: Path, case: str, cli: str, where: str
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASES / case / "input", root)
    hostile = "x$(touch PWNED)`touch PWNED`;touch PWNED"
    cluster = next((root / "clusters").glob("*.yaml"))
    line = f"    clusterName: '{hostile}'\n"
    text = cluster.read_text()
    assert where in text
    cluster.write_text(text.replace(where, line if "clusterName" in where else where + line))
    result = run("requirements", "--root", str(root))
    assert result.code == 0, result.stderr
    commands = [x.strip() for x in result.stdout.splitlines() if x.strip().startswith(f"{cli} ")]
    assert commands, result.stdout
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / cli).write_text(FAKE_CLI)
    (bin_dir / cli).chmod(0o755)
    for command in commands:
        argv = tmp_path / "argv"
        env = dict(
            os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", ARGV_FILE=str(argv)
        )
        subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, check=True, timeout=HANG)
        assert hostile in argv.read_text().splitlines()
    assert not (tmp_path / "PWNED").exists()


# --- 9. the workflow gpuplan init writes ----------------------------------------------------------


def test_no_context_expression_reaches_a_workflow_script(tmp_path: Path) -> None:
    assert run("init", str(tmp_path / "new")).code == 0
    document = yaml.safe_load((tmp_path / "new/.github/workflows/gpuplan.yml").read_text())
    steps = [s for job in document["jobs"].values() for s in job["steps"]]
    scripts = [s["run"] for s in steps if "run" in s]
    assert scripts and not [s for s in scripts if "${{" in s]
    comment = next(s for s in steps if "gpuplan diff" in s.get("run", ""))
    assert comment["env"]["BASE_REF"] == "${{ github.base_ref }}"


# --- 10. smaller ones ------------------------------------------------------------------------------


def test_an_unclosed_flow_bracket_is_reported_where_it_opens(tmp_path: Path) -> None:
    tenant = "name: team-a\nnamespaces: [team-a,\n  team-a-batch\n" + "\n" * 6
    root = write_repo(tmp_path / "repo", {C: STATIC, T: tenant})
    result = run("check", "--root", str(root))
    assert result.code == 1
    assert f"{T}:2:13: error: YAML syntax: while parsing a flow sequence" in result.stderr


@pytest.mark.parametrize("path", ["fleet--->x", "a--!>b", "new\nline", "<!--x", "x-"])
def test_the_sticky_comment_marker_is_one_html_comment_whatever_the_folder(path: str) -> None:
    line = marker(path)
    tokens = MarkdownIt("commonmark", {"html": True}).parse(f"{line}\n**gpuplan**: no changes\n")
    assert tokens[0].type == "html_block" and tokens[0].content == f"{line}\n"
    body = line.removeprefix("<!--").removesuffix("-->")
    assert line.startswith("<!--") and line.endswith("-->") and "\n" not in line
    assert "--" not in body.strip(" ").removeprefix(" gpuplan-diff: ") and "<" not in body
    assert marker(path) != marker(path + "y")  # still one marker per path


def test_a_tenant_claiming_a_platform_namespace_is_blamed_for_it(tmp_path: Path) -> None:
    platform = "apiVersion: v1\nkind: Namespace\nmetadata: {name: tools}\n"
    tenant = TENANT.replace("owners:", "namespaces: [team-a, tools]\nowners:")
    root = write_repo(tmp_path / "repo", {C: STATIC, T: tenant, "extra/c1/tools.yaml": platform})
    result = run("check", "--root", str(root))
    assert result.code == 1
    errors = [x for x in result.stderr.splitlines() if "tools" in x and ": error: " in x]
    assert errors == [
        f"{T}:2:22: error: namespaces[1]: namespace 'tools' is the platform's own (extra/c1/tools.yaml): give the tenant another namespace [input]"
    ], result.stderr
