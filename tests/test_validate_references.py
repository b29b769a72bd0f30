"""Tests of cross-object references within one cluster (gpuplan.validate.references)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuplan.emit import gpu_operator_objects as gpu_objects
from gpuplan.emit.gpu_operator_policy import cluster_policy
from gpuplan.validate import CrdIndex, ReferenceProblem, Validator, check_references, references

OPERATOR_NS = "gpu-operator"
MIG_MAP = "gpuplan-mig-parted-config"
PLUGIN_MAP = "gpuplan-device-plugin-config"
MIG_LAYOUT = "gpuplan-7x1g.10gb"
KUEUE = "kueue.x-k8s.io/v1beta2"


def _objects() -> list[dict]:
    """One valid cluster: tenants, Kueue, GPU Operator, Karpenter, NFD and an Application."""
    mig = gpu_objects.mig_parted_config(
        {MIG_LAYOUT: [gpu_objects.mig_entry("all", {"1g.10gb": 7})]}
    )
    plugin = {
        "default": gpu_objects.device_plugin_config(
            mig_strategy="mixed", sharing=None, replicas=None, resources=[]
        ),
        "time-sliced-4": gpu_objects.device_plugin_config(
            mig_strategy="mixed", sharing="time-slicing", replicas=4, resources=["nvidia.com/gpu"]
        ),
    }
    policy = cluster_policy(
        operator_version="v26.7.0",
        driver_version="580.95.05",
        mig_strategy="mixed",
        dcgm_exporter=True,
        mig_config_map=MIG_MAP,
        mig_default="all-disabled",
        device_plugin_config_map=PLUGIN_MAP,
        device_plugin_default="default",
        namespace=OPERATOR_NS,
    )
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        gpu_objects.config_map(MIG_MAP, OPERATOR_NS, {gpu_objects.MIG_PARTED_CONFIG_KEY: mig}),
        gpu_objects.config_map(PLUGIN_MAP, OPERATOR_NS, plugin),
        policy,
        _node_pool("h100", {"gpuplan.io/pool": "h100", gpu_objects.MIG_CONFIG_LABEL: MIG_LAYOUT}),
        _node_pool(
            "l40s",
            {"gpuplan.io/pool": "l40s", gpu_objects.DEVICE_PLUGIN_CONFIG_LABEL: "time-sliced-4"},
        ),
        {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureRule",
            "metadata": {"name": "gpu"},
            "spec": {
                "rules": [
                    {
                        "name": "a100 nodes",
                        "labels": {
                            "gpu-a100": "true",
                            gpu_objects.MIG_CONFIG_LABEL: "all-disabled",
                            gpu_objects.DEVICE_PLUGIN_CONFIG_LABEL: "default",
                        },
                        "matchFeatures": [
                            {
                                "feature": "pci.device",
                                "matchExpressions": {"device": {"op": "In", "value": ["20b5"]}},
                            }
                        ],
                    }
                ]
            },
        },
        _flavor("h100", {"gpuplan.io/pool": "h100"}),
        _flavor(
            "l40s",
            {
                "gpuplan.io/pool": "l40s",
                "karpenter.sh/nodepool": "l40s",
                "karpenter.sh/capacity-type": "on-demand",
            },
        ),
        _flavor("a100", {"feature.node.kubernetes.io/gpu-a100": "true"}),
        {
            "apiVersion": KUEUE,
            "kind": "Cohort",
            "metadata": {"name": "gpu"},
            "spec": {"parentName": "org"},
        },
        {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "org"}, "spec": {}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "team-a"},
            "spec": {
                "cohortName": "gpu",
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": name,
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}],
                            }
                            for name in ("h100", "l40s", "a100")
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "team-a"},
            "spec": {"clusterQueue": "team-a"},
        },
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "prod", "namespace": "argocd"},
            "spec": {
                "project": "default",
                "source": {
                    "repoURL": "https://git.example.com/fleet.git",
                    "path": "output/prod",
                    "targetRevision": "main",
                },
                "destination": {"server": "https://kubernetes.default.svc"},
            },
        },
    ]


def _node_pool(name: str, labels: dict) -> dict:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        }
                    ],
                },
            }
        },
    }


def _flavor(name: str, labels: dict) -> dict:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": labels},
    }


PATHS = {"output/prod", "output/staging", "clusters"}
OPTIONS = {"paths": PATHS, "operator_namespace": OPERATOR_NS, "external_namespaces": ["argocd"]}


def check(objects: list[dict], **options) -> references.ReferenceReport:
    return check_references(objects, **{**OPTIONS, **options})


def edited(change: Callable[[dict[str, dict]], None]) -> list[dict]:
    """The valid cluster after ``change(by_name)``; by_name maps "Kind/name" to the object."""
    objects = copy.deepcopy(_objects())
    change({f"{o['kind']}/{o['metadata']['name']}": o for o in objects})
    return objects


def only(report: references.ReferenceReport) -> ReferenceProblem:
    """The single problem of a report."""
    assert report.skipped == []
    [problem] = report.problems
    return problem


# --- the valid cluster ------------------------------------------------------------------


def test_valid_cluster_has_no_problems() -> None:
    report = check(_objects())
    assert report.problems == [] and report.skipped == []


def test_valid_cluster_passes_every_layer(crds_dir: Path) -> None:
    validator = Validator(CrdIndex.load(crds_dir), "1.33", cel=True, webhooks=True)
    for obj in _objects():
        assert validator.validate(obj) == [], obj["kind"]
    assert validator.skipped_rules == []


# --- Kueue ------------------------------------------------------------------------------


def test_local_queue_to_missing_cluster_queue() -> None:
    def dangle(by: dict) -> None:
        by["LocalQueue/default"]["spec"]["clusterQueue"] = "team-b"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "LocalQueue",
        "team-a",
        "default",
        "spec.clusterQueue",
        'ClusterQueue "team-b" does not exist: the LocalQueue admits no workload',
    )


def test_cluster_queue_to_missing_flavor() -> None:
    def dangle(by: dict) -> None:
        by["ClusterQueue/team-a"]["spec"]["resourceGroups"][0]["flavors"][2]["name"] = "b200"

    problem = only(check(edited(dangle)))
    assert (problem.kind, problem.name, problem.path) == (
        "ClusterQueue",
        "team-a",
        "spec.resourceGroups[0].flavors[2].name",
    )
    assert problem.message.startswith('ResourceFlavor "b200" does not exist')
    assert problem.severity == "error"


def test_cohort_to_missing_flavor() -> None:
    def dangle(by: dict) -> None:
        by["Cohort/org"]["spec"]["resourceGroups"] = [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": "cpu-pool", "resources": [{"name": "cpu", "nominalQuota": 1}]}
                ],
            }
        ]

    problem = only(check(edited(dangle)))
    assert (problem.kind, problem.name, problem.path) == (
        "Cohort",
        "org",
        "spec.resourceGroups[0].flavors[0].name",
    )


def test_cohort_name_without_cohort_object_is_a_warning() -> None:
    def dangle(by: dict) -> None:
        by["ClusterQueue/team-a"]["spec"]["cohortName"] = "gpus"

    problem = only(check(edited(dangle)))
    assert (problem.path, problem.severity) == ("spec.cohortName", "warning")
    assert problem.message.startswith('Cohort "gpus" is not among the Cohort objects')
    assert check(edited(dangle)).errors == []


def test_cohort_parent_without_cohort_object_is_a_warning() -> None:
    def dangle(by: dict) -> None:
        by["Cohort/gpu"]["spec"]["parentName"] = "orgs"

    problem = only(check(edited(dangle)))
    assert (problem.kind, problem.name, problem.path, problem.severity) == (
        "Cohort",
        "gpu",
        "spec.parentName",
        "warning",
    )


def test_implicit_cohorts_are_fine() -> None:
    objects = [o for o in _objects() if o["kind"] != "Cohort"]
    assert check(objects).problems == []


# --- GPU Operator ------------------------------------------------------------------------


def test_mig_manager_config_map_missing() -> None:
    def dangle(by: dict) -> None:
        by["ClusterPolicy/cluster-policy"]["spec"]["migManager"]["config"]["name"] = "mig"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "ClusterPolicy",
        "",
        "cluster-policy",
        "spec.migManager.config.name",
        'ConfigMap "mig" does not exist in the operator namespace "gpu-operator"',
    )


def test_device_plugin_config_map_missing() -> None:
    def dangle(by: dict) -> None:
        by["ClusterPolicy/cluster-policy"]["spec"]["devicePlugin"]["config"]["name"] = "plugin"

    problem = only(check(edited(dangle)))
    assert (problem.kind, problem.path) == ("ClusterPolicy", "spec.devicePlugin.config.name")


def test_device_plugin_default_not_a_key() -> None:
    def dangle(by: dict) -> None:
        by["ClusterPolicy/cluster-policy"]["spec"]["devicePlugin"]["config"]["default"] = "none"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "ClusterPolicy",
        "",
        "cluster-policy",
        "spec.devicePlugin.config.default",
        '"none" is not a key of the device-plugin ConfigMap '
        "gpu-operator/gpuplan-device-plugin-config (has: default, time-sliced-4)",
    )


def test_mig_default_not_in_custom_config() -> None:
    def drop(by: dict) -> None:
        cm = by[f"ConfigMap/{MIG_MAP}"]
        cm["data"]["config.yaml"] = cm["data"]["config.yaml"].replace("all-disabled", "off")
        by["NodeFeatureRule/gpu"]["spec"]["rules"][0]["labels"][gpu_objects.MIG_CONFIG_LABEL] = (
            MIG_LAYOUT
        )

    problem = only(check(edited(drop)))
    assert (problem.kind, problem.path) == ("ClusterPolicy", "spec.migManager.config.default")
    assert problem.message.startswith('"all-disabled" is not a config of the mig-parted')


def test_config_map_in_another_namespace() -> None:
    def move(by: dict) -> None:
        by[f"ConfigMap/{PLUGIN_MAP}"]["metadata"]["namespace"] = "team-a"

    problem = only(check(edited(move)))
    assert problem.path == "spec.devicePlugin.config.name"
    assert problem.message.endswith('namespace "gpu-operator" (there is one in team-a)')


def test_config_map_in_any_namespace_without_operator_namespace() -> None:
    def move(by: dict) -> None:
        by[f"ConfigMap/{PLUGIN_MAP}"]["metadata"]["namespace"] = "team-a"

    assert (
        check(
            edited(move), operator_namespace=None, external_namespaces=["argocd", OPERATOR_NS]
        ).problems
        == []
    )


def test_config_map_in_two_namespaces_is_ambiguous() -> None:
    objects = _objects()
    twin = copy.deepcopy(next(o for o in objects if o["metadata"]["name"] == PLUGIN_MAP))
    twin["metadata"]["namespace"] = "team-a"
    problem = only(
        check(
            [*objects, twin], operator_namespace=None, external_namespaces=["argocd", OPERATOR_NS]
        )
    )
    assert (problem.path, problem.severity) == ("spec.devicePlugin.config.name", "warning")


@pytest.mark.parametrize(
    "data,path,message",
    [
        ({}, "data", 'missing key "config.yaml": MIG manager reads its mig-parted config from it'),
        (
            {"config.yaml": "version: v1\nmig-configs: [\n"},
            "data[config.yaml]",
            "is not valid YAML",
        ),
        ({"config.yaml": "version: v1\n"}, "data[config.yaml]", 'has no "mig-configs" mapping'),
    ],
)
def test_broken_mig_parted_config_map(data: dict, path: str, message: str) -> None:
    def break_it(by: dict) -> None:
        by[f"ConfigMap/{MIG_MAP}"]["data"] = data

    problem = only(check(edited(break_it)))
    assert (problem.kind, problem.name, problem.path) == ("ConfigMap", MIG_MAP, path)
    assert problem.message.startswith(message)


# --- node label values ---------------------------------------------------------------------


def test_mig_config_label_not_in_custom_config() -> None:
    def dangle(by: dict) -> None:
        by["NodePool/h100"]["spec"]["template"]["metadata"]["labels"][
            gpu_objects.MIG_CONFIG_LABEL
        ] = "all-1g.10gb"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "NodePool",
        "",
        "h100",
        "spec.template.metadata.labels[nvidia.com/mig.config]",
        '"all-1g.10gb" is not a config of the mig-parted ConfigMap '
        f"gpu-operator/{MIG_MAP} (has: all-disabled, {MIG_LAYOUT})",
    )


def test_device_plugin_label_not_a_key() -> None:
    def dangle(by: dict) -> None:
        by["NodeFeatureRule/gpu"]["spec"]["rules"][0]["labels"][
            gpu_objects.DEVICE_PLUGIN_CONFIG_LABEL
        ] = "mps-2"

    problem = only(check(edited(dangle)))
    assert (problem.kind, problem.name, problem.path) == (
        "NodeFeatureRule",
        "gpu",
        "spec.rules[0].labels[nvidia.com/device-plugin.config]",
    )
    assert problem.message.startswith('"mps-2" is not a key of the device-plugin ConfigMap')


def test_built_in_mig_configs_without_custom_config_map() -> None:
    def builtin(by: dict) -> None:
        del by["ClusterPolicy/cluster-policy"]["spec"]["migManager"]["config"]["name"]
        by["NodePool/h100"]["spec"]["template"]["metadata"]["labels"][
            gpu_objects.MIG_CONFIG_LABEL
        ] = "all-1g.10gb"

    assert check(edited(builtin)).problems == []

    def custom_name(by: dict) -> None:
        builtin(by)
        by["NodePool/h100"]["spec"]["template"]["metadata"]["labels"][
            gpu_objects.MIG_CONFIG_LABEL
        ] = MIG_LAYOUT

    problem = only(check(edited(custom_name)))
    assert problem.path == "spec.template.metadata.labels[nvidia.com/mig.config]"
    assert "not one of NVIDIA's built-in mig-parted configs" in problem.message


def test_built_in_names() -> None:
    names = references.builtin_mig_configs()
    assert {
        "all-disabled",
        "all-enabled",
        "all-balanced",
        "all-1g.10gb",
        "all-3g.40gb",
        "all-1g.10gb.me",
    } <= names


def test_device_plugin_label_without_device_plugin_config() -> None:
    def unconfigured(by: dict) -> None:
        del by["ClusterPolicy/cluster-policy"]["spec"]["devicePlugin"]["config"]
        del by["NodeFeatureRule/gpu"]["spec"]["rules"][0]["labels"][
            gpu_objects.DEVICE_PLUGIN_CONFIG_LABEL
        ]

    problem = only(check(edited(unconfigured)))
    assert (problem.kind, problem.name) == ("NodePool", "l40s")
    assert "names no device-plugin ConfigMap" in problem.message


def test_label_values_skipped_without_cluster_policy() -> None:
    objects = [o for o in _objects() if o["kind"] != "ClusterPolicy"]
    report = check(objects)
    assert report.problems == []
    assert report.skipped == [
        (
            "nvidia.com/mig.config and nvidia.com/device-plugin.config label "
            "values not checked: no ClusterPolicy among the objects"
        )
    ]


def test_label_constants_match_the_emitter() -> None:
    assert references.MIG_CONFIG_LABEL == gpu_objects.MIG_CONFIG_LABEL
    assert references.DEVICE_PLUGIN_CONFIG_LABEL == gpu_objects.DEVICE_PLUGIN_CONFIG_LABEL
    assert references.MIG_PARTED_CONFIG_KEY == gpu_objects.MIG_PARTED_CONFIG_KEY


# --- ResourceFlavor node labels -----------------------------------------------------------


def test_flavor_label_no_pool_sets() -> None:
    def dangle(by: dict) -> None:
        by["ResourceFlavor/h100"]["spec"]["nodeLabels"]["gpuplan.io/pool"] = "h200"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "ResourceFlavor",
        "",
        "h100",
        "spec.nodeLabels[gpuplan.io/pool]",
        "no NodePool, NodeFeatureRule or known node sets gpuplan.io/pool=h200: workloads of "
        "this flavor can never be placed",
    )


def test_flavor_label_from_nfd_needs_the_feature_prefix() -> None:
    def unprefixed(by: dict) -> None:
        by["ResourceFlavor/a100"]["spec"]["nodeLabels"] = {"gpu-a100": "true"}

    assert only(check(edited(unprefixed))).path == "spec.nodeLabels[gpu-a100]"


def test_flavor_label_from_known_node_labels() -> None:
    def static(by: dict) -> None:
        by["ResourceFlavor/h100"]["spec"]["nodeLabels"]["gpuplan.io/rack"] = "r1"

    assert len(check(edited(static)).problems) == 1
    assert check(edited(static), node_labels=[{"gpuplan.io/rack": "r1"}]).problems == []


def test_flavor_label_from_nfd_dynamic_value() -> None:
    def dynamic(by: dict) -> None:
        by["NodeFeatureRule/gpu"]["spec"]["rules"][0]["labels"]["gpu-model"] = "@pci.device.device"
        by["ResourceFlavor/a100"]["spec"]["nodeLabels"]["feature.node.kubernetes.io/gpu-model"] = (
            "20b5"
        )

    assert check(edited(dynamic)).problems == []


def test_flavor_labels_skipped_without_label_sources() -> None:
    objects = [o for o in _objects() if o["kind"] not in ("NodePool", "NodeFeatureRule")]
    report = check(objects)
    assert report.problems == []
    assert report.skipped == [
        (
            "ResourceFlavor nodeLabels not checked: no NodePool, "
            "NodeFeatureRule or known node labels to match them against"
        )
    ]


# --- namespaces and paths -------------------------------------------------------------------


def test_namespace_missing() -> None:
    def move(by: dict) -> None:
        by["LocalQueue/default"]["metadata"]["namespace"] = "team-b"

    assert only(check(edited(move))) == ReferenceProblem(
        "LocalQueue",
        "team-b",
        "default",
        "metadata.namespace",
        'Namespace "team-b" does not exist (no Namespace object creates it)',
    )


def test_namespaces_known_elsewhere() -> None:
    report = check(_objects(), external_namespaces=[])
    assert [(p.kind, p.namespace) for p in report.problems] == [("Application", "argocd")]
    assert check(_objects(), operator_namespace=None).problems == [
        ReferenceProblem(
            "ConfigMap",
            OPERATOR_NS,
            name,
            "metadata.namespace",
            f'Namespace "{OPERATOR_NS}" does not exist (no Namespace object creates it)',
        )
        for name in sorted((MIG_MAP, PLUGIN_MAP))
    ]


def test_namespaces_skipped_without_namespace_objects() -> None:
    objects = [o for o in _objects() if o["kind"] != "Namespace"]
    report = check(objects)
    assert report.problems == []
    assert report.skipped == ["namespaces not checked: no Namespace objects among the objects"]


def test_application_path_missing() -> None:
    def dangle(by: dict) -> None:
        by["Application/prod"]["spec"]["source"]["path"] = "output/production"

    assert only(check(edited(dangle))) == ReferenceProblem(
        "Application",
        "argocd",
        "prod",
        "spec.source.path",
        'path "output/production" does not exist in the repository',
    )


def test_application_multiple_sources_and_path_forms() -> None:
    def sources(by: dict) -> None:
        spec = by["Application/prod"]["spec"]
        source = spec.pop("source")
        spec["sources"] = [{**source, "path": "./output/prod/"}, {**source, "path": "gone"}]

    problem = only(check(edited(sources)))
    assert problem.path == "spec.sources[1].path"


def test_application_paths_skipped_without_paths() -> None:
    report = check(_objects(), paths=None)
    assert report.problems == []
    assert report.skipped == ["Argo CD Application paths not checked: no repository paths given"]


def test_problem_text() -> None:
    problem = ReferenceProblem("LocalQueue", "team-a", "default", "spec.clusterQueue", "gone")
    assert str(problem) == "error: LocalQueue team-a/default: spec.clusterQueue: gone"
    warning = ReferenceProblem("Cohort", "", "gpu", "spec.parentName", "typo?", "warning")
    assert str(warning) == "warning: Cohort gpu: spec.parentName: typo?"


def test_ignores_non_objects() -> None:
    assert check(["not an object", None, *_objects()]).problems == []
