"""The house a new engineer walks into: CI runs what the README says, the stages keep their
boundaries, every input field is documented, nothing points at one machine's paths."""

from __future__ import annotations

import ast
import json
import os
import re
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.commands.schema import schema
from tests.conftest import PROJECT

PACKAGE = PROJECT / "gpuplan"
CI = PROJECT / ".ci" / "run"


def _readme_commands() -> list[str]:
    """Return the lines of the README's first shell block (its set-up commands)."""
    block = re.search(r"```sh\n(.*?)```", (PROJECT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block is not None, "the README starts with a ```sh block of set-up commands"
    return [line for line in block[1].splitlines() if line.strip()]


def _ci_lines() -> list[str]:
    return [line.strip() for line in CI.read_text(encoding="utf-8").splitlines()]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = _readme_commands()[1]
    assert "pytest" in test_command
    assert test_command in CI.read_text(encoding="utf-8"), (
        f".ci/run must run the README's `{test_command}`"
    )


def test_ci_runs_the_tests_then_drift_check_then_linters_and_stops_at_the_first_failure() -> None:
    lines = _ci_lines()
    assert "set -euo pipefail" in lines
    test_line = next(i for i, line in enumerate(lines) if _readme_commands()[1] in line)
    # set -e does not stop at a failing pip before the last command of an && list: CI must.
    assert lines[test_line].endswith("|| exit $?")
    steps = ["gpuplan render --check", "ruff check", "ruff format --check", "mypy gpuplan"]
    where = [lines.index(step) for step in steps]
    assert where == sorted(where) and where[0] > test_line


def test_ci_builds_the_docs_strictly_after_the_linters() -> None:
    """A broken link or a missing reference page fails CI: the site builds with --strict, from
    the docs extra, offline (no web fonts), with the hook that generates the reference."""
    lines = _ci_lines()
    build = (
        "pip install -q -e '.[docs]' && mkdocs build --strict --site-dir \"$work/site\" || exit $?"
    )
    assert build in lines and lines.index(build) > lines.index("mypy gpuplan")
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    docs = " ".join(project["project"]["optional-dependencies"]["docs"])
    assert "mkdocs>=" in docs and "mkdocs-material>=" in docs
    config = yaml.safe_load((PROJECT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True and config["theme"]["font"] is False
    assert config["hooks"] == ["docs/hooks.py"]


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    return []


def test_every_docs_page_is_in_the_nav_and_every_nav_page_exists() -> None:
    """The reference pages are generated at build time: they are in the nav, never in docs/."""
    config = yaml.safe_load((PROJECT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    written = {p.relative_to(PROJECT / "docs").as_posix() for p in (PROJECT / "docs").rglob("*.md")}
    generated = {p for p in nav if p.startswith("reference/")}
    assert generated == {
        "reference/fields.md",
        "reference/codes.md",
        "reference/commands.md",
        "reference/versions.md",
    }
    assert not generated & written, "the reference is generated, never committed"
    assert set(nav) - generated == written


def test_linters_are_in_the_test_extra_and_configured() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = " ".join(project["project"]["optional-dependencies"]["test"])
    assert "ruff" in extra and "mypy" in extra
    tool = project["tool"]
    assert tool["ruff"]["lint"]["select"] and "format" in tool["ruff"]
    assert tool["mypy"]["strict"] is True


def test_pre_commit_runs_the_same_tools_without_the_network() -> None:
    config = yaml.safe_load((PROJECT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "ruff-format", "mypy"} <= set(hooks)
    assert all(repo["repo"] == "local" for repo in config["repos"])


def test_py_typed_is_shipped() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (PACKAGE / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["gpuplan"]


# Stage boundaries


def _imports(path: Path) -> Iterator[tuple[str, str]]:
    """Yield (module, name) for every import in a file; name is "" for `import module`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from ((node.module, alias.name) for alias in node.names)


def _uses(path: Path, package: str) -> list[str]:
    """Return the imports of a file that reach into `package` (e.g. gpuplan.emit)."""
    parent, _, leaf = package.rpartition(".")
    return [
        f"{module} {name}".strip()
        for module, name in _imports(path)
        if module == package
        or module.startswith(package + ".")
        or (module == parent and name == leaf)
    ]


@pytest.mark.parametrize("stage", ["check", "validate"])
def test_stage_never_imports_emit(stage: str) -> None:
    """check/ and validate/ prove what emit/ makes: they share no code with it."""
    found = {
        str(p.relative_to(PROJECT)): _uses(p, "gpuplan.emit")
        for p in sorted((PACKAGE / stage).rglob("*.py"))
    }
    assert {file: uses for file, uses in found.items() if uses} == {}


LOCATION_TYPES = {"Key", "Position", "SourceFile", "format_path", "Located"}


def test_location_types_come_from_diagnostics() -> None:
    """No stage imports the loader (or the input reader) just for the location types."""
    wrong = [
        f"{p.relative_to(PROJECT)}: from {module} import {name}"
        for p in sorted(PACKAGE.rglob("*.py"))
        for module, name in _imports(p)
        if module in ("gpuplan.inputs.load", "gpuplan.inputs.sources") and name in LOCATION_TYPES
    ]
    assert wrong == []


def test_every_command_is_a_function_in_gpuplan_commands() -> None:
    """cli.py only turns flags into calls: every subcommand imports its function from gpuplan.commands."""
    tree = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    commands = [
        f
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any("command" in ast.unparse(d) for d in f.decorator_list)
    ]
    assert len(commands) >= 8
    for function in commands:
        sources = {node.module for node in ast.walk(function) if isinstance(node, ast.ImportFrom)}
        assert sources and all(s and s.startswith("gpuplan.commands") for s in sources), (
            function.name
        )
        assert (PACKAGE / "commands" / f"{function.name}.py").is_file(), function.name


def _literal_exit_codes(path: Path) -> list[str]:
    """Return `sys.exit(<number>)` and `return <number>` in a file (exit codes written as numbers)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        value = None
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "sys.exit" and node.args:
            value = node.args[0]
        elif isinstance(node, ast.Return) and path.parent.name == "commands":
            value = node.value
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, int)
            and not isinstance(value.value, bool)
        ):
            found.append(f"{path.relative_to(PROJECT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_exit_codes_come_from_the_enum() -> None:
    """Exit codes are declared once (gpuplan.exitcode.ExitCode); no command spells one as a number."""
    from gpuplan.exitcode import ExitCode

    assert [(c.name, c.value) for c in ExitCode] == [
        ("OK", 0),
        ("FAILED", 1),
        ("USAGE", 2),
        ("INTERNAL", 3),
        ("INTERRUPTED", 130),
        ("TERMINATED", 143),
    ]
    files = [
        PACKAGE / "cli.py",
        PACKAGE / "__main__.py",
        *sorted((PACKAGE / "commands").glob("*.py")),
    ]
    assert [hit for path in files for hit in _literal_exit_codes(path)] == []


# No machine's paths


# GKE's node folder for the NVIDIA driver (gpuplan.plan.drivers.COS_INSTALL_DIR) is a node path, not a person's home.
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])/(?:" + "|".join(("work", "root", "home(?!/kubernetes/)")) + r")/"
)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".j2", ".cfg", ""}


def _repository_text_files() -> Iterator[Path]:
    # the folders .gitignore lists (a virtual environment, caches, build output) are not the
    # repository's: `python3 -m venv .venv` inside a clone writes its own absolute paths there
    lines = (PROJECT / ".gitignore").read_text().splitlines()
    skip = [".git", "output", *(line.rstrip("/") for line in lines if line.endswith("/"))]
    found = []
    for folder, subfolders, names in os.walk(PROJECT):
        subfolders[:] = [d for d in subfolders if not any(fnmatch(d, p) for p in skip)]
        found += [
            Path(folder, name)
            for name in names
            if name != ".git" and Path(name).suffix in TEXT_SUFFIXES  # a worktree's .git file
        ]
    yield from sorted(found)


def test_no_absolute_path_of_a_machine_in_the_repository() -> None:
    """Facts cite upstream sources or ../shared/facts/..., never where they sat on some machine."""
    found = []
    for path in _repository_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [
            f"{path.relative_to(PROJECT)}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if MACHINE_PATH.search(line)
        ]
    assert found == []


# Every input field documented


def _undocumented(
    node: Any, defs: dict[str, Any], path: str, seen: frozenset[str]
) -> Iterator[str]:
    """Yield the field paths under a schema node whose property has no description."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from _undocumented(defs[name], defs, path, seen | {name})
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            yield from _undocumented(sub, defs, path, seen)
    for name, prop in node.get("properties", {}).items():
        where = f"{path}.{name}" if path else name
        if not str(prop.get("description", "")).strip():
            yield where
        yield from _undocumented(prop, defs, where, seen)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(node.get(key), dict):
            yield from _undocumented(node[key], defs, path + suffix, seen)


@pytest.mark.parametrize("kind", ["cluster", "tenant"])
def test_every_input_field_has_a_description(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`gpuplan schema` carries a description for every property: what editors show on hover."""
    assert schema(kind) == 0
    document = json.loads(capsys.readouterr().out)
    missing = sorted(set(_undocumented(document, document.get("$defs", {}), "", frozenset())))
    assert missing == [], (
        f"document these {kind} fields (an attribute docstring under each): {missing}"
    )


def test_the_walk_finds_an_undocumented_field() -> None:
    """The check above can fail: a property without a description, however deep, is reported."""
    document = {
        "properties": {"a": {"description": "x", "$ref": "#/$defs/A"}},
        "$defs": {"A": {"properties": {"b": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}, "description": "y"}}},
                  "B": {"properties": {"c": {"type": "string"}}}},
    }  # fmt: skip
    assert list(_undocumented(document, document["$defs"], "", frozenset())) == ["a.b[].c"]
