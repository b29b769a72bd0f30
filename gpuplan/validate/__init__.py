"""Offline strict schema validation of emitted Kubernetes objects (core kinds and CRDs)."""

from typing import Any

from gpuplan.validate.core import (
    CoreSchemas,
    UnknownKubernetesVersion,
    available_versions,
    newest,
)
from gpuplan.validate.crds import CelRule, Crd, CrdIndex, CrdLoadError, CrdVersion, strictify
from gpuplan.validate.engine import Problem, Validator
from gpuplan.validate.references import ReferenceProblem, ReferenceReport, check_references
from gpuplan.validate.webhooks import webhook_problems

# The CEL layer needs the `cel` package (common-expression-language): imported on first use.
_CEL_NAMES = ("CelEvaluator", "CelRules", "SkippedRule", "check_cel", "compiled_rules")

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
    """Import the CEL layer lazily."""
    if name in _CEL_NAMES:
        from gpuplan.validate import cel

        return getattr(cel, name)
    raise AttributeError(f"module 'gpuplan.validate' has no attribute {name!r}")
