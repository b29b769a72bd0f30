"""Offline strict schema validation of emitted Kubernetes objects (core kinds and CRDs)."""

from typing import Any

# Every name is imported on first use, so `gpuplan validate` pays only for what a run needs
# (references pull in the GPU catalog, webhooks the quantity rules, cel the CEL package).
_HOMES = {
    "CoreSchemas": "core",
    "UnknownKubernetesVersion": "core",
    "available_versions": "core",
    "newest": "core",
    "CelRule": "crds",
    "Crd": "crds",
    "CrdIndex": "crds",
    "CrdLoadError": "crds",
    "CrdVersion": "crds",
    "strictify": "crds",
    "Problem": "engine",
    "Validator": "engine",
    "ReferenceProblem": "references",
    "ReferenceReport": "references",
    "check_references": "references",
    "webhook_problems": "webhooks",
    "CelEvaluator": "cel",
    "CelRules": "cel",
    "SkippedRule": "cel",
    "check_cel": "cel",
    "compiled_rules": "cel",
}

__all__ = [
    "CelEvaluator",
    "CelRule",
    "CelRules",
    "CoreSchemas",
    "Crd",
    "CrdIndex",
    "CrdLoadError",
    "CrdVersion",
    "Problem",
    "ReferenceProblem",
    "ReferenceReport",
    "SkippedRule",
    "UnknownKubernetesVersion",
    "Validator",
    "available_versions",
    "check_cel",
    "check_references",
    "compiled_rules",
    "newest",
    "strictify",
    "webhook_problems",
]


def __getattr__(name: str) -> Any:
    """Import the module that defines a name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpuplan.validate' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"gpuplan.validate.{home}"), name)
