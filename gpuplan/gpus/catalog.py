"""The GPU catalog: models, PCI ids, GPU Feature Discovery labels and MIG geometry.

The catalog names and PCI device ids are binding (spec/input.md, "GPU catalog").
The MIG numbers come from facts/mig.md and facts/mig-profiles.yaml; the source of
every table is written beside it. Placements are NVML's: a profile may start only
at the listed memory slices and occupies `size` memory slices from there.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

__all__ = [
    "CATALOG",
    "GpuModel",
    "MigGeometry",
    "MigProfile",
    "closest",
    "lookup",
    "names",
    "profile_sort_key",
]

_NVIDIA_VENDOR = "10DE"


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile: its slices, max count and allowed placements."""

    name: str
    compute_slices: int
    memory_slices: int
    max_instances: int
    starts: tuple[int, ...]  # allowed first memory slice (nvidia-smi mig -lgipp "{...}")
    size: int  # memory slices occupied (nvidia-smi mig -lgipp ":size")

    @property
    def media_extensions(self) -> bool:
        """True for a `+me` profile (at most one such instance per GPU)."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class MigGeometry:
    """The MIG slices of one GPU model and the profiles it offers."""

    compute_slices: int  # 7, or 4 on A30
    memory_slices: int  # 8, or 4 on A30
    profiles: tuple[MigProfile, ...]

    def profile(self, name: str) -> MigProfile | None:
        """The profile called `name`, or None."""
        return next((p for p in self.profiles if p.name == name), None)

    @property
    def profile_names(self) -> tuple[str, ...]:
        """Profile names in canonical order (compute, then memory slices, then name)."""
        return tuple(p.name for p in self.profiles)


@dataclass(frozen=True)
class GpuModel:
    """A GPU model gpuplan knows."""

    name: str
    pci_ids: tuple[str, ...]  # PCI device ids, e.g. "0x2330" (vendor 0x10DE implied)
    product_labels: tuple[str, ...]  # GFD `nvidia.com/gpu.product` values
    memory_gb: int
    mig: MigGeometry | None = None
    architecture: str = ""  # key of MIN_DRIVER_BRANCH
    driver_since: int = 0  # a later first branch than its architecture's (models launched later)
    # the CPU architecture of every host the GPU comes in: a Grace superchip (GH200, GB200) is a
    # Grace CPU, Arm, with its GPUs on one module ("NVIDIA Grace Hopper", "NVIDIA Grace Blackwell"
    # in NVIDIA/cloud-native-docs gpu-operator/platform-support.rst); "" for GPUs on any host
    host_arch: str = ""

    @property
    def min_driver_branch(self) -> int:
        """The oldest NVIDIA data-center driver branch that drives this model."""
        return max(MIN_DRIVER_BRANCH[self.architecture], self.driver_since)

    @property
    def mig_capable(self) -> bool:
        """True when the model supports MIG."""
        return self.mig is not None

    @property
    def device_filters(self) -> tuple[str, ...]:
        """mig-parted `device-filter` values (`0xDDDDVVVV`), e.g. "0x233010DE"."""
        return tuple(f"0x{pci[2:].upper()}{_NVIDIA_VENDOR}" for pci in self.pci_ids)


# The oldest data-center driver branch per GPU architecture.
# - blackwell 570: "HGX B200 requires a driver container version of 570.133.20 or later"
#   (NVIDIA/cloud-native-docs@187a4a5b gpu-operator/platform-support.rst, B-series note); the first
#   NVIDIA/open-gpu-kernel-modules README that lists B200 (0x2901) is tag 570.86.15.
# - hopper and ada 525: both need CUDA 11.8 (compute capability 9.0 / 8.9), first shipped with the
#   520 driver (NVIDIA AI Enterprise 2.3 release notes: H100 support with 520.61.05); R520 was no
#   data-center branch (docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-
#   versions.html lists R525, R515 ... as the past data-center branches), so R525 is the first.
# - ampere 450: CUDA 11.0 (compute capability 8.0) needs >= 450.36.06 (CUDA 11.0 release notes,
#   "CUDA Toolkit and Compatible Driver Versions"); A10G (GA102, 8.6) needs CUDA 11.1: 460.
# - turing 410: CUDA 10.0 (compute capability 7.5) needs >= 410.48 (the same table).
MIN_DRIVER_BRANCH: dict[str, int] = {
    "turing": 410,
    "ampere": 450,
    "ampere-ga10x": 460,
    "ada": 525,
    "hopper": 525,
    "blackwell": 570,
}
# Models that came after their architecture's first branch: the first branch whose
# NVIDIA/open-gpu-kernel-modules README lists the PCI id (H200 0x2335: tag 550.40.65; H200 NVL 0x233B
# and GH200 144G 0x2348: tag 565.57.01). The open modules are the supported kind from Hopper on.

_PROFILE_RE = re.compile(r"^(\d+)g\.(\d+)gb")


def profile_sort_key(name: str) -> tuple[int, int, str]:
    """Canonical order of profile names: compute slices, then memory size, then name."""
    text = str(name)
    match = _PROFILE_RE.match(text)
    if match is None:
        return (1 << 30, 1 << 30, text)
    return (int(match.group(1)), int(match.group(2)), text)


def _canonical(profiles: list[MigProfile]) -> tuple[MigProfile, ...]:
    """Profiles sorted by compute slices, memory slices, then name."""
    return tuple(sorted(profiles, key=lambda p: (p.compute_slices, p.memory_slices, p.name)))


# --- 7-compute / 8-memory-slice geometry (GA100, GH100, GB100) -------------------------
# Placements quoted from the MIG User Guide, "Getting started with MIG", `nvidia-smi mig
# -lgipp` on A100-40GB ([UG-gs] in facts/mig.md):
#   ID 19/20 {0,1,2,3,4,5,6}:1, ID 15 {0,2,4,6}:2, ID 14 {0,2,4}:2, ID 9 {0,4}:4,
#   ID 5 {0}:4, ID 0 {0}:8
# The same -lgipp was published for "NVIDIA H100 80GB HBM3" [HW-H100] and H100 NVL
# [HW-H100NVL]. For A100-80GB, GH200 (96GB and 144GB), H200, B200 and GB200 no -lgipp was
# found: facts/mig-profiles.yaml marks their placements "inferred" (same memory fractions).
# Max counts: the "Number of Instances Available" column of each model's UG table.
# Columns: (name pattern, compute slices, memory slices, max instances, starts, size).
# {a} = 1/8 of memory, {b} = 2/8, {c} = 4/8, {d} = all of it, in GB as NVIDIA names them.
_SEVEN_SLOT_SHAPES = (
    ("1g.{a}gb", 1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.{a}gb+me", 1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.{b}gb", 1, 2, 4, (0, 2, 4, 6), 2),
    ("2g.{b}gb", 2, 2, 3, (0, 2, 4), 2),
    ("3g.{c}gb", 3, 4, 2, (0, 4), 4),
    ("4g.{c}gb", 4, 4, 1, (0,), 4),
    ("7g.{d}gb", 7, 8, 1, (0,), 8),
)


def _seven_slot(a: int, b: int, c: int, d: int) -> MigGeometry:
    """The 7-slot profile set, named by its 1/8, 2/8, 4/8 and full memory sizes in GB."""
    profiles = [
        MigProfile(pattern.format(a=a, b=b, c=c, d=d), comp, mem, most, starts, size)
        for pattern, comp, mem, most, starts, size in _SEVEN_SLOT_SHAPES
    ]
    return MigGeometry(compute_slices=7, memory_slices=8, profiles=_canonical(profiles))


# A100-40GB: MIG UG "GPU Instance Profiles on A100" table (1g.5gb x7, 1g.5gb+me x1,
# 1g.10gb x4, 2g.10gb x3, 3g.20gb x2, 4g.20gb x1, 7g.40gb x1) and the -lgipp above.
# Trap: the UG table says 1g.10gb is "1/8" of memory, but -lgipp gives profile 15 size 2,
# so 1g.10gb occupies TWO memory slices here (facts/mig.md, A100-SXM4-40GB caveat).
_A100_40GB = _seven_slot(5, 10, 20, 40)
# A100-80GB (SXM4 and PCIe) and H100 80GB (SXM5 and PCIe): UG A100 note ("for
# A100-SXM4-80GB ... 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb")
# and the UG "H100 80GB" table; H100 -lgip/-lgipp from [HW-H100].
_GA100_GH100_80GB = _seven_slot(10, 20, 40, 80)
# H100 NVL 94GB: UG "H100 94GB" table; -lgipp from [HW-H100NVL] (Colfax, 2024-05-29).
_H100_94GB = _seven_slot(12, 24, 47, 94)
# GH200 96GB (H100 on GH200): UG "H100 96GB" table; -lgip from [HW-GH200].
_GH200_96GB = _seven_slot(12, 24, 48, 96)
# GH200 144G HBM3e: gpu-operator v26.7.0 0400_configmap only (no UG table found).
_GH200_144GB = _seven_slot(18, 36, 72, 144)
# H200 141GB (SXM and NVL): UG "H200 141GB" table; [OP] applies it to 0x2335 and 0x233B.
_H200_141GB = _seven_slot(18, 35, 71, 141)
# B200 180GB: UG "Table 9 GPU Instance Profiles on B200".
_B200 = _seven_slot(23, 45, 90, 180)
# GB200 186GB: inferred from the gpu-operator v26.7.0 layout names (all-balanced for
# 0x294110DE = 1g.23gb x2 + 2g.47gb + 3g.93gb; all-1g.47gb ... all-7g.186gb).
_GB200 = _seven_slot(23, 47, 93, 186)

# A30-24GB, 4 compute / 4 memory slices: MIG UG A30 table (names, max counts) and two
# third-party `nvidia-smi mig -lgipp` dumps [HW-A30]: ID 14/21 {0,1,2,3}:1, ID 5/6 {0,2}:2,
# ID 0 {0}:4. mig-parted hard-codes the same list (pkg/mig/discovery/discovery.go).
_A30 = MigGeometry(
    compute_slices=4,
    memory_slices=4,
    profiles=_canonical(
        [
            MigProfile("1g.6gb", 1, 1, 4, (0, 1, 2, 3), 1),
            MigProfile("1g.6gb+me", 1, 1, 1, (0, 1, 2, 3), 1),
            MigProfile("2g.12gb", 2, 2, 2, (0, 2), 2),
            MigProfile("2g.12gb+me", 2, 2, 1, (0, 2), 2),
            MigProfile("4g.24gb", 4, 4, 1, (0,), 4),
        ]
    ),
)

# PCI device ids: spec/input.md "GPU catalog" (binding) for MIG models. Non-MIG ids:
# L40S 0x26B9, L4 0x27B8, A10G 0x2237, T4 0x1EB8 from published `lspci -nn` outputs and
# PCI-id tables (pci.ids names: AD102GL [L40S], AD104GL [L4], GA102GL [A10G],
# TU104GL [Tesla T4]).
# GFD labels: GPU Feature Discovery sets `nvidia.com/gpu.product` to the NVML product
# name with spaces as '-' (k8s-device-plugin internal/lm/resource.go). Values below were
# each seen in published `kubectl describe node` output or nodeSelectors; the GH200 144G
# HBM3e label could not be sourced and is left out.
_MODELS = (
    GpuModel(
        "A100-SXM4-40GB",
        ("0x20B0",),
        ("NVIDIA-A100-SXM4-40GB",),
        40,
        _A100_40GB,
        architecture="ampere",
    ),
    GpuModel(
        "A100-PCIe-40GB",
        ("0x20B1", "0x20F1"),
        ("NVIDIA-A100-PCIE-40GB",),
        40,
        _A100_40GB,
        architecture="ampere",
    ),
    GpuModel(
        "A100-SXM4-80GB",
        ("0x20B2",),
        ("NVIDIA-A100-SXM4-80GB",),
        80,
        _GA100_GH100_80GB,
        architecture="ampere",
    ),
    GpuModel(
        "A100-PCIe-80GB",
        ("0x20B5",),
        ("NVIDIA-A100-80GB-PCIe",),
        80,
        _GA100_GH100_80GB,
        architecture="ampere",
    ),
    GpuModel("A30", ("0x20B7",), ("NVIDIA-A30",), 24, _A30, architecture="ampere"),
    GpuModel(
        "H100-SXM5-80GB",
        ("0x2330",),
        ("NVIDIA-H100-80GB-HBM3",),
        80,
        _GA100_GH100_80GB,
        architecture="hopper",
    ),
    GpuModel(
        "H100-PCIe-80GB",
        ("0x2331",),
        ("NVIDIA-H100-PCIe",),
        80,
        _GA100_GH100_80GB,
        architecture="hopper",
    ),
    GpuModel(
        "H100-NVL-94GB", ("0x2321",), ("NVIDIA-H100-NVL",), 94, _H100_94GB, architecture="hopper"
    ),
    GpuModel(
        "GH200-96GB",
        ("0x2342",),
        ("NVIDIA-GH200-480GB",),
        96,
        _GH200_96GB,
        architecture="hopper",
        host_arch="arm64",
    ),
    GpuModel(
        "GH200-144GB",
        ("0x2348",),
        (),
        144,
        _GH200_144GB,
        architecture="hopper",
        driver_since=565,
        host_arch="arm64",
    ),
    GpuModel(
        "H200-141GB",
        ("0x2335",),
        ("NVIDIA-H200",),
        141,
        _H200_141GB,
        architecture="hopper",
        driver_since=550,
    ),
    GpuModel(
        "H200-NVL-141GB",
        ("0x233B",),
        ("NVIDIA-H200-NVL",),
        141,
        _H200_141GB,
        architecture="hopper",
        driver_since=565,
    ),
    GpuModel("B200", ("0x2901",), ("NVIDIA-B200",), 180, _B200, architecture="blackwell"),
    GpuModel(
        "GB200",
        ("0x2941",),
        ("NVIDIA-GB200",),
        186,
        _GB200,
        architecture="blackwell",
        host_arch="arm64",
    ),
    GpuModel("L40S", ("0x26B9",), ("NVIDIA-L40S",), 48, architecture="ada"),
    GpuModel("L4", ("0x27B8",), ("NVIDIA-L4",), 24, architecture="ada"),
    GpuModel("A10G", ("0x2237",), ("NVIDIA-A10G",), 24, architecture="ampere-ga10x"),
    GpuModel("T4", ("0x1EB8",), ("Tesla-T4",), 16, architecture="turing"),
)

CATALOG: dict[str, GpuModel] = {model.name: model for model in _MODELS}

_PCI_RE = re.compile(r"^0x([0-9a-f]{4})(10de)?$")


def _pci_device(text: str) -> str | None:
    """The 4-hex-digit device id of '0x2330' or '0x233010DE' (any case), else None."""
    match = _PCI_RE.match(text.strip().lower())
    return match.group(1) if match else None


def lookup(name_or_alias: str) -> GpuModel | None:
    """The model for a catalog name, a PCI device id or a GFD product label, or None."""
    if name_or_alias in CATALOG:
        return CATALOG[name_or_alias]
    device = _pci_device(name_or_alias)
    label = name_or_alias.strip().lower()
    for model in _MODELS:
        if device is not None and any(pci[2:].lower() == device for pci in model.pci_ids):
            return model
        if any(known.lower() == label for known in model.product_labels):
            return model
    return None


def names() -> list[str]:
    """Catalog names in catalog order."""
    return list(CATALOG)


def closest(name: str) -> str | None:
    """The catalog name most like `name` (for "did you mean"), or None."""
    by_lower = {known.lower(): known for known in CATALOG}
    found = difflib.get_close_matches(name.strip().lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None
