"""The versioned JSON Schemas shipped in the package, and validation that reports every error."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = {"WorkloadTemplate": "template.v1.json", "GpuPolicy": "policy.v1.json"}


@cache
def schema(kind: str) -> dict[str, Any]:
    text = resources.files("webhook.catalog").joinpath("schemas", SCHEMAS[kind]).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind))


def schema_errors(kind: str, data: Any) -> list[tuple[list[str | int], str]]:
    """(JSON path, message) for every schema violation, sorted by path."""
    found = []
    for error in validator(kind).iter_errors(data):
        found.append((list(error.absolute_path), _message(error)))
    return sorted(found, key=lambda item: [str(p) for p in item[0]])


def _message(error: Any) -> str:
    if error.validator == "additionalProperties":
        return str(error.message).replace("Additional properties are not allowed", "unknown field")
    if error.validator == "pattern" and isinstance(error.schema, dict) and error.schema.get("description"):
        return f"{error.instance!r} is not valid here: {error.schema['description']}"
    return str(error.message)
