"""MIG layouts as a reviewer reads them: profile counts per GPU, and the slices drawn as a table.

A pool's `nvidia.com/mig.config` label names an entry of the mig-parted ConfigMap (format
`version: v1`, `mig-configs: {name: [{devices: all | [i...], mig-enabled, mig-devices}]}`; ../shared/facts/mig.md,
[MP] mig-parted v0.15.0 pkg/mig/config/config.go). The name alone (a hash for per-GPU
layouts) tells a reviewer nothing, so the diff resolves it to its layout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from gpuplan.diff.kinds import dig, is_kind, listing, mapping
from gpuplan.diff.objects import Side
from gpuplan.gpus import catalog
from gpuplan.gpus.catalog import GpuModel
from gpuplan.gpus.mig import gpu_ranges, layout_text, place

CONTINUED = "⋯"  # a memory slice taken by the instance named to its left


@dataclass(frozen=True)
class Group:
    """One entry of a mig-parted configuration: which GPUs, and the instances on each."""

    gpus: tuple[int, ...] | None  # None: every GPU of the node
    layout: tuple[tuple[str, int], ...]  # (profile, count); empty with MIG off

    def where(self) -> str:
        """Return `every GPU` or `GPUs 0–3`."""
        if self.gpus is None:
            return "every GPU"
        return ("GPU " if len(self.gpus) == 1 else "GPUs ") + gpu_ranges(self.gpus)

    def text(self) -> str:
        """Return `2x1g.10gb + 1x3g.40gb`, or `MIG off`."""
        return layout_text(dict(self.layout)) or "MIG off"


Config = tuple[Group, ...]


def _group(entry: Any) -> Group:
    """Return one mig-parted entry as a Group."""
    devices = dig(entry, "devices")
    gpus = (
        tuple(int(d) for d in devices if isinstance(d, int)) if isinstance(devices, list) else None
    )
    counts = mapping(dig(entry, "mig-devices")) if dig(entry, "mig-enabled") else {}
    layout = tuple((str(p), int(c)) for p, c in counts.items() if isinstance(c, int) and c > 0)
    return Group(gpus, layout)


def configs(side: Side) -> dict[tuple[str, str], Config]:
    """Return every mig-parted configuration per (cluster, name)."""
    out: dict[tuple[str, str], Config] = {}
    for key, entry in side.items():
        if not is_kind(key, "", "ConfigMap"):
            continue
        for text in mapping(entry.obj.get("data")).values():
            for name, body in _parted(text).items():
                out[(key.scope, str(name))] = tuple(_group(e) for e in listing(body))
    return out


def _parted(text: Any) -> dict[str, Any]:
    """Return the mig-configs of a mig-parted config.yaml, or nothing."""
    if not isinstance(text, str) or "mig-configs" not in text:
        return {}
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return mapping(dig(document, "mig-configs"))


def canonical(config: Config) -> str:
    """Return a configuration's content as text, to tell whether it changed."""
    return json.dumps([[g.gpus, sorted(g.layout)] for g in config])


def per_gpu(config: Config | None, name: str | None) -> str:
    """Return `GPUs 0–3: 2x3g.40gb; GPUs 4–7: 1x3g.40gb + 2x1g.10gb` (or the bare name if unknown)."""
    if name is None:
        return "no MIG configuration"
    if config is None:
        return f"{name} (not defined in the mig-parted ConfigMap)"
    if len(config) == 1 and config[0].gpus is None:
        return f"{config[0].text()} on every GPU"
    return "; ".join(f"{g.where()}: {g.text()}" for g in config)


def model_for(config: Config, known: str | None) -> GpuModel | None:
    """Return the pool's GPU model, or the first catalog model every layout can be placed on."""
    if known is not None and catalog.lookup(known) is not None:
        return catalog.lookup(known)
    layouts = [dict(g.layout) for g in config if g.layout]
    for name in catalog.names():
        model = catalog.lookup(name)
        if (
            model is not None
            and model.mig is not None
            and layouts
            and all(place(model, lay).ok for lay in layouts)
        ):
            return model
    return None


def slice_cells(model: GpuModel, group: Group) -> list[str] | None:
    """Return one cell per memory slice: the profile at its start slot, `⋯` where it continues."""
    assert model.mig is not None
    cells = [""] * model.mig.memory_slices
    if not group.layout:
        return ["MIG off"] + [CONTINUED] * (len(cells) - 1)
    placed = place(model, dict(group.layout))
    if not placed.ok:
        return None
    for profile, start in placed.slots:
        found = model.mig.profile(profile)
        size = found.size if found is not None else 1
        cells[start] = profile
        for slot in range(start + 1, min(start + size, len(cells))):
            cells[slot] = CONTINUED
    return cells
