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
literals (int64, strings without escapes, true/false/null, lists), ``self`` and macro
variables, ``a.f``, ``a[i]``, ``has(a.f)``, ``!``, ``&&``, ``||``, ``?:``, ``==``/``!=`` on
two strings, ints, bools or nulls of the same type, ``<``/``<=``/``>``/``>=`` on two ints or
two strings, ``in`` a list or map, ``size``, ``int()`` of an int or a decimal text,
``startsWith``/``endsWith``/``contains`` on strings, ``matches`` of a literal regex of a subset
both engines read alike (_SAFE_REGEX) on a text without a line break, the string functions of
the Kubernetes library (TEXT_FUNCTIONS) and the macros ``all``, ``exists`` and ``filter``. Where CEL absorbs
an error (``false && <error>``, ``exists`` finding a true element), Python's short-circuit gives
the same result; where it does not, Python raises and the interpreter decides.
"""

from __future__ import annotations

import ast
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
# Library functions taking and giving strings (lists of them): called with strings only, they
# give here what the interpreter gets from the same Python function.
TEXT_FUNCTIONS = frozenset({"find", "findAll", "split", "lowerAscii", "upperAscii", "trim"})
_MACROS = ("all", "exists", "filter")
# Regexes Python's re reads as RE2 does (the API server's Go regexp, the cel interpreter's Rust
# regex) on a text without a line break: literals, classes of literals and ranges, ".", the
# anchors "^" and "$", groups, "|" and the quantifiers "*", "+" and "?". No escape, no "{", no
# ":" (POSIX classes such as [[:alpha:]]) and no "(?" (flags, named groups: checked apart).
_SAFE_REGEX = re.compile(r"[A-Za-z0-9 @_/=,.^$()|*+?\[\]-]*")
# ... and none of: "(?" (flags, groups of their own), a quantifier followed by "+" (Python 3.11
# reads a possessive quantifier, RE2 refuses the pattern: the rule then is an error, not a match).
_UNSAFE_PARTS = ("(?", "*+", "++", "?+")


class Unsure(Exception):
    """The rule is not proven to pass on this value: the interpreter decides."""


class Unsupported(ValueError):
    """A rule outside the subset: it is never compiled here."""


Proof = Callable[[Any], bool]


def compile_rule(
    source: str, functions: dict[str, Callable[..., Any]] | None = None
) -> Proof | None:
    """A function proving ``source`` holds for a value of ``self``; None outside the subset.

    ``functions`` are the Python functions the interpreter is given (gpuplan.validate.cel's
    Kubernetes library): those of TEXT_FUNCTIONS are called the same way here, on strings only.
    """
    known = {name: f for name, f in (functions or {}).items() if name in TEXT_FUNCTIONS}
    try:
        parser = _Parser(_tokens(source), known)
        code = parser.expression()
        parser.end()
    except Unsupported:
        return None
    namespace: dict[str, Any] = dict(_HELPERS)
    namespace.update({f"_fn_{name}": function for name, function in known.items()})
    namespace.update(parser.constants)
    # The code is built by _Parser from the rule's tokens: names it made, literals via repr.
    exec(f"def rule(v_self):\n    return {code.text}\n", namespace)
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


class _Code:
    """A Python expression and what it is known to evaluate to: "bool", "int", "str" or "any"."""

    def __init__(self, text: str, kind: str = "any"):
        self.text = text
        self.kind = kind
        self.texts: str | None = None  # a list literal of strings: the name of their set

    def boolean(self) -> str:
        """The expression, checked to be a bool unless it is known to be one."""
        return self.text if self.kind == "bool" else f"_bool({self.text})"


class _Parser:
    """Recursive descent over the subset, emitting one Python expression per CEL expression."""

    def __init__(self, tokens: list[tuple[str, str]], functions: dict[str, Any]):
        self.tokens = tokens
        self.functions = functions
        self.constants: dict[str, Any] = {}
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

    def expression(self) -> _Code:
        condition = self.disjunction()
        if self.peek() != "?":
            return condition
        self.take("?")
        then = self.expression()
        self.take(":")
        other = self.expression()
        kind = then.kind if then.kind == other.kind else "any"
        return _Code(f"({then.text} if {condition.boolean()} else {other.text})", kind)

    def disjunction(self) -> _Code:
        left = self.conjunction()
        while self.peek() == "||":
            self.take()
            left = _Code(f"({left.boolean()} or {self.conjunction().boolean()})", "bool")
        return left

    def conjunction(self) -> _Code:
        left = self.relation()
        while self.peek() == "&&":
            self.take()
            left = _Code(f"({left.boolean()} and {self.relation().boolean()})", "bool")
        return left

    def relation(self) -> _Code:
        left = self.unary()
        operator = self.peek()
        if operator not in _RELATIONS or self.kind() not in ("op", "ident"):
            return left
        self.take()
        right = self.unary()
        if self.peek() in _RELATIONS:
            raise Unsupported("chained relation")
        if operator in ("==", "!="):
            # Two ints or two strings known as such compare the Python way; else _eq checks.
            same = left.kind == right.kind and left.kind in ("int", "str")
            if same:
                equal = f"({left.text} == {right.text})"
            elif right.kind == "str":  # a text against a string: no look at the other's type
                equal = f"_eq_text({left.text}, {right.text})"
            elif left.kind == "str":
                equal = f"_eq_text({right.text}, {left.text})"
            else:
                equal = f"_eq({left.text}, {right.text})"
            return _Code(equal if operator == "==" else f"(not {equal})", "bool")
        if operator == "in" and right.texts is not None:
            return _Code(f"_in_texts({left.text}, {right.texts})", "bool")
        if operator == "in":
            return _Code(f"_in({left.text}, {right.text})", "bool")
        return _Code(f"_order({left.text}, {right.text}, {operator!r})", "bool")

    def unary(self) -> _Code:
        if self.peek() == "!":
            self.take()
            return _Code(f"(not {self.unary().boolean()})", "bool")
        return self.member(self.primary())

    def member(self, code: _Code) -> _Code:
        while self.peek() in (".", "["):
            if self.take() == "[":
                index = self.expression()
                self.take("]")
                code = _Code(f"_index({code.text}, {index.text})")
                continue
            if self.kind() != "ident":
                raise Unsupported("field name expected")
            name = self.take()
            if self.peek() != "(":
                code = _Code(f"_field({code.text}, {name!r})")
            elif name in _MACROS:
                code = self.macro(name, code)
            elif name == "size":
                self.take("(")
                self.take(")")
                code = _Code(f"_size({code.text})", "int")
            elif name == "matches":
                self.take("(")
                if self.kind() != "str":
                    raise Unsupported("matches() of a non-literal")
                pattern = self.take()[1:-1]
                self.take(")")
                code = _Code(f"_matches({code.text}, {self.regex(pattern)})", "bool")
            elif name in _STRING_METHODS:
                self.take("(")
                argument = self.expression()
                self.take(")")
                code = _Code(f"_text({code.text}, {name!r}, {argument.text})", "bool")
            elif name in self.functions:
                self.take("(")
                arguments = [code.text]
                while self.peek() != ")":
                    arguments.append(self.expression().text)
                    if self.peek() != ")":
                        self.take(",")
                self.take(")")
                code = _Code(f"_call(_fn_{name}, {', '.join(arguments)})")
            else:
                raise Unsupported(f"method {name}")
        return code

    def regex(self, pattern: str) -> str:
        """The name of the compiled ``pattern``, a regex of the subset both engines read alike."""
        if not _SAFE_REGEX.fullmatch(pattern) or any(p in pattern for p in _UNSAFE_PARTS):
            raise Unsupported("regex outside the subset")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise Unsupported("regex Python cannot compile") from exc
        name = f"_regex{len(self.constants)}"
        self.constants[name] = compiled
        return name

    def macro(self, name: str, target: _Code) -> _Code:
        """all/exists/filter, as a generator over the elements (no call per element)."""
        self.take("(")
        if self.kind() != "ident":
            raise Unsupported("macro variable expected")
        variable = self.take()
        self.take(",")
        self.scope.append(variable)
        body = self.expression().boolean()
        self.scope.pop()
        self.take(")")
        elements = f"v_{variable} in _elements({target.text})"
        if name == "all":
            return _Code(f"all({body} for {elements})", "bool")
        if name == "exists":
            return _Code(f"any({body} for {elements})", "bool")
        return _Code(f"[v_{variable} for {elements} if {body}]")

    def primary(self) -> _Code:
        kind, text = self.kind(), self.peek()
        if kind == "int":
            self.take()
            if int(text) > INT64[1]:
                raise Unsupported("int out of range")
            return _Code(str(int(text)), "int")
        if kind == "str":
            self.take()
            return _Code(repr(text[1:-1]), "str")
        if kind == "ident":
            return self.identifier()
        if text == "(":
            self.take()
            inner = self.expression()
            self.take(")")
            return _Code(f"({inner.text})", inner.kind)
        if text == "[":
            return self.list_literal()
        raise Unsupported(text or "end")

    def identifier(self) -> _Code:
        name = self.take()
        if name in ("true", "false"):
            return _Code(name.capitalize(), "bool")
        if name == "null":
            return _Code("None")
        if self.peek() != "(":
            if name not in self.scope:
                raise Unsupported(f"variable {name}")
            return _Code(f"v_{name}")
        self.take("(")
        if name == "has":
            field = self.member(self.primary()).text
            self.take(")")
            if not field.startswith("_field("):
                raise Unsupported("has() of a non-field")
            return _Code("_has(" + field.removeprefix("_field("), "bool")
        if name in ("size", "int"):
            argument = self.expression()
            self.take(")")
            return _Code(f"_{name}({argument.text})", "int")
        raise Unsupported(f"function {name}")

    def list_literal(self) -> _Code:
        self.take("[")
        items = []
        while self.peek() != "]":
            items.append(self.expression())
            if self.peek() != "]":
                self.take(",")
        self.take("]")
        code = _Code(f"[{', '.join(item.text for item in items)}]")
        if items and all(item.kind == "str" for item in items):
            # A list of string literals: `x in [...]` looks the string up in a set made once.
            try:
                texts = frozenset(ast.literal_eval(item.text) for item in items)
            except (ValueError, SyntaxError):  # a string made at run time (a ?: of literals)
                return code
            code.texts = f"_texts{len(self.constants)}"
            self.constants[code.texts] = texts
        return code


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


def _eq_text(value: Any, text: str) -> bool:
    """_eq(value, text) for a ``text`` known to be a string."""
    if type(value) is not str:
        raise Unsure("equality outside the subset")
    return value == text


def _order(left: Any, right: Any, operator: str) -> bool:
    kind = type(left)
    if kind is not type(right) or kind not in (str, int):
        raise Unsure("ordering outside the subset")
    if kind is int and not (INT64[0] <= left <= INT64[1] and INT64[0] <= right <= INT64[1]):
        raise Unsure("int out of range")  # the interpreter holds it as a uint or a double
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


def _in_texts(item: Any, texts: frozenset[str]) -> bool:
    if type(item) is not str:
        raise Unsure("in outside the subset")
    return item in texts


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


_DECIMAL = re.compile(r"-?[0-9]+")


def _int(value: Any) -> int:
    """int() of an int, or of a plain decimal text, within int64."""
    if type(value) is str and _DECIMAL.fullmatch(value):
        value = int(value)
    if type(value) is not int or not INT64[0] <= value <= INT64[1]:
        raise Unsure("int() outside the subset")
    return value


def _text(value: Any, method: str, argument: Any) -> bool:
    if type(value) is not str or type(argument) is not str:
        raise Unsure("string function outside the subset")
    if method == "startsWith":
        return value.startswith(argument)
    if method == "endsWith":
        return value.endswith(argument)
    return argument in value


def _matches(value: Any, pattern: re.Pattern[str]) -> bool:
    """CEL's matches() (a match anywhere) of a text without a line break: Python's ``$`` also
    matches before a final line break, RE2's does not."""
    if type(value) is not str or "\n" in value:
        raise Unsure("matches() outside the subset")
    return pattern.search(value) is not None


def _call(function: Callable[..., Any], *arguments: Any) -> Any:
    for argument in arguments:  # (a loop: no generator per call)
        if type(argument) is not str:
            raise Unsure("library function outside the subset")
    return function(*arguments)


def _elements(value: Any) -> Any:
    """What a macro ranges over: a list's items, a map's keys."""
    if type(value) is list or type(value) is dict:
        return value
    raise Unsure("macro over a non-collection")


_HELPERS: dict[str, Any] = {
    "_bool": _bool,
    "_eq": _eq,
    "_eq_text": _eq_text,
    "_order": _order,
    "_in": _in,
    "_in_texts": _in_texts,
    "_field": _field,
    "_has": _has,
    "_index": _index,
    "_size": _size,
    "_int": _int,
    "_text": _text,
    "_elements": _elements,
    "_call": _call,
    "_matches": _matches,
}
