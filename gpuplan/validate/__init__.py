"""Offline strict schema validation of emitted Kubernetes objects (core kinds and CRDs)."""

from gpuplan.validate.core import (
    CoreSchemas,
    UnknownKubernetesVersion,
    available_versions,
    newest,
)
from gpuplan.validate.crds import CelRule, Crd, CrdIndex, CrdLoadError, CrdVersion, strictify
from gpuplan.validate.engine import Problem, Validator

__all__ = [
    "CelRule",
    "CoreSchemas",
    "Crd",
    "CrdIndex",
    "CrdLoadError",
    "CrdVersion",
    "Problem",
    "UnknownKubernetesVersion",
    "Validator",
    "available_versions",
    "newest",
    "strictify",
]
