"""The Validator facade: one call per emitted object, short human problems back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

from gpuplan.validate.core import CoreSchemas, core_schemas, named, split_api_version
from gpuplan.validate.crds import LIST_MAP_KEYS, CrdIndex, CrdVersion
from gpuplan.validate.listmaps import (
    ListMapKeys,
    Trie,
    compile_unique,
    list_map_paths,
    outside,
    without,
)
from gpuplan.validate.messages import Problem, problems_of, show, type_name
from gpuplan.validate.nulls import drop_nulls, prune_nulls
from gpuplan.validate.objectmeta import meta_problems

MISSING_CRD = "missing-crd"
# False for every mapping (a builtin: one C call), for kinds no fast schema decides alone.
_UNDECIDED: Callable[[Any], bool] = callable


@dataclass(frozen=True, slots=True)
class _Plan:
    """How objects of one apiVersion and kind are validated when nothing is wrong with them."""

    fast: Any  # the kind's compiled schema also refusing nulls and unnamed objects (core.named)
    crd_version: CrdVersion | None  # the first candidate CRD version; None for a core kind
    cel: Any  # the CelRules of that CRD version, when it has rules to run (else None)
    webhook: Callable[[dict], list[Problem]] | None
    # Where the list-map lists are, when the fast schema leaves their keyword to the fast path.
    list_maps: Trie | None = None
    # A quick test that the webhook finds nothing, and the list-map lists left to check then.
    plain: Callable[[dict, bool], bool] | None = None
    plain_list_maps: Trie | None = None
    # The fast schema also refusing what the quick test then need not look at (see webhooks.Plain).
    gated: Any = None
    cluster: bool = False  # a cluster-scoped custom resource
    # Nothing but the fast schema and metadata to check (when no list-map list is there).
    schema_only: bool = False
    # The CEL proofs-only walk for objects the quick test passes: the rules it proves left out.
    cel_plain: Any = None
    api_version: str = ""
    # The top-level fields holding list-map lists the fast path checks (list_maps' first steps).
    list_roots: frozenset[str | int] = frozenset()
    list_root: str | None = None  # the one of them, when there is just one
    # unique_lists of list_maps and of plain_list_maps, as functions of the object.
    unique: Callable[[Any], bool] | None = None
    plain_unique: Callable[[Any], bool] | None = None
    # The gated schema specialised per shape, checking what the quick test would (shapes.Shapes).
    shapes: Any = None
    # fast.is_valid, when it decides alone: schema_only and no list-map list to check.
    decides: Callable[[Any], bool] | None = None
    cel_free: bool = False  # cel_plain proves nothing: the quick test and gate proved every rule
    # unique of plain_list_maps but the lists a shape's schema holds absent (shapes.Shapes).
    shaped_unique: Callable[[Any], bool] | None = None
    # An object a shape's schema accepts (with shapes.plain) is valid when its metadata is usual.
    shaped_alone: bool = False


@dataclass(frozen=True, slots=True)
class _Quick:
    """A plan's parts for its quick webhook test (see _Plan)."""

    gated: Any = None
    cel_plain: Any = None
    shapes: Any = None
    cel_free: bool = False


class Validator:
    """Validate emitted objects strictly: core kinds for one Kubernetes version, CRs by CRD.

    With ``crds=None`` custom resources are not checked; their (apiVersion, kind) are
    collected in ``skipped_kinds`` so the caller can say so once.

    ``cel=True`` also evaluates the CRDs' CEL rules (gpuplan.validate.cel; rules it
    cannot evaluate are listed in ``skipped_rules``); ``webhooks=True`` also applies the
    admission-webhook rules of Kueue (gpuplan.validate.webhooks), with or without CRDs.
    """

    def __init__(
        self,
        crds: CrdIndex | None,
        kubernetes_version: str,
        *,
        cel: bool = False,
        webhooks: bool = False,
        crds_label: str = "",
        kueue: str | None = None,
    ):
        self.crds = crds
        self.crds_label = (
            crds_label  # e.g. "kueue v0.14.4, nfd v0.19.0": named when a CRD is missing
        )
        self.core: CoreSchemas = core_schemas(kubernetes_version)
        self.kubernetes_version = self.core.version
        self.skipped_kinds: set[tuple[str, str]] = set()
        # CrdVersion hashes by identity (eq=False); the index keeps them alive.
        self._crd_compiled: dict[CrdVersion, Any] = {}
        self._cel: Any = None
        self._want_cel = cel  # the CEL package is imported on the first custom resource
        self.webhooks = webhooks
        self.kueue = kueue  # the Kueue release whose webhook rules apply (None: the newest)
        self._plans: dict[tuple[str, str] | None, _Plan] = {}
        # The plan of a kind planned under one apiVersion (else None), by kind.
        self._by_kind: dict[str, _Plan | None] = {}
        # By kind, the fast schema of its plan in _by_kind when that decides alone (_Plan.decides),
        # else _UNDECIDED: validate() makes one call before it looks further.
        self._decides: dict[str, Callable[[Any], bool]] = {}
        self._seen: set[tuple[str, str]] = set()  # kinds seen once: planned when seen again

    def _cel_evaluator(self) -> Any:
        if self._cel is None and self._want_cel:
            from gpuplan.validate.cel import CelEvaluator

            self._cel = CelEvaluator()
        return self._cel

    @property
    def skipped_rules(self) -> list[Any]:
        """The CEL rules (SkippedRule) that could not be evaluated so far; [] without cel."""
        return self._cel.skipped if self._cel is not None else []

    def validate(self, obj: Any) -> list[Problem]:
        """All problems of one object, sorted by path; [] when valid (or skipped).

        A kind seen before has a plan: when its fast schema accepts the object (valid, and no
        null for the API server to drop) and no CEL rule fails, only the cheap checks remain.
        Anything else takes the full path, which alone words the problems.
        """
        try:  # most kinds: the fast schema alone (it also requires its apiVersion)
            if self._decides[obj["kind"]](obj):
                return []
        except (KeyError, TypeError, IndexError, ValueError):  # no kind, none planned, not a
            pass  # mapping, an unhashable kind, not representable as JSON: see below
        return self._by_kind_plan(obj)

    def _by_kind_plan(self, obj: Any) -> list[Problem]:
        """validate() by the plan of the object's kind, or by its apiVersion and kind."""
        try:  # the kind alone first: the apiVersion is read once Rust has been through the object
            plan = self._by_kind[obj["kind"]]
        except KeyError:  # no kind, or none planned yet
            plan = None
        except (TypeError, IndexError):  # not a mapping, or an unhashable kind
            return self._validate(obj)
        if plan is not None and plan.decides is not None:  # (it refused): the full path words it
            return self._validate(obj)
        if plan is not None and plan.schema_only:  # the fast schema, with list-map lists
            try:
                valid = plan.fast.is_valid(obj)
            except (ValueError, TypeError):  # not representable as JSON: the full path says so
                valid = False
            # (The fast schema also requires a name, and no namespace of a cluster-scoped kind;
            # it accepts only mappings. The lists of list_maps are under list_root, if anywhere.)
            root = plan.list_root
            if (
                valid
                and obj.get("apiVersion") == plan.api_version
                and (root is None or root not in obj)
            ):
                return []
        elif plan is not None and type(obj) is dict and obj.get("apiVersion") == plan.api_version:
            try:  # an object of a shape with a schema of its own: that schema decides (shapes)
                shaped = plan.shapes.accepts(obj) if plan.shapes is not None else None
            except (ValueError, TypeError):  # not representable as JSON: the full path says so
                return self._validate(obj)
            if shaped and plan.shaped_alone and _usual_meta(obj, plan.cluster):
                return []
            found = self._planned(plan, obj, shaped)
            return self._validate(obj) if found is None else found
        return self._by_version(obj)

    def _by_version(self, obj: Any) -> list[Problem]:
        """validate() by the plan of the object's apiVersion and kind, or the full path."""
        try:  # a mapping with both keys (a plan's key is two strings)
            plan = self._plans.get((obj["apiVersion"], obj["kind"]))
        except (TypeError, KeyError, IndexError):
            plan = None
        if plan is None:
            return self._validate(obj)
        if not plan.schema_only or not obj.keys().isdisjoint(plan.list_roots):
            found = self._planned(plan, obj)
            return self._validate(obj) if found is None else found
        try:
            valid = plan.fast.is_valid(obj)
        except (ValueError, TypeError):  # not representable as JSON: the full path says so
            valid = False
        return [] if valid else self._validate(obj)

    def _planned(self, plan: _Plan, obj: dict, shaped: bool | None = None) -> list[Problem] | None:
        """The problems of an object its fast schema accepts; None when the full path must decide.

        ``shaped``: what plan.shapes.accepts(obj) said (None: the object's shape has no schema).
        """
        try:
            if shaped is not None:  # the gate, the quick test's names, the usual fields: one pass
                if shaped:
                    plain = True
                elif plan.fast.is_valid(obj):  # (as refused by the gate)
                    plain = False
                else:
                    return None
                unique = plan.shaped_unique if plain else plan.unique
            else:
                if plan.gated is not None and plan.gated.is_valid(obj):
                    plain = plan.plain is not None and plan.plain(obj, True)
                elif plan.fast.is_valid(obj):  # (refused by the gate: the webhook looks at it)
                    plain = plan.gated is None and plan.plain is not None and plan.plain(obj, False)
                else:
                    return None
                unique = plan.plain_unique if plain else plan.unique
            # Each list-map list distinct (unique_lists, written out per plan).
            if unique is not None and not unique(obj):
                return None
            # No null, so the object is its own pruned form.
            if plan.cel is not None and not (plain and plan.cel_free):
                walk = plan.cel_plain if plain else plan.cel.prove
                try:  # the rules' proofs alone, when the object needs no default (celwalk)
                    if walk is None or not plan.cel.prove_first:
                        raise LookupError
                    walk(obj)
                except Exception:  # noqa: BLE001 - not proven so: the evaluator decides
                    if not self._cel.passes(plan.cel, obj, plan.cel_plain if plain else None):
                        return None
        except (ValueError, TypeError):  # not representable as JSON: the full path says so
            return None
        problems = [] if _usual_meta(obj, plan.cluster) else self._meta_problems(plan, obj)
        if plan.webhook is not None and not plain:
            problems += plan.webhook(obj)
        return sorted(set(problems)) if problems else problems

    @staticmethod
    def _meta_problems(plan: _Plan, obj: dict) -> list[Problem]:
        """The metadata problems of an object its plan accepts (unnamed, or namespaced wrongly)."""
        problems = _metadata_problems(obj)
        if plan.crd_version is not None:
            problems += _scope_problems(obj, plan.crd_version)
        return sorted(set(problems)) if problems else problems

    def _plan(
        self,
        api_version: str,
        kind: str,
        compile_fast: Callable[..., tuple[Any, Trie | None]],
        crd_version: CrdVersion | None = None,
    ) -> None:
        """Remember how to validate this kind's objects fast (no plan when that cannot compile)."""
        try:
            fast, list_maps = compile_fast()
        except (ValueError, jsonschema_rs.ReferencingError):
            return
        cel = None
        if crd_version is not None and self._cel_evaluator() is not None:
            from gpuplan.validate.cel import compiled_rules

            cel = compiled_rules(crd_version)
            cel = cel if cel.root is not None else None
        webhook = plain = None
        plain_list_maps = list_maps
        quick = _Quick()
        if self.webhooks:
            from gpuplan.validate.webhooks import plain_for, webhook_for

            webhook = webhook_for(api_version, kind, self.kueue)
            found = plain_for(api_version, kind)
            if found is not None:
                plain = found.check
                plain_list_maps = without(list_maps, found.lists)
                quick = self._quick(api_version, kind, found, crd_version, cel, list_maps is None)
        schema_only = cel is None and webhook is None and plain is None
        shaped = quick.shapes is not None
        shaped_unique = (
            compile_unique(outside(plain_list_maps, quick.shapes.absent)) if shaped else None
        )
        steps = list(list_maps[1]) if list_maps is not None else []
        roots = frozenset(steps)
        top = list_maps is not None and not list_maps[0] and all(isinstance(r, str) for r in roots)
        if schema_only and roots and top:
            try:  # the fast schema alone decides objects without those fields (the usual ones)
                fast, _ = compile_fast(roots)
                alone = True
            except (ValueError, jsonschema_rs.ReferencingError):
                alone = False
        else:
            alone = not roots
        plan = _Plan(
            fast,
            crd_version,
            cel,
            webhook,
            list_maps,
            plain,
            plain_list_maps,
            quick.gated,
            crd_version is not None and crd_version.crd.scope == "Cluster",
            schema_only,
            quick.cel_plain,
            api_version,
            roots,
            steps[0] if len(steps) == 1 and isinstance(steps[0], str) else None,
            compile_unique(list_maps),
            compile_unique(plain_list_maps),
            quick.shapes,
            fast.is_valid if schema_only and alone else None,
            quick.cel_free,
            shaped_unique,
            quick.shapes is not None and shaped_unique is None and (cel is None or quick.cel_free),
        )
        self._plans[(api_version, kind)] = plan
        # Another apiVersion of the kind planned before: validate() looks plans up by both.
        simple = not plan.schema_only or not roots or plan.list_root is not None
        self._by_kind[kind] = plan if simple and kind not in self._by_kind else None
        if self._by_kind[kind] is plan:
            route = _shaped_decides(plan) if plan.shaped_alone else None
            self._decides[kind] = plan.decides or route or _UNDECIDED
        else:
            self._decides.pop(kind, None)

    def _quick(
        self,
        api_version: str,
        kind: str,
        found: Any,
        crd_version: CrdVersion | None,
        cel: Any,
        keyword: bool,
    ) -> _Quick:
        """The gate of a kind's quick webhook test (webhooks.Plain) and what its True proves.

        ``keyword``: the list-map keyword stays in the schemas (their lists have no plain paths).
        """
        rules = found.rules
        schema = found.gate(crd_version.json_schema) if crd_version is not None else None
        gated = shapes = None
        if schema is not None:
            schema = self.core.without_nulls({**schema, "type": "object"})
            proven = found.restate(schema, crd_version.schema) if crd_version else frozenset()
            try:
                gated = self._crd_validator(schema, keyword)
            except (ValueError, jsonschema_rs.ReferencingError):
                pass  # the ungated test looks at every resource itself
            else:  # (the quick test's True then comes with the gate's acceptance)
                from gpuplan.validate.shapes import shapes_for

                rules = rules | proven
                compile_shaped = lambda s: self._crd_validator(s, keyword)  # noqa: E731
                shapes = shapes_for(api_version, kind, schema, compile_shaped)
        cel_plain = cel.walk_assuming(rules) if cel is not None and rules else None
        from gpuplan.validate.celwalk import proves_nothing

        return _Quick(gated, cel_plain, shapes, proves_nothing(cel_plain))

    def _second_sight(self, api_version: str, kind: str) -> bool:
        """Whether a kind without a plan is seen the second time (one object is not worth one)."""
        key = (api_version, kind)
        if key in self._plans:
            return False
        if key in self._seen:
            return True
        self._seen.add(key)
        return False

    def _validate(self, obj: Any) -> list[Problem]:
        """All problems of one object, the full way."""
        if not isinstance(obj, dict):
            return [Problem("", f"must be an object (got {type_name(obj)})")]
        head = _head_problems(obj)
        if head:
            return head
        api_version, kind = obj["apiVersion"], obj["kind"]
        group, version = split_api_version(api_version)
        try:
            if self.crds is not None and (group, kind) in self.crds:
                obj = self._pruned(obj, group, version, kind)
                problems = self._validate_custom(obj, group, version, kind)
            elif self.core.has_kind(group, kind):
                obj = drop_nulls(obj)
                problems = self._validate_core(obj, group, version, kind) + _selector_problems(obj)
            elif self.crds is None and group not in self.core.groups:
                self.skipped_kinds.add((api_version, kind))
                return sorted(set(self._webhook_problems(obj)))
            elif group not in self.core.groups:
                return [self._missing_crd(api_version, kind)]
            else:
                return [Problem("", f"no schema for apiVersion {api_version} kind {kind}")]
        except (ValueError, TypeError) as exc:  # e.g. a non-string mapping key
            return [Problem("", f"not representable as JSON: {exc}")]
        return sorted(set(problems + _metadata_problems(obj) + self._webhook_problems(obj)))

    def _pruned(self, obj: dict, group: str, version: str, kind: str) -> dict:
        """The object as the API server validates it: nulls of non-nullable fields dropped."""
        candidates = self.crds.versions(group, version, kind) if self.crds is not None else []
        return prune_nulls(obj, candidates[0].schema) if candidates else obj

    def _missing_crd(self, api_version: str, kind: str) -> Problem:
        """The problem of a custom resource no known CRD defines: say how to supply one."""
        among = f" among the CRDs of {self.crds_label}" if self.crds_label else ""
        return Problem(
            "",
            f"no CustomResourceDefinition for kind {kind} (apiVersion "
            f"{api_version}){among}: give its CRD with --crds DIR or the "
            "GPUPLAN_CRDS environment variable",
            MISSING_CRD,
        )

    def _webhook_problems(self, obj: dict) -> list[Problem]:
        """The admission-webhook problems of one object, when asked for."""
        if not self.webhooks:
            return []
        from gpuplan.validate.webhooks import webhook_problems

        return webhook_problems(obj, self.kueue)

    def _validate_core(self, obj: dict, group: str, version: str, kind: str) -> list[Problem]:
        """Validate against the bundled core schema of this Kubernetes version."""
        compiled = self.core.validator(group, version, kind)
        if compiled is None:
            served = ", ".join(self.core.api_versions(group, kind))
            return [
                Problem(
                    "apiVersion",
                    f"apiVersion {obj['apiVersion']} is not served for "
                    f"kind {kind} in Kubernetes {self.kubernetes_version} "
                    f"(served: {served})",
                )
            ]
        # (Not a DeviceClass: its selectors' CEL is compiled in Python, _selector_problems.)
        if kind != "DeviceClass" and self._second_sight(obj["apiVersion"], kind):
            self._plan(
                obj["apiVersion"],
                kind,
                lambda *_: (self.core.fast_validator(group, version, kind), None),
            )
        return problems_of(compiled, obj)

    def _validate_custom(self, obj: dict, group: str, version: str, kind: str) -> list[Problem]:
        """Validate against the CRD(s): valid when at least one candidate CRD accepts it."""
        assert self.crds is not None
        candidates = self.crds.versions(group, version, kind)
        if not candidates:
            served = ", ".join(self.crds.served_versions(group, kind))
            return [
                Problem(
                    "apiVersion",
                    f"apiVersion {obj['apiVersion']} is not served by the "
                    f"{kind} CRD (served: {served})",
                )
            ]
        if self._second_sight(obj["apiVersion"], kind) and not isinstance(
            self._compile(candidates[0]), Problem
        ):
            self._plan(obj["apiVersion"], kind, self._fast_compiler(candidates[0]), candidates[0])
        first: list[Problem] | None = None
        for crd_version in candidates:
            compiled = self._compile(crd_version)
            problems = [compiled] if isinstance(compiled, Problem) else problems_of(compiled, obj)
            if self._cel_evaluator() is not None:
                problems += self._cel.validate(obj, crd_version)
            if not problems:
                return _scope_problems(obj, crd_version)
            first = problems if first is None else first
        return (first or []) + _scope_problems(obj, candidates[0])

    def _fast_compiler(self, crd_version: CrdVersion) -> Callable[..., tuple[Any, Trie | None]]:
        """Compile one CRD version's schema that also refuses nulls and unnamed objects, when called.

        Only mappings reach a plan, so the root is typed as one: untyped, it would be searched
        for nulls a second time, all the way down. Where the list-map lists have plain paths,
        the fast path checks them itself (returned beside the validator) and the schema leaves
        out their keyword: jsonschema_rs would convert each list back to Python to call it.
        Called with ``refused`` top-level fields, the schema also refuses those (where lists
        are: an object without them, such as one without a status, is then decided alone).
        """
        schema = {**crd_version.json_schema, "type": "object"}

        cluster = crd_version.crd.scope == "Cluster"  # (a namespace is refused too)
        # Required too (the CRD's schema only holds it to its text when there): validate() lets
        # the fast schema decide alone, the apiVersion included.
        api_version = crd_version.crd.api_group_version(crd_version.name)

        def compile_fast(refused: frozenset[str] = frozenset()) -> tuple[Any, Trie | None]:
            list_maps = list_map_paths(schema)
            fields = {**schema.get("properties", {}), **dict.fromkeys(refused, False)}
            fast = self._crd_validator(
                named(
                    self.core.without_nulls({**schema, "properties": fields}), cluster, api_version
                ),
                list_maps is None,
            )
            return fast, list_maps if list_maps != ([], {}) else None

        return compile_fast

    def _crd_validator(self, schema: dict[str, Any], list_maps: bool = True) -> Any:
        """Compile a custom resource's JSON Schema (ObjectMeta from the core registry)."""
        return jsonschema_rs.Draft202012Validator(
            schema,
            registry=self.core.registry,
            validate_formats=True,
            ignore_unknown_formats=True,
            keywords={LIST_MAP_KEYS: ListMapKeys} if list_maps else {},
        )

    def _compile(self, crd_version: CrdVersion) -> Any:
        """Compile one CRD version once; a schema the validator rejects becomes a Problem."""
        compiled = self._crd_compiled.get(crd_version)
        if compiled is None:
            try:
                compiled = self._crd_validator(crd_version.json_schema)
            except (ValueError, jsonschema_rs.ReferencingError) as exc:
                compiled = Problem(
                    "",
                    f"the {crd_version.crd.kind} CRD in "
                    f"{crd_version.crd.source} cannot be compiled: {exc}",
                )
            self._crd_compiled[crd_version] = compiled
        return compiled


def _shaped_decides(plan: _Plan) -> Callable[[Any], bool]:
    """validate()'s one call for a kind with shapes: True for an object its shape's schema
    decides valid alone (with the usual metadata). False says nothing; plan.shapes keeps the
    schema's verdict for the route that follows (_by_kind_plan)."""
    remember, cluster = plan.shapes.remember, plan.cluster

    def decides(obj: Any) -> bool:
        return bool(remember(obj)) and _usual_meta(obj, cluster)

    return decides


def _usual_meta(obj: dict, cluster: bool) -> bool:
    """The usual metadata: named, and namespaced only where it may be."""
    meta = obj.get("metadata")
    if type(meta) is not dict or not meta.get("name") or (cluster and meta.get("namespace")):
        return False
    return not meta_problems(obj)


def _head_problems(obj: dict) -> list[Problem]:
    """apiVersion and kind decide the schema, so they must be non-empty strings."""
    problems = []
    for name in ("apiVersion", "kind"):
        value = obj.get(name)
        if value is None:
            problems.append(Problem("", f'missing required field "{name}"'))
        elif not isinstance(value, str) or not value:
            problems.append(Problem(name, f"must be a non-empty string (got {show(value)})"))
    return problems


def _metadata_problems(obj: dict) -> list[Problem]:
    """The API server requires metadata.name or metadata.generateName."""
    meta = obj.get("metadata")
    if meta is None:
        return [Problem("", 'missing required field "metadata"')]
    if isinstance(meta, dict) and not meta.get("name") and not meta.get("generateName"):
        # kubectl create sends generateName and the API server picks the name.
        return [Problem("metadata", 'missing required field "name"')]
    return meta_problems(obj)


def _scope_problems(obj: dict, crd_version: CrdVersion) -> list[Problem]:
    """The API server silently drops metadata.namespace of cluster-scoped objects."""
    meta = obj.get("metadata")
    if crd_version.crd.scope == "Cluster" and isinstance(meta, dict) and meta.get("namespace"):
        return [
            Problem(
                "metadata.namespace", f"must not be set: {crd_version.crd.kind} is cluster-scoped"
            )
        ]
    return []


def _selector_problems(obj: dict) -> list[Problem]:
    """Return the Go-side problems of DRA objects: a DeviceClass's CEL selectors, a claim's device
    requests (the CEL package is loaded only for one)."""
    if obj.get("kind") == "DeviceClass":
        from gpuplan.validate.deviceclass import selector_problems

        return selector_problems(obj)
    if obj.get("kind") in ("ResourceClaim", "ResourceClaimTemplate"):
        from gpuplan.validate.claims import claim_problems

        return claim_problems(obj)
    return []
