"""Lists the render record keeps, packed so that reading a record costs little.

A record names every file of the output (18k at fleet scale) and is read by every cached
`render --check`: hashes of one width are kept as one string, and stat signatures as the base64
of their numbers (inode and size unsigned, the times signed; 64 bits each, little-endian), which
JSON reads in one step instead of 70k numbers.
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from collections.abc import Iterable

from gpuplan.writer.safefs import Signature

WIDTH = 32  # the width of every hash the record keeps (hex digits)


def join(hashes: Iterable[str]) -> str:
    """Return hashes of WIDTH characters as one string."""
    text = "".join(hashes)
    if len(text) % WIDTH:
        raise ValueError("a hash of another width")
    return text


def whole(text: object, count: int) -> str:
    """Return one string of `count` hashes; ValueError unless it holds exactly that many."""
    if type(text) is not str or len(text) != count * WIDTH or not text.isascii():
        raise ValueError("a damaged list of hashes")
    return text


def cut(text: str) -> list[str]:
    """Return the hashes of one string `whole` accepted."""
    return [text[i : i + WIDTH] for i in range(0, len(text), WIDTH)]


def _little(numbers: array[int]) -> array[int]:
    if sys.byteorder == "big":
        numbers.byteswap()
    return numbers


def pack(signatures: Iterable[Signature]) -> str:
    """Return signatures as text: the base64 of all (inode, size) pairs, then all (mtime, ctime)."""
    rows = list(signatures)
    ids = _little(array("Q", [n for row in rows for n in row[:2]]))
    times = _little(array("q", [n for row in rows for n in row[2:]]))
    return base64.b64encode(ids.tobytes() + times.tobytes()).decode("ascii")


def unpack(text: object, count: int) -> list[Signature]:
    """Return `count` signatures from `pack`'s text; ValueError unless it holds exactly that many."""
    if type(text) is not str:
        raise ValueError("a damaged list of signatures")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError("a damaged list of signatures") from exc
    if len(raw) != count * 32:
        raise ValueError("a list of signatures of another length")
    half = count * 16
    ids, times = _little(array("Q", raw[:half])), _little(array("q", raw[half:]))
    return list(zip(ids[0::2], ids[1::2], times[0::2], times[1::2], strict=True))
