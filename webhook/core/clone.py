"""Deep copies of JSON documents (dicts, lists, scalars), several times faster than copy.deepcopy.

As with deepcopy, a container that appears twice (a YAML alias) is copied once and stays shared
in the copy; values of any other type are handed to copy.deepcopy.
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypeVar

T = TypeVar("T")
JSON_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
"""The exact types of JSON's scalars: `type(x) in JSON_SCALARS` is cheaper than isinstance."""


def clone(value: T) -> T:
    copied: T = _clone(value, {})
    return copied


def _clone(value: Any, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in JSON_SCALARS:
        return value
    found = memo.get(id(value))
    if found is not None:
        return found
    if kind is dict:
        source: dict[Any, Any] = value  # typed, so that compiled code iterates it as a dict
        obj: dict[Any, Any] = {}
        memo[id(value)] = obj
        for key, item in source.items():
            obj[key] = item if type(item) in JSON_SCALARS else _clone(item, memo)
        return obj
    if kind is list:
        array: list[Any] = []
        memo[id(value)] = array
        for item in value:
            array.append(item if type(item) in JSON_SCALARS else _clone(item, memo))
        return array
    return copy.deepcopy(value, memo)
