"""Findings with a source position, and how they are shown to people and to CI."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import Enum


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

    def text(self) -> str:
        """Return the compiler-style line `file:line:col: error: path: message`."""
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        what = f"{self.path}: {self.message}" if self.path else self.message
        return f"{where}: {self.severity.value}: {what}"

    def github(self) -> str:
        """Return the finding as a GitHub Actions workflow command."""
        what = f"{self.path}: {self.message}" if self.path else self.message
        what = what.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::{self.severity.value} file={self.file},line={self.line},col={self.col}::{what}"


def error(file: str, line: int, col: int, path: str, message: str) -> Diagnostic:
    """Return an error finding."""
    return Diagnostic(file, line, col, Severity.ERROR, path, message)


def warning(file: str, line: int, col: int, path: str, message: str) -> Diagnostic:
    """Return a warning finding."""
    return Diagnostic(file, line, col, Severity.WARNING, path, message)


def has_errors(diagnostics: Iterable[Diagnostic], strict: bool = False) -> bool:
    """Tell whether these findings fail a run."""
    return any(d.severity is Severity.ERROR or strict for d in diagnostics)


def ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Return the findings without repeats, by file, position, then severity."""
    return sorted(set(diagnostics))


def summary(diagnostics: Sequence[Diagnostic]) -> str:
    """Return the closing line, such as `2 errors, 1 warning in 3 files`."""
    errors = sum(1 for d in diagnostics if d.severity is Severity.ERROR)
    warnings = len(diagnostics) - errors
    files = len({d.file for d in diagnostics})
    if not diagnostics:
        return "no problems found"
    return f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')} in {_plural(files, 'file')}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """Return the findings in the chosen format (text, github or json)."""
    if fmt == "json":
        rows = [asdict(d) | {"severity": d.severity.value} for d in diagnostics]
        return json.dumps(rows, indent=2, sort_keys=True) + "\n"
    lines = [d.github() if fmt == "github" else d.text() for d in diagnostics]
    if fmt == "text" and diagnostics:
        lines.append(summary(diagnostics))
    return "".join(line + "\n" for line in lines)
