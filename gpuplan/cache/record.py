"""One repository's render record: read it, trust it only for the same key, and write a new one."""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gpuplan.cache import packed, store
from gpuplan.cache.key import (
    InputFile,
    Uncacheable,
    environment_key,
    input_digests,
    input_files,
    input_key,
    trusted,
)
from gpuplan.cache.output import Signature
from gpuplan.diagnostics import Diagnostic, Severity, has_errors, ordered, render
from gpuplan.writer.tree import WriteError, all_safe_relative, digest, header, output_path

if TYPE_CHECKING:
    from gpuplan.model.manifest import Manifest

NO_SIGNATURE: Signature = (0, 0, 0, 0)  # never matches a file: its content is compared


class Shown(NamedTuple):
    """The recorded findings as the `text` format prints them."""

    text: str
    fails: bool  # they fail the run
    fails_strict: bool  # they fail it with --strict
    notes: list[str]


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
    inputs: list[InputFile] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)  # the inputs' content hashes
    taken: int = 0  # time.time_ns() before the inputs' lstat was taken
    _table: tuple[list[str], str, str, list[Signature]] | None = None  # checked
    _files: dict[str, Entry] | None = None
    _valid_set: set[str] | None = None
    _used: set[str] = field(default_factory=set)  # proofs this render relied on or made
    _keys: dict[int, str] = field(default_factory=dict)
    _unproven: dict[tuple[int, str], tuple[Manifest, str]] = field(default_factory=dict)  # proofs
    _proved: list[tuple[list[str], list[Manifest]]] = field(default_factory=list)  # kinds, if asked
    _findings: tuple[list[Diagnostic], list[str], list[str]] | None = None

    @classmethod
    def open(cls, root: Path, out: Path | None, crds: Path | None) -> RenderCache | None:
        """Return the cache of a full render of this repository, or None when it is off or unusable."""
        home = store.cache_home()
        if home is None:
            return None
        output = out if out is not None else root / "output"
        name = store.slot(root, output)
        try:
            environment = environment_key(crds)
            taken = time.time_ns()
            inputs = input_files(root)
            raw = store.read(home, name)
            previous = store.parse(raw) if raw else None
            digests = input_digests(inputs, _known_digests(previous, inputs))
            key = input_key(environment, output_path(root, out), inputs, digests)
        except (Uncacheable, OSError):
            return None
        cache = cls(home, name, environment, key, previous, inputs, digests, taken)
        try:
            cache._table = cache._checked_table()
        except (KeyError, TypeError, ValueError):  # a damaged record is no record
            cache.previous, cache._table = None, None
        return cache

    @property
    def _valid(self) -> set[str]:
        """The proofs of the last render (read when first asked for)."""
        if self._valid_set is None:
            self._valid_set = set()
            if self.previous is not None:
                valid = self.previous.get("valid", "")
                with contextlib.suppress(TypeError, ValueError):  # damaged: proven again
                    self._valid_set = set(
                        packed.cut(packed.whole(valid, len(valid) // packed.WIDTH))
                    )
        return self._valid_set

    @_valid.setter
    def _valid(self, value: set[str]) -> None:
        self._valid_set = value

    def _checked_table(self) -> tuple[list[str], str, str, list[Signature]] | None:
        """Return the recorded files' lists, checked; raises ValueError (or TypeError, KeyError,
        WriteError) on any damaged entry, and the record is then no record.

        The record keeps them as parallel lists (see store): the paths, then the object keys and
        the content hashes each as one string, and the stat signatures packed (gpuplan.cache.packed).
        That the paths stay inside the output is checked where they are used to reach files
        (`files`); `signatures` only names them to compare with what a scan finds.
        """
        if self.previous is None:
            return None
        files = self.previous["files"]
        paths = files["paths"]
        if type(paths) is not list or not set(map(type, paths)) <= {str}:
            raise ValueError("a damaged file list")
        count = len(paths)
        keys, contents = packed.whole(files["keys"], count), packed.whole(files["contents"], count)
        return paths, keys, contents, packed.unpack(files["signatures"], count)

    @property
    def files(self) -> dict[str, Entry]:
        """Return path -> what the record keeps of every file the recorded render wrote."""
        if self._files is None:
            self._files = {}
            if self._table is not None:
                paths, keys, contents, signatures = self._table
                try:
                    all_safe_relative(paths)
                except WriteError:  # a damaged record is no record: not a hit either
                    self.previous, self._table = None, None
                    return self._files
                self._files = {
                    path: Entry(key, content, signature)
                    for path, key, content, signature in zip(
                        paths, packed.cut(keys), packed.cut(contents), signatures
                    )
                }
        return self._files

    def signatures(self) -> dict[str, Signature]:
        """Return path -> recorded stat signature of every file (quicker than `files`).

        The paths are not checked (see `files`): only for comparing with the names a scan of the
        output finds (gpuplan.cache.output.as_recorded), which are all inside it.
        """
        if self._table is None:
            return {}
        return dict(zip(self._table[0], self._table[3]))

    @property
    def hit(self) -> bool:
        """Tell whether the record is of exactly these inputs and this gpuplan."""
        return self.previous is not None and self.previous.get("key") == self.key

    def recorded(self) -> dict[str, tuple[str, Signature]]:
        """Return path -> (content hash, signature) of every file the recorded render wrote."""
        return {p: (e.content, e.signature) for p, e in self.files.items()}

    def shown(self) -> Shown | None:
        """Return the recorded findings as `text` format prints them, or None (none kept, or
        damaged: `findings` then has them)."""
        assert self.previous is not None
        shown, notes = self.previous.get("shown"), self.previous.get("notes")
        if not isinstance(shown, dict) or type(notes) is not list:
            return None
        text, fails = shown.get("text"), shown.get("fails")
        if type(text) is not str or type(fails) is not list or len(fails) != 2:
            return None
        if not all(type(f) is bool for f in fails) or not all(type(n) is str for n in notes):
            return None
        return Shown(text, fails[0], fails[1], list(notes))

    def findings(self) -> tuple[list[Diagnostic], list[str], list[str]]:
        """Return the recorded render's diagnostics, notes and cluster names (read once); raises
        KeyError, TypeError or ValueError when they are damaged."""
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

    def object_keys(self, items: list[Manifest]) -> list[str]:
        """Return the key of each object: the same key gives the same file bytes and validation."""
        return [self._key(item) for item in items]

    def _key(self, item: Manifest) -> str:
        """Return the key of an object, computed once in this render (the objects outlive it)."""
        known = self._keys.get(id(item))
        if known is None:
            known = self._keys[id(item)] = self._compute_key(item)
        return known

    def _compute_key(self, item: Manifest) -> str:
        text = f"{self.environment}\0{header(item)}\0"
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape"))
        digest.update(_content(item.obj))
        return digest.hexdigest()[:32]

    # gpuplan.validate.prove.Proven
    def unproven(self, items: list[Manifest], against: str) -> list[Manifest]:
        """Return the objects not proven valid against these schemas (the others' proofs are used)."""
        proofs = self._proofs(items, against)
        valid = self._valid
        missing = set(proofs).difference(valid)
        self._used.update(valid.intersection(proofs) if missing else proofs)
        if not missing:
            return []
        found = [
            (item, proof) for item, proof in zip(items, proofs, strict=True) if proof in missing
        ]
        self._unproven.update(((id(item), against), (item, proof)) for item, proof in found)
        return [item for item, _ in found]

    def add(self, item: Manifest, against: str) -> None:
        """Remember that this object is valid against these schemas."""
        held, proof = self._unproven.get((id(item), against), (None, ""))
        if held is not item:
            proof = _proof(self._key(item), against)
        self._proved.append(([proof], [item]))
        self._valid.add(proof)
        self._used.add(proof)

    def forget_kinds(self, kinds: set[str]) -> None:
        """Forget the objects of kinds with CEL rules that were skipped (their notes must repeat)."""
        if kinds:
            kind_of = {p: i.kind for proofs, items in self._proved for p, i in zip(proofs, items)}
            self._valid = {k for k in self._valid if kind_of.get(k) not in kinds}

    def _proofs(self, items: list[Manifest], against: str) -> list[str]:
        """Return each object's proof against these schemas: a hash of its key and of `against`."""
        proofs = [_proof(self._key(item), against) for item in items]
        self._proved.append((proofs, items))
        return proofs

    def unchanged(self, manifests: list[Manifest]) -> dict[str, tuple[str, Signature]]:
        """Return the recorded files whose object is unchanged (still to be checked on disk)."""
        found = {}
        files = self.files
        for item, key in zip(manifests, self.object_keys(manifests), strict=True):
            entry = files.get(item.path)
            if entry is not None and entry.key == key:
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
        for item, key in zip(manifests, self.object_keys(manifests), strict=True):
            data = files.get(item.path)
            content = digest(data) if data is not None else self.files[item.path].content
            signature = signatures.get(item.path, NO_SIGNATURE)
            entries[item.path] = Entry(key, content, signature)
        self.store(entries, found, sorted(self._valid & self._used))

    def store(
        self,
        entries: dict[str, Entry],
        found: tuple[list[Diagnostic], list[str], list[str]],
        valid: list[str],
    ) -> None:
        """Write the record (best effort)."""
        diagnostics, notes, clusters = found
        paths, signatures = list(entries), [e.signature for e in entries.values()]
        keys = packed.join(e.key for e in entries.values())
        contents = packed.join(e.content for e in entries.values())
        files = {
            "paths": paths,
            "keys": keys,
            "contents": contents,
            "signatures": packed.pack(signatures),
        }
        inputs = {
            "taken": self.taken,
            "paths": [f.relative for f in self.inputs],
            "digests": packed.join(self.digests),
            "signatures": packed.pack(f.signature for f in self.inputs),
        }
        # The findings as `text` prints them too: a check answered from the record prints
        # them without making, sorting and wording 2,000 findings again at fleet scale.
        shown = {
            "text": render(ordered(diagnostics), "text"),
            "fails": [has_errors(diagnostics), has_errors(diagnostics, strict=True)],
        }
        record = {
            "key": self.key,
            "inputs": inputs,
            "files": files,
            "valid": packed.join(valid),
            "diagnostics": [_row(d) for d in diagnostics],
            "shown": shown,
            "notes": list(notes),
            "clusters": list(clusters),
        }
        store.save(self.home, self.slot, record)

    def refresh(self, signatures: dict[str, Signature]) -> None:
        """Write the record again with files' new signatures (seen with the recorded content)."""
        assert self.previous is not None
        try:
            found = self.findings()
        except (KeyError, TypeError, ValueError):
            return  # damaged findings: the next render writes a whole record
        entries = {
            p: e._replace(signature=signatures.get(p, e.signature)) for p, e in self.files.items()
        }
        self.store(entries, found, sorted(self._valid))


def _known_digests(previous: dict[str, Any] | None, inputs: list[InputFile]) -> dict[str, str]:
    """Return relative path -> content hash of the input files the record saw with the lstat
    they have now, taken long enough after their last change (gpuplan.cache.key.trusted)."""
    try:
        seen_then = previous["inputs"] if previous is not None else None
        if seen_then is None:
            return {}
        paths, taken = seen_then["paths"], seen_then["taken"]
        if (
            type(paths) is not list
            or not all(type(p) is str for p in paths)
            or type(taken) is not int
        ):
            return {}
        digests = packed.cut(packed.whole(seen_then["digests"], len(paths)))
        signatures = packed.unpack(seen_then["signatures"], len(paths))
    except (KeyError, TypeError, ValueError):
        return {}
    seen = {
        path: (signature, content)
        for path, content, signature in zip(paths, digests, signatures, strict=True)
        if trusted(signature, taken)
    }
    return {
        f.relative: seen[f.relative][1]
        for f in inputs
        if f.relative in seen and seen[f.relative][0] == f.signature
    }


def _proof(key: str, against: str) -> str:
    """Return the proof that the object of this key is valid against these schemas."""
    text = f"{key}\0{against}"
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


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
