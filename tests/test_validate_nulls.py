"""Null dropping before validation: the quick no-null check never changes what is validated."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuplan.validate.nulls import _drop, drop_nulls, has_nulls, prune_nulls

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string", "nullable": True}},
        }
    },
}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["null", "a null b"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_drop_nulls_equals_the_full_walk(value: object) -> None:
    assert drop_nulls(value) == _drop(value)


def test_a_string_null_is_kept_and_a_real_null_dropped() -> None:
    obj = {"metadata": {"name": "null", "labels": None}, "data": {"k": "null"}}
    assert has_nulls({"name": "null"})  # a false alarm: only the slow path
    assert not has_nulls({"name": "x", "n": [1, 2]})
    assert drop_nulls(obj) == {"metadata": {"name": "null"}, "data": {"k": "null"}}


def test_prune_keeps_nullable_fields_and_an_object_without_nulls_unchanged() -> None:
    obj = {"metadata": {"name": "q", "labels": None}, "spec": {"a": None, "b": None}}
    assert prune_nulls(obj, SCHEMA) == {"metadata": {"name": "q"}, "spec": {"b": None}}
    clean = {"metadata": {"name": "q"}, "spec": {"a": "x"}}
    assert prune_nulls(clean, SCHEMA) == clean


def _holds_null(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_null(v) for v in value)
    return False


@given(json_values)
def test_the_no_null_schema_refuses_exactly_the_values_holding_a_null(value: object) -> None:
    import jsonschema_rs

    from gpuplan.validate.core import core_schemas

    no_nulls = jsonschema_rs.Draft202012Validator(core_schemas("1.33").without_nulls({}))
    assert no_nulls.is_valid(value) is not _holds_null(value)
