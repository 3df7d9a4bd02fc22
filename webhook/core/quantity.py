"""Kubernetes resource quantities, parsed exactly with Decimal.

The core may not import the kubernetes client, so this mirrors
`kubernetes.utils.parse_quantity` (a test compares the two on many inputs).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Final

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY: Final = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
"""ASCII digits only, as the API server reads them: a Unicode digit class would take "١" too."""
_MAX_LEN: Final = 64
_MAX_EXPONENT: Final = 100
"""An exponent past which any non-zero number (at most 64 characters) exceeds _MAX_MAGNITUDE."""
_MAX_MAGNITUDE: Final = Decimal(2**63)
"""Past int64, where Kubernetes counts a quantity's value: a larger one (`1e19`, `1e999999`) is
read as this, with its sign. It is a quantity all the same, too large to count (a pod asking for
it asks for too many GPUs, not for something malformed), and no caller turns a million-digit
value into an int."""


_PARSED_TEXT: Final[dict[str, Decimal]] = {}
"""Quantities written as text, parsed: pods repeat the same few ("1", "16Gi"), and a Decimal is
immutable, so it is shared. A dict, not lru_cache: compiled, a lookup costs a tenth of the call
through the cache's wrapper. Emptied when full; what does not parse is not kept."""
_PARSED_TEXT_MAX: Final = 1024


def parse_quantity(value: object) -> Decimal:
    """Return the quantity as a Decimal, capped at _MAX_MAGNITUDE; raise ValueError when it is
    not a quantity."""
    if not isinstance(value, str):
        return _checked(value)
    parsed = _PARSED_TEXT.get(value)
    if parsed is None:
        parsed = _checked(value)
        if len(_PARSED_TEXT) >= _PARSED_TEXT_MAX:
            _PARSED_TEXT.clear()
        _PARSED_TEXT[value] = parsed
    return parsed


def _checked(value: object) -> Decimal:
    number = _parse(value)
    if abs(number) > _MAX_MAGNITUDE:
        return _MAX_MAGNITUDE.copy_sign(number)
    return number


def _parse(value: object) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        number = Decimal(str(value))
        if not number.is_finite():  # YAML's .nan and .inf
            raise ValueError(f"not a quantity: {value!r}")
        return number
    if not isinstance(value, str) or len(value) > _MAX_LEN:
        raise ValueError(f"not a quantity: {value!r}")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    try:
        number = Decimal(match["num"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise ValueError(f"not a quantity: {value!r}") from exc
    return _scaled(number, match["suffix"] or "")


def _scaled(number: Decimal, suffix: str) -> Decimal:
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if not number:
        return number
    if exponent > _MAX_EXPONENT:
        return _MAX_MAGNITUDE.copy_sign(number)  # beyond Decimal's range too
    return number * (Decimal(10) ** exponent)  # a tiny one underflows to 0, which Decimal allows


def is_whole(value: Decimal) -> bool:
    return value == value.to_integral_value()


_SCALABLE: Final = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<suffix>[A-Za-z]*)$")


@lru_cache(maxsize=1024)
def scale_quantity(value: str, factor: int) -> str:
    """Multiply a quantity by a device count, keeping its unit ("16Gi" x 2 -> "32Gi")."""
    match = _SCALABLE.match(value)
    if match is None:
        raise ValueError(f"cannot scale quantity {value!r}")
    scaled = Decimal(match["num"]) * factor
    text = format(scaled.normalize(), "f") if scaled != scaled.to_integral_value() else str(int(scaled))
    return f"{text}{match['suffix']}"
