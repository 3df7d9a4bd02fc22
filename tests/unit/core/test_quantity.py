"""The core's quantity parser agrees with the kubernetes client's `parse_quantity`.

The core may not import the kubernetes client, so it has its own parser; these properties hold
it to the client's results on the Kubernetes quantity grammar, and on any text both accept.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from kubernetes.utils import parse_quantity as _client_parse

from webhook.core.quantity import is_whole, parse_quantity, scale_quantity

LIMIT = Decimal(2**63)


def client_parse(value: object) -> Decimal:
    parsed: Decimal = _client_parse(value)  # type: ignore[no-untyped-call]
    return parsed


digits = st.text("0123456789", min_size=1, max_size=12)
number = st.one_of(
    digits,
    st.builds(lambda a, b: f"{a}.{b}", digits, digits),
    st.builds(lambda a: f"{a}.", digits),
    st.builds(lambda b: f".{b}", digits),
)
suffix = st.one_of(
    st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]),
    st.builds(
        lambda e, sign, n: f"{e}{sign}{n}",
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.integers(0, 30),
    ),
)
grammar = st.builds(lambda sign, n, s: f"{sign}{n}{s}", st.sampled_from(["", "+", "-"]), number, suffix)


def capped(value: Decimal) -> Decimal:
    """The client's value as the core reads it: past int64, 2^63 with its sign."""
    return LIMIT.copy_sign(value) if abs(value) > LIMIT else value


def agree(text: object) -> None:
    assert parse_quantity(text) == capped(client_parse(text))


@given(grammar)
@example("1")
@example("500m")
@example("16Gi")
@example("1.5e3")
@example("-0.5Ki")
@example("8Ei")
@example("9Ei")
def test_the_kubernetes_grammar_parses_like_the_client(text: str) -> None:
    agree(text)


@given(st.text("0123456789.+-eEkKMGTPinum", min_size=1, max_size=8))
def test_any_text_both_accept_has_the_same_value(text: str) -> None:
    try:
        ours = parse_quantity(text)
    except ValueError:
        return
    assert capped(client_parse(text)) == ours


@given(st.integers(-(2**63), 2**63))
def test_integers_parse_like_the_client(value: int) -> None:
    agree(value)


@pytest.mark.parametrize("value", [0.5, 1.0, 2.0, 1.25, 8.0, -3.5])
def test_exact_floats_parse_like_the_client(value: float) -> None:
    agree(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        " ",
        "one",
        "1Kb",
        "1ki",
        "1.2.3",
        "--1",
        "1e",
        "Gi",
        "inf",
        "nan",
        "Infinity",
        "1_000",
        "0x10",
        "1 Gi",
        "e3",
    ],
)
def test_text_that_is_not_a_quantity_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(value)


@pytest.mark.parametrize(
    "value", [None, True, False, float("nan"), float("inf"), -float("inf"), [1], {"a": 1}, "1" * 65]
)
def test_values_that_are_not_quantities_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(value)


@pytest.mark.parametrize(
    "value", ["1e999999999999", "1e5000", "10Ei", 2**64, "1e19", "100000000000000000000", 1e300]
)
def test_values_beyond_an_int64_are_capped_not_refused_nor_crashed_on(value: object) -> None:
    """Still quantities, too large to count: read as 2^63, so a pod asking for them asks for too
    many GPUs rather than for something malformed, and no caller builds a huge int."""
    assert parse_quantity(value) == LIMIT
    assert parse_quantity(f"-{value}") == -LIMIT


@pytest.mark.parametrize("value", ["0e999999999999", "0e5000"])
def test_zero_with_any_exponent_is_zero(value: str) -> None:
    assert parse_quantity(value) == 0


@pytest.mark.parametrize(
    ("value", "whole"), [("1", True), ("1000m", True), ("1500m", False), ("0.5", False), ("2Ki", True)]
)
def test_is_whole(value: str, whole: bool) -> None:
    assert is_whole(parse_quantity(value)) is whole


@pytest.mark.parametrize(
    ("value", "factor", "scaled"),
    [
        ("16Gi", 2, "32Gi"),
        ("500m", 3, "1500m"),
        ("0.5", 3, "1.5"),
        ("4", 2, "8"),
        ("1.25Gi", 4, "5Gi"),
        ("8", 1, "8"),
    ],
)
def test_scale_quantity_keeps_the_unit(value: str, factor: int, scaled: str) -> None:
    assert scale_quantity(value, factor) == scaled
    assert parse_quantity(scaled) == parse_quantity(value) * factor


@pytest.mark.parametrize("value", ["1e3", "-1Gi", "lots", ""])
def test_scale_quantity_refuses_what_it_cannot_multiply(value: str) -> None:
    with pytest.raises(ValueError):
        scale_quantity(value, 2)
