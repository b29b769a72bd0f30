"""The libyaml fast path of the loader reads every document exactly as ruamel's round trip does.

gpuplan.inputs.yamlevents builds the data and positions from libyaml's events and declines whatever it
does not know to read the same way; load.parse then falls back to ruamel. These tests hold the
two paths to the same data (types and a float's source text included), the same position of
every key and value, and the same diagnostics, on generated YAML text of many shapes and styles.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml.error import YAMLWarning

from benchmarks.synth import write_fleet
from gpuplan.inputs import load, yamlevents
from gpuplan.inputs.load import MAX_DEPTH, MAX_NODES, SourceFloat
from tests.conftest import PROJECT


def _canon(value: Any) -> Any:
    """Return the value with every type spelled out (True is not 1, 1.30 is not 1.3)."""
    if isinstance(value, dict):
        return ("map", [(type(k).__name__, k, _canon(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_canon(v) for v in value])
    if isinstance(value, SourceFloat):
        return ("float", repr(float(value)), value.text)
    return (type(value).__name__, value)


def _slow(text: str) -> tuple[Any, list[str]]:
    source, problems = load._parse_slow("f.yaml", text)
    return _seen(source, problems)


def _seen(source: Any, problems: list[Any]) -> tuple[Any, list[str]]:
    if source is None:
        return None, [d.text() for d in problems]
    return (_canon(source.data), source.values, source.keys), []


def _agree(text: str) -> bool:
    """Assert both paths read `text` the same; return whether the fast path took it."""
    with warnings.catch_warnings():  # ruamel warns of YAML 1.1 floats such as 1e3 (%YAML 1.1)
        warnings.simplefilter("ignore", YAMLWarning)
        return _agree_quietly(text)


def _agree_quietly(text: str) -> bool:
    built = yamlevents.build(text, MAX_NODES, MAX_DEPTH)
    slow = _slow(text)
    if built is not None:
        data, values, keys = built
        assert slow == ((_canon(data), values, keys), []), text
    assert _seen(*load.parse("f.yaml", text.encode())) == slow, text
    return built is not None


# Plain scalars chosen where YAML 1.1 and 1.2, or ruamel and libyaml, could read them apart:
# those the fast path reads itself, and those it leaves to ruamel.
FAST = [
    "a", "pool-00", "group:t000-admins", "1g.10gb", "nvidia.com/gpu", "x y z", "yes", "no", "on",
    "off", "y", "n", "true", "False", "TRUE", "null", "Null", "~", "0", "1", "-1", "+5", "1.30",
    "-1.5", "+1.", "1.", "a:b", "http://x/y", "a#b", "-a", "?x", "1.2.3", "v1.30", "12:30",
    "1:20:30", "3.14159265358979", "123456789012345678901234567890",
]  # fmt: skip
EXOTIC = [
    "012", "0o17", "0x1F", "0b101", "1_000", ".5", "1e3", "1.5e-3", ".inf", "-.Inf", ".nan",
    "2024-01-01", "2024-01-01T10:00:00Z", "2024-1-1 10:00:00", "<<", "=",
]  # fmt: skip
PLAIN = FAST + EXOTIC
QUOTABLE = st.text(
    st.characters(
        codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\ufeff"
    ),
    max_size=12,
)
KEYS = ["name", "a", "b", "c", "pool", "gpus", "on", "yes", "x y", "k-1", "d.e/f"]
ODD_KEYS = ["1", "null", "true", "2024-01-01"]  # not text: the fast path leaves them to ruamel


def draw_key(draw: Any) -> str:
    """Return a mapping key: text, now and then one that is not."""
    return draw(st.sampled_from(ODD_KEYS if draw(st.integers(0, 29)) == 0 else KEYS))


@st.composite
def scalar(draw: Any, indent: int, inline: bool = True) -> str:
    """Return one scalar's text: plain, quoted, or (after a key or dash) a block scalar."""
    style = draw(st.sampled_from(["plain", "plain", "single", "double", "block", "empty"]))
    if style == "plain":
        return draw(st.sampled_from(EXOTIC if draw(st.integers(0, 19)) == 0 else FAST))
    if style == "empty":
        return ""
    text = draw(QUOTABLE)
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "double":
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + escaped + draw(st.sampled_from(["", "\\t", "\\n", "\\u00e9", "\\/"])) + '"'
    if not inline:
        return draw(st.sampled_from(FAST))
    lines = draw(st.lists(st.sampled_from(["one", "two words", "", "  more"]), min_size=1))
    if next(line for line in lines + ["x"] if line).startswith(" "):
        lines.insert(0, "first")  # the first line with text sets the block's indentation
    head = draw(st.sampled_from(["|", "|-", "|+", ">", ">-", ">+"]))
    pad = " " * (indent + 2)
    return head + "".join(f"\n{pad}{line}" if line else "\n" for line in lines)


def flow(draw: Any, depth: int) -> str:
    """Return a flow collection, a scalar inside when deep enough."""
    kind = draw(st.sampled_from(["map", "seq", "scalar"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        return draw(scalar(0, inline=False)) or "x"
    if kind == "seq":
        items = draw(st.lists(st.integers(0, 9), max_size=3))
        return "[" + ", ".join(flow(draw, depth + 1) for _ in items) + "]"
    keys = [draw_key(draw) for _ in range(draw(st.integers(0, 3)))]
    return "{" + ", ".join(f"{k}: {flow(draw, depth + 1)}" for k in keys) + "}"


def block(draw: Any, indent: int, depth: int, mapping: bool) -> list[str]:
    """Return the lines of a block mapping or sequence at `indent`."""
    pad = " " * indent
    lines: list[str] = []
    keys = [draw_key(draw) for _ in range(draw(st.integers(1, 4)))]
    if draw(st.integers(0, 9)):
        keys = list(dict.fromkeys(keys))  # mostly without duplicates
    for key in keys:
        head = f"{pad}{key}:" if mapping else f"{pad}-"
        kind = draw(st.sampled_from(["scalar", "scalar", "flow", "map", "seq", "comment"]))
        if depth >= 4 and kind in ("map", "seq"):
            kind = "scalar"
        if kind == "comment":
            lines.append(f"{pad}# a comment")
            kind = "scalar"
        if kind == "scalar":
            value = draw(scalar(indent))
            lines.append(f"{head} {value}".rstrip(" ") if value else head)
        elif kind == "flow":
            lines.append(f"{head} {flow(draw, 0)}")
        else:
            step = draw(st.sampled_from([0, 2, 4] if mapping and kind == "seq" else [2, 3]))
            lines.append(head)
            lines += block(draw, indent + step, depth + 1, kind == "map")
    return lines


@st.composite
def documents(draw: Any) -> str:
    """Return a YAML text, mostly valid, sometimes with what the fast path must decline."""
    lines = block(draw, 0, 0, True)
    if draw(st.booleans()):
        lines.insert(0, draw(st.sampled_from(["---", "# header", "%YAML 1.1\n---", "--- # c"])))
    twist = draw(
        st.sampled_from(
            ["", "", "", "", "anchor", "tag", "tab", "second", "end", "merge", "dup", "nel"]
        )
    )
    extra = {
        "anchor": ["z: &x 1", "w: *x"],
        "tag": ["z: !!str 12"],
        "tab": ["z:\t1"],
        "second": ["---", "a: 2"],
        "end": ["..."],
        "merge": ["m: {k: 1}", "n:", "  <<: {k: 2}"],
        "dup": ["z: 1", "z: 2"],
        "nel": ["z: a\x85b"],
    }.get(twist, [])
    return "\n".join(lines + extra) + draw(st.sampled_from(["\n", "", "\n\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_fast_path_reads_as_ruamel_does(text: str) -> None:
    _agree(text)


def test_example_and_benchmark_fleets_take_the_fast_path(tmp_path: Path) -> None:
    root = write_fleet(tmp_path / "fleet", 2, 3, 4)
    files = [
        *sorted((PROJECT / "clusters").glob("*.yaml")),
        *sorted((PROJECT / "tenants").glob("*.yaml")),
        *sorted((root / "clusters").glob("*.yaml")),
        *sorted((root / "tenants").glob("*.yaml")),
    ]
    assert len(files) > 10
    for path in files:
        assert _agree(path.read_text()), path


def test_every_scalar_of_the_vocabulary_reads_alike() -> None:
    taken = [word for word in PLAIN if _agree(f"k: {word}\nl: [{word}]\n")]
    # text, null, booleans, decimal integers and plain floats are read fast; the rest by ruamel
    assert taken == FAST


def test_floats_keep_their_source_text() -> None:
    built = yamlevents.build("a: 1.30\nb: -0.50\nc: +2.\n", MAX_NODES, MAX_DEPTH)
    assert built is not None
    assert [v.text for v in built[0].values()] == ["1.30", "-0.50", "2"]
    assert built[0]["a"] == 1.3


def test_duplicate_keys_are_refused_where_the_second_stands() -> None:
    for text, where in (
        ("a: 1\nb:\n  c: 1\n  c: 2\n", "f.yaml:4:3"),
        ("a: {x: 1, y: 2, x: 3}\n", "f.yaml:1:17"),
        ("- skipped\n", None),
    ):
        assert yamlevents.build(text, MAX_NODES, MAX_DEPTH) is None
        source, problems = load.parse("f.yaml", text.encode())
        assert source is None
        if where is None:
            assert problems[0].message == "expected a mapping at the top of the file"
            continue
        assert problems[0].text().startswith(f"{where}: error: YAML syntax: duplicate key"), (
            problems[0].text()
        )
        assert _seen(source, problems) == _slow(text)


def test_positions_of_keys_values_and_items() -> None:
    text = "a:\n  b: 1\n  c:\n  d:\n    - x\n    - {e: 2}\nf: [1, 2]\n"
    built = yamlevents.build(text, MAX_NODES, MAX_DEPTH)
    assert built is not None
    _, values, keys = built
    assert keys[("a", "b")] == (2, 3) and values[("a", "b")] == (2, 6)
    assert values[("a", "c")] == keys[("a", "c")] == (3, 3)  # empty: the key's position
    assert values[("a", "d", 1)] == (6, 7) and values[("a", "d", 1, "e")] == (6, 11)
    assert values[("f", 1)] == (7, 8)
