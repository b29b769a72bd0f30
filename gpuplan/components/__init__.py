"""The component registry: one module per component, one line each in REGISTRY."""

from __future__ import annotations

from gpuplan.components import gpu_operator
from gpuplan.components.base import Chart, Component, Release, UnknownVersion

__all__ = ["Chart", "Component", "Release", "UnknownVersion", "REGISTRY"]

# One line per component; filled in as component modules land (see base.py for the shape).
REGISTRY: dict[str, Component] = {
    "gpu-operator": gpu_operator.COMPONENT,
}
