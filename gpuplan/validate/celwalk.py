"""One Python function per CRD version proving all its CEL rules pass, for the usual object.

``CelRules._defaulted_walk`` without an output (proofs only) is a generic recursive walk: per
node it loops over the node's defaults, properties and children and checks each value's type,
whether the object needs it or not. For an object that already carries every default the
walk reached, it copies nothing, and what it does is fixed by the rule tree alone. This module
writes that walk out once per rule tree, as plain Python with the field names and proofs as
constants: the nodes under named fields inline, one function per node under a list or a map's
values, and nothing for a node with nothing to prove or require.

The function returns None when every rule is proven on the object as it is. It raises
``MissingDefault`` where a default the walk would apply is missing (then the generic walk,
which applies it, decides) and ``Unsure`` (or any other exception) where a proof does not hold
(then the full walk with the interpreter decides). So it proves exactly what the generic walk
proves on objects needing no default, and nothing on any other object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplan.validate.celfast import Unsure


class MissingDefault(Exception):
    """The walk would apply a schema default here: the generic walk decides."""


def _missing() -> None:
    raise MissingDefault


def _unproven() -> None:
    raise Unsure("not proven")


def compile_walk(
    root: Any, assumed: frozenset[tuple[str, str]] = frozenset()
) -> Callable[[Any], None] | None:
    """The proof walk of a rule tree as one generated function; None when it cannot be built.

    Every rule of the tree must have a proof. ``assumed``: rules (path pattern, rule text)
    whose proofs are left out, for objects a caller has proven them on by other means, on the
    object as the API server evaluates them (its defaults applied): with every rule assumed,
    the walk does nothing, not even require the defaults.
    """
    if not _unassumed(root, assumed):
        return _nothing  # (assumed rules hold on the defaulted object: no default matters)
    writer = _Writer(assumed)
    try:
        name = writer.function(root)
        namespace: dict[str, Any] = {
            "_missing": _missing,
            "_unproven": _unproven,
            **writer.constants,
        }
        # The code is written by _Writer: names it made, field names and defaults as constants.
        exec("\n".join(writer.lines), namespace)
    except (RecursionError, SyntaxError, MemoryError, _NoProof):
        return None
    if name is None:  # nothing to prove or to require anywhere
        return _nothing
    walk: Callable[[Any], None] = namespace[name]
    return walk


def _nothing(value: Any) -> None:
    """The walk of a tree whose rules are all assumed, or that proves and applies nothing."""


def proves_nothing(walk: Callable[[Any], None] | None) -> bool:
    """Whether a compile_walk walk has nothing to do (every rule assumed, or none to prove)."""
    return walk is _nothing


def _unassumed(node: Any, assumed: frozenset[tuple[str, str]]) -> bool:
    """Whether a rule of the tree under ``node`` is not among the ``assumed``."""
    if any((rule.rule.path_pattern, rule.rule.rule) not in assumed for rule in node.rules):
        return True
    children = [*node.props.values(), node.items, node.values]
    return any(_unassumed(child, assumed) for child in children if child is not None)


class _NoProof(Exception):
    """A rule of the tree has no proof: no walk of proofs alone."""


class _Writer:
    """Writes the walk: one function per node reached through a list or a map's values.

    A node reached through a named field is written inline in its parent's function, in a
    variable of its own depth, and a node with nothing to prove or require (its rules all
    assumed, no default, no such node below it) is not written at all.
    """

    def __init__(self, assumed: frozenset[tuple[str, str]]) -> None:
        self.assumed = assumed
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.functions = 0

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def function(self, node: Any) -> str | None:
        """Write the function of ``node`` (and the functions it calls first); None when empty."""
        body = self.body(node, "v0", 0)
        if not body:
            return None
        name = f"_n{self.functions}"
        self.functions += 1
        self.lines.append(f"def {name}(v0):")
        self.lines += [f"    {line}" for line in body]
        return name

    def body(self, node: Any, v: str, depth: int) -> list[str]:
        """The statements checking ``node`` on the value in variable ``v``; [] when none."""
        inner: list[str] = [
            f"if {v}.get({self.constant(d)}) is None: _missing()" for d in node.defaults
        ]
        x = f"v{depth + 1}"
        for key, child in node.props.items():
            lines = self.body(child, x, depth + 1)
            if lines:
                inner += [f"{x} = {v}.get({self.constant(key)})", f"if {x} is not None:"]
                inner += [f"    {line}" for line in lines]
        values = self.function(node.values) if node.values is not None else None
        if values is not None:
            inner += [f"for {x} in {v}.values():", f"    if {x} is not None: {values}({x})"]
        items = self.function(node.items) if node.items is not None else None
        body: list[str] = []
        if inner:
            body += [f"if isinstance({v}, dict):"] + [f"    {line}" for line in inner]
        if items is not None:
            body.append(f"{'elif' if inner else 'if'} isinstance({v}, list):")
            body += [f"    for {x} in {v}:", f"        if {x} is not None: {items}({x})"]
        for rule in node.rules:
            if (rule.rule.path_pattern, rule.rule.rule) in self.assumed:
                continue
            if rule.proof is None:
                raise _NoProof
            body.append(f"if {self.constant(rule.proof)}({v}) is not True: _unproven()")
        return body
