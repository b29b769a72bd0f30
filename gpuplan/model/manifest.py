"""One rendered object on its way to the output: where it goes, the object, where it comes from.

Made by the emitters (gpuplan.emit), changed only by copies (the overlay), proven by
gpuplan.validate and written by gpuplan.writer: every stage after the plan passes these on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class _ReadOnce(Generic[T]):
    """A value read once from the record's object and then kept on the record (its __dict__).

    functools.cached_property does the same under a lock on Python 3.11: at 18k objects a run,
    the lock cost more than reading the object every time.
    """

    def __init__(self, read: Callable[[Any], T]) -> None:
        self.read = read
        self.name = read.__name__
        self.__doc__ = read.__doc__

    @overload
    def __get__(self, item: None, owner: Any = None) -> _ReadOnce[T]: ...
    @overload
    def __get__(self, item: object, owner: Any = None) -> T: ...
    def __get__(self, item: Any, owner: Any = None) -> T | _ReadOnce[T]:
        if item is None:  # read on the class
            return self
        value = self.read(item)
        item.__dict__[self.name] = value  # found before this (non-data) descriptor from now on
        return value


@dataclass(frozen=True)
class Manifest:
    """One object to write: where it goes, the object, and the inputs it comes from.

    The object is never changed once it is in a Manifest (a patch or finalize makes a new one), so
    its kind, name and namespace are read from it once, on first use, and kept on the record: later
    stages ask for them many times per object.
    """

    path: str  # relative to the output folder, with '/'
    obj: dict[str, Any]
    sources: tuple[str, ...]
    cluster: str | None = None  # None for fleet-level files (argocd/)
    comments: tuple[
        str, ...
    ] = ()  # header lines after the sources, e.g. "Components: kueue=v0.14.4"
    final: bool = field(
        default=False, compare=False, repr=False
    )  # finalize() made it: it carries the labels and annotations every object carries

    @_ReadOnce
    def kind(self) -> str:
        """Return the object's kind."""
        return str(self.obj.get("kind", ""))

    @_ReadOnce
    def name(self) -> str:
        """Return the object's name."""
        return str(self.obj.get("metadata", {}).get("name", ""))

    @_ReadOnce
    def namespace(self) -> str | None:
        """Return the object's namespace, if it has one."""
        return self.obj.get("metadata", {}).get("namespace")
