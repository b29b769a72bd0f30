"""Kubernetes resource quantities: parse exactly, format canonically."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

# The grammar of kubernetes/apimachinery pkg/api/resource/quantity.go (Quantity's doc comment):
# <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>, with E in <decimalSI> and Ei in
# <binarySI>; a suffix is read before an exponent, so "1E" is 10^18 and "1E3" is 1000.
_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
# The grammar of k8s.io/apimachinery/pkg/api/resource (quantity.go), without signs we never need.
_QUANTITY = re.compile(
    r"^(?P<num>[0-9]+(\.[0-9]*)?|\.[0-9]+)(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]|)$"
)
_BINARY = ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")
MAX_DIGITS = 40  # refuse absurd numbers before Fraction arithmetic sees them


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Return the exact value of a Kubernetes quantity (a string or a plain number)."""
    if isinstance(value, str):
        return _parse_text(value)
    return _parse(value)


@lru_cache(maxsize=65536)
def _parse_text(value: str) -> Fraction:
    """Parse quantity text once: fleets repeat the same few quantities thousands of times."""
    return _parse(value)


def _parse(value: object) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError("must be a quantity such as 500m, 64 or 2000Gi, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise QuantityError("must not be negative")
        if len(str(value)) > MAX_DIGITS:
            raise QuantityError("is too large")
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value < 0:
            raise QuantityError("must be a finite, non-negative number")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError("must be a quantity such as 500m, 64 or 2000Gi")
    text = value.strip()
    match = _QUANTITY.fullmatch(text)
    if match is None or len(text) > MAX_DIGITS:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (examples: 500m, 64, 2000Gi, 2Ti)"
        )
    number = Fraction(match["num"])
    suffix = match["suffix"]
    if suffix[:1] in ("e", "E") and suffix not in _SUFFIXES:  # 1E3; not 1E or 1Ei (above)
        exponent = int(suffix[1:])
        if abs(exponent) > 30:
            raise QuantityError(f"{value!r} is out of range")
        return number * Fraction(10) ** exponent
    return number * _SUFFIXES[suffix]


_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _decimal(whole: int) -> str:
    """Return a whole number in the API server's canonical decimal-SI form (3000 -> 3k)."""
    for suffix, unit in _DECIMAL:
        if whole and whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return str(whole)


@lru_cache(maxsize=65536)
def format_cpu(cores: Fraction) -> str:
    """Return cores the way the API server stores them: whole (decimal-SI) or millicores."""
    return format_millicores(int(cores * 1000))  # never round up: a quota must not grow by rounding


@lru_cache(maxsize=65536)
def format_millicores(milli: int) -> str:
    """Return whole millicores the way the API server stores them: whole cores (decimal-SI) or millicores."""
    if milli % 1000 == 0:
        return _decimal(milli // 1000)
    return f"{milli}m"


@lru_cache(maxsize=65536)
def format_bytes(amount: Fraction) -> str:
    """Return bytes in canonical form: the largest exact binary suffix, else decimal-SI."""
    whole = int(amount)  # floor: a quota must not grow by rounding
    if whole == 0:
        return "0"
    for suffix in _BINARY:
        unit = int(_SUFFIXES[suffix])
        if whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return _decimal(whole)


@lru_cache(maxsize=65536)
def format_count(count: int | Fraction) -> str:
    """Return a whole count (GPUs, MIG instances, shares) as a canonical quantity string."""
    return _decimal(int(count))


def quantity_text(value: Fraction) -> str:
    """Return a quantity as a user writes it (100m, 256Mi, 3k), exactly where it can be."""
    if value.denominator == 1:
        whole = int(value)
        return format_bytes(value) if whole >= 1024 and whole % 1024 == 0 else _decimal(whole)
    if (value * 1000).denominator == 1:
        return format_millicores(int(value * 1000))
    return str(float(value))
