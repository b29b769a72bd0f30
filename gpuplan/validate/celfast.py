"""Prove simple CEL rules pass, in plain Python, before paying the interpreter's value conversion.

Handing a value to the `cel` binding converts it, string by string (~1 us each), which costs
~100x the rule itself: a ClusterQueue's spec is ~300 strings. Most CRD rules are small boolean
formulas over fields (``!has(self.x) || self.y == 'z'``, ``self.all(x, x != '')``), so this
module compiles such a rule, once, into a Python function over the object as it is.

The function only ever proves a pass. It returns True when the rule holds by CEL's semantics on
the subset below, and raises ``Unsure`` (or any other exception) for anything else: a false
result, a missing field, a type the subset does not compare, a value out of int64 range. The
caller then asks the real interpreter, which alone words failures and data errors, so verdicts and
messages are the interpreter's in every case but a proven pass.

The subset (anything else is not compiled, and the rule always goes to the interpreter):
literals (int64, strings without escapes, true/false/null, lists), ``self`` and macro variables,
``a.f``, ``a[i]``, ``has(a.f)``, ``!``, ``&&``, ``||``, ``?:``, ``==``/``!=`` on two strings, ints,
bools or nulls of the same type, ``<``/``<=``/``>``/``>=`` on two ints or two strings, ``in`` a list
or map, ``size``, ``startsWith``/``endsWith``/``contains`` on strings, and the macros ``all``,
``exists`` and ``filter``. Where CEL absorbs an error (``false && <error>``, ``exists`` finding a
true element), Python's short-circuit gives the same result; where it does not, Python raises
and the interpreter decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

INT64 = (-(2**63), 2**63 - 1)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<int>\d+)(?![\w.])
      | (?P<str>'[^'\\\n]*'|"[^"\\\n]*")
      | (?P<ident>[A-Za-z_]\w*)
      | (?P<op>==|!=|<=|>=|&&|\|\||[<>!?:.,()\[\]])
    )""",
    re.X,
)
_RELATIONS = ("==", "!=", "<", "<=", ">", ">=", "in")
_STRING_METHODS = ("startsWith", "endsWith", "contains")
_MACROS = ("all", "exists", "filter")


class Unsure(Exception):
    """The rule is not proven to pass on this value: the interpreter decides."""


class Unsupported(ValueError):
    """A rule outside the subset: it is never compiled here."""


Proof = Callable[[Any], bool]


def compile_rule(source: str) -> Proof | None:
    """A function proving ``source`` holds for a value of ``self``; None outside the subset."""
    try:
        tokens = _tokens(source)
        parser = _Parser(tokens)
        code = parser.expression()
        parser.end()
    except Unsupported:
        return None
    namespace: dict[str, Any] = dict(_HELPERS)
    exec(
        f"def rule(v_self):\n    return {code}\n", namespace
    )  # the code is built above, from tokens
    compiled: Proof = namespace["rule"]
    return compiled


def _tokens(source: str) -> list[tuple[str, str]]:
    """(kind, text) pairs of a rule; Unsupported for any character outside the subset."""
    out = []
    position = 0
    text = source.rstrip()
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None or found.end() == position:
            raise Unsupported(text[position:])
        kind = found.lastgroup or ""
        out.append((kind, found.group(kind)))
        position = found.end()
    return out


class _Parser:
    """Recursive descent over the subset, emitting one Python expression per CEL expression."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.at = 0
        self.scope: list[str] = ["self"]

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def kind(self) -> str:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        if self.at >= len(self.tokens):
            raise Unsupported("unexpected end")
        text = self.tokens[self.at][1]
        if expected is not None and text != expected:
            raise Unsupported(f"expected {expected}, got {text}")
        self.at += 1
        return text

    def end(self) -> None:
        if self.at != len(self.tokens):
            raise Unsupported(f"unexpected {self.peek()}")

    def expression(self) -> str:
        condition = self.disjunction()
        if self.peek() != "?":
            return condition
        self.take("?")
        then = self.expression()
        self.take(":")
        other = self.expression()
        return f"({then} if _bool({condition}) else {other})"

    def disjunction(self) -> str:
        left = self.conjunction()
        while self.peek() == "||":
            self.take()
            left = f"(_bool({left}) or _bool({self.conjunction()}))"
        return left

    def conjunction(self) -> str:
        left = self.relation()
        while self.peek() == "&&":
            self.take()
            left = f"(_bool({left}) and _bool({self.relation()}))"
        return left

    def relation(self) -> str:
        left = self.unary()
        operator = self.peek()
        if operator not in _RELATIONS or self.kind() not in ("op", "ident"):
            return left
        self.take()
        right = self.unary()
        if self.peek() in _RELATIONS:
            raise Unsupported("chained relation")
        if operator == "==":
            return f"_eq({left}, {right})"
        if operator == "!=":
            return f"(not _eq({left}, {right}))"
        if operator == "in":
            return f"_in({left}, {right})"
        return f"_order({left}, {right}, {operator!r})"

    def unary(self) -> str:
        if self.peek() == "!":
            self.take()
            return f"(not _bool({self.unary()}))"
        return self.member(self.primary())

    def member(self, code: str) -> str:
        while self.peek() in (".", "["):
            if self.take() == "[":
                index = self.expression()
                self.take("]")
                code = f"_index({code}, {index})"
                continue
            if self.kind() != "ident":
                raise Unsupported("field name expected")
            name = self.take()
            if self.peek() != "(":
                code = f"_field({code}, {name!r})"
            elif name in _MACROS:
                code = self.macro(name, code)
            elif name == "size":
                self.take("(")
                self.take(")")
                code = f"_size({code})"
            elif name in _STRING_METHODS:
                self.take("(")
                argument = self.expression()
                self.take(")")
                code = f"_text({code}, {name!r}, {argument})"
            else:
                raise Unsupported(f"method {name}")
        return code

    def macro(self, name: str, target: str) -> str:
        self.take("(")
        if self.kind() != "ident":
            raise Unsupported("macro variable expected")
        variable = self.take()
        self.take(",")
        self.scope.append(variable)
        body = self.expression()
        self.scope.pop()
        self.take(")")
        return f"_{name}({target}, lambda v_{variable}: {body})"

    def primary(self) -> str:
        kind, text = self.kind(), self.peek()
        if kind == "int":
            self.take()
            if int(text) > INT64[1]:
                raise Unsupported("int out of range")
            return str(int(text))
        if kind == "str":
            self.take()
            return repr(text[1:-1])
        if kind == "ident":
            return self.identifier()
        if text == "(":
            self.take()
            inner = self.expression()
            self.take(")")
            return inner
        if text == "[":
            return self.list_literal()
        raise Unsupported(text or "end")

    def identifier(self) -> str:
        name = self.take()
        if name in ("true", "false", "null"):
            return {"true": "True", "false": "False", "null": "None"}[name]
        if self.peek() != "(":
            if name not in self.scope:
                raise Unsupported(f"variable {name}")
            return f"v_{name}"
        self.take("(")
        if name == "has":
            argument = self.member(self.primary())
            self.take(")")
            if not argument.startswith("_field("):
                raise Unsupported("has() of a non-field")
            return "_has(" + argument.removeprefix("_field(")
        if name == "size":
            argument = self.expression()
            self.take(")")
            return f"_size({argument})"
        raise Unsupported(f"function {name}")

    def list_literal(self) -> str:
        self.take("[")
        items = []
        while self.peek() != "]":
            items.append(self.expression())
            if self.peek() != "]":
                self.take(",")
        self.take("]")
        return f"[{', '.join(items)}]"


# --- what the compiled code calls: CEL semantics, or Unsure ---------------------------------

_SCALARS = (str, int, bool, type(None))


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise Unsure("not a bool")
    return value


def _eq(left: Any, right: Any) -> bool:
    kind = type(left)
    if kind is not type(right) or kind not in _SCALARS:
        raise Unsure("equality outside the subset")
    if kind is int and not INT64[0] <= left <= INT64[1]:
        raise Unsure("int out of range")
    return bool(left == right)


def _order(left: Any, right: Any, operator: str) -> bool:
    kind = type(left)
    if kind is not type(right) or kind not in (str, int):
        raise Unsure("ordering outside the subset")
    if operator == "<":
        return bool(left < right)
    if operator == "<=":
        return bool(left <= right)
    if operator == ">":
        return bool(left > right)
    return bool(left >= right)


def _in(item: Any, collection: Any) -> bool:
    if type(collection) is dict:
        if type(item) is not str:
            raise Unsure("map key outside the subset")
        return item in collection
    if type(collection) is not list:
        raise Unsure("in outside the subset")
    return any(_eq(item, element) for element in collection)


def _field(value: Any, name: str) -> Any:
    if type(value) is not dict or name not in value:
        raise Unsure("no such field")
    return value[name]


def _has(value: Any, name: str) -> bool:
    if type(value) is not dict:
        raise Unsure("has() on a non-map")
    return name in value


def _index(value: Any, key: Any) -> Any:
    if type(value) is list and type(key) is int and 0 <= key < len(value):
        return value[key]
    if type(value) is dict and type(key) is str and key in value:
        return value[key]
    raise Unsure("index outside the subset")


def _size(value: Any) -> int:
    kind = type(value)
    if kind is list or kind is dict or (kind is str and value.isascii()):
        return len(value)
    raise Unsure("size() outside the subset")  # the cel binding counts a string's UTF-8 bytes


def _text(value: Any, method: str, argument: Any) -> bool:
    if type(value) is not str or type(argument) is not str:
        raise Unsure("string function outside the subset")
    if method == "startsWith":
        return value.startswith(argument)
    if method == "endsWith":
        return value.endswith(argument)
    return argument in value


def _elements(value: Any) -> Any:
    """What a macro ranges over: a list's items, a map's keys."""
    if type(value) is list or type(value) is dict:
        return value
    raise Unsure("macro over a non-collection")


def _all(value: Any, predicate: Callable[[Any], Any]) -> bool:
    return all(_bool(predicate(element)) for element in _elements(value))


def _exists(value: Any, predicate: Callable[[Any], Any]) -> bool:
    return any(_bool(predicate(element)) for element in _elements(value))


def _filter(value: Any, predicate: Callable[[Any], Any]) -> list:
    return [element for element in _elements(value) if _bool(predicate(element))]


_HELPERS: dict[str, Any] = {
    "_bool": _bool,
    "_eq": _eq,
    "_order": _order,
    "_in": _in,
    "_field": _field,
    "_has": _has,
    "_index": _index,
    "_size": _size,
    "_text": _text,
    "_all": _all,
    "_exists": _exists,
    "_filter": _filter,
}
