"""Upstream install manifests shipped with gpuplan, for releases that publish no chart.

The data lives beside this module as <component>/<version>/<file>, byte for byte the upstream file at
the release tag, written by scripts/fetch_manifests.py (SOURCES.json records the repository, tag,
commit and sha256 of each). ``objects`` returns the objects of one of them.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _parsed(component: str, version: str, name: str) -> tuple[dict[str, Any], ...]:
    text = (DATA / component / version / name).read_text(encoding="utf-8")
    return tuple(d for d in yaml.load_all(text, Loader=_LOADER) if isinstance(d, dict))


def objects(component: str, version: str, name: str) -> list[dict[str, Any]]:
    """Return the objects of a shipped manifest (fresh copies: the caller may change them)."""
    return copy.deepcopy(list(_parsed(component, version, name)))
