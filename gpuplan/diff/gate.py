"""`--fail-on CODE|SEVERITY`: which findings fail a diff, so a repository can gate on them."""

from __future__ import annotations

from collections.abc import Iterable

from gpuplan.diff.kinds import CODES, SEVERITIES, Disruption


def parse_fail_on(values: Iterable[str]) -> tuple[set[str], list[str]]:
    """Return the codes and severities asked for (comma-separated or repeated), and the unknown ones."""
    wanted, unknown = set(), []
    for value in values:
        for item in (part.strip() for part in value.split(",")):
            if item in CODES or item in SEVERITIES:
                wanted.add(item)
            elif item:
                unknown.append(item)
    return wanted, unknown


def usage_hint() -> str:
    """Return the list of what --fail-on accepts."""
    return f"severities {', '.join(SEVERITIES)}; codes {', '.join(CODES)}"


def matching(found: list[Disruption], wanted: set[str]) -> list[Disruption]:
    """Return the findings whose code or severity is wanted."""
    return [d for d in found if d.code in wanted or d.severity in wanted]
