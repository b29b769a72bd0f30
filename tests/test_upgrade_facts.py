"""Upstream's upgrade facts: each note and stop is about a supported range, cited to its upstream
repository, and `notes_between` / `steps` return what a real bump crosses."""

from __future__ import annotations

import re

import pytest

from gpuplan.components import REGISTRY
from gpuplan.components.upgrades import (
    NOTES,
    STOPS,
    RequiredStop,
    UpgradeNote,
    notes_between,
    release_order,
    steps,
    version_key,
)

# "owner/repo@ref:path" with an optional "#heading"
SOURCE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<ref>[\w.-]+):(?P<path>[\w./-]+)(#\S+)?$")


def _upstream(component: str, line: str) -> set[str]:
    """Return the repositories the component's releases of a line cite for their facts."""
    releases = [r for r in REGISTRY[component].releases if r.line == line]
    return {source.split("@", 1)[0] for r in releases for source in r.sources}


def _range(component: str, line: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    keys = [release_order(component, v) for v in REGISTRY[component].versions_of(line)]
    return min(keys), max(keys)


def _id(fact: UpgradeNote | RequiredStop) -> str:
    line = f"/{fact.line}" if fact.line else ""
    return f"{fact.component}{line}@{fact.version}"


def _check_source(fact: UpgradeNote | RequiredStop) -> None:
    match = SOURCE.match(fact.source)
    assert match, f"{fact.source!r} is not owner/repo@ref:path[#heading]"
    assert match["repo"] in _upstream(fact.component, fact.line), fact.source


@pytest.mark.parametrize("note", NOTES, ids=_id)
def test_a_note_names_a_supported_release_and_its_upstream_source(note: UpgradeNote) -> None:
    assert note.component in REGISTRY
    assert note.line in REGISTRY[note.component].lines
    low, high = _range(note.component, note.line)
    key = release_order(note.component, note.version)
    assert low <= key <= high, f"{note.version} outside the supported range"
    assert re.fullmatch(r"v\d+\.\d+\.\d+", note.version)
    assert note.action.strip() and note.action == note.action.strip()
    _check_source(note)


@pytest.mark.parametrize("stop", STOPS, ids=_id)
def test_a_stop_names_a_supported_release_or_the_one_that_satisfies_it(stop: RequiredStop) -> None:
    assert stop.line in REGISTRY[stop.component].lines
    low, high = _range(stop.component, stop.line)
    key = release_order(stop.component, stop.version)
    assert key <= high
    if key < low:
        # A stop below the oldest supported release: `why` names the supported release that meets it.
        meets = [
            v
            for v in REGISTRY[stop.component].versions_of(stop.line)
            if release_order(stop.component, v)[:3] == key[:3]
            and release_order(stop.component, v) >= key
        ]
        assert meets and any(v in stop.why for v in meets), stop.why
    assert stop.why.strip()
    _check_source(stop)


def test_notes_cover_kueue_and_karpenter_on_both_providers() -> None:
    lines = {(n.component, n.line) for n in NOTES}
    assert {("kueue", ""), ("karpenter", "aws"), ("karpenter", "azure")} <= lines


def test_no_note_is_listed_twice() -> None:
    keys = [(n.component, n.line, n.version, n.action) for n in NOTES]
    assert len(keys) == len(set(keys))


def test_a_kueue_bump_across_five_minors_names_each_minor_notes_in_order() -> None:
    kueue = REGISTRY["kueue"]
    found = notes_between(kueue, "", "v0.14.4", "v0.19.2")
    versions = [n.version for n in found]
    assert versions == sorted(versions, key=version_key)
    assert versions[0] == "v0.14.5" and versions[-1] == "v0.19.0"
    assert {"v0.15.0", "v0.16.0", "v0.17.0", "v0.18.0", "v0.19.0"} <= set(versions)
    # the v1beta2 storage switch and its migration script, and v0.17's ACTION REQUIRED on TAS labels
    assert any("migrate-to-v1beta2.sh" in n.action and not n.required for n in found)
    assert any("kueue.x-k8s.io/tas" in n.action and n.required for n in found)
    # notes of v0.14.0 and older are behind v0.14.4 already
    assert all(version_key(v) > (0, 14, 4) for v in versions)
    assert all(n.source.startswith("kubernetes-sigs/kueue@v0.1") for n in found)
    # upstream names no release a Kueue bump must stop at
    assert steps(kueue, "", "v0.14.4", "v0.19.2") == []


def test_a_kueue_bump_from_v0_12_names_the_cohort_and_topology_crd_moves() -> None:
    found = notes_between(REGISTRY["kueue"], "", "v0.12.10", "v0.14.8")
    actions = " ".join(n.action for n in found if n.required)
    assert "cohorts.kueue.x-k8s.io" in actions and "spec.parentName" in actions
    assert "topologies.kueue.x-k8s.io" in actions


def test_a_karpenter_aws_bump_from_v1_0_names_the_v1_migration_first() -> None:
    karpenter = REGISTRY["karpenter"]
    found = notes_between(karpenter, "aws", "v1.0.14", "v1.14.1")
    assert found == sorted(
        (n for n in NOTES if n.component == "karpenter" and n.line == "aws"),
        key=lambda n: version_key(n.version),
    )
    assert found[0].version == "v1.1.0" and found[0].required
    assert "storedVersions" in found[0].action
    assert found[-1].version == "v1.14.0"
    assert all(n.line == "aws" for n in found)
    # v1.0.14 is past the v1.0.6 stop already; a bump from below it must stop there
    assert steps(karpenter, "aws", "v1.0.14", "v1.14.1") == []
    assert [s.version for s in steps(karpenter, "aws", "v1.0.5", "v1.1.0")] == ["v1.0.6"]


def test_a_karpenter_azure_bump_names_azure_notes_only() -> None:
    found = notes_between(REGISTRY["karpenter"], "azure", "v1.6.8", "v1.14.2")
    assert [n.version for n in found] == ["v1.7.0", "v1.10.0"]
    assert all(n.line == "azure" for n in found)


def test_a_gpu_operator_bump_across_three_majors_stops_at_each() -> None:
    operator = REGISTRY["gpu-operator"]
    assert [s.version for s in steps(operator, "", "v25.3.1", "v26.7.0")] == ["v25.10.0", "v26.3.0"]
    assert [s.version for s in steps(operator, "", "v25.10.0", "v26.7.0")] == ["v26.3.0"]
    assert steps(operator, "", "v26.3.3", "v26.7.0") == []
    found = notes_between(operator, "", "v25.3.4", "v25.10.1")
    assert [n.version for n in found] == ["v25.10.0", "v25.10.0"]
    assert any("runtimeClassName: nvidia" in n.action and n.required for n in found)


@pytest.mark.parametrize(
    ("component", "line", "old", "new"),
    [
        ("gpu-operator", "", "v26.3.0", "v26.3.3"),
        ("karpenter", "azure", "v1.6.2", "v1.6.8"),
        ("kueue", "", "v0.19.2", "v0.19.2"),
    ],
)
def test_a_patch_bump_with_no_upstream_action_crosses_nothing(
    component: str, line: str, old: str, new: str
) -> None:
    assert notes_between(REGISTRY[component], line, old, new) == []
    assert steps(REGISTRY[component], line, old, new) == []


def test_a_downgrade_crosses_nothing() -> None:
    assert notes_between(REGISTRY["kueue"], "", "v0.19.2", "v0.14.4") == []


def test_the_dra_driver_move_to_semver_orders_v0_4_after_v25_12() -> None:
    dra = REGISTRY["dra-driver"]
    assert release_order("dra-driver", "v0.4.1") > release_order("dra-driver", "v25.12.0")
    found = notes_between(dra, "", "v25.12.0", "v0.4.1")
    assert [n.version for n in found] == ["v0.4.0"] * 4
    assert any("nameOverride=nvidia-dra-driver-gpu" in n.action and n.required for n in found)
    assert notes_between(dra, "", "v0.4.1", "v25.12.0") == []


def test_a_monitoring_bump_names_the_crd_apply_before_the_chart() -> None:
    found = notes_between(REGISTRY["monitoring"], "", "v0.92.1", "v0.93.0")
    assert found[0].required and "CRDs" in found[0].action
    assert found[0].source.startswith(
        "prometheus-community/helm-charts@kube-prometheus-stack-88.3.0:"
    )
