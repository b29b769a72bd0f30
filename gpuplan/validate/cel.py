"""Evaluate the CRDs' CEL rules (x-kubernetes-validations) offline, like the API server.

The expressions run on the ``cel`` package (PyPI ``common-expression-language``, a
binding of the Rust cel interpreter). Kubernetes adds libraries to standard CEL; the
functions below that the interpreter lacks are implemented here (see ``K8S_FUNCTIONS``).

How a rule is applied, following the API server on create:

- Each rule runs at its schema node with ``self`` bound to that node's value, for every
  element when the node is under an array (``items``) or a map
  (``additionalProperties``), and only when the value is present and not null.
- The object is defaulted first (schema ``default`` values), since the API server
  validates the defaulted object: ``self.reclaimWithinCohort == 'Never'`` holds for a
  ClusterQueue that leaves the field out.
- A rule returning false fails with its ``messageExpression`` (when it evaluates to a
  non-empty string), else its ``message``, else "failed rule: <rule>", at the node's
  field path (plus the rule's ``fieldPath`` when set).
- A data error while evaluating (no such key, index out of range, ``int("x")``, overflow)
  also fails the rule with its message: the API server reports those as Invalid too.
- Transition rules (those reading ``oldSelf``) only run on update, so they are not
  evaluated: gpuplan validates objects as if they were created.
- A rule that does not compile, calls a function not implemented here, does not return
  a boolean, or fails with a type error (which the API server's type checker would have
  caught, so it points at a gap here) is never silently passed: it becomes a
  ``SkippedRule``, reported once per (CRD version, rule).
"""

from __future__ import annotations

import copy
import functools
import itertools
import marshal
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuplan.validate.celfast import Proof, Unsure, compile_rule
from gpuplan.validate.celwalk import MissingDefault, compile_walk
from gpuplan.validate.crds import CelRule, CrdVersion
from gpuplan.validate.messages import Problem


def _import_cel() -> Any:
    """Import the `cel` package without its REPL.

    common-expression-language 0.10.0's cel/__init__.py runs `from . import cli`, which imports typer
    and prompt_toolkit: ~0.2-0.4 s of `gpuplan validate` start-up for a module we never call. A
    placeholder stands in for cel.cli during the import and is removed after, so a later real
    `import cel.cli` still works.
    """
    import sys
    import types

    if "cel" in sys.modules:
        return sys.modules["cel"]
    placeholder = "cel.cli" not in sys.modules
    if placeholder:
        sys.modules["cel.cli"] = types.ModuleType("cel.cli")
    try:
        import cel as module
    finally:
        if placeholder:
            del sys.modules["cel.cli"]
    if placeholder and "cli" in vars(module):
        del module.cli
    return module


cel = _import_cel()

# --- Kubernetes CEL libraries the Rust interpreter lacks ---------------------------------


def _find(text: str, pattern: str) -> str:
    """regex library: the first match of ``pattern`` in ``text``, or ""."""
    found = _regex(pattern).search(text)
    return found.group(0) if found else ""


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    """re.compile, kept per pattern: a rule's pattern is a literal, run on every label key."""
    return re.compile(pattern)


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """regex library: all matches of ``pattern`` (at most ``limit`` when >= 0)."""
    if limit == 0:
        return []
    matches = [m.group(0) for m in _regex(pattern).finditer(text)]
    return matches if limit < 0 else matches[:limit]


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    """strings library: split ``text`` at ``separator`` (into at most ``limit`` parts)."""
    if limit == 0:
        return []
    if separator == "":
        parts = list(text)
        return (
            parts if limit < 0 or limit >= len(parts) else [*parts[: limit - 1], text[limit - 1 :]]
        )
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _join(items: list[str], separator: str = "") -> str:
    """strings library: join a list of strings."""
    return separator.join(items)


def _is_sorted(items: list[Any]) -> bool:
    """lists library: whether a list is in ascending order."""
    return all(a <= b for a, b in itertools.pairwise(items))


def _ascii(convert: Callable[[str], str]) -> Callable[[str], str]:
    """strings library lowerAscii/upperAscii: change only ASCII letters."""
    return lambda text: "".join(convert(ch) if ch.isascii() else ch for ch in text)


K8S_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "find": _find,
    "findAll": _find_all,
    "split": _split,
    "join": _join,
    "isSorted": _is_sorted,
    "lowerAscii": _ascii(str.lower),
    "upperAscii": _ascii(str.upper),
    "trim": str.strip,
}
# Functions the interpreter has natively (checked by tests/test_validate_cel.py); the
# macros has/all/exists/exists_one/map/filter expand to operators and need no entry.
NATIVE_FUNCTIONS = frozenset(
    {
        "size",
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "int",
        "uint",
        "double",
        "string",
        "dyn",
        "type",
    }
)
_SUPPORTED = NATIVE_FUNCTIONS | frozenset(K8S_FUNCTIONS)
# Operators and macro internals appear in Program.functions() as _==_, _[_], @in, !_, -_
_OPERATOR = re.compile(r"^[_@!-]")
_DATA_ERRORS = (KeyError, IndexError, ZeroDivisionError, OverflowError, ValueError)
# Type mismatches the API server's type checker would have refused when the CRD was
# created, so here they point at a gap of this evaluator, not at the object.
_TYPE_ERROR_MARKERS = ("No such overload", "Undefined variable or function", ": TypeError:")
# Converting a value into the interpreter costs ~1.5 us per string (cel's conversion tries
# seven other types first), ~100x the rule itself: a CelEvaluator does not run a rule again on
# a value equal to one it passed on. It keeps at most this many values per rule.
PASSED_LIMIT = 4096
# CEL string literals: raw ones (no escapes), then the others; removed before looking for self.
_STRING_LITERAL = re.compile(
    r"""(?:[rR][bB]?|[bB][rR])('{3}|"{3}|'|").*?\1|[bB]?('{3}|"{3}|'|")(?:\\.|(?!\2).)*?\2""",
    re.S,
)
_SELF = re.compile(r"(?<![\w.])self\b")
_SELF_FIELD = re.compile(r"self\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()")


@dataclass(frozen=True, order=True)
class SkippedRule:
    """A CEL rule gpuplan could not evaluate, so its verdict is unknown."""

    source: str  # the CRD file
    api_version: str  # e.g. kueue.x-k8s.io/v1beta2
    kind: str
    path: str  # the rule's schema node, e.g. spec.resourceGroups[*]
    rule: str
    reason: str

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return (
            f"{self.kind} ({self.api_version}){where}: CEL rule not evaluated "
            f"({self.reason}): {self.rule}"
        )


@dataclass(eq=False)
class _Rule:
    """One compiled rule of a node."""

    rule: CelRule
    program: Any
    message_program: Any = None
    # The only fields of ``self`` the rule reads (None: it reads ``self`` as a whole).
    fields: tuple[str, ...] | None = None
    # The rule in plain Python, proving passes only (gpuplan.validate.celfast); None outside its subset.
    proof: Proof | None = None

    def key(self, value: Any) -> bytes | str:
        """What the rule's verdict on ``value`` depends on, as bytes (or text).

        A rule reads no variable but ``self`` (transition rules are never evaluated) and
        gpuplan's functions are pure, so equal keys give equal verdicts. ``marshal`` writes
        exactly what it reads back (1, 1.0, True and "1" differ, and so do mapping keys 1 and
        "1", which ``json.dumps`` merges) and is ~6x faster than ``repr``; ``repr``, one to one
        on the other values the interpreter accepts, covers what marshal refuses (subclasses).
        """
        if self.fields is not None and isinstance(value, dict):
            value = {name: value[name] for name in self.fields if name in value}
        try:
            return marshal.dumps(value)
        except ValueError:
            return repr(value)


class Passes:
    """The values of ``self`` each rule passed on, so that an equal value skips the interpreter."""

    def __init__(self) -> None:
        self._seen: dict[_Rule, set[bytes | str]] = {}

    def key(self, rule: _Rule, value: Any) -> tuple[set[bytes | str], bytes | str]:
        """The rule's passed values and the key of ``value``."""
        seen = self._seen.get(rule)
        if seen is None:
            seen = self._seen[rule] = set()
        return seen, rule.key(value)

    @staticmethod
    def remember(seen: set[bytes | str], key: bytes | str) -> None:
        """Remember a value the rule passed on (at most PASSED_LIMIT per rule, for --watch)."""
        if len(seen) >= PASSED_LIMIT:
            seen.clear()
        seen.add(key)


@dataclass
class _Node:
    """The part of a schema node that matters for CEL: rules, defaults, children."""

    rules: list[_Rule] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    props: dict[str, _Node] = field(default_factory=dict)
    items: _Node | None = None
    values: _Node | None = None  # additionalProperties
    proofs: list[Proof] = field(default_factory=list)  # the rules' Python forms, when all have one


# What a walk collects: problems, rules skipped on this object, and the evaluator's passes.
_Out = tuple[list[Problem], list[SkippedRule], "Passes | None"]


class CelRules:
    """The compiled CEL rules of one CRD version."""

    # When every rule has a proof, first try proving them all in one walk (no path, no
    # per-rule bookkeeping); the full walk runs when one is not proven.
    prove_first = True

    def __init__(self, crd_version: CrdVersion):
        crd = crd_version.crd
        self.source = str(crd.source)
        self.api_version = crd.api_group_version(crd_version.name)
        self.kind = crd.kind
        self.skipped: list[SkippedRule] = []  # found when compiling
        self.transition: list[CelRule] = []  # oldSelf rules: update only, not evaluated
        self.count = 0  # rules evaluated on create
        self.proven_only = True  # every rule has a proof in Python: no value needs converting
        self.root = self._build(crd_version.schema, "", under_rule=False)
        # Structural schemas never give a node both properties and additionalProperties; where
        # one does, defaults are applied to the whole object before any rule runs.
        self.fused = self.root is not None and not _props_and_values(self.root)
        # Every rule at once, as if one rule: it reads the fields the rule tree reaches (all of
        # the object when a rule sits at its root).
        top = None if self.root is None or self.root.rules else tuple(self.root.props)
        self.whole = _Rule(CelRule("", "<every rule>"), None, fields=top)
        # The proofs-only walk written out for this tree (gpuplan.validate.celwalk).
        self.prove = self.walk_assuming(frozenset())

    def walk_assuming(self, assumed: frozenset[tuple[str, str]]) -> Callable[[Any], None] | None:
        """The proofs-only walk (gpuplan.validate.celwalk) leaving out ``assumed`` rules' proofs.

        None when the rules cannot all be proven in one walk. Only for objects the ``assumed``
        rules (path pattern, rule text) are known to pass on, as the API server evaluates them
        (defaults applied): check(obj, prove=...) trusts it.
        """
        if self.root is None or not self.proven_only or not self.fused:
            return None
        return compile_walk(self.root, assumed)

    def check(
        self,
        obj: Any,
        passes: Passes | None = None,
        prove: Callable[[Any], None] | None = None,
    ) -> tuple[list[Problem], list[SkippedRule]]:
        """Problems of ``obj`` and the rules that could not be evaluated on it.

        With ``passes``, a rule is not run on a value equal to one it passed on before.
        ``prove``: a walk_assuming() walk to prove the rules with, instead of self.prove.
        """
        if self.root is None or not isinstance(obj, dict):
            return [], []
        if self.proven_only:  # proving costs less than a key
            passes = None
        if passes is not None:  # first the whole object: one key instead of one per node
            seen, key = passes.key(self.whole, obj)
            if key in seen:
                return [], []
        if self.proven_only and self.fused and self.prove_first:
            try:
                try:
                    walk = prove or self.prove
                    if walk is None:
                        raise MissingDefault
                    walk(obj)  # the objects needing no default
                except MissingDefault:
                    self._defaulted_walk(self.root, obj, "", None)
                return [], []
            except Exception:  # noqa: BLE001 - Unsure, or any surprise: no proof, the walk decides
                pass
        problems: list[Problem] = []
        skipped: list[SkippedRule] = []
        if self.fused:
            self._defaulted_walk(self.root, obj, "", (problems, skipped, passes))
        else:
            self._walk(self.root, _defaulted(self.root, obj), "", (problems, skipped, passes))
        if passes is not None and not problems and not skipped:
            passes.remember(seen, key)
        return problems, skipped

    # --- compiling ------------------------------------------------------------------

    def _build(self, schema: Any, path: str, under_rule: bool) -> _Node | None:
        """The rule tree under one schema node; None when nothing there matters."""
        if not isinstance(schema, dict):
            return None
        node = _Node()
        for raw in schema.get("x-kubernetes-validations") or []:
            self._add_rule(node, raw, path)
        under_rule = under_rule or bool(node.rules)
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and "default" in sub:
                node.defaults[name] = sub["default"]
            child = self._build(sub, f"{path}.{name}" if path else name, under_rule)
            if child is not None:
                node.props[name] = child
        node.items = self._build(schema.get("items"), f"{path}[*]", under_rule)
        node.values = self._build(schema.get("additionalProperties"), f"{path}[*]", under_rule)
        keep = node.rules or node.props or node.items or node.values
        return node if keep or (under_rule and node.defaults) else None

    def _add_rule(self, node: _Node, raw: Any, path: str) -> None:
        """Compile one x-kubernetes-validations entry into ``node`` (or skip it)."""
        raw = raw if isinstance(raw, dict) else {}
        rule = CelRule(
            path,
            str(raw.get("rule", "")),
            raw.get("message"),
            raw.get("messageExpression"),
            raw.get("fieldPath"),
            raw.get("reason"),
        )
        try:
            program = cel.compile(rule.rule)
        except (ValueError, RuntimeError) as exc:
            self._skip(rule, f"does not compile: {_first_line(exc)}")
            return
        if "oldSelf" in program.variables():
            if raw.get("optionalOldSelf"):
                self._skip(rule, "optionalOldSelf transition rules are not implemented")
            else:
                self.transition.append(rule)
            return
        missing = _unsupported(program)
        if missing:
            self._skip(rule, f"uses {', '.join(missing)}, not implemented in gpuplan")
            return
        message_program = None
        if rule.message_expression:
            try:
                message_program = cel.compile(rule.message_expression)
            except (ValueError, RuntimeError):
                message_program = None  # the API server falls back to message as well
        proof = compile_rule(rule.rule, K8S_FUNCTIONS)
        self.proven_only = self.proven_only and proof is not None
        node.rules.append(_Rule(rule, program, message_program, _self_fields(rule.rule), proof))
        if proof is not None:
            node.proofs.append(proof)
        self.count += 1

    def _skip(self, rule: CelRule, reason: str) -> SkippedRule:
        """Record a rule that cannot be evaluated."""
        skipped = SkippedRule(
            self.source, self.api_version, self.kind, rule.path_pattern, rule.rule, reason
        )
        self.skipped.append(skipped)
        return skipped

    # --- evaluating -----------------------------------------------------------------

    def _walk(self, node: _Node, value: Any, path: str, out: _Out) -> None:
        """Evaluate the rules of ``node`` on ``value``, then of its children."""
        if node.rules:
            self._run_rules(node.rules, value, path, out)
        if isinstance(value, dict):
            for name, child in node.props.items():
                if value.get(name) is not None:
                    self._walk(child, value[name], _join_path(path, name), out)
            if node.values is not None:
                for key, item in value.items():
                    if item is not None:
                        self._walk(node.values, item, f"{path}[{key}]", out)
        elif isinstance(value, list) and node.items is not None:
            for index, item in enumerate(value):
                if item is not None:
                    self._walk(node.items, item, f"{path}[{index}]", out)

    def _defaulted_walk(self, node: _Node, value: Any, path: str, out: _Out | None) -> Any:
        """_walk of ``_defaulted(node, value)`` in one pass; returns that defaulted value.

        Children first: a node's rules then see its value with every default below applied,
        as when the whole object is defaulted before any rule runs. Without ``out`` only the
        rules' proofs run (every rule has one), and a rule not proven raises.
        """
        if isinstance(value, dict):
            done = value
            for name, default in node.defaults.items():
                if done.get(name) is None:
                    done = dict(done) if done is value else done
                    done[name] = (
                        copy.deepcopy(default) if isinstance(default, (dict, list)) else default
                    )
            for name, child in node.props.items():
                item = done.get(name)
                if item is not None:
                    where = _join_path(path, name) if out else path
                    new = self._defaulted_walk(child, item, where, out)
                    if new is not item:
                        done = dict(done) if done is value else done
                        done[name] = new
            if node.values is not None:
                for key, item in list(done.items()):
                    if item is not None:
                        where = f"{path}[{key}]" if out else path
                        new = self._defaulted_walk(node.values, item, where, out)
                        if new is not item:
                            done = dict(done) if done is value else done
                            done[key] = new
            value = done
        elif isinstance(value, list) and node.items is not None:
            items = [
                item
                if item is None
                else self._defaulted_walk(node.items, item, f"{path}[{i}]" if out else path, out)
                for i, item in enumerate(value)
            ]
            if any(a is not b for a, b in zip(items, value)):
                value = items
        if out is None:
            for proof in node.proofs:
                if proof(value) is not True:
                    raise Unsure("not proven")
        elif node.rules:
            self._run_rules(node.rules, value, path, out)
        return value

    def _run_rules(self, rules: list[_Rule], value: Any, path: str, out: _Out) -> None:
        """Evaluate one node's rules on ``value``; the activation is built once, when needed."""
        problems, skipped, passes = out
        context = None
        for rule in rules:
            if rule.proof is not None and self._proven(rule, value):
                continue
            if passes is not None:
                seen, key = passes.key(rule, value)
                if key in seen:
                    continue
            if context is None:
                context = cel.Context(variables={"self": value}, functions=K8S_FUNCTIONS)
            if self._evaluate(rule, context, path, problems, skipped) and passes is not None:
                passes.remember(seen, key)

    @staticmethod
    def _proven(rule: _Rule, value: Any) -> bool:
        """Whether the rule's Python form proves it passes on ``value`` (else the interpreter decides)."""
        assert rule.proof is not None
        try:
            return rule.proof(value) is True
        except Exception:  # noqa: BLE001 - Unsure, or any surprise: no verdict, only no proof
            return False

    def _evaluate(
        self,
        rule: _Rule,
        context: Any,
        path: str,
        problems: list[Problem],
        skipped: list[SkippedRule],
    ) -> bool:
        """Run one rule and tell whether it passed; a false result or a data error is a Problem, a type error a skip."""
        try:
            result = rule.program.execute(context)
        except (TypeError, RuntimeError, *_DATA_ERRORS) as exc:
            if _type_error(exc):
                skipped.append(self._skipped_now(rule, f"evaluation failed: {_first_line(exc)}"))
            else:  # no such key, index out of range, "Function 'int' error: ..."
                problems.append(Problem(_rule_path(path, rule.rule), _message(rule, context)))
            return False
        if not isinstance(result, bool):
            skipped.append(
                self._skipped_now(rule, f"returned {type(result).__name__}, not a boolean")
            )
            return False
        if not result:
            problems.append(Problem(_rule_path(path, rule.rule), _message(rule, context)))
        return result

    def _skipped_now(self, rule: _Rule, reason: str) -> SkippedRule:
        """A SkippedRule found while evaluating one object."""
        return SkippedRule(
            self.source, self.api_version, self.kind, rule.rule.path_pattern, rule.rule.rule, reason
        )


def _unsupported(program: Any) -> list[str]:
    """Functions a compiled rule calls that neither the interpreter nor gpuplan provide."""
    names = [f for f in program.functions() if not _OPERATOR.match(f)]
    return sorted(f"{n}()" for n in set(names) - _SUPPORTED)


def _self_fields(source: str) -> tuple[str, ...] | None:
    """The fields of ``self`` a rule reads when it only ever reads ``self.<field>``, else None.

    ``self.a``, ``has(self.a)`` read field a alone; ``self.all(...)``, ``size(self)``,
    ``self['a']`` or ``self == x`` read ``self`` as a whole. A rule with a comment is not
    looked into (a quote in it would hide code).
    """
    if "//" in source:
        return None
    code = _STRING_LITERAL.sub(" 0 ", source)
    if "'" in code or '"' in code:
        return None
    fields = set()
    for found in _SELF.finditer(code):
        read = _SELF_FIELD.match(code, found.start())
        if read is None:
            return None
        fields.add(read.group(1))
    return tuple(sorted(fields))


def _type_error(exc: BaseException) -> bool:
    """Whether an evaluation error is a type mismatch rather than a data error."""
    text = str(exc)
    return any(marker in text for marker in _TYPE_ERROR_MARKERS)


def _message(rule: _Rule, context: Any) -> str:
    """The failure message: messageExpression, else message, else the rule text."""
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(context)
        except (TypeError, RuntimeError, *_DATA_ERRORS):
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return rule.rule.message or f"failed rule: {rule.rule.rule}"


def _rule_path(path: str, rule: CelRule) -> str:
    """The node path, extended by the rule's fieldPath (".a.b", ".a['b.c']", ".a[0]")."""
    extra = re.sub(r"\['([^']*)'\]", r"[\1]", (rule.field_path or "").strip())
    if not path:
        extra = extra.removeprefix(".")
    return path + extra


def _join_path(path: str, name: str) -> str:
    """Append a property to a field path."""
    return f"{path}.{name}" if path else name


def _first_line(exc: BaseException) -> str:
    """The first line of an error message, shortened."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _props_and_values(node: _Node) -> bool:
    """Whether a node of the rule tree has both properties and additionalProperties."""
    children = [*node.props.values(), node.items, node.values]
    if node.props and node.values is not None:
        return True
    return any(_props_and_values(child) for child in children if child is not None)


def _defaulted(node: _Node, value: Any) -> Any:
    """``value`` with the schema defaults under ``node`` applied (copied where changed)."""
    if isinstance(value, dict):
        out = value
        for name, default in node.defaults.items():
            if out.get(name) is None:
                out = dict(out) if out is value else out
                out[name] = copy.deepcopy(default) if isinstance(default, (dict, list)) else default
        for name, child in node.props.items():
            if out.get(name) is not None:
                new = _defaulted(child, out[name])
                if new is not out[name]:
                    out = dict(out) if out is value else out
                    out[name] = new
        if node.values is not None:
            for key, item in list(out.items()):
                new = _defaulted(node.values, item)
                if new is not item:
                    out = dict(out) if out is value else out
                    out[key] = new
        return out
    if isinstance(value, list) and node.items is not None:
        items = [_defaulted(node.items, item) for item in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value


def _defaults_tree(schema: Any) -> _Node | None:
    """Every schema ``default`` under one node (rules ignored); None when there is none.

    Unlike the CEL tree, which keeps defaults only where a rule can see them, this keeps
    all of them: it is what the API server applies to a whole object.
    """
    if not isinstance(schema, dict):
        return None
    node = _Node()
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict) and "default" in sub:
            node.defaults[name] = sub["default"]
        child = _defaults_tree(sub)
        if child is not None:
            node.props[name] = child
    node.items = _defaults_tree(schema.get("items"))
    node.values = _defaults_tree(schema.get("additionalProperties"))
    keep = node.defaults or node.props or node.items or node.values
    return node if keep else None


_DEFAULTS: weakref.WeakKeyDictionary[CrdVersion, _Node | None] = weakref.WeakKeyDictionary()


def apply_defaults(obj: Any, crd_version: CrdVersion) -> Any:
    """``obj`` as the API server stores it after structural defaulting with ``crd_version``.

    Applies every ``default`` of the version's schema the way the API server does on
    create and on read: a property that is missing (or null: gpuplan emits none) gets a copy of its
    default, and defaulting then continues inside it (so a defaulted object gets the
    defaults of its own properties), through objects, list items and map values.
    ``metadata`` is left alone (the API server allows no defaults there). ``obj`` is
    never modified: the result is a copy where something changed, else ``obj`` itself,
    so ``apply_defaults(obj, v) == obj`` says the object already carries every default.
    """
    if crd_version not in _DEFAULTS:
        root = _defaults_tree(crd_version.schema)
        if root is not None:
            root.defaults.pop("metadata", None)
            root.props.pop("metadata", None)
        _DEFAULTS[crd_version] = root
    root = _DEFAULTS[crd_version]
    return obj if root is None else _defaulted(root, obj)


_COMPILED: weakref.WeakKeyDictionary[CrdVersion, CelRules] = weakref.WeakKeyDictionary()


def compiled_rules(crd_version: CrdVersion) -> CelRules:
    """The CelRules of a CRD version, compiled once."""
    rules = _COMPILED.get(crd_version)
    if rules is None:
        rules = CelRules(crd_version)
        _COMPILED[crd_version] = rules
    return rules


class CelEvaluator:
    """Evaluate CEL rules of many objects; collects each skipped rule once."""

    def __init__(self) -> None:
        self._skipped: dict[tuple[str, str, str, str], SkippedRule] = {}
        self._passes = Passes()

    def validate(self, obj: Any, crd_version: CrdVersion) -> list[Problem]:
        """The CEL problems of one object against one CRD version, sorted."""
        rules = compiled_rules(crd_version)
        problems, skipped = rules.check(obj, self._passes)
        for item in [*rules.skipped, *skipped]:
            self._skipped.setdefault((item.source, item.api_version, item.path, item.rule), item)
        return sorted(set(problems))

    def passes(self, rules: CelRules, obj: Any, prove: Callable[[Any], None] | None = None) -> bool:
        """Whether ``obj`` fails none of ``rules`` (those of a version validate() has seen).

        ``prove``: a rules.walk_assuming() walk, for an object its assumed rules pass on.
        """
        problems, skipped = rules.check(obj, self._passes, prove)
        for item in skipped:
            self._skipped.setdefault((item.source, item.api_version, item.path, item.rule), item)
        return not problems

    @property
    def skipped(self) -> list[SkippedRule]:
        """Every rule that could not be evaluated so far, once each, sorted."""
        return sorted(self._skipped.values())


def check_cel(obj: Any, crd_version: CrdVersion) -> tuple[list[Problem], list[SkippedRule]]:
    """The CEL problems of one object and the rules of its CRD version that were skipped."""
    rules = compiled_rules(crd_version)
    problems, skipped = rules.check(obj)
    return sorted(set(problems)), sorted(set(rules.skipped + skipped))
