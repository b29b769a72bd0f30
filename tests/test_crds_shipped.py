"""The upstream CRDs shipped in gpuplan/crds/: recorded, intact, loadable, and chosen per version."""

from __future__ import annotations

import copy
import gzip
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpuplan.crds import DATA, crd_set, index_for, parse_components, set_for, shipped_sets
from gpuplan.crds.versions import UnknownCrdSet
from gpuplan.validate import CrdIndex, Problem, Validator
from tests.conftest import PROJECT

SCRIPT = PROJECT / "scripts" / "fetch_crds.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fetch_crds", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fetch_crds"] = module
    spec.loader.exec_module(module)
    return module


fetch = _script()


def _records() -> list[dict]:
    return json.loads((DATA / "SOURCES.json").read_text(encoding="utf-8"))["files"]


# --- SOURCES.json and the update script --------------------------------------------------------


def test_every_shipped_crd_matches_its_sources_record() -> None:
    records = _records()
    shipped = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*.json.gz")}
    assert shipped == {r["file"] for r in records}
    for record in records:
        raw = (DATA / record["file"]).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == record["sha256"], record["file"]
        assert hashlib.sha256(gzip.decompress(raw)).hexdigest() == record["json_sha256"]
        assert record["repository"].startswith("https://github.com/")
        assert len(record["commit"]) == 40 and record["tag"] == record["version"]
        assert record["license"].startswith("Apache-2.0")
        assert record["file"].startswith(f"{record['component']}/{record['version']}/")


def test_check_mode_passes_on_the_shipped_data() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "match SOURCES.json" in done.stderr


def test_check_mode_catches_a_changed_file_and_a_missing_one(tmp_path: Path) -> None:
    data = tmp_path / "crds"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    changed = data / "kueue" / "v0.14.4" / "clusterqueues.kueue.x-k8s.io.json.gz"
    changed.write_bytes(gzip.compress(b"{}"))
    (data / "volcano" / "v1.15.1" / "queues.scheduling.volcano.sh.json.gz").unlink()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--data", str(data)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "kueue/v0.14.4/clusterqueues.kueue.x-k8s.io.json.gz: sha256 differs" in done.stderr
    assert "volcano/v1.15.1/queues.scheduling.volcano.sh.json.gz: missing" in done.stderr


def test_every_table_entry_is_shipped() -> None:
    assert fetch.check(fetch.TABLE) == []
    recorded = {(r["component"], r["version"]) for r in _records()}
    assert {(e.component, e.version) for e in fetch.TABLE} == recorded


def test_the_issue_s_versions_are_shipped() -> None:
    sets = shipped_sets()
    assert {"v0.12.10", "v0.13.10", "v0.14.4", "v0.19.2"} <= set(sets["kueue"])
    assert len({v.rsplit(".", 1)[0] for v in sets["kueue"]}) == 8  # v0.12 to v0.19
    assert "v26.7.0" in sets["gpu-operator"] and "v25.3.1" in sets["gpu-operator"]
    assert {"v1.11.2", "v1.15.1"} <= set(sets["volcano"])
    assert len(sets["karpenter"]) == len(sets["karpenter-provider-aws"]) == 15  # v1.0 to v1.14
    assert (
        "v1.14.1" in sets["karpenter-provider-aws"] and "v1.6.2" in sets["karpenter-provider-azure"]
    )
    assert sets["argo-cd"] == ("v3.5.1",) and sets["kai-scheduler"] == ("v0.16.8", "v0.17.0")
    assert sets["nfd"] and sets["multus"]


def test_shipped_data_stays_small() -> None:
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file() and p.suffix != ".py")
    assert total < 3_000_000


# --- pruning ---------------------------------------------------------------------------------------


def test_pruning_drops_description_annotations_only() -> None:
    schema = {
        "description": "the object",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "a field named description"},
            "mode": {"type": "string", "enum": ["A", "B"], "default": "A", "description": "x"},
            "config": {
                "type": "object",
                "default": {"description": "kept: a value"},
                "x-kubernetes-validations": [{"rule": "self.size() > 0", "message": "m"}],
            },
            "items": {"type": "array", "items": {"type": "string", "description": "y"}},
            "either": {"anyOf": [{"type": "integer", "description": "z"}, {"type": "string"}]},
        },
        "required": ["mode"],
    }
    pruned = fetch.strip_descriptions(copy.deepcopy(schema))
    assert "description" not in pruned
    props = pruned["properties"]
    assert props["description"] == {"type": "string"}  # the field stays, its annotation goes
    assert props["mode"] == {"type": "string", "enum": ["A", "B"], "default": "A"}
    assert props["config"]["default"] == {"description": "kept: a value"}
    assert (
        props["config"]["x-kubernetes-validations"]
        == schema["properties"]["config"]["x-kubernetes-validations"]
    )
    assert props["items"]["items"] == {"type": "string"}
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert pruned["required"] == ["mode"]


def test_refresh_from_a_local_git_mirror(tmp_path: Path) -> None:
    repo = tmp_path / "mirrors" / "example+widgets"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "annotations": {"a": "b"}},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "d",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer", "maximum": 3}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    files = {"crds/widgets.yaml": json.dumps(crd), "LICENSE": "Apache License\nVersion 2.0\n"}
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "widgets"], check=True)
    subprocess.run([*git, "tag", "v1.2.3"], check=True)
    entries = (
        fetch.Entry("widgets", "v1.2.3", "example/widgets", "v1.2.3", ("crds/widgets.yaml",)),
    )
    data = tmp_path / "data"
    records = fetch.refresh(fetch.GitSource(tmp_path / "mirrors"), entries, data)
    [record] = records
    assert record["file"] == "widgets/v1.2.3/widgets.example.com.json.gz"
    shipped = json.loads(gzip.decompress((data / record["file"]).read_bytes()))
    assert shipped["metadata"] == {"name": "widgets.example.com"}
    schema = shipped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert (
        "description" not in schema
        and schema["properties"]["spec"]["properties"]["size"]["maximum"] == 3
    )
    assert fetch.check(entries, data) == []
    assert (data / "LICENSES" / "example_widgets" / "LICENSE").is_file()

    # --only: a second tag is merged in; the first set and its record stay as they were.
    crd["spec"]["versions"][0]["name"] = "v2"
    (repo / "crds/widgets.yaml").write_text(json.dumps(crd))
    subprocess.run([*git, "commit", "-q", "-am", "widgets v2"], check=True)
    subprocess.run([*git, "tag", "v2.0.0"], check=True)
    second = fetch.Entry("widgets", "v2.0.0", "example/widgets", "v2.0.0", ("crds/widgets.yaml",))
    before = (data / record["file"]).read_bytes()
    [added] = fetch.refresh_only(fetch.GitSource(tmp_path / "mirrors"), (second,), data)
    assert added["license"] == record["license"] and added["commit"] != record["commit"]
    assert (data / record["file"]).read_bytes() == before
    assert fetch.check((*entries, second), data) == []
    with pytest.raises(fetch.FetchError, match="not in the table: widgets/v9"):
        fetch.selected(["widgets/v9"])


# --- loading and choosing ----------------------------------------------------------------------------


def test_every_shipped_crd_loads_and_compiles() -> None:
    for component, versions in shipped_sets().items():
        for version in versions:
            crds = crd_set(component, version)
            assert crds, (component, version)
            validator = Validator(CrdIndex(list(crds)), "1.33")
            for crd in crds:
                for crd_version in crd.versions.values():
                    assert not isinstance(validator._compile(crd_version), Problem)


MAY_STOP_SEARCH = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "ClusterQueue",
    "metadata": {"name": "q"},
    "spec": {"flavorFungibility": {"whenCanBorrow": "MayStopSearch"}, "resourceGroups": []},
}


def test_each_kueue_version_validates_against_its_own_crds() -> None:
    # whenCanBorrow: MayStopSearch exists from Kueue v0.15.0 (kubernetes-sigs/kueue v0.15.0
    # config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml); v0.14.4 rejects it.
    old = Validator(index_for({"kueue": "v0.14.4"}), "1.33").validate(MAY_STOP_SEARCH)
    assert [p.path for p in old] == ["spec.flavorFungibility.whenCanBorrow"]
    assert "Borrow, TryNextFlavor" in old[0].message
    assert Validator(index_for({"kueue": "v0.19.2"}), "1.33").validate(MAY_STOP_SEARCH) == []


def test_extra_crds_replace_the_shipped_ones_of_their_kind(crds_dir: Path) -> None:
    extra = CrdIndex.load(crds_dir / "kueue")  # v0.19.2 from the shared folder
    index = index_for({"kueue": "v0.14.4", "nfd": "v0.19.0"}, extra)
    assert Validator(index, "1.33").validate(MAY_STOP_SEARCH) == []
    assert ("nfd.k8s-sigs.io", "NodeFeatureRule") in index  # kinds the folder lacks stay shipped


def test_a_version_without_its_own_set_uses_its_minor_s_newest_patch() -> None:
    assert set_for("kueue", "v0.14.4") == "v0.14.4"
    assert set_for("kueue", "v0.14.6") == "v0.14.8"
    with pytest.raises(UnknownCrdSet, match=r"kueue v0\.99\.0 .*shipped: v0\.12\.10.*--crds DIR"):
        set_for("kueue", "v0.99.0")


def test_component_pairs_parse() -> None:
    assert parse_components(["kueue=v0.14.4", "gpu-operator=v26.7.0"]) == {
        "kueue": "v0.14.4",
        "gpu-operator": "v26.7.0",
    }
    with pytest.raises(ValueError, match="COMPONENT=VERSION"):
        parse_components(["kueue"])


def test_every_cel_rule_of_every_shipped_crd_is_evaluated() -> None:
    from gpuplan.validate.cel import CelRules

    counted = 0
    for component, versions in shipped_sets().items():
        for version in versions:
            for crd in crd_set(component, version):
                for crd_version in crd.versions.values():
                    rules = CelRules(crd_version)
                    assert rules.skipped == [], (component, version, crd.kind, rules.skipped[:1])
                    counted += rules.count
    assert counted > 1000  # Kueue, Karpenter and the GPU Operator carry many rules


def test_each_example_cluster_gets_its_own_sets_with_or_without_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gpuplan.components
    from gpuplan.crds import cluster_components
    from gpuplan.inputs.sources import read_inputs
    from gpuplan.plan.resolve import build_fleet

    inputs, _ = read_inputs(PROJECT)
    fleet, _ = build_fleet(inputs)
    chosen = {name: cluster_components(c.spec) for name, c in fleet.clusters.items()}
    assert chosen["dgx-onprem"]["kueue"] == "v0.14.4"
    assert chosen["h100-prod"]["karpenter-provider-aws"] == "v1.14.1"
    assert chosen["edge-inference"]["karpenter-provider-azure"] == "v1.6.2"
    assert all(sets["nfd"] and sets["multus"] for sets in chosen.values())
    monkeypatch.setattr(gpuplan.components, "REGISTRY", {})  # the spec's own version fields
    assert {name: cluster_components(c.spec) for name, c in fleet.clusters.items()} == chosen
