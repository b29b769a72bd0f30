"""Strategic-merge patches over plain dicts and lists; pure.

What is supported (the parts of Kubernetes' strategic merge that matter for gpuplan's objects):
- mappings merge key by key; a key set to null is deleted; `$patch: replace` in a mapping makes
  the patch's mapping replace the original, `$patch: delete` removes the mapping;
- lists whose field has a merge key (MERGE_KEYS) merge item by item on that key: a matching
  item is merged, a new one is appended, an item with `$patch: delete` removes its match, and a
  `{$patch: replace}` item makes the other items replace the list;
- every other list is replaced whole, as for a JSON merge patch (RFC 7386). The API server
  applies custom resources that way too (strategic merge needs Go struct tags CRDs do not
  have), so a patch to a list of a custom resource means the same here as with kubectl.
"""

from __future__ import annotations

import copy
from typing import Any

DIRECTIVE = "$patch"

# Lists of the core/v1 types that merge by a key (`patchStrategy:"merge"` with
# `patchMergeKey`), by field name: kubernetes/api v0.34.0 core/v1/types.go (PodSpec.containers,
# initContainers, ephemeralContainers, volumes, imagePullSecrets, schedulingGates,
# resourceClaims, hostAliases, topologySpreadConstraints; Container.env, volumeMounts,
# volumeDevices). They are matched by field name wherever they appear, so the EnvVar lists a
# ClusterPolicy embeds (driver.env, devicePlugin.env, ...) merge by name too. `ports` is left
# out: its key differs by owner (containerPort in a Container, port in a Service).
# The kinds gpuplan emits itself (Namespace, ResourceQuota, LimitRange, NetworkPolicy,
# RoleBinding, PriorityClass, ConfigMap) have no merge-keyed lists at all (kubernetes/api
# v0.34.0 core/v1, networking/v1, rbac/v1, scheduling/v1 types.go): their lists are replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}

Path = tuple[str | int, ...]


class MergeError(ValueError):
    """A patch that cannot apply, with the field path inside the patch where it fails."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def strategic_merge(original: Any, patch: Any) -> Any:
    """Return the original with a strategic-merge patch applied (neither argument is changed)."""
    return _merge(copy.deepcopy(original), patch, (), None)


def _merge(original: Any, patch: Any, path: Path, field: str | None) -> Any:
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, path)
    if isinstance(patch, list) and isinstance(original, list) and field in MERGE_KEYS:
        return _merge_list(original, patch, path, MERGE_KEYS[field])
    return _clean(patch, path)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], path: Path) -> Any:
    directive = patch.get(DIRECTIVE)
    if directive == "replace":
        return _clean({k: v for k, v in patch.items() if k != DIRECTIVE}, path)
    if directive == "delete":
        return None
    if directive is not None:
        raise MergeError(
            path + (DIRECTIVE,), f"{DIRECTIVE} must be replace or delete (got {directive!r})"
        )
    for key, value in patch.items():
        if value is None:
            original.pop(key, None)
            continue
        merged = _merge(original.get(key), value, path + (key,), key)
        if merged is None:
            original.pop(key, None)
        else:
            original[key] = merged
    return original


def _merge_list(original: list[Any], patch: list[Any], path: Path, key: str) -> list[Any]:
    if any(
        isinstance(item, dict) and item.get(DIRECTIVE) == "replace" and len(item) == 1
        for item in patch
    ):
        return [
            _clean(item, path + (i,))
            for i, item in enumerate(patch)
            if item != {DIRECTIVE: "replace"}
        ]
    result = original
    for i, item in enumerate(patch):
        if not isinstance(item, dict) or key not in item:
            raise MergeError(path + (i,), f"each item of this list needs its merge key {key!r}")
        match = next(
            (
                n
                for n, old in enumerate(result)
                if isinstance(old, dict) and old.get(key) == item[key]
            ),
            None,
        )
        if item.get(DIRECTIVE) == "delete":
            if match is not None:
                del result[match]
            continue
        if match is None:
            result.append(_clean(item, path + (i,)))
        else:
            result[match] = _merge_map(result[match], item, path + (i,))
    return result


def _clean(value: Any, path: Path) -> Any:
    """Return a patch value as plain data: no directives, no null map entries."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            raise MergeError(
                path + (DIRECTIVE,),
                f"{DIRECTIVE} is only meaningful where it changes an existing value",
            )
        return {k: _clean(v, path + (k,)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v, path + (i,)) for i, v in enumerate(value)]
    return value
