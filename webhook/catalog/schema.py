"""The versioned JSON Schemas shipped in the package, and validation that reports every error."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any, Final, NamedTuple

from jsonschema import Draft202012Validator

from webhook.yamlio import EXCERPT, excerpt

SCHEMAS = {"WorkloadTemplate": "template.v1.json", "GpuPolicy": "policy.v1.json"}

JsonPath = list[str | int]


class SchemaError(NamedTuple):
    path: JsonPath
    message: str
    covers: JsonPath
    """The value this error makes unusable: later checks do not judge it again."""


@cache
def schema(kind: str) -> dict[str, Any]:
    text = resources.files("webhook.catalog").joinpath("schemas", SCHEMAS[kind]).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind))


def schema_errors(kind: str, data: Any) -> list[SchemaError]:
    """Every schema violation, sorted by path, each with the value it makes unusable."""
    found: list[SchemaError] = []
    for error in validator(kind).iter_errors(data):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties":
            found.extend(
                SchemaError([*path, key], f"unknown field {key!r}{known_fields(error)}", [*path, key])
                for key in _unknown_keys(error)
            )
        elif error.validator == "required":
            found.extend(SchemaError(path, _message(error), [*path, key]) for key in _missing_keys(error))
        else:
            found.append(SchemaError(path, _message(error), path))
    reported = [error.path for error in found]
    for path, value in _non_finite(data, []):
        if not any(path[: len(other)] == other for other in reported):
            found.append(SchemaError(path, f"{excerpt(value)} is not a finite number", path))
    return sorted(found, key=lambda item: [str(p) for p in item.path])


def _non_finite(data: Any, path: JsonPath) -> Iterable[tuple[JsonPath, float]]:
    """NaN and infinities (YAML's `.nan`, `.inf`): JSON Schema's minimum and maximum let NaN
    through, and no figure, a price above all, may be one."""
    if isinstance(data, float) and not math.isfinite(data):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _non_finite(value, [*path, key])
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _non_finite(value, [*path, index])


def without(data: Any, paths: Iterable[Sequence[str | int]]) -> Any:
    """A copy of `data` without the values at `paths` (list items become None, keeping indices)."""
    pruned = copy.deepcopy(data)
    for path in sorted((list(p) for p in paths if p), key=len, reverse=True):
        parent = _at(pruned, path[:-1])
        last = path[-1]
        if isinstance(parent, dict):
            parent.pop(last, None)
        elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
            parent[last] = None
    return pruned


def _at(data: Any, path: Sequence[str | int]) -> Any:
    for step in path:
        if isinstance(data, dict):
            data = data.get(step)
        elif isinstance(data, list) and isinstance(step, int) and step < len(data):
            data = data[step]
        else:
            return None
    return data


def _unknown_keys(error: Any) -> list[str]:
    """The members additionalProperties refused, each reported at its own line and path."""
    known = set(error.schema.get("properties") or ()) if isinstance(error.schema, dict) else set()
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [str(key) for key in instance if key not in known] or ["?"]


def known_fields(error: Any) -> str:
    """The fields the schema names where an unknown one was written, so that a misspelt or
    misremembered field (`podOverrides.gpuCompute`) says what to write instead."""
    known = sorted(error.schema.get("properties") or ()) if isinstance(error.schema, dict) else []
    return f"; known here: {', '.join(known)}" if known else ""


def _missing_keys(error: Any) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    required = error.validator_value if isinstance(error.validator_value, list) else []
    return [str(key) for key in required if key not in instance] or ["?"]


def _message(error: Any) -> str:
    if error.validator == "pattern" and isinstance(error.schema, dict) and error.schema.get("description"):
        return f"{excerpt(error.instance)} is not valid here: {error.schema['description']}"
    if error.validator == "minimum" and isinstance(error.schema, dict) and error.schema.get("description"):
        return f"{excerpt(error.instance)} is not valid here: it is negative; {error.schema['description']}"
    return readable(error)


def readable(error: Any) -> str:
    """jsonschema's message with the values it quotes as Python writes them (`True is not of type
    'string'`, `None is not one of ['a', 'b']`) written as YAML does, and a long value (it can be
    a whole document, which would go to every line of output) cut to an excerpt."""
    message = str(error.message)
    # The author's value is cut to an excerpt; the allowed values are the schema's own, short
    # and all needed to say what to write, so they are shown whole.
    quoted = [(error.instance, EXCERPT)]
    if error.validator in ("enum", "const"):
        quoted.append((error.validator_value, _ALLOWED_SHOWN))
    for value, limit in quoted:
        python, shown = repr(value), excerpt(value, limit)
        if python != shown:
            message = message.replace(python, shown, 1)
    return message + _quote_hint(error)


_ALLOWED_SHOWN: Final = 1000
"""Characters of a schema's allowed values (an enum) shown in a message: all of them."""

_READ_AS: Final = ((bool, "a boolean"), (int, "a number"), (float, "a number"))


def _quote_hint(error: Any) -> str:
    """Where text is wanted, YAML reads `true` and `1.10` unquoted as other things; where a
    number is, a quoted one is text."""
    if error.validator != "type":
        return ""
    value = error.instance
    if error.validator_value == "string":
        read_as = next((name for kind, name in _READ_AS if isinstance(value, kind)), "")
        return f"; YAML read it as {read_as}: write it in quotes for text" if read_as else ""
    if error.validator_value in ("number", "integer") and isinstance(value, str) and _is_number(value):
        return "; write it without quotes for a number"
    if error.validator_value == "number" and isinstance(value, str):
        return _share_hint(value)
    return ""


def _share_hint(text: str) -> str:
    """A share written as a percentage (`computeShare: 14%`, as a pod's gpu-compute annotation
    may write it and the README's template table shows it) is text: say which number to write."""
    number = text.strip()
    if not number.endswith("%") or not _is_number(number[:-1]):
        return ""
    return f"; write a share as a number, {float(number[:-1]) / 100:g} for {number}"


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
