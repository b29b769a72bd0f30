"""`gpuplan validate`: wrong manifests flagged at their file, line, object and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import PROJECT, run

WRONG = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: unknown-field
spec:
  nodeLabelz: {a: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cel-rule
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: unknown-field
      resources:
      - name: cpu
        nominalQuota: "1"
        borrowingLimit: "1"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: webhook-rule
spec:
  cohortName: shared
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: unknown-field
      resources:
      - name: cpu
        nominalQuota: "1"
        lendingLimit: "2"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: dangling
  namespace: team
spec:
  clusterQueue: nowhere
---
apiVersion: kueue.x-k8s.io/v1alpha9
kind: ClusterQueue
metadata:
  name: unserved
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: wrong-type
  namespace: team
spec:
  hard: [1, 2]
---
apiVersion: example.com/v1
kind: Gizmo
metadata:
  name: unknown-kind
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: wrong-enum
spec:
  reclaimable: "maybe"
"""

EXPECTED = [
    ("6:3", "ResourceFlavor/unknown-field spec", 'unknown field "nodeLabelz"'),
    (
        "20:9",
        "ClusterQueue/cel-rule spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "must be nil when cohort is empty",
    ),
    (
        "35:9",
        "ClusterQueue/webhook-rule spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "nominalQuota",
    ),
    # The API server accepts a LocalQueue whose ClusterQueue is elsewhere: a warning (error with --strict).
    (
        "43:3",
        "LocalQueue/dangling spec.clusterQueue",
        'ClusterQueue "nowhere" does not exist',
        "warning",
    ),
    ("45:1", "ClusterQueue/unserved", "not served"),
    ("56:3", "ResourceQuota/wrong-type spec.hard", "must be object"),
    (
        "58:1",
        "Gizmo/unknown-kind",
        "no CustomResourceDefinition for kind Gizmo (apiVersion example.com/v1)",
    ),
    ("68:3", "Queue/wrong-enum spec.reclaimable", "boolean"),
]


@pytest.fixture
def wrong_file(tmp_path: Path) -> Path:
    path = tmp_path / "wrong.yaml"
    path.write_text(WRONG)
    return path


def test_every_wrong_object_is_flagged_at_its_place(wrong_file: Path, crds_dir: Path) -> None:
    result = run("validate", str(wrong_file), "--crds", str(crds_dir))
    assert result.code == 1
    lines = result.stderr.splitlines()
    for position, where, phrase, *severity in EXPECTED:
        prefix = f"{wrong_file}:{position}:" if position else f"{wrong_file}:"
        hits = [
            x
            for x in lines
            if x.startswith(prefix)
            and f"{(severity or ['error'])[0]}: {where}" in x
            and phrase in x
        ]
        assert hits, f"no error {prefix} {where} {phrase!r} in:\n{result.stderr}"
    assert "errors" in lines[-1] and "in 1 file" in lines[-1]


def test_rendered_example_fleet_validates_clean(crds_dir: Path) -> None:
    result = run("validate", str(PROJECT / "output"), "--crds", str(crds_dir))
    assert result.code == 0, result.stderr
    assert "error:" not in result.stderr
    # the operators' namespaces are made by their Argo CD Applications (CreateNamespace=true)
    assert "does not exist (no Namespace object creates it)" not in result.stderr
    # a flavor of a cloud node group selects labels the group sets (`gpuplan requirements`)
    assert "nodegroup" not in result.stderr and "agentpool" not in result.stderr


def test_json_format(wrong_file: Path, crds_dir: Path) -> None:
    result = run("validate", str(wrong_file), "--crds", str(crds_dir), "--format", "json")
    rows = json.loads(result.stdout)  # a result: stdout, like diff and capacity
    assert {r["severity"] for r in rows} >= {"error"} and all(
        r["file"] == str(wrong_file) for r in rows
    )


def test_unknown_kubernetes_version_is_a_usage_error(wrong_file: Path) -> None:
    result = run("validate", str(wrong_file), "--kubernetes-version", "1.2")
    assert result.code == 2 and "available" in result.stderr


def test_without_crds_custom_resources_are_said_to_be_unchecked(tmp_path: Path) -> None:
    path = tmp_path / "ns.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: bad\n  labelz: {}\n"
    )
    result = run("validate", str(path), env={"GPUPLAN_CRDS": ""})
    assert result.code == 1
    assert f"{path}:10:3: error: Namespace/bad metadata" in result.stderr


def test_fast_reader_agrees_with_pyyaml_on_everything_rendered() -> None:
    """yaml-rs reads manifests for speed; it must read them exactly as PyYAML does."""
    import yaml

    from gpuplan.validate.files import fast_documents

    files = sorted((PROJECT / "output").rglob("*.yaml")) + sorted(
        (PROJECT / "tests" / "cases").rglob("*.yaml")
    )
    assert len(files) > 100
    fast = 0
    for path in files:
        text = path.read_text()
        docs = fast_documents(text)
        if docs is not None:
            fast += 1
            assert docs == [d for d in yaml.safe_load_all(text) if d is not None], path
    assert fast > len(files) // 2


@pytest.mark.parametrize(
    "text",
    [
        "enabled: yes\n",
        "mode: 0755\n",
        "a: [on, off]\n",
        "a: 1\na: 2\n",
        "- a\n- b\n",
        "a: {b: on}\n",
        "- No\n",
        "at:\t10:30\n",
        "a:\n  - 0644 # mode\n",
    ],
)
def test_fast_reader_leaves_yaml_1_1_scalars_and_oddities_to_pyyaml(text: str) -> None:
    from gpuplan.validate.files import fast_documents

    assert fast_documents(text) in (None, [["a", "b"]])


@pytest.mark.parametrize(
    "text", ["name: pool-04\n", "image: repo:0755\n", "a: [x-07, z]\n", "a: yes-no\n"]
)
def test_fast_reader_reads_words_that_only_contain_such_scalars(text: str) -> None:
    """A "-" or ":" inside a word is no indicator: both readers read the same string."""
    import yaml

    from gpuplan.validate.files import fast_documents

    assert fast_documents(text) == list(yaml.safe_load_all(text))
