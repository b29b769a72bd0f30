"""`gpuplan validate` agrees with the API server: as strict as it, and no stricter.

Each test writes manifests the way a user would and runs the real CLI without GPUPLAN_CRDS, so
the CRDs come from the package itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PROJECT, copy_example, run, snapshot

NO_ENV = {"GPUPLAN_CRDS": ""}

FLAVOR = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: {name}
"""

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: research
spec:
  flavorFungibility:
    whenCanBorrow: MayStopSearch
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {flavor}
      resources:
      - name: cpu
        nominalQuota: "4"
"""


def write(folder: Path, files: dict[str, str]) -> Path:
    """Write files (relative path -> text) under a folder."""
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return folder


def lines(text: str, marker: str) -> list[str]:
    """The lines of a run's output that carry a marker."""
    return [line for line in text.splitlines() if marker in line]


# --- generateName and nulls ------------------------------------------------------------------


def test_generate_name_instead_of_name_is_valid(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        {
            "job.yaml": """\
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata:
          generateName: sweep-
        spec:
          minAvailable: 1
          tasks:
          - replicas: 1
            template:
              spec:
                containers:
                - {name: main, image: busybox}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          generateName: settings-
        """
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 0, result.stderr
    assert "2 objects in 1 files are valid" in result.stderr


def test_an_object_with_neither_name_nor_generate_name_is_rejected(tmp_path: Path) -> None:
    folder = write(
        tmp_path, {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n"}
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 1 and 'missing required field "name"' in result.stderr


def test_nulls_the_api_server_drops_are_not_errors(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        {
            "objects.yaml": """\
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ClusterQueue
        metadata:
          name: research
          labels: null
        spec:
          cohort: null
          namespaceSelector: null
          resourceGroups: []
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: settings
          annotations: null
        data: null
        """
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 0, result.stderr


WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer}
              color: {type: string}
              note: {type: string, nullable: true}
"""


def test_null_pruning_follows_nullable_and_required(tmp_path: Path) -> None:
    crds = write(tmp_path / "crds", {"widget.yaml": WIDGET_CRD})
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    folder = write(
        tmp_path / "m",
        {
            "ok.yaml": widget.format(name="ok", spec="{size: 1, color: null, note: null}"),
            "bad.yaml": widget.format(name="bad", spec="{size: null, color: 7}"),
        },
    )
    result = run("validate", str(folder), "--crds", str(crds), env=NO_ENV)
    assert result.code == 1
    errors = lines(result.stderr, "error:")
    # size is pruned (not nullable), then missing; color keeps its type check.
    assert any("bad.yaml" in e and 'missing required field "size"' in e for e in errors), errors
    assert any("bad.yaml" in e and "spec.color: must be string" in e for e in errors), errors
    assert not any("ok.yaml" in e for e in errors), errors


# --- duplicates ------------------------------------------------------------------------------


def test_two_objects_with_one_name_in_a_folder_are_reported_naming_both_files(
    tmp_path: Path,
) -> None:
    folder = write(
        tmp_path,
        {
            "a.yaml": FLAVOR.format(name="gpu"),
            "b/b.yaml": FLAVOR.format(name="gpu"),
            "c.yaml": FLAVOR.format(name="cpu"),
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 1
    [duplicate] = lines(result.stderr, "duplicate object")
    assert duplicate.startswith(
        f"{folder / 'b/b.yaml'}:4:3: error: ResourceFlavor/gpu metadata.name"
    )
    assert f"{folder / 'a.yaml'}:4:3 defines the same ResourceFlavor gpu" in duplicate


def test_one_name_in_two_cluster_folders_is_no_duplicate(tmp_path: Path) -> None:
    kustomization = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [f.yaml]\n"
    )
    folder = write(
        tmp_path,
        {
            "one/f.yaml": FLAVOR.format(name="gpu"),
            "one/kustomization.yaml": kustomization,
            "two/f.yaml": FLAVOR.format(name="gpu"),
            "two/kustomization.yaml": kustomization,
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 0, result.stderr


# --- references to objects elsewhere -------------------------------------------------------------


def test_a_reference_to_an_object_not_in_the_folder_warns_and_fails_with_strict(
    tmp_path: Path,
) -> None:
    folder = write(tmp_path, {"queue.yaml": QUEUE.format(flavor="elsewhere")})
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 0, result.stderr
    [warning] = lines(result.stderr, 'ResourceFlavor "elsewhere" does not exist')
    assert ": warning: ClusterQueue/research spec.resourceGroups[0].flavors[0].name" in warning
    strict = run("validate", str(folder), "--strict", env=NO_ENV)
    assert strict.code == 1
    [error] = lines(strict.stderr, 'ResourceFlavor "elsewhere" does not exist')
    assert ": error: ClusterQueue/research" in error


def test_a_reference_inside_the_folder_that_is_broken_stays_an_error(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        {
            "objects.yaml": """\
        apiVersion: nvidia.com/v1
        kind: ClusterPolicy
        metadata: {name: cluster-policy}
        spec:
          migManager: {config: {name: mig-parted, default: all-disabled}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: mig-parted, namespace: gpu-operator}
        data: {other.yaml: "x"}
        """
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 1
    assert lines(result.stderr, 'error: ConfigMap/mig-parted data: missing key "config.yaml"')


# --- the CRDs in use ---------------------------------------------------------------------------------


def test_a_custom_resource_without_crd_names_its_kind_and_how_to_supply_it(tmp_path: Path) -> None:
    folder = write(
        tmp_path, {"gizmo.yaml": "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g}\n"}
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 1
    [error] = lines(result.stderr, "error:")
    assert "no CustomResourceDefinition for kind Gizmo (apiVersion example.com/v1)" in error
    assert "--crds DIR" in error and "GPUPLAN_CRDS" in error and "report" not in error
    supplied = write(
        tmp_path / "crds",
        {"gizmo.yaml": WIDGET_CRD.replace("Widget", "Gizmo").replace("widgets", "gizmos")},
    )
    assert run("validate", str(folder), "--crds", str(supplied), env=NO_ENV).code == 0


def test_component_flag_chooses_the_crds(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        {"queue.yaml": QUEUE.format(flavor="gpu"), "flavor.yaml": FLAVOR.format(name="gpu")},
    )
    assert (
        run("validate", str(folder), env=NO_ENV).code == 0
    )  # the newest Kueue knows MayStopSearch
    old = run("validate", str(folder), "--component", "kueue=v0.14.4", env=NO_ENV)
    assert old.code == 1
    [error] = lines(old.stderr, "error:")
    assert "spec.flavorFungibility.whenCanBorrow: must be one of: Borrow, TryNextFlavor" in error


def test_unknown_component_or_version_is_a_usage_error(tmp_path: Path) -> None:
    folder = write(tmp_path, {"flavor.yaml": FLAVOR.format(name="gpu")})
    unknown = run("validate", str(folder), "--component", "kueue=v0.99.1", env=NO_ENV)
    assert unknown.code == 2 and "shipped: v0.12.10" in unknown.stderr
    assert run("validate", str(folder), "--component", "kueu=v0.14.4", env=NO_ENV).code == 2
    assert run("validate", str(folder), "--component", "kueue", env=NO_ENV).code == 2


def test_a_rendered_folder_s_header_chooses_the_crds_and_the_flag_overrides_it(
    tmp_path: Path,
) -> None:
    kustomization = (
        "# Generated by gpuplan.\n# Components: kueue=v0.14.4 nfd=v0.19.0\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [queue.yaml, flavor.yaml]\n"
    )
    folder = write(
        tmp_path,
        {
            "dgx/queue.yaml": QUEUE.format(flavor="gpu"),
            "dgx/flavor.yaml": FLAVOR.format(name="gpu"),
            "dgx/kustomization.yaml": kustomization,
        },
    )
    result = run("validate", str(folder), env=NO_ENV)
    assert result.code == 1
    [error] = lines(result.stderr, "error:")
    assert "whenCanBorrow: must be one of: Borrow, TryNextFlavor" in error
    assert run("validate", str(folder), "--component", "kueue=v0.19.2", env=NO_ENV).code == 0


def test_json_goes_to_stdout(tmp_path: Path) -> None:
    folder = write(tmp_path, {"queue.yaml": QUEUE.format(flavor="elsewhere")})
    result = run("validate", str(folder), "--format", "json", env=NO_ENV)
    rows = json.loads(result.stdout)
    assert [r["severity"] for r in rows] == ["warning"] and result.stderr == ""


# --- a fresh install ---------------------------------------------------------------------------------


def _wheel(tmp_path: Path) -> Path:
    """Build gpuplan's wheel offline with this environment's setuptools and wheel (the test extra)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT / name, source / name)
    shutil.copytree(
        PROJECT / "gpuplan", source / "gpuplan", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("gpuplan-*.whl")
    return wheel


def _fresh_venv(venv: Path, wheel: Path) -> dict[str, str]:
    """Install the wheel, offline and alone, into a new virtual environment; return its env.

    The venv sees this environment's site-packages for the dependencies (a path in a .pth file:
    the editable gpuplan installed here is not imported through it), and nothing else.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    Path(site, "dependencies.pth").write_text("".join(f"{path}\n" for path in paths))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + ["--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    drop = ("GPUPLAN_CRDS", "PYTHONPATH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_the_wheel_installed_in_a_fresh_venv_renders_and_validates(tmp_path: Path) -> None:
    """pip install gpuplan-*.whl (no GPUPLAN_CRDS): what it needs ships in the wheel."""
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    env = _fresh_venv(venv, wheel)

    def gpuplan(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(venv / "bin" / "gpuplan"), *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)

    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import gpuplan.crds; print(gpuplan.crds.DATA)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the installed copy, not the work tree
    declared = wheel.name.split("-")[1]
    assert gpuplan("--version").stdout.strip() == f"gpuplan, version {declared}"
    # the example fleet renders to the committed output, byte for byte, and validates
    repo = copy_example(tmp_path / "repo")
    shutil.copytree(PROJECT / "patches", repo / "patches")
    rendered = gpuplan("render", "--root", str(repo))
    assert rendered.returncode == 0, rendered.stderr
    assert snapshot(repo / "output") == snapshot(PROJECT / "output")
    valid = gpuplan("validate", str(repo / "output"))
    assert valid.returncode == 0, valid.stderr
    # custom resources are checked strictly against the shipped CRDs of a chosen version
    folder = write(
        tmp_path / "manifests",
        {"queue.yaml": QUEUE.format(flavor="gpu"), "flavor.yaml": FLAVOR.format(name="gpu")},
    )
    done = gpuplan("validate", str(folder), "--component", "kueue=v0.14.4")
    assert done.returncode == 1, done.stderr
    assert "whenCanBorrow: must be one of: Borrow, TryNextFlavor" in done.stderr
    assert "not validated" not in done.stderr


@pytest.mark.parametrize("version", ["v0.12.10", "v0.14.4", "v0.19.2"])
def test_shipped_kueue_crds_accept_a_plain_queue(tmp_path: Path, version: str) -> None:
    folder = write(
        tmp_path,
        {
            "q.yaml": QUEUE.format(flavor="gpu").replace(
                "  flavorFungibility:\n    whenCanBorrow: MayStopSearch\n", ""
            ),
            "f.yaml": FLAVOR.format(name="gpu"),
        },
    )
    result = run("validate", str(folder), "--component", f"kueue={version}", env=NO_ENV)
    assert result.code == 0, result.stderr


# --- render: each cluster against its own versions -----------------------------------------------------


def _compiled(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from gpuplan.pipeline import compile_fleet

    monkeypatch.delenv("GPUPLAN_CRDS", raising=False)
    result = compile_fleet(PROJECT, verify_output=False)
    assert result.fleet is not None and result.manifests, result.diagnostics
    return result


def _queue(result, cluster: str) -> dict:  # type: ignore[no-untyped-def]
    import copy

    [item] = [m for m in result.manifests if m.cluster == cluster and m.kind == "ClusterQueue"][:1]
    return copy.deepcopy(item)


def test_render_checks_each_cluster_against_its_own_kueue_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import replace

    from gpuplan.validate.prove import schema_problems

    result = _compiled(monkeypatch)
    broken = []
    for cluster in ("dgx-onprem", "h100-prod"):  # Kueue v0.14.4 and v0.19.2 in the example fleet
        item = _queue(result, cluster)
        obj = dict(item.obj)
        obj["spec"] = {**obj["spec"], "flavorFungibility": {"whenCanBorrow": "MayStopSearch"}}
        broken.append(replace(item, obj=obj))
    problems, _ = schema_problems(broken, result.fleet, None)
    assert [(p.file.split("/")[1], p.path.split(" ")[-1]) for p in problems] == [
        ("dgx-onprem", "spec.flavorFungibility.whenCanBorrow")
    ]


def test_render_names_a_missing_crd_without_calling_it_a_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuplan.model.manifest import Manifest
    from gpuplan.validate.prove import schema_problems

    result = _compiled(monkeypatch)
    gizmo = Manifest(
        "dgx-onprem/gizmo.yaml",
        {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}},
        ("clusters/dgx-onprem.yaml",),
        "dgx-onprem",
    )
    [problem], _ = schema_problems([gizmo], result.fleet, None)
    assert "no CustomResourceDefinition for kind Gizmo" in problem.message
    assert "kueue v0.14.4" in problem.message and "--crds DIR" in problem.message
    assert "report this bug" not in problem.message


def test_rendered_folders_name_their_component_versions_and_validate_reads_them(
    tmp_path: Path,
) -> None:
    repo = copy_example(tmp_path / "repo")
    rendered = run("render", "--root", str(repo), env=NO_ENV)
    assert rendered.code == 0, rendered.stderr
    head = (repo / "output" / "dgx-onprem" / "kustomization.yaml").read_text().splitlines()[:4]
    assert "# Components: gpu-operator=v26.7.0 kueue=v0.14.4 multus=v1.7.7 nfd=v0.19.0" in head
    assert (
        "# Components: argo-cd=v3.5.1"
        in (repo / "output" / "argocd" / "kustomization.yaml").read_text()
    )
    assert run("validate", str(repo / "output"), env=NO_ENV).code == 0
    queue = next((repo / "output" / "dgx-onprem" / "kueue").glob("clusterqueue-*.yaml"))
    text = queue.read_text()
    assert "    whenCanBorrow: Borrow\n" in text
    queue.write_text(
        text.replace("    whenCanBorrow: Borrow\n", "    whenCanBorrow: MayStopSearch\n")
    )
    result = run("validate", str(repo / "output"), env=NO_ENV)
    assert result.code == 1
    [error] = lines(result.stderr, "error:")
    assert error.startswith(str(queue)) and "must be one of: Borrow, TryNextFlavor" in error


def test_a_file_given_alone_gets_its_cluster_folder_s_versions(tmp_path: Path) -> None:
    kustomization = (
        "# Components: kueue=v0.14.4\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [kueue/queue.yaml]\n"
    )
    folder = write(
        tmp_path,
        {
            "dgx/kueue/queue.yaml": QUEUE.format(flavor="gpu"),
            "dgx/kustomization.yaml": kustomization,
        },
    )
    result = run("validate", str(folder / "dgx" / "kueue" / "queue.yaml"), env=NO_ENV)
    assert result.code == 1
    assert lines(result.stderr, "whenCanBorrow: must be one of: Borrow, TryNextFlavor")
