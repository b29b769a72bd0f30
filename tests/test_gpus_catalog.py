"""The GPU catalog: names, PCI ids and slot counts (spec/input.md) and the MIG facts."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan.gpus import CATALOG, GpuModel, MigProfile, closest, lookup, names

# spec/input.md, "GPU catalog" (binding): name -> (PCI device ids, MIG compute slots)
SPEC = {
    "A100-SXM4-40GB": (("0x20B0",), 7),
    "A100-PCIe-40GB": (("0x20B1", "0x20F1"), 7),
    "A100-SXM4-80GB": (("0x20B2",), 7),
    "A100-PCIe-80GB": (("0x20B5",), 7),
    "A30": (("0x20B7",), 4),
    "H100-SXM5-80GB": (("0x2330",), 7),
    "H100-PCIe-80GB": (("0x2331",), 7),
    "H100-NVL-94GB": (("0x2321",), 7),
    "GH200-96GB": (("0x2342",), 7),
    "GH200-144GB": (("0x2348",), 7),
    "H200-141GB": (("0x2335",), 7),
    "H200-NVL-141GB": (("0x233B",), 7),
    "B200": (("0x2901",), 7),
    "GB200": (("0x2941",), 7),
}
NO_MIG = ("L40S", "L4", "A10G", "T4")
MIG_MODELS = [model for model in CATALOG.values() if model.mig is not None]


def test_catalog_has_exactly_the_spec_names_in_order():
    assert names() == [*SPEC, *NO_MIG]
    assert list(CATALOG) == names()


@pytest.mark.parametrize("name", list(SPEC))
def test_mig_models_match_the_spec_table(name):
    pci_ids, slots = SPEC[name]
    model = CATALOG[name]
    assert model.name == name
    assert model.pci_ids == pci_ids
    assert model.mig is not None
    assert model.mig.compute_slices == slots
    assert model.mig.memory_slices == (8 if slots == 7 else 4)


@pytest.mark.parametrize("name", NO_MIG)
def test_non_mig_models_have_no_geometry(name):
    assert CATALOG[name].mig is None
    assert not CATALOG[name].mig_capable


def test_everything_is_frozen_and_uses_tuples():
    for model in CATALOG.values():
        assert isinstance(model.pci_ids, tuple)
        assert isinstance(model.product_labels, tuple)
        if model.mig:
            assert isinstance(model.mig.profiles, tuple)
            for profile in model.mig.profiles:
                assert isinstance(profile.starts, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG["A30"].memory_gb = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG["A30"].mig.profiles[0].size = 3  # type: ignore[union-attr,misc]


def test_pci_ids_and_labels_are_unique():
    pci = [p.lower() for model in CATALOG.values() for p in model.pci_ids]
    labels = [label for model in CATALOG.values() for label in model.product_labels]
    assert len(pci) == len(set(pci))
    assert len(labels) == len(set(labels))


def test_shared_profile_tables_are_defined_once():
    a100_80 = CATALOG["A100-SXM4-80GB"].mig
    for name in ("A100-PCIe-80GB", "H100-SXM5-80GB", "H100-PCIe-80GB"):
        assert CATALOG[name].mig is a100_80
    assert CATALOG["A100-SXM4-40GB"].mig is CATALOG["A100-PCIe-40GB"].mig
    assert CATALOG["H200-141GB"].mig is CATALOG["H200-NVL-141GB"].mig


@pytest.mark.parametrize(
    ("name", "profiles"),
    [
        ("A100-SXM4-40GB", "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb"),
        ("H100-SXM5-80GB", "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb"),
        ("H100-NVL-94GB", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb"),
        ("GH200-96GB", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb"),
        ("GH200-144GB", "1g.18gb 1g.18gb+me 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb"),
        ("H200-141GB", "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb"),
        ("B200", "1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb"),
        ("GB200", "1g.23gb 1g.23gb+me 1g.47gb 2g.47gb 3g.93gb 4g.93gb 7g.186gb"),
        ("A30", "1g.6gb 1g.6gb+me 2g.12gb 2g.12gb+me 4g.24gb"),
    ],
)
def test_profile_names_follow_the_facts_in_canonical_order(name, profiles):
    assert CATALOG[name].mig.profile_names == tuple(profiles.split())


def test_a100_40gb_trap_1g_10gb_takes_two_memory_slices():
    profile = CATALOG["A100-SXM4-40GB"].mig.profile("1g.10gb")
    assert profile == MigProfile("1g.10gb", 1, 2, 4, (0, 2, 4, 6), 2)
    # ... while on 80GB parts 1g.10gb is the one-slice profile
    assert CATALOG["A100-SXM4-80GB"].mig.profile("1g.10gb").memory_slices == 1


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("1g.10gb", (1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 1)),
        ("1g.10gb+me", (1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1)),
        ("1g.20gb", (1, 2, 4, (0, 2, 4, 6), 2)),
        ("2g.20gb", (2, 2, 3, (0, 2, 4), 2)),
        ("3g.40gb", (3, 4, 2, (0, 4), 4)),
        ("4g.40gb", (4, 4, 1, (0,), 4)),
        ("7g.80gb", (7, 8, 1, (0,), 8)),
    ],
)
def test_h100_placements_match_lgipp(profile, expected):
    p = CATALOG["H100-SXM5-80GB"].mig.profile(profile)
    assert (p.compute_slices, p.memory_slices, p.max_instances, p.starts, p.size) == expected


def test_a30_table():
    mig = CATALOG["A30"].mig
    got = {
        p.name: (p.compute_slices, p.memory_slices, p.max_instances, p.starts, p.size)
        for p in mig.profiles
    }
    assert got == {
        "1g.6gb": (1, 1, 4, (0, 1, 2, 3), 1),
        "1g.6gb+me": (1, 1, 1, (0, 1, 2, 3), 1),
        "2g.12gb": (2, 2, 2, (0, 2), 2),
        "2g.12gb+me": (2, 2, 1, (0, 2), 2),
        "4g.24gb": (4, 4, 1, (0,), 4),
    }


def _disjoint_starts(profile: MigProfile) -> int:
    """How many instances of one profile fit side by side (greedy from slot 0)."""
    count, free_from = 0, 0
    for start in profile.starts:
        if start >= free_from:
            count, free_from = count + 1, start + profile.size
    return count


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.name)
def test_profile_geometry_is_consistent(model: GpuModel):
    mig = model.mig
    for profile in mig.profiles:
        assert profile.size == profile.memory_slices
        assert all(s >= 0 and s + profile.size <= mig.memory_slices for s in profile.starts)
        assert profile.media_extensions == profile.name.endswith("+me")
        if profile.media_extensions:
            assert profile.max_instances == 1
        else:  # "Number of Instances Available" follows from the placements
            assert profile.max_instances == _disjoint_starts(profile)
    assert mig.profile("no-such-profile") is None


def test_memory_sizes():
    expected = {
        "A100-SXM4-40GB": 40,
        "A30": 24,
        "H100-NVL-94GB": 94,
        "GH200-144GB": 144,
        "H200-NVL-141GB": 141,
        "B200": 180,
        "GB200": 186,
        "L40S": 48,
        "T4": 16,
    }
    assert {name: CATALOG[name].memory_gb for name in expected} == expected


def test_device_filters_use_the_mig_parted_form():
    assert CATALOG["H100-SXM5-80GB"].device_filters == ("0x233010DE",)
    assert CATALOG["A100-PCIe-40GB"].device_filters == ("0x20B110DE", "0x20F110DE")


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("H100-SXM5-80GB", "H100-SXM5-80GB"),
        ("0x2330", "H100-SXM5-80GB"),
        ("0x233010DE", "H100-SXM5-80GB"),
        ("0X233010de", "H100-SXM5-80GB"),
        (" 0x20f1 ", "A100-PCIe-40GB"),
        ("0x233b", "H200-NVL-141GB"),
        ("0x20B710DE", "A30"),
        ("0x26B9", "L40S"),
        ("NVIDIA-H100-80GB-HBM3", "H100-SXM5-80GB"),
        ("NVIDIA-A100-80GB-PCIe", "A100-PCIe-80GB"),
        ("NVIDIA-A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("nvidia-h100-nvl", "H100-NVL-94GB"),
        ("Tesla-T4", "T4"),
    ],
)
def test_lookup_aliases(alias, name):
    assert lookup(alias) is CATALOG[name]


@pytest.mark.parametrize("alias", ["H100", "h100-sxm5-80gb", "0x9999", "0x2330FFFF", "", "0x"])
def test_lookup_unknown(alias):
    assert lookup(alias) is None


def test_every_catalog_alias_resolves_to_its_model():
    for model in CATALOG.values():
        for alias in (model.name, *model.pci_ids, *model.device_filters, *model.product_labels):
            assert lookup(alias) is model


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("H100-SXM5-80G", "H100-SXM5-80GB"),
        ("h100-sxm5-80gb", "H100-SXM5-80GB"),
        ("H200-NVL-141G", "H200-NVL-141GB"),
        ("L40", "L40S"),
        ("A100-SXM4-40", "A100-SXM4-40GB"),
    ],
)
def test_closest(typo, suggestion):
    assert closest(typo) == suggestion


def test_closest_without_a_good_match():
    assert closest("quantum-accelerator") is None
