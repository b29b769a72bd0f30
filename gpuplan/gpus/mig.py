"""MIG layouts: can a layout be placed on one GPU, its canonical text and config name.

A layout maps profile names to instance counts per GPU. It is valid only if every
instance gets an allowed start slot (in memory slices) with no two instances'
half-open ranges [start, start + size) overlapping (facts/mig.md, "MIG geometry";
NVML `nvmlGpuInstancePlacement_t`). Totals of compute and memory slices are checked
first only to give a clearer reason; the placement search is what decides.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuplan.gpus.catalog import GpuModel, MigGeometry, MigProfile, profile_sort_key

__all__ = [
    "REASONS",
    "Placement",
    "config_name",
    "instances_per_gpu",
    "layout_text",
    "nvidia_layouts",
    "place",
]

REASONS = ("no-mig", "unknown-profile", "count", "me", "compute", "memory", "placement", "empty")

CONFIG_PREFIX = "gpuplan-"
_LABEL_MAX = 63
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")


@dataclass(frozen=True)
class Placement:
    """The outcome of placing a layout on one GPU."""

    ok: bool
    slots: tuple[tuple[str, int], ...] = ()  # (profile, first memory slice), by start
    reason: str = ""  # one of REASONS when not ok
    message: str = ""  # a one-line diagnostic when not ok


def instances_per_gpu(layout: Mapping[str, int]) -> dict[str, int]:
    """The layout without zero (or negative) counts, in canonical profile order."""
    return {
        name: count
        for name, count in sorted(layout.items(), key=lambda item: profile_sort_key(item[0]))
        if _is_count(count) and count > 0
    }


def layout_text(layout: Mapping[str, int]) -> str:
    """Canonical text of a layout, e.g. '2x1g.10gb + 1x2g.20gb + 1x3g.40gb'."""
    return " + ".join(f"{count}x{name}" for name, count in instances_per_gpu(layout).items())


def gpu_ranges(numbers: tuple[int, ...]) -> str:
    """Return GPU indices as ranges, '0–3, 6' (with an en dash) for (0, 1, 2, 3, 6)."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}\u2013{r[-1]}" for r in runs)


def config_name(layout: Mapping[str, int]) -> str:
    """A label-safe mig-parted config name, e.g. 'gpuplan-2x1g.10gb-1x2g.20gb-1x3g.40gb'."""
    parts = [f"{count}x{name}" for name, count in instances_per_gpu(layout).items()]
    name = CONFIG_PREFIX + ("-".join(parts) if parts else "empty")
    readable = name.replace("+", ".")  # as NVIDIA writes all-1g.10gb.me
    safe = _LABEL_UNSAFE.sub(".", readable)
    if safe == readable and len(safe) <= _LABEL_MAX and safe[-1].isalnum():
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    head = safe[: _LABEL_MAX - len(digest) - 1].rstrip(".-")
    return f"{head}-{digest}"


def nvidia_layouts(model: GpuModel) -> dict[str, dict[str, int]]:
    """NVIDIA's named layouts for the model: all-<profile> at its max count, all-balanced."""
    if model.mig is None:
        return {}
    layouts = {
        "all-" + profile.name.replace("+", "."): {profile.name: profile.max_instances}
        for profile in model.mig.profiles
    }
    layouts["all-balanced"] = _balanced(model.mig)
    return layouts


def _balanced(mig: MigGeometry) -> dict[str, int]:
    """NVIDIA's all-balanced: 2x1g + 1x2g (+ 1x3g on 7-slot GPUs).

    mig-manager v0.15.0 builder (facts/mig.md): per slice size, the base profile (no
    attribute) with the highest max count; it matches every static [OP] all-balanced.
    """
    wanted = {1: 2, 2: 1, 3: 1} if mig.compute_slices == 7 else {1: 2, 2: 1}
    layout = {}
    for compute, count in wanted.items():
        bases = [p for p in mig.profiles if p.compute_slices == compute and "+" not in p.name]
        best = max(bases, key=lambda p: (p.max_instances, -p.memory_slices))
        layout[best.name] = count
    return layout


def place(model: GpuModel, layout: Mapping[str, int]) -> Placement:
    """Place `layout` on one GPU of `model`, or say why it cannot be placed."""
    if model.mig is None:
        return _fail("no-mig", f"{model.name} does not support MIG")
    mig = model.mig
    unknown = sorted((n for n in layout if mig.profile(n) is None), key=profile_sort_key)
    if unknown:
        return _fail("unknown-profile", _unknown_message(model, unknown))
    bad = [(n, c) for n, c in layout.items() if not _is_count(c) or c < 0]
    if bad:
        name, count = bad[0]
        return _fail("count", f"count of {name} must be a whole number 0 or more, not {count!r}")
    wanted = instances_per_gpu(layout)
    if not wanted:
        return _fail("empty", "MIG layout has no instances; give at least one profile a count")
    found = _arithmetic(mig, wanted)
    if found is not None:
        reason, detail = found
        return _cannot(model, wanted, reason, detail)
    slots = _search(mig, wanted)
    if slots is None:
        return _cannot(model, wanted, "placement", _placement_detail(mig, wanted))
    return Placement(ok=True, slots=slots)


def _is_count(value: object) -> bool:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(reason: str, message: str) -> Placement:
    """A failed placement."""
    return Placement(ok=False, reason=reason, message=message)


def _cannot(model: GpuModel, wanted: Mapping[str, int], reason: str, detail: str) -> Placement:
    """A failed placement with the '<layout> cannot be placed on one <model>' message."""
    text = layout_text(wanted)
    return _fail(reason, f"{text} cannot be placed on one {model.name} ({detail})")


def _unknown_message(model: GpuModel, unknown: list[str]) -> str:
    """Message naming the unknown profiles and the ones the model has."""
    assert model.mig is not None
    has = ", ".join(model.mig.profile_names)
    if len(unknown) == 1:
        return f"profile {unknown[0]} does not exist on {model.name}; it has {has}"
    listed = ", ".join(unknown)
    return f"profiles {listed} do not exist on {model.name}; it has {has}"


def _arithmetic(mig: MigGeometry, wanted: Mapping[str, int]) -> tuple[str, str] | None:
    """The first total that is exceeded, as (reason, detail), or None."""
    profiles = {name: _profile(mig, name) for name in wanted}
    compute = sum(profiles[n].compute_slices * c for n, c in wanted.items())
    if compute > mig.compute_slices:
        return "compute", f"{compute} of {mig.compute_slices} compute slices"
    memory = sum(profiles[n].memory_slices * c for n, c in wanted.items())
    if memory > mig.memory_slices:
        return "memory", f"{memory} of {mig.memory_slices} memory slices"
    if sum(c for n, c in wanted.items() if profiles[n].media_extensions) > 1:
        return "me", "at most one +me instance per GPU"
    for name, count in wanted.items():
        if count > profiles[name].max_instances:
            return "count", f"at most {profiles[name].max_instances} x {name} per GPU"
    return None


def _profile(mig: MigGeometry, name: str) -> MigProfile:
    """The named profile, which must exist."""
    profile = mig.profile(name)
    assert profile is not None, name
    return profile


def _search(mig: MigGeometry, wanted: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
    """An exact backtracking search for non-overlapping starts, largest instances first."""
    instances = sorted(
        (_profile(mig, name) for name, count in wanted.items() for _ in range(count)),
        key=lambda p: (-p.size, len(p.starts), p.name),
    )
    chosen: list[tuple[str, int]] = []

    def fill(index: int, used: int, floor: int) -> bool:
        """Place instances[index:] on the memory slices not in the `used` bitmask."""
        if index == len(instances):
            return True
        profile = instances[index]
        for start in profile.starts:
            mask = ((1 << profile.size) - 1) << start
            if start < floor or used & mask or start + profile.size > mig.memory_slices:
                continue
            chosen.append((profile.name, start))
            same = index + 1 < len(instances) and instances[index + 1] is profile
            if fill(index + 1, used | mask, start + 1 if same else 0):
                return True
            chosen.pop()
        return False

    if not fill(0, 0, 0):
        return None
    return tuple(sorted(chosen, key=lambda slot: (slot[1], slot[0])))


def _placement_detail(mig: MigGeometry, wanted: Mapping[str, int]) -> str:
    """Why no placement exists: the allowed start slots of the layout's profiles."""
    profiles = sorted((_profile(mig, n) for n in wanted), key=lambda p: (-p.size, p.name))
    first, *rest = profiles
    starts = [f"{first.name} may start only at memory slices {_slots(first)}"]
    starts += [f"{p.name} at {_slots(p)}" for p in rest]
    return "no non-overlapping start slots: " + ", ".join(starts)


def _slots(profile: MigProfile) -> str:
    """The allowed start slots and size, e.g. '{0,4} (size 4)'."""
    return "{" + ",".join(map(str, profile.starts)) + "}" + f" (size {profile.size})"
