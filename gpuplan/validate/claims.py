"""ResourceClaim and ResourceClaimTemplate device requests, as the API server validates them in Go.

The schemas of resource.k8s.io say little of this; the rules are kubernetes/kubernetes
pkg/apis/resource/validation/validation.go (validateDeviceClaim, validateDeviceRequest,
validateDeviceSubRequest, validateExactDeviceRequest, validateDeviceAllocationMode,
validateSelector, validateDeviceConstraint, validateDeviceClaimConfiguration, validateRequestNameRef)
with the limits of pkg/apis/resource/types.go (DeviceRequestsMaxSize, DeviceConstraintsMaxSize and
DeviceConfigMaxSize 32, FirstAvailableDeviceRequestMaxSize 8, DeviceSelectorsMaxSize 32). Checked
against the one snapshot of that file this project could read (the main branch, after v1.35): the
rules below were the same from v1.34, where resource.k8s.io/v1 became GA; the exact tag was not
checked. The API server validates its internal type, converted from any served version: v1 and
v1beta2 put a request's class, selectors, mode and count under `exactly`, v1beta1 flat on the
request (a v1beta1 request with `firstAvailable` must not name a deviceClassName), so each version
is read into that one shape first. The count defaults to 1 under ExactCount (the defaulting runs
first), so only a negative count fails there.
"""

from __future__ import annotations

from typing import Any

from gpuplan.validate.deviceclass import compile_problems
from gpuplan.validate.messages import Problem
from gpuplan.validate.objectmeta import dns_label, dns_subdomain

GROUP = "resource.k8s.io"
REQUESTS_MOST = 32  # DeviceRequestsMaxSize, also of constraints' and config's request lists
SUBREQUESTS_MOST = 8  # FirstAvailableDeviceRequestMaxSize
SELECTORS_MOST = 32  # DeviceSelectorsMaxSize
CONSTRAINTS_MOST = 32  # DeviceConstraintsMaxSize
CONFIG_MOST = 32  # DeviceConfigMaxSize
_EXACT = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")


def claim_problems(obj: Any) -> list[Problem]:
    """Return the problems of a ResourceClaim's or ResourceClaimTemplate's device requests; [] for others."""
    if not isinstance(obj, dict) or str(obj.get("apiVersion", "")).rpartition("/")[0] != GROUP:
        return []
    version = str(obj["apiVersion"]).rpartition("/")[2]
    spec: Any = obj.get("spec")
    if obj.get("kind") == "ResourceClaimTemplate":
        spec, where = spec.get("spec") if isinstance(spec, dict) else None, "spec.spec.devices"
    elif obj.get("kind") == "ResourceClaim":
        where = "spec.devices"
    else:
        return []
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return _devices(devices, where, version) if isinstance(devices, dict) else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _too_many(items: list[Any], most: int, path: str) -> list[Problem]:
    return [Problem(path, f"must have at most {most} items")] if len(items) > most else []


def _names(items: list[Any], path: str) -> tuple[list[Problem], dict[str, int]]:
    """Check each item's name (a DNS label, unique); return the problems and name -> index."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        at = f"{path}[{index}].name"
        if not isinstance(name, str) or not name:
            problems.append(Problem(at, "Required value"))
            continue
        problems += [Problem(at, f"Invalid value: {name!r}: {m}") for m in dns_label(name)]
        if name in seen:
            problems.append(Problem(at, f"Duplicate value: {name!r}"))
        seen.setdefault(name, index)
    return problems, seen


def _devices(devices: dict[str, Any], where: str, version: str) -> list[Problem]:
    requests = _list(devices.get("requests"))
    problems = _too_many(requests, REQUESTS_MOST, f"{where}.requests")
    found, _ = _names(requests, f"{where}.requests")
    problems += found
    known: dict[str, set[str] | None] = {}
    for index, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        path = f"{where}.requests[{index}]"
        subrequests = _list(request.get("firstAvailable"))
        exactly = request.get("exactly") if version != "v1beta1" else None
        if version == "v1beta1" and any(k in request for k in _EXACT):
            exactly = {k: request[k] for k in _EXACT if k in request}
        if isinstance(request.get("name"), str):
            subs = {str(s.get("name")) for s in subrequests if isinstance(s, dict)}
            known[request["name"]] = subs or None
        if bool(subrequests) == isinstance(exactly, dict):
            message = (
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
                if subrequests
                else "exactly one of `exactly` or `firstAvailable` is required"
            )
            problems.append(Problem(path, message))
            continue
        if isinstance(exactly, dict):
            problems += _exact(exactly, path if version == "v1beta1" else f"{path}.exactly")
            continue
        problems += _too_many(subrequests, SUBREQUESTS_MOST, f"{path}.firstAvailable")
        found, _ = _names(subrequests, f"{path}.firstAvailable")
        problems += found
        for s_index, sub in enumerate(subrequests):
            if isinstance(sub, dict):
                problems += _exact(sub, f"{path}.firstAvailable[{s_index}]")
    constraints = _list(devices.get("constraints"))
    problems += _too_many(constraints, CONSTRAINTS_MOST, f"{where}.constraints")
    for index, constraint in enumerate(constraints):
        if not isinstance(constraint, dict):
            continue
        path = f"{where}.constraints[{index}]"
        problems += _references(constraint.get("requests"), f"{path}.requests", known)
        if not constraint.get("matchAttribute") and not constraint.get("distinctAttribute"):
            problems.append(Problem(f"{path}.matchAttribute", "Required value"))
    config = _list(devices.get("config"))
    problems += _too_many(config, CONFIG_MOST, f"{where}.config")
    for index, item in enumerate(config):
        if isinstance(item, dict):
            path = f"{where}.config[{index}]"
            problems += _references(item.get("requests"), f"{path}.requests", known)
            if not isinstance(item.get("opaque"), dict):
                problems.append(Problem(f"{path}.opaque", "Required value"))
    return problems


def _exact(request: dict[str, Any], path: str) -> list[Problem]:
    """A request's (or subrequest's) class, selectors, allocation mode and count."""
    problems = []
    name = request.get("deviceClassName")
    if not isinstance(name, str) or not name:
        problems.append(Problem(f"{path}.deviceClassName", "Required value"))
    else:
        problems += [
            Problem(f"{path}.deviceClassName", f"Invalid value: {name!r}: {m}")
            for m in dns_subdomain(name)
        ]
    selectors = _list(request.get("selectors"))
    problems += _too_many(selectors, SELECTORS_MOST, f"{path}.selectors")
    for index, selector in enumerate(selectors):
        at = f"{path}.selectors[{index}].cel"
        cel = selector.get("cel") if isinstance(selector, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if not isinstance(expression, str):
            problems.append(Problem(at, "Required value"))
            continue
        problems += [Problem(f"{at}.expression", m) for m in compile_problems(expression)[1]]
    mode, count = request.get("allocationMode") or "ExactCount", request.get("count")
    if mode == "All" and count not in (None, 0):
        problems.append(
            Problem(
                f"{path}.count",
                f"Invalid value: {count}: must not be specified when allocationMode is 'All'",
            )
        )
    elif mode == "ExactCount" and isinstance(count, int) and count < 0:
        problems.append(
            Problem(f"{path}.count", f"Invalid value: {count}: must be greater than zero")
        )
    elif mode not in ("All", "ExactCount"):
        problems.append(
            Problem(
                f"{path}.allocationMode",
                f'Unsupported value: {mode!r}: supported values: "All", "ExactCount"',
            )
        )
    return problems


def _references(names: Any, path: str, known: dict[str, set[str] | None]) -> list[Problem]:
    """Names of requests (or request/subrequest) a constraint or config applies to: each must exist, once."""
    seen: set[str] = set()
    items = _list(names)
    problems: list[Problem] = []
    problems += _too_many(items, REQUESTS_MOST, path)
    for index, name in enumerate(items):
        at = f"{path}[{index}]"
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(Problem(at, f"Duplicate value: {name!r}"))
        seen.add(name)
        request, _, sub = name.partition("/")
        subs = known.get(request)
        exists = (
            request in known and "/" not in sub and (not sub or (subs is not None and sub in subs))
        )
        if not exists:
            problems.append(
                Problem(
                    at,
                    f"Invalid value: {name!r}: must be the name of a request in the claim or the name of a "
                    "request and a subrequest separated by '/'",
                )
            )
    return problems
