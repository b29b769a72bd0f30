"""The charts' default values per supported release (scripts/fetch_chart_values.py writes them).

<component>/<version>.yaml (Karpenter: <component>/<line>/<version>.yaml) is the chart's values.yaml at
the release tag, parsed and written back without comments; SOURCES.json names repository, tag, commit
and path of each. The upgrade plan of `gpuplan diff` compares two releases' defaults.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent
# The components whose chart defaults ship (scripts/fetch_chart_values.py fetches every supported release).
COMPONENTS = (
    "gpu-operator",
    "kueue",
    "volcano",
    "karpenter",
    "kai-scheduler",
    "dra-driver",
    "monitoring",
)


def _target(component: str, line: str, version: str) -> str:
    return f"{component}/{line + '/' if line else ''}{version}.yaml"


@cache
def chart_defaults(component: str, line: str, version: str) -> dict[str, Any] | None:
    """Return a release's chart defaults, None when gpuplan ships none for it."""
    path = DATA / _target(component, line, version)
    if not path.is_file():
        return None
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


@cache
def _sources() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / "SOURCES.json").read_text(encoding="utf-8"))
    return loaded


def source(component: str, line: str, version: str) -> str:
    """Return where a release's defaults were read ("owner/repo@tag:path"), "" when not shipped."""
    record = _sources().get(_target(component, line, version))
    return str(record["source"]) if record else ""
