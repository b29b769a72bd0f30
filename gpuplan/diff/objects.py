"""Both sides of a diff as objects keyed like Kubernetes does, and the field changes between them.

An object is matched by (cluster, API group, kind, namespace, name). The API *version* is left
out on purpose: Kubernetes (and Argo CD) identify an object by group, kind, namespace and name,
so a Kueue upgrade from v1beta1 to v1beta2 shows as an `apiVersion` change of the same
ClusterQueue, not as a queue removed and another added (which would also raise false warnings).
The cluster is part of the key because the same PriorityClass exists once per cluster.
"""

from __future__ import annotations

import json
import marshal
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from deepdiff import DeepDiff
from deepdiff.helper import NotPresent

from gpuplan.diagnostics import Diagnostic, error
from gpuplan.model.manifest import Manifest
from gpuplan.validate.files import fast_documents

FLEET = "argocd"  # fleet-level files (Argo CD Applications, app of apps), not a cluster
REDACTED = "<redacted>"
SECRET_FIELDS = ("data", "stringData")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's loader (libyaml when built with it) with timestamps kept as their text: what
    yaml-rs gives (gpuplan.validate.files.fast_documents), so either reader gives one value."""


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class _Absent:
    """The value of a field that one side does not have."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Who an object is: its cluster, API group, kind, namespace and name."""

    scope: str
    group: str
    kind: str
    namespace: str
    name: str

    def label(self) -> str:
        """Return `Kind/name`, or `Kind/namespace/name` for a namespaced object."""
        return (
            f"{self.kind}/{self.namespace}/{self.name}"
            if self.namespace
            else f"{self.kind}/{self.name}"
        )


@dataclass(frozen=True)
class Entry:
    """One object of one side and the file it comes from."""

    key: ObjectKey
    obj: dict[str, Any]
    path: str
    sources: tuple[str, ...] = ()  # the input files it was rendered from (when compiled)


Side = dict[ObjectKey, Entry]


@dataclass(frozen=True)
class FieldChange:
    """One field that differs: its Kubernetes-style path and both values (ABSENT if missing)."""

    path: str
    old: Any
    new: Any
    reference: bool = False  # the value only follows a rename (a pool, tenant or network)


@dataclass
class ObjectChange:
    """One object added, removed or changed, with the fields that changed."""

    key: ObjectKey
    status: str  # "added", "removed", "changed" or "renamed"
    api_version: str
    path: str
    fields: list[FieldChange] = field(default_factory=list)
    renamed_from: ObjectKey | None = None  # the key on the old side of a renamed object
    sources: tuple[
        str, ...
    ] = ()  # the input files behind it: clusters/, tenants/, extra/, patches/...

    @property
    def real_fields(self) -> list[FieldChange]:
        """Return the field changes that are not only a rename's references."""
        return [f for f in self.fields if not f.reference]


def group_of(api_version: str) -> str:
    """Return the API group of an apiVersion ("" for the core group)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def key_of(obj: dict[str, Any], scope: str, path: str) -> ObjectKey:
    """Return the key of an object; a nameless object (a Kustomization) is named by its file."""
    metadata: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    name = str(metadata.get("name") or path)
    namespace = str(metadata.get("namespace") or "")
    return ObjectKey(
        scope, group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind", "")), namespace, name
    )


def _add(side: Side, entry: Entry, problems: list[Diagnostic]) -> None:
    """Add an object to a side, reporting a second object with the same key."""
    first = side.get(entry.key)
    if first is not None:
        message = f"{entry.key.label()} is also defined in {first.path}: the first one is compared"
        problems.append(error(entry.path, 0, 0, "", message))
        return
    side[entry.key] = entry


def from_manifests(manifests: Iterable[Manifest]) -> tuple[Side, list[Diagnostic]]:
    """Return the objects a compile produced, scoped by cluster (fleet files under FLEET)."""
    side: Side = {}
    problems: list[Diagnostic] = []
    for item in manifests:
        scope = item.cluster or PurePosixPath(item.path).parts[0]
        entry = Entry(key_of(item.obj, scope, item.path), item.obj, item.path, item.sources)
        _add(side, entry, problems)
    return side, problems


def yaml_files(folder: Path) -> list[PurePosixPath]:
    """Return every *.yaml / *.yml file under a folder, relative, sorted (hidden and links skipped)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for name in filenames:
            full = base / name
            if (
                name.endswith((".yaml", ".yml"))
                and not name.startswith(".")
                and full.is_file()
                and not full.is_symlink()
            ):
                found.append(PurePosixPath(full.relative_to(folder).as_posix()))
    return sorted(found)


def cluster_folders(*folders: Path) -> set[str]:
    """Return the top-level subfolders holding a kustomization.yaml: the clusters of an output."""
    return {
        p.name
        for folder in folders
        if folder.is_dir()
        for p in folder.iterdir()
        if (p / "kustomization.yaml").is_file()
    }


def from_folder(folder: Path, clusters: set[str]) -> tuple[Side, list[Diagnostic]]:
    """Return every mapping document of every YAML file under a folder."""
    side: Side = {}
    problems: list[Diagnostic] = []
    for relative in yaml_files(folder):
        shown = f"{folder.as_posix().rstrip('/')}/{relative}"
        scope = (
            relative.parts[0] if len(relative.parts) > 1 and relative.parts[0] in clusters else ""
        )
        try:
            documents = _documents(folder / relative)
        except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
            problems.append(error(shown, *_mark(exc), "", f"cannot read: {_first_line(exc)}"))
            continue
        for doc in documents:
            if isinstance(doc, dict):
                _add(
                    side,
                    Entry(key_of(doc, scope, relative.as_posix()), doc, relative.as_posix()),
                    problems,
                )
    return side, problems


def _documents(path: Path) -> list[Any]:
    """Return the documents of a file: yaml-rs where it reads the file as PyYAML would (7x
    faster, the reader of `gpuplan validate`), else PyYAML, which also says where it fails."""
    data = path.read_bytes()
    try:
        fast = fast_documents(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        fast = None  # another encoding (PyYAML reads UTF-16 by its BOM), or an error to word
    return fast if fast is not None else list(yaml.load_all(data, Loader=_Loader))


def _mark(exc: BaseException) -> tuple[int, int]:
    """Return the 1-based line and column of a YAML error, or (0, 0)."""
    mark = getattr(exc, "problem_mark", None)
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _first_line(exc: BaseException) -> str:
    """Return the first line of an error message."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _fingerprint(obj: dict[str, Any]) -> str:
    """Return a canonical text of an object, so equal objects are found without a deep diff."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def compare(old: Side, new: Side) -> list[ObjectChange]:
    """Return every object added, removed or changed, by cluster, kind, namespace and name."""
    changes = []
    for key in sorted(
        old.keys() | new.keys(), key=lambda k: (k.scope, k.kind, k.namespace, k.name, k.group)
    ):
        before, after = old.get(key), new.get(key)
        if before is None:
            assert after is not None
            changes.append(
                ObjectChange(key, "added", str(after.obj.get("apiVersion", "")), after.path)
            )
        elif after is None:
            changes.append(
                ObjectChange(key, "removed", str(before.obj.get("apiVersion", "")), before.path)
            )
        elif _fingerprint(before.obj) != _fingerprint(after.obj):
            fields = field_changes(before.obj, after.obj, secret=key.kind == "Secret")
            changes.append(
                ObjectChange(
                    key, "changed", str(after.obj.get("apiVersion", "")), after.path, fields
                )
            )
    return changes


def field_changes(old: Any, new: Any, secret: bool = False) -> list[FieldChange]:
    """Return the fields that differ between two objects, in document order."""
    raw = _raw_changes(old, new, (), expand=not secret)
    raw.sort(key=lambda item: _order(item[0], old, new))
    return [
        FieldChange(format_path(path), *_redacted(path, before, after, secret))
        for path, before, after in raw
    ]


Leaf = tuple[tuple[Any, ...], Any, Any]
_SCALARS = (str, int, float, bool, type(None))
# deepdiff's threshold_to_diff_deeper (its default): two mappings with fewer keys in common than
# this share of all their keys are shown whole, as one change. Passed to deepdiff too, so the
# walk below and deepdiff always agree.
DEEPER = 0.33


def _raw_changes(old: Any, new: Any, prefix: tuple[Any, ...], expand: bool) -> list[Leaf]:
    """Return (path, old, new) for every leaf deepdiff reports, expanding embedded YAML documents."""
    out = []
    for path, before, after in _leaves(old, new, prefix):
        embedded = _embedded(before, after) if expand else None
        inner = _raw_changes(*embedded, path, expand) if embedded is not None else []
        out.extend(inner or [(path, before, after)])  # same data, other text: show the text
    return out


def _leaves(old: Any, new: Any, prefix: tuple[Any, ...]) -> list[Leaf]:
    """Return the leaves `DeepDiff(old, new, ignore_order=False, verbose_level=2)` reports.

    Mappings and scalars are compared here, as deepdiff compares them (a key on one side only is
    a leaf with the other side absent; two scalars of another type or value are one leaf), and
    equal subtrees are skipped by their canonical text: deepdiff costs ~0.1 ms a call, and a
    fleet diff compares thousands of objects that differ in a few fields. Anything else (lists,
    a mapping against a list) is deepdiff's, so sequences keep its alignment of inserted items.
    """
    if type(old) is dict and type(new) is dict:
        before = {k: v for k, v in old.items() if not _private(k)}
        after = {k: v for k, v in new.items() if not _private(k)}
        union = len(before.keys() | after.keys())
        if union > 1 and len(before.keys() & after.keys()) / union < DEEPER:
            return [(prefix, old, new)]  # too few keys in common: deepdiff shows the whole mapping
        out: list[Leaf] = []
        for key, value in after.items():
            if key not in before:
                out.append(((*prefix, key), ABSENT, value))
            elif not _same(before[key], value):
                out.extend(_leaves(before[key], value, (*prefix, key)))
        out.extend(((*prefix, k), v, ABSENT) for k, v in before.items() if k not in after)
        return out
    if type(old) in _SCALARS and type(new) in _SCALARS:
        return [] if type(old) is type(new) and old == new else [(prefix, old, new)]
    out = []
    tree = DeepDiff(
        old, new, ignore_order=False, verbose_level=2, view="tree", threshold_to_diff_deeper=DEEPER
    )
    for levels in tree.values():
        for level in levels:
            before = ABSENT if isinstance(level.t1, NotPresent) else level.t1
            after = ABSENT if isinstance(level.t2, NotPresent) else level.t2
            out.append(((*prefix, *level.path(output_format="list")), before, after))
    return out


def _private(key: Any) -> bool:
    """Tell whether deepdiff skips a key (ignore_private_variables, its default)."""
    return isinstance(key, str) and key.startswith("__")


def _same(old: Any, new: Any) -> bool:
    """Tell whether two values are equal with every type alike, so deepdiff finds nothing between them.

    marshal (version 2, no back-references) writes 1, 1.0 and true, or 1 and "1" as keys,
    differently, and equal values built alike identically; keys in another order also differ
    there, which only sends the pair to the exact comparison.
    """
    if type(old) is not type(new):
        return False
    if type(old) in _SCALARS:
        return bool(old == new)
    try:
        return marshal.dumps(old, 2) == marshal.dumps(new, 2)
    except ValueError:  # a type marshal does not write: compare it the exact way
        return False


def _embedded(old: Any, new: Any) -> tuple[Any, Any] | None:
    """Return two multi-line strings parsed, when both hold a YAML mapping (a ConfigMap's config.yaml)."""
    if not (isinstance(old, str) and isinstance(new, str) and "\n" in old and "\n" in new):
        return None
    try:
        before, after = yaml.load(old, Loader=_Loader), yaml.load(new, Loader=_Loader)
    except yaml.YAMLError:
        return None
    return (before, after) if isinstance(before, dict) and isinstance(after, dict) else None


def _order(path: tuple[Any, ...], old: Any, new: Any) -> tuple[tuple[int, str], ...]:
    """Return a sort key that follows the document: each step's position in the new (or old) object."""
    key = []
    for part in path:
        position = _position(part, new, old)
        key.append((position, str(part)))
        new = _child(new, part)
        old = _child(old, part)
    return tuple(key)


def _position(part: Any, new: Any, old: Any) -> int:
    """Return where a key or index sits: in the new mapping, else after it in the old one."""
    if isinstance(part, int):
        return part
    names = list(new) if isinstance(new, dict) else []
    names += [k for k in (old if isinstance(old, dict) else {}) if k not in names]
    return names.index(part) if part in names else len(names)


def _child(node: Any, part: Any) -> Any:
    """Return one step down a document, or None when it is not there."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def format_path(parts: Iterable[Any]) -> str:
    """Return a field path the Kubernetes way: spec.resourceGroups[0].labels['nvidia.com/mig.config']."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += "['" + str(part).replace("\\", "\\\\").replace("'", "\\'") + "']"
    return text


def _redacted(path: tuple[Any, ...], old: Any, new: Any, secret: bool) -> tuple[Any, Any]:
    """Return both values, with a Secret's data hidden."""
    if not secret or not path or path[0] not in SECRET_FIELDS:
        return old, new
    return redact_values(old, len(path) == 1), redact_values(new, len(path) == 1)


def redact_values(value: Any, whole: bool) -> Any:
    """Return a Secret value (or, for `whole`, a data mapping) with every value replaced."""
    if isinstance(value, _Absent):
        return value
    if whole and isinstance(value, dict):
        return dict.fromkeys(value, REDACTED)
    return REDACTED
