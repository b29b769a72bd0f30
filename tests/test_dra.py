"""DRA (issue 19): DeviceClass selectors that pick the right devices, templates, quotas, the driver's chart values."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gpuplan.check import dra as check_dra
from gpuplan.components import REGISTRY
from gpuplan.emit.dra import claim_template, device_class
from gpuplan.pipeline import compile_fleet
from gpuplan.plan.dra import DraClass
from gpuplan.validate import Validator
from gpuplan.validate.cel import K8S_FUNCTIONS, cel
from gpuplan.validate.deviceclass import selector_problems
from tests.conftest import run

CASE = Path(__file__).resolve().parent / "cases" / "dra-kueue" / "input"
QUOTA = ".deviceclass.resource.k8s.io/devices"


def _compile(tmp_path: Path, edit: tuple[str, str] | None = None) -> Any:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    if edit is not None:
        cluster = root / "clusters" / "dra.yaml"
        text = cluster.read_text()
        assert edit[0] in text
        cluster.write_text(text.replace(edit[0], edit[1]))
    return compile_fleet(root)


def _objects(compiled: Any, kind: str) -> dict[tuple[str | None, str], dict[str, Any]]:
    return {
        (m.obj["metadata"].get("namespace"), m.obj["metadata"]["name"]): m.obj
        for m in compiled.manifests
        if m.kind == kind
    }


def _errors(compiled: Any) -> list[str]:
    return [d.message for d in compiled.diagnostics if d.severity.value == "error"]


def _device(kind: str, product: str, profile: str | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"type": kind, "productName": product, "uuid": "GPU-1"}
    if profile is not None:
        attributes["profile"] = profile
    return {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": attributes}}


def _selects(device_class: dict[str, Any], device: dict[str, Any]) -> bool:
    expression = device_class["spec"]["selectors"][0]["cel"]["expression"]
    context = cel.Context(variables={"device": device}, functions=K8S_FUNCTIONS)
    return bool(cel.compile(expression).execute(context))


def test_device_classes_select_their_model_and_profile_only(tmp_path: Path) -> None:
    compiled = _compile(tmp_path)
    assert _errors(compiled) == []
    classes = {name: obj for (_, name), obj in _objects(compiled, "DeviceClass").items()}
    assert sorted(classes) == [
        "3g.40gb.a100-sxm4-80gb.gpuplan.io",
        "h100-sxm5-80gb.gpuplan.io",
        "time-slicing.l40s.gpuplan.io",
    ]
    h100 = classes["h100-sxm5-80gb.gpuplan.io"]
    assert _selects(
        h100, _device("gpu", "NVIDIA H100 80GB HBM3")
    )  # NVML's name, as the driver publishes it
    assert not _selects(h100, _device("gpu", "NVIDIA A100-SXM4-80GB"))
    assert not _selects(h100, _device("mig", "NVIDIA H100 80GB HBM3", "3g.40gb"))
    mig = classes["3g.40gb.a100-sxm4-80gb.gpuplan.io"]
    assert _selects(mig, _device("mig", "NVIDIA A100-SXM4-80GB", "3g.40gb"))
    assert not _selects(mig, _device("mig", "NVIDIA A100-SXM4-80GB", "1g.10gb"))
    assert not _selects(mig, _device("gpu", "NVIDIA A100-SXM4-80GB"))


def test_shared_class_carries_the_drivers_sharing_config(tmp_path: Path) -> None:
    classes = _objects(_compile(tmp_path), "DeviceClass")
    (config,) = classes[(None, "time-slicing.l40s.gpuplan.io")]["spec"]["config"]
    assert config["opaque"]["driver"] == "gpu.nvidia.com"
    assert config["opaque"]["parameters"] == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}},
    }
    assert "config" not in classes[(None, "h100-sxm5-80gb.gpuplan.io")]["spec"]


def test_templates_and_quotas_count_devices_per_class(tmp_path: Path) -> None:
    compiled = _compile(tmp_path)
    templates = _objects(compiled, "ResourceClaimTemplate")
    assert sorted(templates) == [
        ("nlp", "3g.40gb.a100-sxm4-80gb.gpuplan.io"),
        ("nlp", "h100-sxm5-80gb.gpuplan.io"),
        ("nlp-batch", "3g.40gb.a100-sxm4-80gb.gpuplan.io"),
        ("nlp-batch", "h100-sxm5-80gb.gpuplan.io"),
        ("vision", "h100-sxm5-80gb.gpuplan.io"),
        ("vision", "time-slicing.l40s.gpuplan.io"),
    ]
    (request,) = templates[("vision", "time-slicing.l40s.gpuplan.io")]["spec"]["spec"]["devices"][
        "requests"
    ]
    assert request["exactly"] == {
        "deviceClassName": "time-slicing.l40s.gpuplan.io", "allocationMode": "ExactCount", "count": 1,
    }  # fmt: skip
    quotas = _objects(compiled, "ResourceQuota")
    nlp = [quotas[(ns, "nlp")]["spec"]["hard"] for ns in ("nlp", "nlp-batch")]
    # 16 MIG devices nominal, none to borrow (vision has no A100 quota): Kueue admits all 16 in either
    # namespace, so each namespace's quota is the tenant's 16 (issue 35 point 9).
    assert [h["3g.40gb.a100-sxm4-80gb.gpuplan.io" + QUOTA] for h in nlp] == ["16", "16"]
    # nlp has no quota on the shared L40S class: pinned to zero, no requests. prefix on DRA keys.
    assert all(h["time-slicing.l40s.gpuplan.io" + QUOTA] == "0" for h in nlp)
    assert not any(k.startswith("requests.") and k.endswith(QUOTA) for h in nlp for k in h)


def test_cluster_queues_cover_the_kueue_mapping_names(tmp_path: Path) -> None:
    compiled = _compile(tmp_path)
    (app,) = [
        m.obj for m in compiled.manifests if m.obj.get("metadata", {}).get("name") == "dra-kueue"
    ]
    text = app["spec"]["source"]["helm"]["valuesObject"]["managerConfig"][
        "controllerManagerConfigYaml"
    ]
    queue = _objects(compiled, "ClusterQueue")[(None, "vision")]
    for resource in queue["spec"]["resourceGroups"][0]["coveredResources"]:
        if resource.endswith(QUOTA):
            assert f"- name: {resource}\n" in text
            assert f"  - {resource.removesuffix(QUOTA)}\n" in text


def _driver_source(compiled: Any) -> dict[str, Any]:
    """Return the Helm source of the DRA driver's Application (there is exactly one)."""
    (app,) = [
        m.obj
        for m in compiled.manifests
        if m.obj.get("metadata", {}).get("name") == "dra-dra-driver"
    ]
    source: dict[str, Any] = app["spec"]["source"]
    return source


def test_driver_application_targets_the_dra_pools(tmp_path: Path) -> None:
    compiled = _compile(tmp_path)
    source = _driver_source(compiled)
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        "registry.k8s.io/dra-driver-nvidia/charts", "dra-driver-nvidia-gpu", "0.4.1",
    )  # fmt: skip
    values = source["helm"]["valuesObject"]
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert values["featureGates"] == {
        "TimeSlicingSettings": True
    }  # only the L40S pool shares, by time-slicing
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    assert (
        values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    )  # the GPU Operator installs the driver
    rules = _objects(compiled, "NodeFeatureRule")
    for pool, dra in (("h100", True), ("l4-plugin", False)):
        labels = rules[(None, f"gpuplan-{pool}")]["spec"]["rules"][0]["labels"]
        assert (labels.get("nvidia.com/gpu.deploy.device-plugin") == "false") is dra
        assert (labels.get("nvidia.com/dra-kubelet-plugin") == "true") is dra


def test_mps_pool_turns_on_the_mps_gate(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, ("      timeSlicing: {interval: Short}", "      mps: {}"))
    assert _errors(compiled) == []
    assert _driver_source(compiled)["helm"]["valuesObject"]["featureGates"] == {"MPSSupport": True}
    assert (None, "mps.l40s.gpuplan.io") in _objects(compiled, "DeviceClass")


def test_a_class_on_the_charts_own_name_is_refused(tmp_path: Path) -> None:
    compiled = _compile(
        tmp_path,
        (
            '    hostnames: ["dra-h100-[0-9]+"]\n    dra: {}',
            '    hostnames: ["dra-h100-[0-9]+"]\n    dra: {deviceClass: gpu.nvidia.com}',
        ),
    )
    assert any("made by the DRA driver's chart itself" in e for e in _errors(compiled))


def test_a_label_selected_dra_pool_must_carry_the_drivers_labels(tmp_path: Path) -> None:
    compiled = _compile(
        tmp_path, ('    hostnames: ["dra-h100-[0-9]+"]\n', "    labels: {rack: a}\n")
    )
    assert any("nvidia.com/gpu.deploy.device-plugin: 'false'" in e for e in _errors(compiled))


def test_validate_refuses_a_selector_on_a_removed_attribute() -> None:
    expression = (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].index == 0"
    )
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
           "spec": {"selectors": [{"cel": {"expression": expression}}]}}  # fmt: skip
    (problem,) = selector_problems(obj)
    assert problem.path == "spec.selectors[0].cel.expression"
    assert "fails on a gpu device" in problem.message
    obj["spec"]["selectors"][0]["cel"]["expression"] = "device.driver =="
    assert "does not compile" in selector_problems(obj)[0].message


def test_capacity_holds_in_devices_per_class(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    vision = root / "tenants" / "vision.yaml"
    vision.write_text(vision.read_text().replace("gpus: 8", "gpus: 9"))
    errors = _errors(compile_fleet(root))
    assert any(
        "tenants ask 9 GPUs of DeviceClass time-slicing.l40s.gpuplan.io of pool l40s-shared, which has at most 8"
        in e
        for e in errors
    ), errors
    vision.write_text(vision.read_text().replace("gpus: 9", "gpus: 8"))
    assert _errors(compile_fleet(root)) == []  # exactly at the pool's 8 devices passes


def test_dra_on_gkes_own_gpu_stack_is_refused(tmp_path: Path) -> None:
    # GKE's device plugin runs on every GPU node: a DRA pool there would share nodes with it.
    root = tmp_path / "gke"
    shutil.copytree(CASE.parent.parent / "gke-stack" / "input", root)
    cluster = root / "clusters" / "gke-serving.yaml"
    text = cluster.read_text().replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.34"')
    text = text.replace("components:\n", "components:\n  draDriver:\n    version: v0.4.1\n", 1)
    text = text.replace("    nodeGroup: a100-mig\n", "    nodeGroup: a100-mig\n    dra: {}\n", 1)
    cluster.write_text(text)
    errors = _errors(compile_fleet(root))
    assert any(
        "GKE's own GPU stack runs its device plugin on every GPU node" in e for e in errors
    ), errors


def test_volcano_counts_dra_devices_from_v1_15(tmp_path: Path) -> None:
    volcano = ("  kueue:\n    version: v0.19.2\n", "  volcano:\n    version: v1.15.1\n")
    compiled = _compile(tmp_path / "new", volcano)
    assert _errors(compiled) == []
    queue = _objects(compiled, "Queue")[(None, "vision")]["spec"]
    assert queue["deserved"]["deviceclass/time-slicing.l40s.gpuplan.io"] == "8"
    (app,) = [
        m.obj for m in compiled.manifests if m.obj.get("metadata", {}).get("name") == "dra-volcano"
    ]
    config = app["spec"]["source"]["helm"]["valuesObject"]["custom"]["scheduler_config_override"]
    assert (
        "  - name: capacity\n    arguments:\n      capacity.DynamicResourceAllocationEnable: true\n"
        in config
    )
    older = _compile(tmp_path / "old", (volcano[0], volcano[1].replace("v1.15.1", "v1.14.4")))
    assert any("Volcano v1.14.4 counts no DRA devices in Queues" in e for e in _errors(older))


def test_the_driver_values_gpuplan_owns_cannot_be_overridden(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    (root / "values" / "dra").mkdir(parents=True)
    (root / "values" / "dra" / "dra-driver.yaml").write_text(
        "kubeletPlugin:\n  nodeSelector: {gpu: any}\n"
    )
    result = run("render", "--root", str(root), "--out", str(tmp_path / "out"))
    assert result.code == 1
    assert "kubeletPlugin.nodeSelector is owned by gpuplan" in result.stderr


def test_the_validator_runs_device_class_selectors() -> None:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
           "spec": {"selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index == 0"}}]}}  # fmt: skip
    assert [p.path for p in Validator(None, "1.34").validate(obj)] == [
        "spec.selectors[0].cel.expression"
    ]
    # Kubernetes 1.33 serves no resource.k8s.io/v1 (its bundled schemas)
    assert "is not served" in Validator(None, "1.33").validate(obj)[0].message
    # The beta versions' selectors are compiled the same way
    beta = {**obj, "apiVersion": "resource.k8s.io/v1beta1"}
    assert [p.path for p in Validator(None, "1.32").validate(beta)] == [
        "spec.selectors[0].cel.expression"
    ]


def test_the_previous_driver_release_installs_nvidias_chart_from_ngc(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, ("    version: v0.4.1", "    version: v25.12.0"))
    assert _errors(compiled) == []
    source = _driver_source(compiled)
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        "https://helm.ngc.nvidia.com/nvidia", "nvidia-dra-driver-gpu", "25.12.0",
    )  # fmt: skip
    assert source["helm"]["valuesObject"]["featureGates"] == {"TimeSlicingSettings": True}


def test_a_sharing_gate_the_pinned_release_lacks_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both releases have TimeSlicingSettings; a strategy needing a gate v25.12.0 does not list is refused.
    assert "TimeSlicingSettings" in REGISTRY["dra-driver"].release("v25.12.0").feature_gates  # type: ignore[attr-defined]
    monkeypatch.setattr(check_dra, "SHARING_GATES", {"TimeSlicing": "FutureTimeSlicing"})
    compiled = _compile(tmp_path, ("    version: v0.4.1", "    version: v25.12.0"))
    (found,) = [d for d in compiled.diagnostics if d.severity.value == "error"]
    assert found.message.startswith(
        "the DRA driver v25.12.0 has no feature gate FutureTimeSlicing, which TimeSlicing sharing"
    )
    assert found.file.endswith("clusters/dra.yaml") and found.line > 0 and found.col > 0
    assert found.path == "nodePools[2].sharing.timeSlicing"


@pytest.mark.parametrize(("version", "refused"), [("v25.12.0", True), ("v0.4.1", False)])
def test_the_older_plugin_needs_the_gpu_operators_node_label(
    tmp_path: Path, version: str, refused: bool
) -> None:
    # v25.12.0's kubelet plugin affinity lacks NFD's default pci-0302_10de label; v0.4.1 has it.
    operator = '  gpuOperator:\n    version: v26.7.0\n    driverVersion: "580.82.07"\n'
    root = tmp_path / "repo"
    shutil.copytree(CASE, root)
    cluster = root / "clusters" / "dra.yaml"
    text = cluster.read_text()
    assert operator in text
    cluster.write_text(text.replace(operator, "").replace("version: v0.4.1", f"version: {version}"))
    found = [d for d in compile_fleet(root).diagnostics if "kubelet plugin runs only" in d.message]
    assert bool(found) is refused
    if refused:
        assert found[0].file.endswith("clusters/dra.yaml") and found[0].line > 0
        assert found[0].path == "components.draDriver.version"


BETA = Path(__file__).resolve().parent / "cases" / "dra-beta" / "input"


@pytest.mark.parametrize(
    ("api", "kubernetes"),
    [
        ("resource.k8s.io/v1beta1", "1.32"),
        ("resource.k8s.io/v1beta2", "1.33"),
        ("resource.k8s.io/v1", "1.34"),
    ],
)
def test_claim_templates_take_the_shape_of_their_version(api: str, kubernetes: str) -> None:
    cls = DraClass("h100.gpuplan.io", "H100-SXM5-80GB", ("NVIDIA-H100-80GB-HBM3",))
    template = claim_template(cls, "team", api)
    validator = Validator(None, kubernetes)
    assert validator.validate(template) == []
    assert validator.validate(device_class(cls, api)) == []
    # The other shape is refused by the same release's schema: v1beta1's request has no `exactly`.
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    flat = "exactly" not in request
    assert flat is (api == "resource.k8s.io/v1beta1")
    if flat:
        request["exactly"] = {
            k: request.pop(k) for k in ("deviceClassName", "allocationMode", "count")
        }
    else:
        request.update(request.pop("exactly"))
    assert validator.validate(template) != []


def test_volcano_must_read_the_beta_version_the_cluster_serves(tmp_path: Path) -> None:
    # v1.13.3's scheduler reads v1beta1, what beta132 serves; v1.15.1's reads v1 only.
    root = tmp_path / "repo"
    shutil.copytree(BETA, root)
    cluster = root / "clusters" / "beta132.yaml"
    text = cluster.read_text()
    for volcano, refused in (("v1.13.3", False), ("v1.15.1", True)):
        pinned = f"components:\n  volcano:\n    version: {volcano}\n"
        cluster.write_text(text.replace("components:\n", pinned, 1))
        found = [d for d in compile_fleet(root).diagnostics if "reads DRA objects" in d.message]
        assert bool(found) is refused, volcano
        if refused:
            assert "through resource.k8s.io/v1 only" in found[0].message
            assert found[0].path == "components.volcano.version" and found[0].line > 0


def test_kai_is_refused_on_a_beta_cluster(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(BETA, root)
    for name in ("beta132", "beta133"):
        cluster = root / "clusters" / f"{name}.yaml"
        pinned = "components:\n  kai:\n    version: v0.17.0\n"
        cluster.write_text(cluster.read_text().replace("components:\n", pinned, 1))
    found = [d for d in compile_fleet(root).diagnostics if "KAI reads DRA objects" in d.message]
    assert [d.file.rpartition("/")[2] for d in found] == ["beta132.yaml", "beta133.yaml"]
    assert all(d.path == "components.kai" and d.line > 0 for d in found)
