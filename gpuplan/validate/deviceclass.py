"""DeviceClass selectors, offline: each CEL expression compiles, uses known functions and returns a bool.

The API server compiles a DeviceClass's `spec.selectors[].cel.expression` on create and rejects one that
does not compile; a selector that fails at run time (a missing attribute, a wrong type) leaves the class
matching nothing (Kubernetes resource.k8s.io DeviceClass, CELDeviceSelector: the same in v1, v1beta2 and
v1beta1, so any version of the group is read). Each expression is
therefore compiled and run here against one device of every kind the NVIDIA DRA driver publishes (a
whole GPU and a MIG device, with the attributes of kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go), and must return a boolean on each. This module reads
only the object, never what made it.
"""

from __future__ import annotations

from typing import Any

from gpuplan.validate.cel import _DATA_ERRORS, K8S_FUNCTIONS, _unsupported, cel
from gpuplan.validate.messages import Problem

GROUP = "resource.k8s.io"
_COMMON = {
    "uuid": "GPU-00000000-0000-0000-0000-000000000000",
    "productName": "NVIDIA H100 80GB HBM3",
    "brand": "Nvidia",
    "architecture": "Hopper",
}
# Sample devices as CEL sees them: device.driver and device.attributes[<domain>][<name>].
SAMPLES = (
    {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"type": "gpu", **_COMMON}}},
    {
        "driver": "gpu.nvidia.com",
        "attributes": {
            "gpu.nvidia.com": {
                "type": "mig",
                "profile": "1g.10gb",
                "parentUUID": _COMMON["uuid"],
                **_COMMON,
            }
        },
    },
)


def selector_problems(obj: Any) -> list[Problem]:
    """Return the problems of a DeviceClass's CEL selectors; [] for any other object."""
    if not isinstance(obj, dict) or obj.get("kind") != "DeviceClass":
        return []
    if str(obj.get("apiVersion", "")).rpartition("/")[0] != GROUP:
        return []
    spec = obj.get("spec")
    selectors = spec.get("selectors") if isinstance(spec, dict) else None
    problems = []
    for index, item in enumerate(selectors if isinstance(selectors, list) else []):
        expression = (item.get("cel") or {}).get("expression") if isinstance(item, dict) else None
        if isinstance(expression, str):
            path = f"spec.selectors[{index}].cel.expression"
            problems += [Problem(path, message) for message in _expression_problems(expression)]
    return problems


def compile_problems(expression: str) -> tuple[Any, list[str]]:
    """Compile a device selector as the API server does on create: (the program, or None, and why not)."""
    try:
        program = cel.compile(expression)
    except (ValueError, RuntimeError) as exc:
        return None, [f"CEL selector does not compile: {str(exc).splitlines()[0]}"]
    missing = _unsupported(program)
    if missing:
        return None, [f"CEL selector uses {', '.join(missing)}, which gpuplan cannot check"]
    unknown = set(program.variables()) - {"device"}
    if unknown:
        return None, [
            f"CEL selector reads {', '.join(sorted(unknown))}; a device selector has only device"
        ]
    return program, []


def _expression_problems(expression: str) -> list[str]:
    """Return why one selector would not work: it does not compile, or gives no bool on a device."""
    program, problems = compile_problems(expression)
    if program is None:
        return problems
    for device in SAMPLES:
        context = cel.Context(variables={"device": device}, functions=K8S_FUNCTIONS)
        try:
            result = program.execute(context)
        except (TypeError, RuntimeError, *_DATA_ERRORS) as exc:  # a missing attribute, a wrong type
            return [f"CEL selector fails on a {_kind(device)} device: {str(exc).splitlines()[0]}"]
        if not isinstance(result, bool):
            return [f"CEL selector returns {type(result).__name__}, not a boolean"]
    return []


def _kind(device: dict[str, Any]) -> str:
    return str(device["attributes"]["gpu.nvidia.com"]["type"])
