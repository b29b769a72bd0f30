"""Kubernetes quantities: exact parsing and canonical formatting."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpuplan.model.quantity import QuantityError, format_bytes, format_cpu, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("64", 64),
        (64, 64),
        ("2000Gi", 2000 * 2**30),
        ("2Ti", 2 * 2**40),
        ("1.5", Fraction(3, 2)),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1E", 10**18),  # exa (k8s.io/apimachinery resource.Quantity: decimalSI), not an exponent
        ("2Ei", 2 * 2**60),
        ("1E-3", Fraction(1, 1000)),
        ("100M", 10**8),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "12x", "-1", "Gi", "1.2.3", True, None, "1" * 60, float("nan"), "2e", "1Ex"]
)
def test_reject(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_format() -> None:
    assert format_cpu(Fraction(384)) == "384"
    assert format_cpu(Fraction(1, 2)) == "500m"
    assert format_cpu(Fraction(1, 3)) == "333m"  # rounds down, never up
    assert format_bytes(Fraction(3800 * 2**30)) == "3800Gi"
    assert format_bytes(Fraction(1536)) == "1536"
    assert format_bytes(Fraction(2**40)) == "1Ti"
