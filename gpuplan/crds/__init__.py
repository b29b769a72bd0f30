"""The upstream CRDs shipped with gpuplan, one set per supported component version.

The data lives beside this module as <component>/<version>/<crd-name>.json.gz, written by
scripts/fetch_crds.py from the upstream release tags (SOURCES.json records where each file comes
from). ``index_for`` returns the CrdIndex of one cluster's component versions.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplan.crds.versions import (
    CLUSTER_ALWAYS,
    FLEET_COMPONENTS,
    UnknownCrdSet,
    cluster_components,
    fleet_components,
    header_line,
    newest,
    parse_components,
    set_for,
    shipped_sets,
)

if TYPE_CHECKING:
    from gpuplan.validate.crds import Crd, CrdIndex

DATA = Path(__file__).parent

__all__ = [
    "CLUSTER_ALWAYS",
    "DATA",
    "FLEET_COMPONENTS",
    "UnknownCrdSet",
    "cluster_components",
    "crd_set",
    "fleet_components",
    "header_line",
    "index_for",
    "newest",
    "newest_index",
    "parse_components",
    "set_for",
    "shipped_sets",
]


@cache
def crd_set(component: str, version: str) -> tuple[Crd, ...]:
    """Return the shipped CRDs of one component version (read once per process)."""
    from gpuplan.validate.crds import crds_from_documents

    folder = DATA / component / version
    if not folder.is_dir():
        raise UnknownCrdSet(component, version)
    crds: list[Crd] = []
    for path in sorted(folder.glob("*.json.gz")):
        doc: Any = json.loads(gzip.decompress(path.read_bytes()))
        crds += crds_from_documents([doc], path)
    return tuple(crds)


def index_for(versions: Mapping[str, str], extra: CrdIndex | None = None) -> CrdIndex:
    """Return the CrdIndex of these component versions (shipped sets), overridden by ``extra``.

    ``versions`` maps a shipped component name ("kueue") to a version ("v0.14.4") or to a set
    chosen with ``set_for``; a kind ``extra`` defines (from --crds or GPUPLAN_CRDS) replaces the
    shipped CRDs of that kind.
    """
    shipped = _shipped_index(tuple(sorted(versions.items())))
    return shipped.overlay(extra) if extra is not None and len(extra) else shipped


@lru_cache(maxsize=64)
def _shipped_index(versions: tuple[tuple[str, str], ...]) -> CrdIndex:
    from gpuplan.validate.crds import CrdIndex

    return CrdIndex([crd for component, version in versions for crd in crd_set(component, version)])


def newest_index(extra: CrdIndex | None = None) -> CrdIndex:
    """Return the index of the newest shipped set of every component (when nothing says which)."""
    newest = {name: found[-1] for name, found in shipped_sets().items() if found}
    return index_for(newest, extra)
