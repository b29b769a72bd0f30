"""The canonical YAML writer: what it writes reads back as the same data, in a stable form."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplan.writer.yamlout import dump
from tests import yamlout_reference
from tests.conftest import PROJECT

keys = st.text(min_size=1, max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=40)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(keys, values, max_size=6))
@settings(max_examples=300, deadline=None)
def test_round_trips_through_pyyaml_and_ruamel(body: dict) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": body}
    text = dump(obj)
    assert yaml.safe_load(text) == obj
    assert YAML(typ="safe", pure=True).load(text) == obj
    assert dump(yaml.safe_load(text)) == text  # canonical: a second pass changes nothing


def test_top_level_order_and_name_first() -> None:
    obj = {
        "spec": {"b": 1, "name": "web", "a": 2},
        "metadata": {"name": "m"},
        "kind": "K",
        "apiVersion": "v1",
    }
    assert (
        dump(obj)
        == "apiVersion: v1\nkind: K\nmetadata:\n  name: m\nspec:\n  name: web\n  a: 2\n  b: 1\n"
    )


def test_ambiguous_strings_are_quoted() -> None:
    text = dump(
        {
            "apiVersion": "v1",
            "kind": "K",
            "metadata": {"name": "x"},
            "data": {"a": "yes", "b": "8", "c": "1.33", "d": "null", "e": "on"},
        }
    )
    for quoted in ('"yes"', '"8"', '"1.33"', '"null"', '"on"'):
        assert quoted in text


def test_multiline_text_is_a_literal_block() -> None:
    text = dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x"},
            "data": {"config.yaml": "version: v1\nflags:\n  a: 1\n"},
        }
    )
    assert "config.yaml: |\n    version: v1\n    flags:\n      a: 1\n" in text


# The writer was made faster (memoised scalars, one list of lines): it must keep every byte.
odd_keys = (
    keys
    | st.sampled_from(["name", "apiVersion", "kind", "metadata", "", " a", "1", "~"])
    | st.integers(-2, 2)  # not text: written as their text, ordered by it (1 and "1" alike)
    | st.booleans()
    | st.none()
)
odd_scalars = (
    scalars
    | st.floats(allow_nan=False)
    | st.sampled_from(["a\nb\n", "a\n", "\n", " x\ny", "x \ny", "a\r\nb", "a\x85b\n", "yes", "8"])
    | st.text(st.sampled_from("ab \n\t#:-'\"\u2028\x7f"), max_size=12)
)
odd_values = st.recursive(
    odd_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_keys, inner, max_size=4),
    max_leaves=25,
)


@given(st.dictionaries(odd_keys, odd_values, max_size=6), st.sampled_from(["", "# h\n"]))
@settings(max_examples=300, deadline=None)
def test_same_bytes_as_the_reference_writer(obj: dict, header: str) -> None:
    assert dump(obj, header) == yamlout_reference.dump(obj, header)


def test_every_rendered_file_is_written_again_byte_for_byte() -> None:
    files = sorted(p for p in (PROJECT / "output").rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        text = path.read_text()
        body = text.split("\n")
        header = "".join(f"{line}\n" for line in body if line.startswith("#"))
        assert text.startswith(header)
        obj = yaml.safe_load(text)
        assert dump(obj, header) == text, path
        assert yamlout_reference.dump(obj, header) == text, path
