"""GPU catalog and MIG placement geometry (pure Python, stdlib only)."""

from gpuplan.gpus.catalog import (
    CATALOG,
    GpuModel,
    MigGeometry,
    MigProfile,
    closest,
    lookup,
    names,
    profile_sort_key,
)
from gpuplan.gpus.mig import (
    REASONS,
    Placement,
    config_name,
    instances_per_gpu,
    layout_text,
    nvidia_layouts,
    place,
)

__all__ = [
    "CATALOG",
    "REASONS",
    "GpuModel",
    "MigGeometry",
    "MigProfile",
    "Placement",
    "closest",
    "config_name",
    "instances_per_gpu",
    "layout_text",
    "lookup",
    "names",
    "nvidia_layouts",
    "place",
    "profile_sort_key",
]
