"""The field diff of two objects walks mappings itself and leaves the rest to deepdiff: the leaves
it reports must be exactly deepdiff's, whatever the two objects are."""

from __future__ import annotations

from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import NotPresent
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.diff.objects import ABSENT, _leaves

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5]),
    st.sampled_from(["", "a", "b", "1", "a\nb: c\n"]),
)
KEYS = st.one_of(st.sampled_from(["a", "b", "c", "1", "__p"]), st.integers(0, 2))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


def _deepdiff(old: Any, new: Any) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """The leaves of deepdiff as gpuplan called it before walking mappings itself (its defaults)."""
    tree = DeepDiff(old, new, ignore_order=False, verbose_level=2, view="tree")
    return [
        (
            tuple(level.path(output_format="list")),
            ABSENT if isinstance(level.t1, NotPresent) else level.t1,
            ABSENT if isinstance(level.t2, NotPresent) else level.t2,
        )
        for levels in tree.values()
        for level in levels
    ]


def _canonical(leaves: list[tuple[tuple[Any, ...], Any, Any]]) -> list[str]:
    return sorted(repr(leaf) for leaf in leaves)


@settings(max_examples=400, deadline=None)
@given(old=VALUES, new=VALUES)
def test_the_leaves_are_deepdiffs(old: Any, new: Any) -> None:
    assert _canonical(_leaves(old, new, ())) == _canonical(_deepdiff(old, new))


@settings(max_examples=200, deadline=None)
@given(base=st.dictionaries(KEYS, VALUES, max_size=5), key=KEYS, value=VALUES)
def test_the_leaves_of_one_changed_field_are_deepdiffs(base: dict, key: Any, value: Any) -> None:
    """Mostly equal objects: the case the walk skips subtrees in (one field set or replaced)."""
    changed = {**base, key: value}
    assert _canonical(_leaves(base, changed, ())) == _canonical(_deepdiff(base, changed))


def test_numbers_of_another_type_and_keys_of_another_type_are_changes() -> None:
    for old, new in (({"a": 1}, {"a": 1.0}), ({"a": 1}, {"a": True}), ({1: "x"}, {"1": "x"})):
        assert _leaves(old, new, ()) and _canonical(_leaves(old, new, ())) == _canonical(
            _deepdiff(old, new)
        )
