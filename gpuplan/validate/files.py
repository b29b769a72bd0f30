"""Any manifests (`gpuplan validate PATH...`), checked the way the API server and webhooks would."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # optional speed-up; PyYAML reads everything it does not
    import yaml_rs
except ImportError:  # pragma: no cover
    yaml_rs = None  # type: ignore[assignment]

# PyYAML and ruamel.yaml are imported where they are needed (a file yaml-rs refuses, a
# problem's position, many files), so `gpuplan validate` on a few valid files starts quickly.
from gpuplan.diagnostics import Diagnostic, Severity, error, ordered
from gpuplan.validate.choose import Validators
from gpuplan.validate.engine import Validator
from gpuplan.validate.locate import problem_path, split_path
from gpuplan.validate.references import check_references


@dataclass
class Document:
    """One object read from a manifest file."""

    file: str
    index: int  # position of the document in its file
    obj: Any


def manifest_files(paths: list[Path]) -> Iterator[Path]:
    """Yield the YAML and JSON files named or found under the paths, in a stable order."""
    for path in paths:
        if path.is_dir():
            yield from sorted(
                p
                for p in path.rglob("*")
                if p.suffix in (".yaml", ".yml", ".json") and p.is_file() and not p.is_symlink()
            )
        else:
            yield path


# Plain scalars that YAML 1.1 (PyYAML, and Kubernetes' go-yaml) reads differently from YAML 1.2
# (yaml-rs): booleans such as yes/on, leading-zero octals, sexagesimal numbers.
# A plain scalar YAML 1.1 reads otherwise than YAML 1.2 (booleans, octals, sexagesimals), as a
# value: after ": ", a block sequence's "- ", or "[" / "," in a flow. A "-" or ":" inside a word
# ("pool-04", "repo:0755") is not one: there the scalar is the whole word, read alike by both.
_YAML11_ONLY = re.compile(
    r"[:\-\[,](?:(?<=:)\s+|(?<=-)(?<!\S-)\s+|(?<=[\[,])\s*)"  # one character class first: quick
    r"(?:[yY](?:es)?|[nN]o?|YES|NO|[oO]n|ON|[oO]ff|OFF|0[0-7]+|\d+(?::[0-5]?\d)+)"
    r"\s*(?:$|[,\]}#])",
    re.M,
)
_SEPARATOR = re.compile(r"^---", re.M)


def fast_documents(text: str) -> list[Any] | None:
    """Parse with the Rust yaml-rs (7x libyaml through PyYAML); None when PyYAML must decide."""
    if yaml_rs is None or _YAML11_ONLY.search(text):
        return None
    try:
        data = yaml_rs.loads(text, parse_datetime=False)
    except Exception:  # noqa: BLE001 - any refusal: PyYAML reads it again and says where
        return None
    if isinstance(data, list) and _SEPARATOR.search(text):
        return [d for d in data if d is not None]
    return [] if data is None else [data]


def _yaml_error() -> type[Exception]:
    """Return PyYAML's error class (importing PyYAML)."""
    import yaml

    return yaml.YAMLError


def _pyyaml_documents(text: str) -> list[Any]:
    """Parse with PyYAML (libyaml when built with it): YAML 1.1, as Kubernetes' go-yaml reads."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


def read_documents(path: Path, shown: str) -> tuple[list[Document], list[Diagnostic]]:
    """Read every document of a file (a `List` or typed list such as `ConfigMapList` counts as its items)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        docs = fast_documents(text)
        if docs is None:
            docs = _pyyaml_documents(text)
    except (_yaml_error(), UnicodeDecodeError, OSError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return [], [
            error(shown, line, col, "", f"cannot read: {getattr(exc, 'problem', None) or exc}")
        ]
    out: list[Document] = []
    for index, doc in enumerate(docs):
        if (
            isinstance(doc, dict)
            and str(doc.get("kind") or "").endswith("List")  # kubectl unpacks any *List with items
            and isinstance(doc.get("items"), list)
        ):
            out += [Document(shown, index, item) for item in doc["items"]]
        else:
            out.append(Document(shown, index, doc))
    return out, []


class Locator:
    """Positions inside files, parsed with ruamel.yaml only when a problem needs one."""

    def __init__(self) -> None:
        self._files: dict[str, list[Any]] = {}

    def _nodes(self, file: str) -> list[Any]:
        if file not in self._files:
            from ruamel.yaml import YAML

            try:
                self._files[file] = list(
                    YAML(typ="rt").load_all(Path(file).read_text(encoding="utf-8-sig"))
                )
            except Exception:  # noqa: BLE001 - positions are a courtesy: the problem is still reported
                self._files[file] = []
        return self._files[file]

    def position(self, doc: Document, path: str) -> tuple[int, int]:
        """Return (line, col) of the field path in the document, or of the document itself."""
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        nodes = [n for n in self._nodes(doc.file) if n is not None]
        if doc.index >= len(nodes):
            return 1, 1
        node = nodes[doc.index]
        where = (node.lc.line, node.lc.col) if hasattr(node, "lc") else (0, 0)
        for part in split_path(path):
            if isinstance(node, CommentedSeq) and part.isdigit() and int(part) < len(node):
                where, node = node.lc.item(int(part)), node[int(part)]
            elif isinstance(node, CommentedMap) and part in node:
                where, node = node.lc.key(part), node[part]
            else:
                break
        return where[0] + 1, where[1] + 1


def _name(obj: Any) -> str:
    """Kind/name of an object; Kind/prefix* for one with generateName."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name", "?") if isinstance(meta, dict) else "?"
    if name == "?" and isinstance(meta, dict) and isinstance(meta.get("generateName"), str):
        name = f"{meta['generateName']}*"
    return f"{obj.get('kind', '?') if isinstance(obj, dict) else '?'}/{name}"


def _is_object(doc: Document) -> bool:
    """Tell whether a document is a Kubernetes object (kustomize's own files are not)."""
    obj = doc.obj
    return not (
        isinstance(obj, dict)
        and str(obj.get("apiVersion", "")).startswith("kustomize.config.k8s.io/")
    )


def _unit(path: Path, roots: frozenset[Path], found: dict[Path, bool]) -> str:
    """Return the folder that groups a file with its cluster: the nearest one with a kustomization."""
    for parent in path.parents:
        if parent not in found:
            found[parent] = (parent / "kustomization.yaml").is_file() or (
                parent / "kustomization.yml"
            ).is_file()
        if found[parent]:
            return str(parent)
        if parent in roots:
            return str(parent)
    return str(path.parent)


@dataclass
class Run:
    """One `validate` run: which folder groups each file, its Validator, and --strict."""

    validators: Validators
    roots: frozenset[Path]
    strict: bool = False
    _kustomized: dict[Path, bool] = field(default_factory=dict)
    _units: dict[str, str] = field(default_factory=dict)

    def unit(self, file: str) -> str:
        """Return the folder a file is checked with (its cluster folder): one lookup per folder."""
        folder = os.path.dirname(file)
        found = self._units.get(folder)
        if found is None:
            found = self._units[folder] = _unit(Path(file).absolute(), self.roots, self._kustomized)
        return found

    def validator(self, file: str) -> Validator:
        """Return the Validator with the CRDs of the component versions of a file's folder."""
        return self.validators.for_unit(self.unit(file))


def object_problems(docs: list[Document], run: Run, locator: Locator) -> list[Diagnostic]:
    """Validate each object on its own: schema, CEL rules, webhook rules."""
    found = []
    for doc in docs:
        for problem in run.validator(doc.file).validate(doc.obj):
            line, col = locator.position(doc, problem_path(problem.path, problem.message))
            where = _name(doc.obj) + (f" {problem.path}" if problem.path else "")
            found.append(error(doc.file, line, col, where, problem.message))
    return found


def validate_documents(docs: list[Document], run: Run, checked: bool = False) -> list[Diagnostic]:
    """Validate each object, then duplicates and references among the objects of each cluster folder."""
    locator = Locator()
    found: list[Diagnostic] = []
    docs = [d for d in docs if _is_object(d)]
    if not checked:
        found += object_problems(docs, run, locator)
    groups: dict[str, list[Document]] = {}
    for doc in docs:
        groups.setdefault(run.unit(doc.file), []).append(doc)
    created = _created_namespaces(docs)
    for folder, members in sorted(groups.items()):
        found += duplicate_problems(members, locator)
        made = created.get(os.path.basename(folder.rstrip("/")), set())
        found += _reference_problems(members, locator, run.strict, made)
    return found


def _dig(node: Any, *path: str) -> Any:
    """Return a nested field, or None when any step is missing."""
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _created_namespaces(docs: list[Document]) -> dict[str, set[str]]:
    """Return, per cluster (an Application's gpuplan.io/cluster label), the namespaces its Argo CD
    Applications create (syncOptions CreateNamespace=true creates the destination namespace:
    argoproj/argo-cd v3.5.1 docs/operator-manual/application.yaml, as gpuplan/emit/bootstrap/app.py)."""
    out: dict[str, set[str]] = {}
    for doc in docs:
        obj = doc.obj
        if not isinstance(obj, dict) or obj.get("kind") != "Application":
            continue
        options = _dig(obj, "spec", "syncPolicy", "syncOptions") or []
        namespace = _dig(obj, "spec", "destination", "namespace")
        cluster = _dig(obj, "metadata", "labels", "gpuplan.io/cluster")
        if (
            isinstance(options, list)
            and "CreateNamespace=true" in options
            and isinstance(namespace, str)
            and cluster
        ):
            out.setdefault(str(cluster), set()).add(namespace)
    return out


def _identity(doc: Document) -> tuple[str, str, str, str] | None:
    """(group, kind, namespace, name) of a named object; None for generateName and non-objects."""
    obj = doc.obj
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), meta["name"]


def duplicate_problems(docs: list[Document], locator: Locator) -> list[Diagnostic]:
    """Two objects of one group, kind, namespace and name: the API server would keep only one."""
    first: dict[tuple[str, str, str, str], Document] = {}
    found = []
    for doc in docs:
        key = _identity(doc)
        if key is None:
            continue
        if key not in first:
            first[key] = doc
            continue
        earlier = first[key]
        line, col = locator.position(earlier, "metadata.name")
        here = locator.position(doc, "metadata.name")
        found.append(
            error(
                doc.file,
                *here,
                f"{_name(doc.obj)} metadata.name",
                f"duplicate object: {earlier.file}:{line}:{col} defines the same "
                f"{key[1]} {'/'.join(p for p in key[2:] if p)}; one would replace the other",
            )
        )
    return found


def _key(doc: Document) -> tuple[Any, str, Any]:
    meta = doc.obj.get("metadata") if isinstance(doc.obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return (
        doc.obj.get("kind") if isinstance(doc.obj, dict) else None,
        meta.get("namespace") or "",
        meta.get("name"),
    )


def _reference_problems(
    docs: list[Document], locator: Locator, strict: bool = False, made: set[str] | None = None
) -> list[Diagnostic]:
    """Check references between the objects of one folder.

    A reference to an object not among them is a warning (an error with --strict): the API server
    accepts it, and the object may be created elsewhere.
    """
    objects = [d.obj for d in docs if isinstance(d.obj, dict)]
    index: dict[tuple[Any, str, Any], Document] = {}
    for d in docs:
        index.setdefault(_key(d), d)
    found = []
    for problem in check_references(objects, external_namespaces=made or ()).problems:
        doc = index.get((problem.kind, problem.namespace, problem.name))
        severity = Severity.ERROR if problem.severity == "error" else Severity.WARNING
        if problem.external or problem.path == "metadata.namespace":
            severity = Severity.ERROR if strict else Severity.WARNING
        file, (line, col) = (
            (doc.file, locator.position(doc, problem.path)) if doc else ("-", (0, 0))
        )
        found.append(
            Diagnostic(
                file,
                line,
                col,
                severity,
                f"{problem.kind}/{problem.name} {problem.path}".strip(),
                problem.message,
            )
        )
    return found


Both = Callable[[Callable[[], Any], Callable[[], Any]], tuple[Any, Any]]
_RUN: Run | None = None  # set before forking: workers inherit the validators
PARALLEL_FROM = 400  # files; below this a second process costs more than it saves


def _read_and_check(
    files: list[Path],
) -> tuple[list[Document], list[Diagnostic], set[tuple[str, str, str]]]:
    """Read files and validate their objects on their own (one worker's share)."""
    assert _RUN is not None
    docs: list[Document] = []
    found: list[Diagnostic] = []
    for path in files:
        read, problems = read_documents(path, str(path))
        docs += read
        found += problems
    found += object_problems([d for d in docs if _is_object(d)], _RUN, Locator())
    skipped = {(r.kind, r.path, r.rule) for v in _RUN.validators.all() for r in v.skipped_rules}
    return docs, found, skipped


def _read_and_check_all(
    files: list[Path], run: Run, both: Both | None
) -> tuple[list[Document], list[Diagnostic], set[tuple[str, str, str]]]:
    """Split the files over `both`'s two jobs when there are many (validation is CPU-bound)."""
    global _RUN
    _RUN = run
    for path in files:  # choose every folder's versions before forking, so no worker re-reads them
        run.validator(str(path))
    if len(files) < PARALLEL_FROM or both is None:
        return _read_and_check(files)
    half = len(files) // 2
    mine, theirs = both(
        lambda: _read_and_check(files[:half]), lambda: _read_and_check(files[half:])
    )
    (docs, found, skipped), (more_docs, more_found, more_skipped) = mine, theirs
    return docs + more_docs, found + more_found, skipped | more_skipped


def validate_paths(
    paths: list[Path], validators: Validators, strict: bool = False, both: Both | None = None
) -> tuple[list[Document], int, list[Diagnostic], set[tuple[str, str, str]]]:
    """Validate the manifests under paths; return the objects, the file count, findings and skipped CEL rules.

    `both` runs two jobs and returns both results (`gpuplan validate` gives it two cores, a
    forked worker: gpuplan.runtime.workers); many files are split between them.
    """
    files = list(manifest_files(paths))
    roots = frozenset(p.absolute() if p.is_dir() else p.absolute().parent for p in paths)
    run = Run(validators, roots, strict)
    docs, found, skipped = _read_and_check_all(files, run, both)
    found += validate_documents(docs, run, checked=True)
    found += validators.problems
    return docs, len(files), ordered(found), skipped
