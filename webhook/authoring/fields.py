"""Find a field in an object by JSON pointer (/spec/containers/0/image) or by the dotted paths the
webhook prints in violations (spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]),
so an author can paste a violation's path into a suite."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_MISSING = object()
_TOKEN = re.compile(
    r"""
    (?P<name>[^.\[\]"]+)                # a plain key
    | \["(?P<quoted>(?:[^"\\]|\\.)*)"\]  # ["key.with/dots"]
    | \[(?P<index>-?\d+)\]               # [0]
    | \[(?P<key>[^=\]]+)=(?P<value>[^\]]*)\]  # [name=vllm]
    | (?P<dot>\.)
    """,
    re.VERBOSE,
)

Step = str | int | tuple[str, str]


class FieldPathError(ValueError):
    """A field path that cannot be parsed; the message says where."""


def parse_path(path: str) -> list[Step]:
    """Steps of a JSON pointer or a dotted path: keys, list indexes and (key, value) selectors."""
    if path.startswith("/"):
        return [_pointer_step(part) for part in path[1:].split("/")]
    steps: list[Step] = []
    position = 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None:
            raise FieldPathError(
                f"cannot read {path!r} at character {position + 1}{_bracket_hint(path, position)}"
            )
        name = match.group("name")
        if name is not None and "/" in name:
            # Only label, annotation and resource names hold '/', and their dots would split them
            # into keys no object has: a `null` expected there passed on a pod that had the name.
            raise FieldPathError(
                f"cannot read {path!r}: {name!r} holds a '/', so it ends a label, annotation or resource"
                f" name that the dots before it split into keys; {_QUOTE}"
            )
        position = match.end()
        steps.extend(_step(match))
    if not steps:
        raise FieldPathError("empty field path")
    return steps


_QUOTE = (
    'write the whole name in quotes, as violations print it: annotations["gpu.aethervirt.io/mig-profile"]'
)


def _bracket_hint(path: str, position: int) -> str:
    """What to write for a name in brackets without quotes (`limits[nvidia.com/gpu]`)."""
    inside = path[position + 1 :].split("]", 1)[0]
    if path[position] != "[" or not inside or '"' in inside or "=" in inside:
        return ""
    return f': a name in brackets is a list index unless it is quoted; write it in quotes: ["{inside}"]'


def lookup(obj: Any, path: str) -> tuple[bool, Any]:
    """(True, value) when the field exists, else (False, None)."""
    current = obj
    for step in parse_path(path):
        current = _child(current, step)
        if current is _MISSING:
            return False, None
    return True, current


def _step(match: re.Match[str]) -> list[Step]:
    if match.group("name") is not None:
        return [match.group("name")]
    if match.group("quoted") is not None:
        return [re.sub(r"\\(.)", r"\1", match.group("quoted"))]
    if match.group("index") is not None:
        return [int(match.group("index"))]
    if match.group("key") is not None:
        return [(match.group("key"), match.group("value"))]
    return []


def _pointer_step(part: str) -> Step:
    text = part.replace("~1", "/").replace("~0", "~")
    return int(text) if text.isdigit() else text


def _child(current: Any, step: Step) -> Any:
    if isinstance(step, tuple):
        key, value = step
        if isinstance(current, list):
            for item in current:
                if isinstance(item, Mapping) and str(item.get(key)) == value:
                    return item
        return _MISSING
    if isinstance(step, int) and isinstance(current, list):
        return current[step] if -len(current) <= step < len(current) else _MISSING
    if isinstance(current, Mapping):
        return current.get(str(step), _MISSING)
    return _MISSING


def same_value(expected: Any, actual: Any) -> bool:
    """Equality where a number and a string with the same text match (1 and "1", as quantities)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(same_value(expected[k], actual[k]) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(same_value, expected, actual))
    if _is_number(expected) and _is_number(actual):
        return bool(expected == actual)
    if (_is_number(expected) and isinstance(actual, str)) or (
        _is_number(actual) and isinstance(expected, str)
    ):
        return str(expected) == str(actual)
    return type(expected) is type(actual) and bool(expected == actual)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
