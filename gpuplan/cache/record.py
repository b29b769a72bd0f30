"""One repository's render record: read it, trust it only for the same key, and write a new one."""

from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gpuplan.cache import store
from gpuplan.cache.key import Uncacheable, environment_key, input_key
from gpuplan.cache.output import Signature, digest
from gpuplan.diagnostics import Diagnostic, Severity
from gpuplan.write import WriteError, all_safe_relative, header, output_path

if TYPE_CHECKING:
    from gpuplan.emit.meta import Manifest

NO_SIGNATURE: Signature = (0, 0, 0, 0)  # never matches a file: its content is compared


class Entry(NamedTuple):
    """What the record keeps of one written file."""

    key: str  # the object's key: gpuplan's identity, the file header and the object
    content: str  # the file's content hash
    signature: Signature  # the file's stat when it was last seen with this content


@dataclass
class RenderCache:
    """The record of a repository's last render, and the one this render makes."""

    home: Path
    slot: str
    environment: str
    key: str
    previous: dict[str, Any] | None
    _table: tuple[list[str], list[str], list[str], list[int]] | None = None  # checked lists
    _files: dict[str, Entry] | None = None
    _valid: set[str] = field(default_factory=set)
    _used: set[str] = field(default_factory=set)  # proofs this render relied on or made
    _keys: dict[int, str] = field(default_factory=dict)
    _kinds: dict[str, str] = field(default_factory=dict)
    _findings: tuple[list[Diagnostic], list[str], list[str]] | None = None

    @classmethod
    def open(cls, root: Path, out: Path | None, crds: Path | None) -> RenderCache | None:
        """Return the cache of a full render of this repository, or None when it is off or unusable."""
        home = store.cache_home()
        if home is None:
            return None
        output = out if out is not None else root / "output"
        try:
            environment = environment_key(crds)
            key = input_key(root, environment, output_path(root, out))
        except (Uncacheable, OSError):
            return None
        name = store.slot(root, output)
        cache = cls(home, name, environment, key, store.load(home, name))
        cache._table = cache._checked_table()
        try:
            valid = cache.previous.get("valid") if cache.previous else None
            cache._valid = {k for k in valid if isinstance(k, str)} if valid else set()
            if cache.previous is not None:
                cache.findings()
        except (KeyError, TypeError, ValueError):  # a damaged record is no record
            cache.previous, cache._table, cache._valid = None, None, set()
        return cache

    def _checked_table(self) -> tuple[list[str], list[str], list[str], list[int]] | None:
        """Return the recorded files' lists, checked; a record with any damaged entry is no record.

        The record keeps them as parallel lists (see save): path, object key, content hash, and
        the four numbers of each stat signature in one flat list.
        """
        if self.previous is None:
            return None
        files = self.previous.get("files")
        try:
            if not isinstance(files, dict):
                raise ValueError("no file list")
            paths, keys, contents, numbers = (
                files[part] for part in ("paths", "keys", "contents", "signatures")
            )
            if not (
                all(type(v) is list for v in (paths, keys, contents, numbers))
                and len(paths) == len(keys) == len(contents) == len(numbers) // 4
                and len(numbers) % 4 == 0
                and {*map(type, paths), *map(type, keys), *map(type, contents)} <= {str}
                and set(map(type, numbers)) <= {int}
            ):
                raise ValueError("a damaged file list")
            all_safe_relative(paths)
        except (TypeError, ValueError, KeyError, WriteError):
            self.previous = None
            return None
        return paths, keys, contents, numbers

    @property
    def files(self) -> dict[str, Entry]:
        """Return path -> what the record keeps of every file the recorded render wrote."""
        if self._files is None:
            self._files = {}
            if self._table is not None:
                paths, keys, contents, numbers = self._table
                signatures = zip(*(iter(numbers),) * 4)
                self._files = {
                    path: Entry(key, content, signature)
                    for path, key, content, signature in zip(paths, keys, contents, signatures)
                }
        return self._files

    def signatures(self) -> dict[str, Signature]:
        """Return path -> recorded stat signature of every file (quicker than `files`)."""
        if self._table is None:
            return {}
        paths, numbers = self._table[0], self._table[3]
        return dict(zip(paths, zip(*(iter(numbers),) * 4)))

    @property
    def hit(self) -> bool:
        """Tell whether the record is of exactly these inputs and this gpuplan."""
        return self.previous is not None and self.previous.get("key") == self.key

    def recorded(self) -> dict[str, tuple[str, Signature]]:
        """Return path -> (content hash, signature) of every file the recorded render wrote."""
        return {p: (e.content, e.signature) for p, e in self.files.items()}

    def findings(self) -> tuple[list[Diagnostic], list[str], list[str]]:
        """Return the recorded render's diagnostics, notes and cluster names (read once)."""
        assert self.previous is not None
        if self._findings is None:
            found = [
                Diagnostic(f, line, col, Severity(sev), path, message, code, accepted)
                for f, line, col, sev, path, message, code, accepted in self.previous["diagnostics"]
            ]
            notes, clusters = self.previous["notes"], self.previous["clusters"]
            if not all(isinstance(n, str) for n in [*notes, *clusters]):
                raise TypeError("notes and cluster names are text")
            self._findings = (found, list(notes), list(clusters))
        found, notes, clusters = self._findings  # (Diagnostic is frozen: the lists are copied)
        return list(found), list(notes), list(clusters)

    def object_key(self, item: Manifest) -> str:
        """Return the key of one object: the same key gives the same file bytes and validation."""
        known = self._keys.get(id(item))
        if known is None:
            text = f"{self.environment}\0{header(item)}\0"
            digest = hashlib.sha256(text.encode("utf-8", "surrogateescape"))
            digest.update(_content(item.obj))
            known = digest.hexdigest()[:32]
            self._keys[id(item)] = known
            self._kinds[known] = item.kind
        return known

    # gpuplan.verify.Proven
    def known(self, item: Manifest, against: str) -> bool:
        """Tell whether this object was proven valid against these schemas."""
        proof = self._proof(item, against)
        if proof in self._valid:
            self._used.add(proof)
            return True
        return False

    def add(self, item: Manifest, against: str) -> None:
        """Remember that this object is valid against these schemas."""
        proof = self._proof(item, against)
        self._valid.add(proof)
        self._used.add(proof)

    def forget_kinds(self, kinds: set[str]) -> None:
        """Forget the objects of kinds with CEL rules that were skipped (their notes must repeat)."""
        self._valid = {k for k in self._valid if self._kinds.get(k) not in kinds}

    def _proof(self, item: Manifest, against: str) -> str:
        text = f"{self.object_key(item)}\0{against}"
        proof = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        self._kinds[proof] = item.kind
        return proof

    def unchanged(self, manifests: list[Manifest]) -> dict[str, tuple[str, Signature]]:
        """Return the recorded files whose object is unchanged (still to be checked on disk)."""
        found = {}
        for item in manifests:
            entry = self.files.get(item.path)
            if entry is not None and entry.key == self.object_key(item):
                found[item.path] = (entry.content, entry.signature)
        return found

    def save(
        self,
        manifests: list[Manifest],
        files: dict[str, bytes],
        signatures: dict[str, Signature],
        found: tuple[list[Diagnostic], list[str], list[str]],
    ) -> None:
        """Record this render: each file's object key, content hash and signature, and its findings."""
        entries = {}
        for item in manifests:
            data = files.get(item.path)
            content = digest(data) if data is not None else self.files[item.path].content
            signature = signatures.get(item.path, NO_SIGNATURE)
            entries[item.path] = Entry(self.object_key(item), content, signature)
        self.store(entries, found, sorted(self._valid & self._used))

    def store(
        self,
        entries: dict[str, Entry],
        found: tuple[list[Diagnostic], list[str], list[str]],
        valid: list[str],
    ) -> None:
        """Write the record (best effort)."""
        diagnostics, notes, clusters = found
        files = {
            "paths": list(entries),
            "keys": [e.key for e in entries.values()],
            "contents": [e.content for e in entries.values()],
            "signatures": [n for e in entries.values() for n in e.signature],
        }
        record = {
            "key": self.key,
            "files": files,
            "valid": valid,
            "diagnostics": [_row(d) for d in diagnostics],
            "notes": notes,
            "clusters": clusters,
        }
        store.save(self.home, self.slot, record)

    def refresh(self, signatures: dict[str, Signature]) -> None:
        """Write the record again with files' new signatures (seen with the recorded content)."""
        assert self.previous is not None
        entries = {
            p: e._replace(signature=signatures.get(p, e.signature)) for p, e in self.files.items()
        }
        self.store(entries, self.findings(), sorted(self._valid))


def _content(obj: Any) -> bytes:
    """Return bytes that tell an object apart from every other: marshal's, else its repr.

    marshal version 2 writes no back-references, so equal objects built alike give equal bytes,
    and it is several times faster than repr over a manifest; it refuses subclasses of the plain
    types (a float that keeps its source text), which repr then names with their type's own repr.
    """
    try:
        return b"m" + marshal.dumps(obj, 2)
    except ValueError:
        return b"r" + repr(obj).encode("utf-8", "surrogateescape")


def _row(item: Diagnostic) -> list[Any]:
    return [
        item.file,
        item.line,
        item.col,
        item.severity.value,
        item.path,
        item.message,
        item.code,
        item.accepted,
    ]
