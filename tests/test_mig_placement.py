"""MIG placement: NVIDIA's own layouts place, impossible layouts fail for the right reason."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest

from gpuplan.gpus import (
    CATALOG,
    REASONS,
    GpuModel,
    MigGeometry,
    MigProfile,
    config_name,
    instances_per_gpu,
    layout_text,
    nvidia_layouts,
    place,
)

MIG_MODELS = [model for model in CATALOG.values() if model.mig is not None]
H100 = CATALOG["H100-SXM5-80GB"]
A100_40 = CATALOG["A100-SXM4-40GB"]
A30 = CATALOG["A30"]
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def _assert_valid_slots(model: GpuModel, layout: dict[str, int], slots) -> None:
    """Slots cover the layout exactly, use allowed starts, and never overlap."""
    assert Counter(name for name, _ in slots) == Counter(instances_per_gpu(layout))
    used: set[int] = set()
    for name, start in slots:
        profile = model.mig.profile(name)
        assert start in profile.starts
        cells = set(range(start, start + profile.size))
        assert not cells & used
        assert max(cells) < model.mig.memory_slices
        used |= cells


# --- NVIDIA's named layouts --------------------------------------------------------------


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.name)
def test_every_nvidia_layout_places(model):
    layouts = nvidia_layouts(model)
    assert len(layouts) == len(model.mig.profiles) + 1
    for name, layout in layouts.items():
        result = place(model, layout)
        assert result.ok, (name, result.message)
        assert result.reason == "" and result.message == ""
        _assert_valid_slots(model, layout, result.slots)


def test_nvidia_layout_names_write_plus_as_dot():
    layouts = nvidia_layouts(H100)
    assert layouts["all-1g.10gb"] == {"1g.10gb": 7}
    assert layouts["all-1g.10gb.me"] == {"1g.10gb+me": 1}
    assert layouts["all-1g.20gb"] == {"1g.20gb": 4}
    assert layouts["all-7g.80gb"] == {"7g.80gb": 1}
    assert nvidia_layouts(A100_40)["all-1g.10gb"] == {"1g.10gb": 4}  # x4 on the 40GB group
    assert nvidia_layouts(A30)["all-2g.12gb.me"] == {"2g.12gb+me": 1}


@pytest.mark.parametrize(
    ("name", "balanced"),
    [  # facts/mig.md: the all-balanced entries of gpu-operator v26.7.0 / mig-manager
        ("A30", {"1g.6gb": 2, "2g.12gb": 1}),
        ("A100-SXM4-40GB", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        ("H100-SXM5-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        ("GH200-144GB", {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
        ("B200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
        ("GB200", {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}),
    ],
)
def test_all_balanced_matches_the_facts(name, balanced):
    assert nvidia_layouts(CATALOG[name])["all-balanced"] == balanced


def test_non_mig_models_have_no_nvidia_layouts():
    assert nvidia_layouts(CATALOG["L40S"]) == {}


# --- impossible layouts --------------------------------------------------------------------

IMPOSSIBLE = [
    # the "all-balanced" from popular blog guides: 9 compute slices
    (
        "H100-SXM5-80GB",
        {"1g.10gb": 2, "2g.20gb": 2, "3g.40gb": 1},
        "compute",
        "2x1g.10gb + 2x2g.20gb + 1x3g.40gb cannot be placed on one H100-SXM5-80GB"
        " (9 of 7 compute slices)",
    ),
    # compute 6 <= 7, but memory 4 + 3x2 = 10
    (
        "H100-SXM5-80GB",
        {"3g.40gb": 1, "1g.20gb": 3},
        "memory",
        "3x1g.20gb + 1x3g.40gb cannot be placed on one H100-SXM5-80GB (10 of 8 memory slices)",
    ),
    # memory 8 <= 8, but compute 4 + 2x2 = 8
    ("H100-SXM5-80GB", {"4g.40gb": 1, "2g.20gb": 2}, "compute", "(8 of 7 compute slices)"),
    # compute 7, memory 9
    ("A100-SXM4-80GB", {"3g.40gb": 2, "1g.10gb": 1}, "memory", "(9 of 8 memory slices)"),
    # A100-40GB trap: 1g.10gb is two memory slices (the UG table says 1/8): 4x2 + 2 = 10
    ("A100-SXM4-40GB", {"1g.10gb": 4, "2g.10gb": 1}, "memory", "(10 of 8 memory slices)"),
    ("A100-PCIe-40GB", {"1g.10gb": 3, "3g.20gb": 1}, "memory", "(10 of 8 memory slices)"),
    # two +me instances
    ("H100-SXM5-80GB", {"1g.10gb+me": 2}, "me", "(at most one +me instance per GPU)"),
    ("A30", {"1g.6gb+me": 1, "2g.12gb+me": 1}, "me", "(at most one +me instance per GPU)"),
    (
        "A30",
        {"2g.12gb+me": 2},
        "me",
        "2x2g.12gb+me cannot be placed on one A30 (at most one +me instance per GPU)",
    ),
    (
        "A30",
        {"2g.12gb": 1, "1g.6gb": 3},
        "compute",
        "3x1g.6gb + 1x2g.12gb cannot be placed on one A30 (5 of 4 compute slices)",
    ),
    ("H100-SXM5-80GB", {"1g.10gb": 8}, "compute", "(8 of 7 compute slices)"),
    ("H100-SXM5-80GB", {"7g.80gb": 2}, "compute", "(14 of 7 compute slices)"),
    ("H200-141GB", {"7g.141gb": 1, "1g.18gb": 1}, "compute", "(8 of 7 compute slices)"),
    # a profile from another model: names follow the memory size
    (
        "H100-SXM5-80GB",
        {"1g.12gb": 1},
        "unknown-profile",
        "profile 1g.12gb does not exist on H100-SXM5-80GB; it has 1g.10gb, 1g.10gb+me,"
        " 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
    ),
    ("H100-NVL-94GB", {"1g.10gb": 7}, "unknown-profile", "it has 1g.12gb, 1g.12gb+me"),
    ("GB200", {"2g.45gb": 1}, "unknown-profile", "profile 2g.45gb does not exist on GB200"),
    (
        "H100-SXM5-80GB",
        {"2g.10gb": 1, "1g.5gb": 1},
        "unknown-profile",
        "profiles 1g.5gb, 2g.10gb do not exist on H100-SXM5-80GB",
    ),
    ("L40S", {"1g.10gb": 1}, "no-mig", "L40S does not support MIG"),
    ("H100-SXM5-80GB", {"1g.10gb": -1}, "count", "count of 1g.10gb"),
    ("H100-SXM5-80GB", {"1g.10gb": 1.5}, "count", "count of 1g.10gb"),
    ("H100-SXM5-80GB", {"1g.10gb": True}, "count", "count of 1g.10gb"),
    ("H100-SXM5-80GB", {}, "empty", "no instances"),
    ("H100-SXM5-80GB", {"1g.10gb": 0, "3g.40gb": 0}, "empty", "no instances"),
]


@pytest.mark.parametrize(("name", "layout", "reason", "message"), IMPOSSIBLE)
def test_impossible_layouts_are_rejected_with_the_reason(name, layout, reason, message):
    result = place(CATALOG[name], layout)
    assert not result.ok
    assert result.slots == ()
    assert result.reason == reason
    assert reason in REASONS
    assert message in result.message
    assert "\n" not in result.message


def test_the_blog_balanced_message_is_exact():
    result = place(H100, {"3g.40gb": 1, "2g.20gb": 2, "1g.10gb": 2})
    assert result.message == (
        "2x1g.10gb + 2x2g.20gb + 1x3g.40gb cannot be placed on one H100-SXM5-80GB"
        " (9 of 7 compute slices)"
    )


# --- valid layouts -------------------------------------------------------------------------

VALID = [
    ("H100-SXM5-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("H100-SXM5-80GB", {"4g.40gb": 1, "3g.40gb": 1}),  # valid since R510 (facts/mig.md)
    ("H100-SXM5-80GB", {"1g.20gb": 1, "1g.10gb": 6}),  # 1g.20gb must take slots 6-7
    ("H100-SXM5-80GB", {"1g.10gb+me": 1, "1g.10gb": 6}),
    ("H100-SXM5-80GB", {"2g.20gb": 3, "1g.20gb": 1}),
    ("H100-SXM5-80GB", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}),
    ("A100-SXM4-40GB", {"1g.10gb": 1, "2g.10gb": 3}),
    ("A100-SXM4-40GB", {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}),  # UG -cgi 9,19,14,19
    ("A100-SXM4-40GB", {"2g.10gb": 1, "1g.5gb": 5}),  # UG -cgi 14,19,19,19,19,19
    ("A30", {"2g.12gb+me": 1, "1g.6gb": 2}),
    ("A30", {"1g.6gb+me": 1, "1g.6gb": 3}),
    ("H100-SXM5-80GB", {"1g.10gb": 7, "2g.20gb": 0}),  # a 0 count is ignored
]


@pytest.mark.parametrize(("name", "layout"), VALID)
def test_valid_layouts_place(name, layout):
    model = CATALOG[name]
    result = place(model, layout)
    assert result.ok, result.message
    _assert_valid_slots(model, layout, result.slots)
    assert list(result.slots) == sorted(result.slots, key=lambda slot: (slot[1], slot[0]))
    assert place(model, dict(reversed(list(layout.items())))) == result  # deterministic


# --- placement is decided by start slots, not arithmetic -----------------------------------


def _packings(mig: MigGeometry) -> set[tuple[tuple[str, int], ...]]:
    """Every multiset of profiles with non-overlapping allowed placements (brute force)."""
    found: set[tuple[tuple[str, int], ...]] = set()

    def walk(slot: int, taken: tuple[str, ...]) -> None:
        if slot >= mig.memory_slices:
            found.add(tuple(sorted(Counter(taken).items())))
            return
        walk(slot + 1, taken)  # leave this memory slice empty
        for p in mig.profiles:
            if slot in p.starts and slot + p.size <= mig.memory_slices:
                walk(slot + p.size, (*taken, p.name))

    walk(0, ())
    return found


def _shape(model: GpuModel) -> tuple:
    """A model's MIG geometry without the profile names."""
    mig = model.mig
    return (
        mig.compute_slices,
        mig.memory_slices,
        tuple(
            (
                p.compute_slices,
                p.memory_slices,
                p.max_instances,
                p.starts,
                p.size,
                p.media_extensions,
            )
            for p in mig.profiles
        ),
    )


def test_every_seven_slot_model_has_the_h100_shape():
    """So the exhaustive check below on A100-40GB, H100 and A30 covers every model."""
    for model in MIG_MODELS:
        assert _shape(model) == _shape(A30 if model is A30 else H100), model.name


@pytest.mark.parametrize("model", [A100_40, H100, A30], ids=lambda m: m.name)
def test_place_agrees_with_brute_force_over_every_layout(model):
    """place() accepts exactly the placeable layouts (at most one +me, counts <= max).

    With NVIDIA's published start slots no layout fits both totals yet fails to place:
    the start sets already keep compute within the GPU (facts/mig.md), so on catalog
    models the 'placement' reason never fires; the synthetic test below covers it.
    """
    mig = model.mig
    packings = _packings(mig)
    for packing in packings:
        assert sum(mig.profile(n).compute_slices * c for n, c in packing) <= mig.compute_slices
    reasons = Counter()
    ranges = [range(p.max_instances + 2) for p in mig.profiles]
    for counts in itertools.product(*ranges):
        layout = {p.name: c for p, c in zip(mig.profiles, counts) if c}
        if not layout:
            continue
        me = sum(c for n, c in layout.items() if n.endswith("+me"))
        within_max = all(c <= mig.profile(n).max_instances for n, c in layout.items())
        expected = tuple(sorted(layout.items())) in packings and me <= 1 and within_max
        result = place(model, layout)
        assert result.ok == expected, (layout, result)
        reasons[result.reason] += 1
    assert reasons["placement"] == 0
    assert reasons[""] > 0 and reasons["compute"] > 0
    if mig.memory_slices > mig.compute_slices:
        assert reasons["memory"] > 0


def _synthetic() -> GpuModel:
    """A made-up GPU whose start slots, not its totals, forbid some layouts."""
    profiles = (
        MigProfile("1g.10gb", 1, 1, 8, tuple(range(8)), 1),
        MigProfile("2g.20gb", 2, 2, 2, (2, 4), 2),
        MigProfile("3g.30gb", 3, 3, 2, (0, 3), 3),
        MigProfile("4g.40gb", 4, 4, 2, (0, 4), 4),
    )
    return GpuModel("Test-GPU", ("0xFFFF",), (), 80, MigGeometry(8, 8, profiles))


@pytest.mark.parametrize(
    "layout",
    [
        {"3g.30gb": 1, "2g.20gb": 2},  # 3g at 0 or 3 always hits a 2g at {2,4}
        {"4g.40gb": 1, "2g.20gb": 2},  # 8 of 8 slices, but a 2g at {2,4} always hits the 4g
    ],
)
def test_placement_reason_when_totals_fit_but_starts_conflict(layout):
    result = place(_synthetic(), layout)
    assert result.reason == "placement"
    assert "no non-overlapping start slots" in result.message
    assert result.message.startswith(f"{layout_text(layout)} cannot be placed on one Test-GPU (")


def test_synthetic_layouts_that_do_fit():
    assert place(_synthetic(), {"4g.40gb": 2}).slots == (("4g.40gb", 0), ("4g.40gb", 4))
    assert place(_synthetic(), {"3g.30gb": 1, "2g.20gb": 1, "1g.10gb": 3}).ok


def test_count_above_the_profile_max():
    model = _synthetic()
    capped = MigProfile("1g.10gb", 1, 1, 2, tuple(range(8)), 1)
    mig = MigGeometry(8, 8, (capped, *model.mig.profiles[1:]))
    result = place(GpuModel("Test-GPU", (), (), 80, mig), {"1g.10gb": 3})
    assert result.reason == "count"
    assert result.message.endswith("(at most 2 x 1g.10gb per GPU)")


# --- layout text and config names ----------------------------------------------------------


def test_layout_text_is_canonical():
    assert layout_text({"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 1}) == (
        "2x1g.10gb + 1x2g.20gb + 1x3g.40gb"
    )
    assert layout_text({"1g.20gb": 1, "1g.10gb+me": 1, "1g.10gb": 5, "7g.80gb": 0}) == (
        "5x1g.10gb + 1x1g.10gb+me + 1x1g.20gb"
    )
    assert layout_text({"1g.5gb": 1, "1g.10gb": 1}) == "1x1g.5gb + 1x1g.10gb"
    assert layout_text({}) == ""


def test_instances_per_gpu_drops_zero_counts():
    assert instances_per_gpu({"2g.20gb": 0, "1g.10gb": 3}) == {"1g.10gb": 3}


@pytest.mark.parametrize(
    ("layout", "name"),
    [
        ({"1g.10gb": 7}, "gpuplan-7x1g.10gb"),
        ({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}, "gpuplan-2x1g.10gb-1x2g.20gb-1x3g.40gb"),
        ({"1g.10gb+me": 1, "1g.10gb": 6}, "gpuplan-6x1g.10gb-1x1g.10gb.me"),
        ({"3g.40gb": 2, "1g.10gb": 0}, "gpuplan-2x3g.40gb"),
    ],
)
def test_config_names(layout, name):
    assert config_name(layout) == name


def test_config_names_are_label_values_for_every_nvidia_layout():
    seen: dict[str, str] = {}
    for model in MIG_MODELS:
        for layout in nvidia_layouts(model).values():
            name = config_name(layout)
            assert LABEL_VALUE.match(name), name
            assert not name.startswith("all-")
            assert seen.setdefault(name, layout_text(layout)) == layout_text(layout)


def test_long_config_names_are_shortened_with_a_hash():
    layout = {
        "1g.23gb": 1,
        "1g.23gb+me": 1,
        "1g.47gb": 1,
        "2g.47gb": 1,
        "3g.93gb": 1,
        "4g.93gb": 1,
        "7g.186gb": 1,
    }
    name = config_name(layout)
    assert LABEL_VALUE.match(name) and len(name) <= 63
    assert name.startswith("gpuplan-1x1g.23gb-")
    assert re.search(r"-[0-9a-f]{8}$", name)
    assert config_name(dict(reversed(list(layout.items())))) == name
    assert config_name({**layout, "7g.186gb": 2}) != name


def test_unsafe_characters_never_reach_the_name():
    name = config_name({"1g.24gb+me,gfx": 1})
    assert LABEL_VALUE.match(name)
    assert name != config_name({"1g.24gb+me.gfx": 1})
