"""Warnings accepted where they stand: `ignore: [{code, reason}]` on a cluster, pool, tenant or allocation.

An entry silences the warnings of its code reported inside the object that carries it (its file,
and a field path under the object's own). A silenced warning keeps its place in the findings with
the reason in `accepted`: `--format json` lists it, the text summary counts it, and `--strict`
passes over it. Errors are never silenced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from gpuplan.diagnostics import Diagnostic, Key, Severity, SourceFile, format_path
from gpuplan.model.common import Ignore
from gpuplan.plan.fleet import Fleet

UNUSED = "unused-ignore"
UNKNOWN = "unknown-code"


@dataclass(frozen=True)
class Rule:
    """One ignore entry: where it applies, what it silences, and where it is written."""

    source: SourceFile
    scope: str  # field path of the object carrying it ("" for a whole file)
    entry: Key  # the entry's own location, for its diagnostics
    ignore: Ignore

    def matches(self, found: Diagnostic) -> bool:
        """Tell whether this entry silences a finding."""
        if (
            found.severity is not Severity.WARNING
            or found.code != self.ignore.code
            or found.file != self.source.path
        ):
            return False
        return (
            not self.scope
            or found.path == self.scope
            or found.path.startswith((self.scope + ".", self.scope + "["))
        )


def _entries(source: SourceFile, base: Key, ignores: list[Ignore]) -> Iterator[Rule]:
    for index, item in enumerate(ignores):
        yield Rule(source, format_path(base), base + ("ignore", index), item)


def rules(fleet: Fleet) -> list[Rule]:
    """Return every ignore entry of the fleet's clusters, pools, tenants and allocations."""
    out: list[Rule] = []
    for name in sorted(fleet.clusters):
        located = fleet.clusters[name].located
        spec, source = located.model, located.source
        out += _entries(source, (), spec.ignore)
        for index, pool in enumerate(spec.node_pools):
            out += _entries(source, ("nodePools", index), pool.ignore)
        for index, cpu_pool in enumerate(spec.cpu_pools):
            out += _entries(source, ("cpuPools", index), cpu_pool.ignore)
    for name in sorted(fleet.tenants):
        located_tenant = fleet.tenants[name]
        out += _entries(located_tenant.source, (), located_tenant.model.ignore)
        for index, alloc in enumerate(located_tenant.model.allocations):
            out += _entries(located_tenant.source, ("allocations", index), alloc.ignore)
    return out


def accept(found: Iterable[Diagnostic], entries: list[Rule]) -> list[Diagnostic]:
    """Return the findings with every warning an entry matches marked accepted, with its reason."""
    out = []
    for item in found:
        rule = next((r for r in entries if r.matches(item)), None)
        out.append(
            item
            if rule is None or item.accepted is not None
            else replace(item, accepted=rule.ignore.reason)
        )
    return out


def unknown_codes(entries: list[Rule], known: set[str]) -> list[Diagnostic]:
    """Error on an entry naming no code gpuplan reports."""
    out = []
    for rule in entries:
        if rule.ignore.code not in known:
            message = f"{rule.ignore.code!r} is not a diagnostic code of gpuplan (codes are shown in [brackets] after each finding)"
            out.append(_at(rule, Severity.ERROR, message, UNKNOWN))
    return out


def unused(found: list[Diagnostic], entries: list[Rule], known: set[str]) -> list[Diagnostic]:
    """Warn on an entry that silences nothing any more (a stale entry)."""
    out = []
    for rule in entries:
        if rule.ignore.code in known and not any(rule.matches(d) for d in found):
            message = (
                f"no {rule.ignore.code} warning is reported here any more: remove this ignore entry"
            )
            out.append(_at(rule, Severity.WARNING, message, UNUSED))
    return out


def _at(rule: Rule, severity: Severity, message: str, code: str) -> Diagnostic:
    loc = rule.entry + ("code",)
    line, col = rule.source.position(loc)
    return Diagnostic(rule.source.path, line, col, severity, format_path(loc), message, code)
