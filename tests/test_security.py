"""Hostile cases: gpuplan never writes outside output/, never grants what it must not, and stops
cleanly on a signal.

Each test sets a trap a careful user must never fall into (a link inside or beside the output,
a read-only folder, an anonymous owner, a priority class above the tenant's, SIGINT or SIGTERM
at a chosen moment) and asserts what gpuplan did: its exit code and diagnostic, and that nothing
outside the output folder changed. Timeouts only catch hangs; nothing here is timed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BeforeValidator, TypeAdapter, ValidationError
from ruamel.yaml import YAML

from benchmarks.synth import write_fleet
from gpuplan.commands.options import Options
from gpuplan.commands.render import render_fleet
from gpuplan.inputs import load
from gpuplan.model.cluster import Revision, Url, _regex
from gpuplan.model.tenant import Subject
from gpuplan.pipeline import compile_fleet
from gpuplan.runtime import workers as twocores
from gpuplan.writer import safefs
from gpuplan.writer import tree as write
from tests.conftest import PROJECT, run, write_repo
from tests.test_bad_inputs import CLUSTER, TENANT
from tests.test_faults import tree

C, T = "clusters/c1.yaml", "tenants/team-a.yaml"
# The bad-input corpus's cluster with its autoscaled pool made static: these tests are about
# gpuplan's own safety, not about Karpenter (whose node class the corpus leaves to the user).
STATIC = re.sub(r"^  karpenter:\n(?:    .*\n)+", "", CLUSTER, count=1, flags=re.M)
STATIC = re.sub(
    r"    nodes: \{min: 1, max: 4\}\n    karpenter:\n(?:      .*\n)+",
    '    nodes: {count: 4}\n    hostnames: ["train-[0-9]+"]\n',
    STATIC,
)
HANG = 600  # seconds: only to stop a hung child, never a speed target


def _repo(root: Path, cluster: str = STATIC, tenant: str = TENANT, **more: str) -> Path:
    return write_repo(root, {C: cluster, T: tenant, **more})


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    """A rendered repository whose inputs then change (so the next render has work to do)."""
    root = _repo(tmp_path / "repo")
    assert run("render", "--root", str(root)).code == 0
    (root / T).write_text(
        TENANT.replace(
            "        gpus: 8\n      - pool: infer", "        gpus: 6\n      - pool: infer"
        )
    )
    return root


def _beside(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name not in ("clusters", "tenants", "output"))


def _render(root: Path) -> tuple[int, str]:
    result = run("render", "--root", str(root))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr


# --- links inside and around output/ --------------------------------------------------------------


def test_a_folder_link_inside_output_is_refused_and_its_target_untouched(
    rendered: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    (rendered / "output" / "c1").rename(outside)
    os.symlink(outside, rendered / "output" / "c1")
    before, target = tree(rendered / "output"), tree(outside)
    code, stderr = _render(rendered)
    assert code == 1 and "output/c1 is a symbolic link" in stderr, stderr
    assert tree(outside) == target and tree(rendered / "output") == before
    assert _beside(rendered) == []


def test_a_dangling_link_named_like_a_generated_file_is_never_written_through(
    rendered: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.yaml"
    generated = sorted((rendered / "output" / "c1" / "kueue").iterdir())[0]
    generated.unlink()
    os.symlink(victim, generated)
    code, stderr = _render(rendered)
    assert code == 1 and "symbolic link named like a generated file" in stderr, stderr
    assert not victim.exists() and not victim.is_symlink()
    assert os.readlink(generated) == str(victim)


def test_a_link_at_the_output_itself_is_refused(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, root / "output")
    code, stderr = _render(root)
    assert code == 1 and "is a symbolic link" in stderr, stderr
    assert list(real.iterdir()) == []


def test_links_named_like_staging_beside_output_are_never_followed_or_moved(
    rendered: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "precious").write_text("mine\n")
    for prefix in (write.STAGING, write.RETIRED):
        os.symlink(outside, rendered / f".output{prefix}999999999")
    code, stderr = _render(rendered)
    assert code == 0, stderr
    assert (outside / "precious").read_text() == "mine\n"
    assert all(
        (rendered / f".output{p}999999999").is_symlink() for p in (write.STAGING, write.RETIRED)
    )


def test_a_foreign_link_elsewhere_in_output_is_kept_as_a_link(
    rendered: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    os.symlink(secret, rendered / "output" / "NOTES.md")
    code, stderr = _render(rendered)
    assert code == 0, stderr
    assert os.readlink(rendered / "output" / "NOTES.md") == str(secret)
    assert secret.read_text() == "secret\n"


def test_a_non_folder_output_is_an_error_that_leaves_it_untouched(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    (root / "output").write_text("not a folder\n")
    code, stderr = _render(root)
    assert code == 1 and "exists and is not a folder" in stderr, stderr
    assert (root / "output").read_text() == "not a folder\n"
    assert _beside(root) == []


@pytest.mark.parametrize("out", [".", "..", "clusters/.."])
def test_an_output_folder_that_holds_the_inputs_is_refused(tmp_path: Path, out: str) -> None:
    root = _repo(tmp_path / "repo")
    before = tree(tmp_path)
    result = run("render", "--root", str(root), "--out", str(root / out))
    assert result.code == 1 and "holds the repository's inputs" in result.stderr, result.stderr
    assert tree(tmp_path) == before


def test_a_removed_tenant_leaves_no_empty_folder_and_user_folders_stay(tmp_path: Path) -> None:
    root = _repo(
        tmp_path / "repo",
        tenant=TENANT.replace("name: team-a\n", "name: team-a\nnamespaces: [team-a, old]\n"),
    )
    assert run("render", "--root", str(root)).code == 0
    (root / "output" / "mine" / "empty").mkdir(parents=True)
    assert (root / "output/c1/namespaces/old").is_dir()
    (root / T).write_text(TENANT)
    assert run("render", "--root", str(root)).code == 0
    assert not (root / "output/c1/namespaces/old").exists()
    assert (root / "output/mine/empty").is_dir()


# --- permissions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["", "c1", "c1/kueue"])
def test_a_read_only_output_exits_1_with_the_old_output_intact(rendered: Path, folder: str) -> None:
    where = rendered / "output" / folder
    before = tree(rendered / "output")
    where.chmod(0o555)
    try:
        code, stderr = _render(rendered)
        checked = run("render", "--root", str(rendered), "--check")
    finally:
        where.chmod(0o755)
    assert code == 1 and "is read-only" in stderr and "old output is unchanged" in stderr, stderr
    assert tree(rendered / "output") == before and _beside(rendered) == []
    assert (
        checked.code == 1 and "is stale" in checked.stderr
    )  # --check only reads: it still answers


@pytest.mark.parametrize("nth", [1, 3, 20])
def test_permission_denied_while_staging_exits_1_with_the_old_output_intact(
    rendered: Path, monkeypatch: pytest.MonkeyPatch, nth: int
) -> None:
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", "off")  # every file written again (no carry-over)
    before = tree(rendered / "output")
    calls = {"n": 0}
    real = write._write_new

    def denied(dir_fd: int, name: str, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == nth:
            raise PermissionError(13, "Permission denied", name)
        real(dir_fd, name, data)

    monkeypatch.setattr(write, "_write_new", denied)
    code, stderr = _render(rendered)
    assert calls["n"] >= nth
    assert code == 1 and "Permission denied" in stderr and "old output is unchanged" in stderr, (
        stderr
    )
    assert tree(rendered / "output") == before and _beside(rendered) == []


# --- interrupted in-process at each step of the write ---------------------------------------------


def _interrupt_at(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, nth: int, after: bool = False
) -> dict[str, int]:
    calls = {"n": 0}
    real = getattr(module, name)

    def hit(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == nth and not after:
            raise KeyboardInterrupt
        result = real(*args, **kwargs)
        if calls["n"] == nth and after:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(module, name, hit)
    return calls


@pytest.mark.parametrize(
    ("module", "name", "nth", "after"),
    [
        (write, "_write_new", 1, False),  # the first new file
        (write, "_write_new", 12, False),  # half-way through the new files
        (safefs, "carry_over", 1, False),  # carrying a foreign file over
        (write, "_swap", 1, False),  # just before the swap
        (write, "_swap", 1, True),  # just after it: the old output is under the staging name
    ],
)
def test_an_interrupted_write_leaves_old_or_new_and_no_staging(
    rendered: Path, monkeypatch: pytest.MonkeyPatch, module: Any, name: str, nth: int, after: bool
) -> None:
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", "off")  # every file written again (no carry-over)
    (rendered / "output" / "NOTES.md").write_text("mine\n")
    old = tree(rendered / "output")
    calls = _interrupt_at(monkeypatch, module, name, nth, after)
    # The command itself: click would turn ^C into "Aborted!".
    with pytest.raises(KeyboardInterrupt):
        render_fleet(Options(rendered))
    monkeypatch.undo()
    assert calls["n"] >= nth
    now = tree(rendered / "output")
    assert _beside(rendered) == []
    assert run("render", "--root", str(rendered)).code == 0
    new = tree(rendered / "output")
    assert now in (old, new), "the output is a mix of the old and the new render"
    assert now == (new if after else old)


# --- real signals, with the parsing worker checked afterwards -------------------------------------


def _start(root: Path, command: str = "render") -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    return subprocess.Popen(
        [sys.executable, "-m", "gpuplan", command, "--root", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Tell whether a process still runs (a zombie holds no pipe and no CPU: it does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(proc: subprocess.Popen[bytes], ready: Any) -> Any:
    while proc.poll() is None:
        value = ready()
        if value:
            return value
        time.sleep(0.0005)
    pytest.fail(
        f"gpuplan ended before the moment to signal it: {proc.stderr.read().decode() if proc.stderr else ''}"
    )


EXPECTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.mark.skipif(not twocores.available(), reason="needs fork")
def test_a_failing_worker_is_not_trusted_its_half_is_computed_again() -> None:
    parent = os.getpid()

    def half() -> int:
        if os.getpid() != parent:
            os._exit(7)  # the worker dies without a result
        return 2

    assert twocores.both(lambda: 1, half) == (1, 2)
    assert _children(parent) == []  # reaped


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the worker")
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_validating_on_two_cores_exits_promptly_and_leaves_no_worker(
    tmp_path: Path, number: int
) -> None:
    folder = tmp_path / "manifests"
    folder.mkdir()
    for i in range(800):  # enough files for `validate` to split them over two cores
        (folder / f"cm-{i:03d}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: a}}\n"
            f"data: {{key: value-{i}}}\n"
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuplan", "validate", str(folder)],
        env=dict(os.environ, PYTHONPATH=str(PROJECT)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    workers = _wait_for(proc, lambda: _children(proc.pid))
    proc.send_signal(number)
    _, err = proc.communicate(timeout=HANG)  # returns only once no process holds the pipes
    stderr = err.decode()
    assert proc.returncode == EXPECTED[number], stderr
    assert "Traceback" not in stderr and stderr.strip() in ("interrupted", "terminated"), stderr
    assert not any(_running(pid) for pid in workers), "the worker outlived gpuplan"


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_write_leaves_old_or_new_and_no_staging(
    tmp_path: Path, number: int
) -> None:
    many = "name: team-a\nnamespaces: [" + ", ".join(f"team-a-{i}" for i in range(60)) + "]\n"
    root = _repo(tmp_path / "repo", tenant=TENANT.replace("name: team-a\n", many))
    assert run("render", "--root", str(root)).code == 0  # some 400 files: a write phase to land in
    old = tree(root / "output")
    (root / T).write_text(
        (root / T)
        .read_text()
        .replace("gpus: 8\n      - pool: infer", "gpus: 6\n      - pool: infer")
    )
    proc = _start(root)
    staging = root / f".output{write.STAGING}{proc.pid}"
    _wait_for(proc, staging.exists)
    proc.send_signal(number)
    _, err = proc.communicate(timeout=HANG)
    stderr = err.decode()
    assert "Traceback" not in stderr, stderr
    assert proc.returncode in (EXPECTED[number], 0), (
        stderr
    )  # 0: the signal came after the last step
    assert _beside(root) == []
    now = tree(root / "output")
    assert run("render", "--root", str(root)).code == 0
    assert now in (old, tree(root / "output"))


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(
    not Path("/proc/self/maps").exists(), reason="reads /proc to see what is loaded"
)
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_commands_load_exits_quietly(tmp_path: Path, number: int) -> None:
    root = _repo(tmp_path / "repo")
    proc = _start(root)
    # gpuplan's own code runs (the interpreter's start-up is over) once pydantic's core is loaded
    _wait_for(proc, lambda: _loaded(proc.pid, "pydantic_core"))
    proc.send_signal(number)
    _, err = proc.communicate(timeout=HANG)
    assert "Traceback" not in err.decode(), err.decode()
    assert proc.returncode in (EXPECTED[number], 0)
    assert _beside(root) == []


# --- RBAC owners ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "phrase"),
    [
        ("group:system:unauthenticated", "every anonymous request"),
        ("group:system:authenticated", "every signed-in user"),
        ("group:system:masters", "bypass RBAC"),
        ("user:system:anonymous", "system identity"),
        ("user:system:serviceaccount:kube-system:default", "system identity"),
        ("group:system:serviceaccounts:team-a", "system identity"),
        ("serviceaccount:kube-system:default", "service account of namespace kube-system"),
        ("serviceaccount:team-b:ci", "service account of namespace team-b"),
    ],
)
def test_a_privileged_or_foreign_owner_is_refused_at_its_line(
    tmp_path: Path, owner: str, phrase: str
) -> None:
    root = _repo(
        tmp_path / "repo",
        tenant=TENANT.replace("[group:team-a-admins]", f"[group:team-a-admins, {owner}]"),
    )
    code, stderr = _render(root)
    assert code == 1, stderr
    line = next(x for x in stderr.splitlines() if ": error: " in x)
    assert (
        line.startswith(f"{T}:2:31: error: owners[1]: {owner} ")
        and phrase in line
        and "rbac.allowedSubjects in clusters/c1.yaml" in line
    ), stderr
    assert not (root / "output").exists()


def test_an_owner_the_cluster_allows_is_bound(tmp_path: Path) -> None:
    owners = "[group:team-a-admins, serviceaccount:ci:deployer, serviceaccount:team-a:bot]"
    cluster = STATIC + "rbac:\n  allowedSubjects: [serviceaccount:ci:deployer]\n"
    root = _repo(
        tmp_path / "repo", cluster=cluster, tenant=TENANT.replace("[group:team-a-admins]", owners)
    )
    code, stderr = _render(root)
    assert code == 0, stderr
    binding = yaml.safe_load(
        (root / "output/c1/namespaces/team-a/rolebinding-tenant-owners.yaml").read_text()
    )
    assert {(s["kind"], s["name"], s.get("namespace")) for s in binding["subjects"]} == {
        ("Group", "team-a-admins", None), ("ServiceAccount", "deployer", "ci"), ("ServiceAccount", "bot", "team-a")
    }  # fmt: skip


# --- priority ceilings ----------------------------------------------------------------------------


def _ceiling(root: Path, namespace: str) -> list[str]:
    quota = yaml.safe_load(
        (root / f"output/c1/namespaces/{namespace}/resourcequota-priority-ceiling.yaml").read_text()
    )
    assert quota["spec"]["hard"] == {"pods": "0"}
    (expression,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert (expression["scopeName"], expression["operator"]) == ("PriorityClass", "In")
    return expression["values"]


CLASSES = "priorityClasses:\n  - {name: research, value: 100}\n  - {name: low, value: -5}\n  - {name: urgent, value: 1000000000}\n"


@pytest.mark.parametrize(
    ("own", "forbidden"),
    [
        ("research", ["system-cluster-critical", "system-node-critical", "urgent"]),
        (
            "urgent",
            ["system-cluster-critical", "system-node-critical"],
        ),  # the top class still may not go system
        (
            None,
            ["research", "system-cluster-critical", "system-node-critical", "urgent"],
        ),  # default priority 0
    ],
)
def test_every_tenant_gets_a_ceiling_covering_every_class_above_its_own(
    tmp_path: Path, own: str | None, forbidden: list[str]
) -> None:
    cluster = STATIC.replace("priorityClasses:\n  - {name: research, value: 100}\n", CLASSES)
    tenant = TENANT.replace("priorityClass: research\n", f"priorityClass: {own}\n" if own else "")
    root = _repo(tmp_path / "repo", cluster=cluster, tenant=tenant)
    code, stderr = _render(root)
    assert code == 0, stderr
    assert _ceiling(root, "team-a") == forbidden


# --- diagnostics at the cause ---------------------------------------------------------------------


def test_mig_on_an_exclusive_pool_is_reported_at_mig_not_at_its_scalar_limit(
    tmp_path: Path,
) -> None:
    tenant = TENANT.replace(
        "      - pool: train\n        gpus: 8\n",
        "      - pool: train\n        mig: {1g.10gb: 8}\n        borrowingLimit: 4\n",
    )
    code, stderr = _render(_repo(tmp_path / "repo", tenant=tenant))
    errors = [x for x in stderr.splitlines() if ": error: " in x]
    assert code == 1 and len(errors) == 1, stderr
    assert errors[0].startswith(
        f"{T}:9:14: error: allocations[0].quotas[0].mig: pool train is not a MIG pool"
    ), stderr


def _git(root: Path, *args: str) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    subprocess.run(
        ["git", "-C", str(root), *args], check=True, env=env, capture_output=True, timeout=HANG
    )


NEWCOMER = "tenants/team-0.yaml"


def _blamed(stderr: str) -> list[str]:
    """Return the files an error about namespace team-a points at."""
    return sorted({x.split(":")[0] for x in stderr.splitlines() if "namespace 'team-a'" in x})


def test_a_namespace_clash_is_blamed_on_the_new_file_when_the_base_is_known(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    _git(root, "init", "-q")
    _git(root, "add", "clusters", "tenants")
    _git(root, "commit", "-qm", "base")
    # team-0 sorts before team-a, so a first-come rule would blame team-a's unchanged file.
    (root / NEWCOMER).write_text("name: team-0\nnamespaces: [team-a]\n")
    with_base = run("check", "--root", str(root), "--base", "HEAD")
    without = run("check", "--root", str(root))
    assert with_base.code == 1 and _blamed(with_base.stderr) == [NEWCOMER], with_base.stderr
    assert (
        f"{NEWCOMER}:2:14: error: namespaces[0]: namespace 'team-a' belongs to tenant team-a already"
        in with_base.stderr
    )
    assert without.code == 1 and _blamed(without.stderr) == [NEWCOMER, T], without.stderr


# --- bounded work on hostile YAML -----------------------------------------------------------------


@pytest.mark.parametrize(
    "before",
    [
        "",
        # libyaml refuses a flow mapping with an empty key, which ruamel (YAML 1.2) reads: the
        # depth is then counted on ruamel's events, whatever libyaml the installed PyYAML has
        "empty-key: {: x}\n",
    ],
    ids=["plain", "a-line-libyaml-cannot-read-first"],
)
def test_deep_nesting_is_refused_at_its_level_before_the_end_of_the_file(before: str) -> None:
    # 200,000 brackets never closed: a parser that read the file to its end would report the
    # unclosed bracket; the refusal comes at the 65th level (`deep` is level 1), with its line.
    text = TENANT + before + "deep: " + "[" * 200_000 + "\n"
    source, problems = load.parse(T, text.encode())
    line = text.count("\n")
    assert source is None
    assert [d.text() for d in problems] == [
        f"{T}:{line}:71: error: refused: the document is nested deeper than 64 levels"
    ]


def test_one_broken_file_among_many_stops_before_the_others_are_parsed_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_fleet(tmp_path / "fleet", 1, 3, 300)
    broken = root / "tenants" / "t150.yaml"
    broken.write_text(broken.read_text().replace("cohort: all", "cohort: all: x"))
    full = {"n": 0}
    real = load.YAML

    def counting(*args: Any, **kwargs: Any) -> Any:
        full["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(load, "YAML", counting)
    monkeypatch.setattr(twocores, "available", lambda: False)  # count in this process
    result = compile_fleet(root)
    assert [d.text() for d in result.diagnostics] == [
        "tenants/t150.yaml:6:16: error: YAML syntax: mapping values are not allowed here [input]"
    ]
    assert full["n"] == 1  # ruamel ran on the broken file alone


# --- quoting: what reaches YAML or CNI JSON is validated at its line, or round-trips ----------------

HOSTILE = [
    "a: b", "# x", "{x}", "[x]", "&a", "*a", "!tag", "|", ">", "%x", "@x", "`x", "yes", "no", "null", "~", "0x1F",
    "1e3", ".inf", "-", "- x", "? x", "---", "...", 'quote"q', "apos'a", "back\\slash", "tab\there", "line\nbreak",
    " leading", "trailing ", "\u2028sep", "\x85nel", "\ufeffbom", "ünïcödé ✓", "", "a: b\n  c: [d]",
]  # fmt: skip


def _yaml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _or(kind: Any, text: str, fallback: str) -> str:
    """Return `text` where the model accepts it for this kind of field, else a plain fallback."""
    try:
        TypeAdapter(kind).validate_python(text)
    except ValidationError:
        return fallback
    return text


Hostname = Annotated[str, BeforeValidator(_regex)]


def _free_text_fields(value: str) -> dict[str, str]:
    """Put a hostile string into every free-text field: description, repoURL, targetRevision, owner, hostname."""
    description = _yaml_string(value)
    url = _yaml_string(_or(Url, f"https://git.example.com/{value}", "https://git.example.com/x"))
    revision = _yaml_string(_or(Revision, f"v1{value}", "v1"))
    owner = _yaml_string(_or(Subject, f"user:{value}x", "user:plain"))
    cluster = STATIC.replace(
        "  - {name: research, value: 100}\n",
        f"  - {{name: research, value: 100, description: {description}}}\n",
    )
    cluster = cluster.replace(
        "  repoURL: https://git.example.com/fleet.git\n",
        f"  repoURL: {url}\n  targetRevision: {revision}\n",
    )
    hostname = _yaml_string(_or(Hostname, f"infer-{value}", "infer-x"))
    cluster = cluster.replace('hostnames: ["infer-[0-9]+"]', f"hostnames: [{hostname}]")
    return {C: cluster, T: TENANT.replace("[group:team-a-admins]", f"[{owner}]")}


def _load_both(data: bytes) -> list[Any]:
    return [yaml.safe_load(data), YAML(typ="safe", pure=True).load(data)]


@pytest.mark.parametrize("value", HOSTILE, ids=[repr(v)[1:-1][:20] or "empty" for v in HOSTILE])
def test_free_text_reaches_yaml_quoted_and_round_trips(
    tmp_path: Path, value: str, crds_dir: Path
) -> None:
    root = write_repo(tmp_path / "repo", _free_text_fields(value))
    result = compile_fleet(root, crds=crds_dir)
    assert not [d.text() for d in result.diagnostics if d.severity.value == "error"]
    files = write.render_files(result.manifests)
    for item in result.manifests:
        for loaded in _load_both(files[item.path]):
            assert loaded == item.obj, item.path


@pytest.mark.parametrize(
    ("field", "old", "new", "where"),
    [
        (
            "master",
            "master: ens1f0\n",
            'master: "ib0/../x"\n',
            f"{C}:51:13",
        ),
        (
            "resourceName",
            "master: ens1f0\n",
            'master: ens1f0\n    resourceName: "nvidia.com/rdma\\", \\"x"\n',
            f"{C}:52:19",
        ),
        (
            "gateway",
            "range: 192.168.20.0/24}",
            'range: 192.168.20.0/24, gateway: "192.168.20.1\\n"}',
            f"{C}:52:64",
        ),
        (
            "instanceTypes",
            "instanceTypes: [p5.48xlarge]",
            'instanceTypes: ["p5.48xlarge: {x: y}"]',
            f"{C}:27:23",
        ),
        ("nodeClass", "EC2NodeClass, name: gpu", 'EC2NodeClass, name: "gpu\\n  x: y"', f"{C}:14:"),
        (
            "repoURL",
            "  repoURL: https://git.example.com/fleet.git\n",
            '  repoURL: "https://git.example.com/a b"\n',
            f"{C}:5:12",
        ),
        (
            "targetRevision",
            "  repoURL: https://git.example.com/fleet.git\n",
            '  repoURL: https://git.example.com/fleet.git\n  targetRevision: "main\\n"\n',
            f"{C}:6:19",
        ),
    ],
)
def test_strings_that_reach_cni_json_or_selectors_are_validated_at_their_line(
    tmp_path: Path, field: str, old: str, new: str, where: str
) -> None:
    assert CLUSTER.count(old) == 1, "test bug"
    code, stderr = _render(_repo(tmp_path / "repo", cluster=CLUSTER.replace(old, new)))
    assert code == 1, stderr
    assert any(x.startswith(where) and ": error: " in x for x in stderr.splitlines()), stderr


def test_the_cni_config_round_trips_through_json_and_yaml(tmp_path: Path, crds_dir: Path) -> None:
    cluster = STATIC.replace(
        "type: macvlan\n    master: ens1f0\n",
        'type: macvlan\n    master: "i\\"b\\\\0"\n',
    )
    root = _repo(tmp_path / "repo", cluster=cluster)
    result = compile_fleet(root, crds=crds_dir)
    assert not [d for d in result.diagnostics if d.severity.value == "error"], [
        d.text() for d in result.diagnostics
    ]
    files = write.render_files(result.manifests)
    attachments = [
        m for m in result.manifests if m.obj.get("kind") == "NetworkAttachmentDefinition"
    ]
    assert attachments
    for item in attachments:
        config = json.loads(yaml.safe_load(files[item.path])["spec"]["config"])
        assert config == json.loads(item.obj["spec"]["config"])
        assert config["master"] == 'i"b\\0'
