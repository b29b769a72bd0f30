"""Findings with a source position, and how they are shown to people and to CI."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel


class Severity(str, Enum):
    """How bad a finding is: errors fail a run, warnings fail it only with --strict."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding, pointing at the input (or output) that causes it."""

    file: str
    line: int
    col: int
    severity: Severity
    path: str
    message: str
    code: str = ""
    """Stable name of the finding's kind, such as `pool-capacity` (what `ignore` entries name)."""
    accepted: str | None = None
    """The reason a warning was silenced where it stands (an `ignore` entry), or None."""

    def text(self) -> str:
        """Return the compiler-style line `file:line:col: error: path: message [code]`."""
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        what = f"{self.path}: {self.message}" if self.path else self.message
        return f"{where}: {self.severity.value}: {what}{f' [{self.code}]' if self.code else ''}"

    def github(self) -> str:
        """Return the finding as a GitHub Actions workflow command, its code after the message."""
        what = f"{self.path}: {self.message}" if self.path else self.message
        what += f" [{self.code}]" if self.code else ""
        what = what.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        # a property value also escapes ":" and "," (actions/toolkit packages/core/src/command.ts,
        # escapeProperty); a finding about a whole file has no line, so it names none
        file = self.file.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        file = file.replace(":", "%3A").replace(",", "%2C")
        where = f"file={file},line={self.line},col={self.col}" if self.line else f"file={file}"
        return f"::{self.severity.value} {where}::{what}"


def error(file: str, line: int, col: int, path: str, message: str) -> Diagnostic:
    """Return an error finding."""
    return Diagnostic(file, line, col, Severity.ERROR, path, message)


def warning(file: str, line: int, col: int, path: str, message: str) -> Diagnostic:
    """Return a warning finding."""
    return Diagnostic(file, line, col, Severity.WARNING, path, message)


def has_errors(diagnostics: Iterable[Diagnostic], strict: bool = False) -> bool:
    """Tell whether these findings fail a run (an accepted warning never does)."""
    return any(d.severity is Severity.ERROR or (strict and d.accepted is None) for d in diagnostics)


def with_code(diagnostics: Iterable[Diagnostic], code: str) -> list[Diagnostic]:
    """Return the findings, giving `code` to those that have none yet."""
    return [
        d
        if d.code
        else Diagnostic(d.file, d.line, d.col, d.severity, d.path, d.message, code, d.accepted)
        for d in diagnostics
    ]


def ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Return the findings without repeats, by file, position, then severity."""
    return sorted(
        set(diagnostics),
        key=lambda d: (
            d.file,
            d.line,
            d.col,
            d.severity,
            d.path,
            d.message,
            d.code,
            d.accepted or "",
        ),
    )


def summary(diagnostics: Sequence[Diagnostic]) -> str:
    """Return the closing line, such as `2 errors, 1 warning in 3 files (4 warnings accepted)`."""
    shown = [d for d in diagnostics if d.accepted is None]
    errors = sum(1 for d in shown if d.severity is Severity.ERROR)
    warnings = len(shown) - errors
    files = len({d.file for d in shown})
    accepted = len(diagnostics) - len(shown)
    tail = f" ({_plural(accepted, 'warning')} accepted)" if accepted else ""
    if not shown:
        return f"no problems found{tail}"
    return f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')} in {_plural(files, 'file')}{tail}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """Return the findings in the chosen format (text, github or json)."""
    if fmt == "json":  # accepted warnings too, with their reason in "accepted"
        rows = [asdict(d) | {"severity": d.severity.value} for d in diagnostics]
        return json.dumps(rows, indent=2, sort_keys=True) + "\n"
    lines = [d.github() if fmt == "github" else d.text() for d in diagnostics if d.accepted is None]
    if fmt == "text" and diagnostics:
        lines.append(summary(diagnostics))
    return "".join(line + "\n" for line in lines)


# Locations: where a finding points. Every stage uses these; only load.py makes SourceFiles.

Key = tuple[str | int, ...]
Position = tuple[int, int]


def format_path(loc: Key) -> str:
    """Return a field path such as `nodePools[1].sharing.mig.layout`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclass
class SourceFile:
    """One parsed input file: plain data plus the position of every key and value."""

    path: str  # as shown in diagnostics: relative to the repository root, with '/'
    data: Any
    values: dict[Key, Position] = field(default_factory=dict)
    keys: dict[Key, Position] = field(default_factory=dict)

    def position(self, loc: Key, at_key: bool = False) -> Position:
        """Return the position of the deepest part of `loc` that exists in the file."""
        table = self.keys if at_key else self.values
        for end in range(len(loc), 0, -1):
            where = table.get(loc[:end]) or self.values.get(loc[:end])
            if where is not None:
                return where
        return (1, 1)

    def existing(self, loc: Key) -> Key:
        """Return the part of `loc` that indexes into the data, dropping validator-only parts."""
        out: list[str | int] = []
        node = self.data
        for part in loc:
            if isinstance(node, dict) and part in node:  # noqa: SIM114 - apart, mypy narrows the index
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                continue
            out.append(part)
        if loc and loc[-1] not in out[-1:] and not isinstance(loc[-1], int):
            out.append(loc[-1])  # a missing or unknown key still names itself
        return tuple(out)

    def diagnostic(self, loc: Key, message: str, at_key: bool = False) -> Diagnostic:
        """Return an error at `loc` in this file."""
        line, col = self.position(loc, at_key)
        return error(self.path, line, col, format_path(loc), message)

    def warning(self, loc: Key, message: str) -> Diagnostic:
        """Return a warning at the value of `loc` in this file."""
        line, col = self.position(loc)
        return warning(self.path, line, col, format_path(loc), message)


M = TypeVar("M", bound="BaseModel")


@dataclass(frozen=True)
class Located(Generic[M]):
    """A validated model and the file it came from."""

    model: M
    source: SourceFile

    def at(self, *loc: str | int, key: bool = False, message: str) -> Diagnostic:
        """Return an error at a field of this model's file."""
        return self.source.diagnostic(tuple(loc), message, at_key=key)
