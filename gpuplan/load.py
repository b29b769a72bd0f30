"""Read the input YAML with ruamel.yaml, keeping file:line:col for every key and value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from gpuplan.diagnostics import Diagnostic, error

# Bounds that refuse hostile input (alias bombs, absurd nesting, huge files) before any model sees it.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64

Key = tuple[str | int, ...]
Position = tuple[int, int]


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
            if isinstance(node, dict) and part in node:
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


def format_path(loc: Key) -> str:
    """Return a field path such as `nodePools[1].sharing.mig.layout`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class _TooBig(Exception):
    pass


def _convert(node: Any, loc: Key, source: SourceFile, budget: list[int]) -> Any:
    """Turn ruamel nodes into plain dicts/lists, recording positions, within the bounds."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(f"the document has more than {MAX_NODES} nodes (alias expansion?)")
    if len(loc) > MAX_DEPTH:
        raise _TooBig(f"the document is nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            name = key if isinstance(key, str) else str(key)
            here = loc + (name,)
            kline, kcol = node.lc.key(key)
            vline, vcol = node.lc.value(key)
            source.keys[here] = (kline + 1, kcol + 1)
            source.values[here] = (vline + 1, vcol + 1)
            out[name] = _convert(value, here, source, budget)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for index, value in enumerate(node):
            here = loc + (index,)
            line, col = node.lc.item(index)
            source.values[here] = source.keys[here] = (line + 1, col + 1)
            items.append(_convert(value, here, source, budget))
        return items
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return str(node)  # timestamps and other YAML scalars reach the models as text


def _decode(path: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if len(raw) > MAX_FILE_BYTES:
        return None, error(path, 1, 1, "", f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, error(path, line, 1, "", "file is not valid UTF-8")
    return text.replace("\r\n", "\n"), None


def parse(path: str, raw: bytes) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Parse one YAML file into a SourceFile, or return the diagnostics that stop it."""
    text, problem = _decode(path, raw)
    if problem is not None or text is None:
        return None, [problem] if problem else []
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        documents = list(yaml.load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        if "duplicate key" in message or "found duplicate key" in str(exc):
            message = "duplicate key " + _duplicate_name(str(exc))
        return None, [error(path, line, col, "", f"YAML syntax: {message}")]
    except (YAMLError, RecursionError, ValueError) as exc:
        return None, [error(path, 1, 1, "", f"YAML syntax: {type(exc).__name__}: {str(exc)[:200]}")]
    documents = [d for d in documents if d is not None]
    if not documents:
        return None, [error(path, 1, 1, "", "file is empty: expected one mapping")]
    if len(documents) > 1:
        return None, [error(path, 1, 1, "", "file holds more than one YAML document: expected one")]
    source = SourceFile(path, None)
    try:
        source.data = _convert(documents[0], (), source, [MAX_NODES])
    except (_TooBig, RecursionError) as exc:
        return None, [error(path, 1, 1, "", f"refused: {exc if isinstance(exc, _TooBig) else 'nesting too deep'}")]
    if not isinstance(source.data, dict):
        return None, [error(path, 1, 1, "", "expected a mapping at the top of the file")]
    return source, []


def _duplicate_name(text: str) -> str:
    for line in text.splitlines():
        if "found duplicate key" in line:
            return line.split("found duplicate key", 1)[1].strip().split(" with value")[0]
    return ""


def read_folder(root: Path, folder: str) -> tuple[list[SourceFile], list[Diagnostic]]:
    """Parse every *.yaml / *.yml file of one input folder, in a stable order."""
    files: list[SourceFile] = []
    problems: list[Diagnostic] = []
    base = root / folder
    if not base.is_dir():
        return files, problems
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.suffix not in (".yaml", ".yml") or entry.name.startswith("."):
            continue
        shown = f"{folder}/{entry.name}"
        if entry.is_symlink() or not entry.is_file():
            problems.append(error(shown, 1, 1, "", "not a regular file (symlinks are not followed)"))
            continue
        source, found = parse(shown, entry.read_bytes())
        problems.extend(found)
        if source is not None:
            files.append(source)
    return files, problems
