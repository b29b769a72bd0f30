"""Read the input YAML, keeping file:line:col for every key and value.

libyaml's events build the data of ordinary files (gpuplan.inputs.yamlevents); ruamel.yaml's round-trip
loader reads everything else and is the reference: its words and positions are every diagnostic.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml as libyaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from gpuplan.diagnostics import Diagnostic, Key, Position, SourceFile, error
from gpuplan.diagnostics import format_path as format_path  # its old import path
from gpuplan.inputs import nesting, yamlevents
from gpuplan.inputs.yamlevents import SourceFloat as SourceFloat  # its old import path
from gpuplan.writer import safefs

# Bounds that refuse hostile input (alias bombs, absurd nesting, huge files) before any model sees it.
MAX_FILE_BYTES = safefs.INPUT_BYTES  # read no further: a stray 1 GiB file costs 4 MiB
MAX_NODES = 200_000
MAX_DEPTH = 64


class _Refused(Exception):
    """Input refused before any model sees it, with where it was found."""

    def __init__(self, message: str, where: Position = (1, 1)) -> None:
        super().__init__(message)
        self.where = where


def _origin(node: Any, fallback: Position) -> Position:
    """Return where a ruamel node starts (1-based), or the fallback."""
    lc = getattr(node, "lc", None)
    if lc is not None and getattr(lc, "line", None) is not None:
        return lc.line + 1, lc.col + 1
    return fallback


_CORE_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
}


def _tag(node: Any) -> str | None:
    """Return an explicit YAML tag on a node that is not one of the standard ones."""
    tag = getattr(node, "tag", None)
    value = getattr(tag, "value", tag) if tag is not None else None
    if isinstance(value, str) and value and value not in _CORE_TAGS:
        return value.replace("tag:yaml.org,2002:", "!!")
    return None


def _lc(getter: Any, key: Any, fallback: Position) -> Position:
    try:
        line, col = getter(key)
        return line + 1, col + 1
    except (KeyError, TypeError, IndexError, AttributeError):
        return fallback  # keys merged in with <<: or tagged nodes carry no position of their own


def _convert(
    node: Any, loc: Key, source: SourceFile, budget: list[int], where: Position = (1, 1)
) -> Any:
    """Turn ruamel nodes into plain dicts/lists, recording positions, within the bounds."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _Refused(
            f"refused: the document has more than {MAX_NODES} nodes (alias expansion?)", where
        )
    if len(loc) > MAX_DEPTH:
        raise _Refused(f"refused: the document is nested deeper than {MAX_DEPTH} levels", where)
    tag = _tag(node)
    if tag is not None:
        raise _Refused(f"YAML tag {tag[:40]!r} is not supported: write plain values", where)
    if isinstance(node, CommentedMap):
        return _mapping(node, loc, source, budget, _origin(node, where))
    if isinstance(node, CommentedSeq):
        items = []
        start = _origin(node, where)
        for index, value in enumerate(node):
            here = loc + (index,)
            position = _lc(node.lc.item, index, start)
            source.values[here] = source.keys[here] = position
            items.append(_convert(value, here, source, budget, position))
        return items
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return SourceFloat.of(node)
    if isinstance(node, (list, dict, set)):
        raise _Refused(
            "this YAML construct is not supported: write plain mappings and lists", where
        )
    return str(node)  # timestamps reach the models as text


def _mapping(
    node: CommentedMap, loc: Key, source: SourceFile, budget: list[int], start: Position
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(key, (list, dict)) or _tag(key) is not None:
            raise _Refused("mapping keys must be plain strings", _lc(node.lc.key, key, start))
        name = key if isinstance(key, str) else ("null" if key is None else str(key))
        here = loc + (name,)
        key_at = _lc(node.lc.key, key, start)
        source.keys[here] = key_at
        # an empty value has no token of its own: point at its key, not at the next line
        source.values[here] = key_at if value is None else _lc(node.lc.value, key, key_at)
        out[name] = _convert(value, here, source, budget, source.values[here])
    return out


def _decode(path: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if len(raw) > MAX_FILE_BYTES:
        return None, error(
            path, 1, 1, "", f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, error(path, line, 1, "", "file is not valid UTF-8")
    return text.replace("\r\n", "\n"), None


_HUGE_NUMBER = re.compile(r"(?<![\w.])[-+]?\d{100,}")
_HUNDRED_DIGITS = re.compile(r"\d{100}")  # what _HUGE_NUMBER needs, found in half the time


def _second_document(text: str) -> int:
    """Return the line of the marker that starts the second document."""
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("---")]
    body_first = next(
        (
            n
            for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.startswith(("#", "---", "%"))
        ),
        1,
    )
    later = [n for n in starts if n > body_first]
    return later[0] if later else 1


def _huge_number(path: str, text: str) -> Diagnostic | None:
    """Refuse absurd numbers before the parser spends time (or a traceback) on them."""
    if _HUNDRED_DIGITS.search(text) is None:
        return None
    match = _HUGE_NUMBER.search(text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
    return error(path, line, col, "", f"a number of {len(match.group())} digits is too large")


# Characters YAML 1.2 does not allow in a stream (spec 5.1, c-printable).
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _at(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _unprintable(path: str, text: str) -> Diagnostic | None:
    """Refuse a NUL byte or another control character where it stands."""
    match = _UNPRINTABLE.search(text)
    if match is None:
        return None
    line, col = _at(text, match.start())
    return error(
        path,
        line,
        col,
        "",
        f"control character U+{ord(match.group()):04X} is not allowed in YAML: remove it",
    )


_FAST_LOADER = getattr(libyaml, "CSafeLoader", None)  # libyaml, when PyYAML was built with it


def _too_deep(path: str, events: Any) -> Diagnostic | None:
    """Refuse nesting deeper than MAX_DEPTH where it first goes too deep (gpuplan.inputs.nesting)."""
    where = nesting.too_deep(events, MAX_DEPTH)
    if where is None:
        return None
    message = f"refused: the document is nested deeper than {MAX_DEPTH} levels"
    return error(path, where[0], where[1], "", message)


def _shape(path: str, text: str) -> tuple[Diagnostic | None, bool]:
    """Scan the YAML events with libyaml (C): refuse nesting deeper than MAX_DEPTH without
    building anything; return (refusal, suspect).

    A file libyaml cannot read to its end is a suspect: ruamel (YAML 1.2) has the last word on
    its syntax, and its own events on its depth (_parse_slow), since libyaml may stop a deep
    file early (gpuplan.inputs.nesting).
    """
    if _FAST_LOADER is None:
        return None, True
    try:
        return _too_deep(path, libyaml.parse(text, Loader=_FAST_LOADER)), False
    except libyaml.YAMLError:
        return None, True


def _bounds(path: str, raw: bytes) -> tuple[str | None, list[Diagnostic]]:
    """Return (text, refusals) for one file: its encoding and characters, before any parser runs."""
    text, problem = _decode(path, raw)
    if problem is not None or text is None:
        return None, [problem] if problem else []
    for check in (_unprintable, _huge_number):
        problem = check(path, text)
        if problem is not None:
            return None, [problem]
    return text, []


def parse(path: str, raw: bytes) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Parse one YAML file into a SourceFile, or return the diagnostics that stop it.

    libyaml's events build the data when the file holds nothing unusual (gpuplan.inputs.yamlevents);
    anything else, every problem included, is read by ruamel, which has the last word.
    """
    text, problems = _bounds(path, raw)
    if text is None:
        return None, problems
    built = yamlevents.build(text, MAX_NODES, MAX_DEPTH)
    if built is not None:  # only ever a single mapping within the bounds: what ruamel reads too
        data, values, keys = built
        return SourceFile(path, data, values, keys), []
    problem, suspect = _shape(path, text)
    if problem is not None:
        return None, [problem]
    return _parse_slow(path, text, deep_checked=not suspect)


def _parse_slow(
    path: str, text: str, deep_checked: bool = False
) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Parse one file's text with ruamel's round-trip loader (pure Python, the reference).

    Its composer recurses once per level: unless libyaml's events went through the whole file
    (deep_checked), ruamel's own events are counted first, up to the level one too deep.
    """
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    if not deep_checked:
        try:
            problem = _too_deep(path, yaml.parse(text))
        except (YAMLError, ValueError):
            problem = None  # load_all below says what and where
        if problem is not None:
            return None, [problem]
    try:
        documents = list(yaml.load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        ended = str(exc.problem or "")
        if exc.context_mark is not None and ("end of stream" in ended or "<stream end>" in ended):
            mark = exc.context_mark  # an unclosed quote or bracket: point where it opens
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        if exc.context and exc.problem:
            message = " ".join(f"{exc.context}: {exc.problem}".split())
        if "duplicate key" in message or "found duplicate key" in str(exc):
            message = "duplicate key " + _duplicate_name(str(exc))
        return None, [error(path, line, col, "", f"YAML syntax: {message}")]
    except RecursionError:
        return None, [error(path, 1, 1, "", "refused: the document is nested too deeply")]
    except (YAMLError, ValueError) as exc:
        return None, [error(path, 1, 1, "", f"YAML syntax: {type(exc).__name__}: {str(exc)[:200]}")]
    documents = [d for d in documents if d is not None]
    if not documents:
        return None, [error(path, 1, 1, "", "file is empty: expected one mapping")]
    if len(documents) > 1:
        return None, [
            error(
                path,
                _second_document(text),
                1,
                "",
                "file holds more than one YAML document: expected one",
            )
        ]
    source = SourceFile(path, None)
    try:
        source.data = _convert(documents[0], (), source, [MAX_NODES])
    except _Refused as exc:
        return None, [error(path, exc.where[0], exc.where[1], "", str(exc))]
    except RecursionError:
        return None, [error(path, 1, 1, "", "refused: the document is nested too deeply")]
    if not isinstance(source.data, dict):
        return None, [error(path, 1, 1, "", "expected a mapping at the top of the file")]
    return source, []


def _duplicate_name(text: str) -> str:
    for line in text.splitlines():
        if "found duplicate key" in line:
            return line.split("found duplicate key", 1)[1].strip().split(" with value")[0]
    return ""


def read_file(path: str | os.PathLike[str], shown: str) -> tuple[bytes | None, list[Diagnostic]]:
    """Return an input file's bytes (at most one byte past MAX_FILE_BYTES), or why it is refused.

    A link or special file (fifo, socket, device) is refused without being opened: gpuplan never
    follows links in its inputs, and a fifo would block the read forever.
    """
    try:
        return safefs.read_input(path), []
    except safefs.NotRegular:
        return None, [error(shown, 1, 1, "", "not a regular file (symlinks are not followed)")]
    except OSError as exc:
        return None, [error(shown, 1, 1, "", f"cannot read: {exc.strerror or exc}")]


def parse_file(
    path: str | os.PathLike[str], shown: str
) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read one input file (see read_file) and parse it."""
    raw, problems = read_file(path, shown)
    return (None, problems) if raw is None else parse(shown, raw)


def linked_folder(path: Path, shown: str) -> Diagnostic | None:
    """Return an error when an input folder is a symbolic link (its files could be anyone's)."""
    if not path.is_symlink():
        return None
    message = "a symbolic link: gpuplan does not follow links in its inputs; make it a folder"
    return error(shown, 0, 0, "", message)


def folder_entries(root: Path, folder: str) -> tuple[list[Path], list[Diagnostic]]:
    """Return the entries of an input folder (sorted, dot-names left out) that are not links,
    and an error for the folder, or each entry, that is a symbolic link."""
    base = root / folder
    linked = linked_folder(base, folder)
    if linked is not None or not base.is_dir():
        return [], [linked] if linked else []
    entries, problems = [], []
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if not entry.name.startswith("."):
            linked = linked_folder(entry, f"{folder}/{entry.name}")
            problems += [linked] if linked else []
            entries += [] if linked else [entry]
    return entries, problems


def gather(root: Path, folder: str) -> tuple[list[tuple[str, bytes]], list[Diagnostic]]:
    """Return (shown path, bytes) of every *.yaml / *.yml file of one input folder, in a stable order."""
    items: list[tuple[str, bytes]] = []
    problems: list[Diagnostic] = []
    base = root / folder
    linked = linked_folder(base, folder)
    if linked is not None or not base.is_dir():
        return items, [linked] if linked else []
    with os.scandir(base) as listing:  # d_type: no stat per file
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if not entry.name.endswith((".yaml", ".yml")) or entry.name.startswith("."):
            continue
        shown = f"{folder}/{entry.name}"
        raw, found = read_file(entry.path, shown)
        problems += found
        if raw is not None:
            items.append((shown, raw))
    return items, problems


@dataclass
class Screened:
    """Every gathered file looked at once: those the fast path read, and those that stop the run."""

    built: dict[str, SourceFile] = field(default_factory=dict)  # by shown path
    stop: list[Diagnostic] = field(default_factory=list)  # files that are not YAML at all


def screen(items: list[tuple[str, bytes]]) -> Screened:
    """Read every file libyaml's events can (gpuplan.inputs.yamlevents); find those that cannot be parsed.

    A file that is not YAML (bounds, nesting, a syntax error ruamel confirms, in its own words)
    stops the run before any other file is parsed in full by ruamel, so a large repository with
    one broken file fails in about a second. The files read here are not parsed again.
    """
    out = Screened()
    for shown, raw in items:
        source, stop = _screen_one(shown, raw)
        if source is not None:
            out.built[shown] = source
        out.stop += stop
    return out


def _screen_one(shown: str, raw: bytes) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Return one file as libyaml's events read it, or None and what stops the run (if anything)."""
    text, problems = _bounds(shown, raw)
    if text is None:
        return None, problems
    built = yamlevents.build(text, MAX_NODES, MAX_DEPTH)
    if built is not None:
        return SourceFile(shown, *built), []
    problem, suspect = _shape(shown, text)
    if problem is not None:
        return None, [problem]
    return None, _parse_slow(shown, text)[1] if suspect else []


def parse_items(
    items: list[tuple[str, bytes]], screened: Screened | None = None
) -> tuple[list[SourceFile], list[Diagnostic]]:
    """Parse gathered files (those screened already are taken as read); return the parsed ones
    and the problems of the others, in the order of the items."""
    built = screened.built if screened is not None else {}
    rest = iter([parse(shown, raw) for shown, raw in items if shown not in built])
    files: list[SourceFile] = []
    problems: list[Diagnostic] = []
    for shown, _ in items:
        source, found = (built[shown], []) if shown in built else next(rest)
        problems.extend(found)
        if source is not None:
            files.append(source)
    return files, problems


def read_folder(root: Path, folder: str) -> tuple[list[SourceFile], list[Diagnostic]]:
    """Parse every *.yaml / *.yml file of one input folder, in a stable order."""
    items, problems = gather(root, folder)
    files, found = parse_items(items)
    return files, problems + found
