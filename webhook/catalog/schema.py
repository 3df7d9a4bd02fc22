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
    found: list[tuple[list[str | int], str]] = []
    for error in validator(kind).iter_errors(data):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties":
            found.extend(([*path, key], f"unknown field {key!r}") for key in _unknown_keys(error))
        else:
            found.append((path, _message(error)))
    return sorted(found, key=lambda item: [str(p) for p in item[0]])


def _unknown_keys(error: Any) -> list[str]:
    """The members additionalProperties refused, each reported at its own line and path."""
    known = set(error.schema.get("properties") or ()) if isinstance(error.schema, dict) else set()
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [str(key) for key in instance if key not in known] or ["?"]


def _message(error: Any) -> str:
    if error.validator == "pattern" and isinstance(error.schema, dict) and error.schema.get("description"):
        return f"{error.instance!r} is not valid here: {error.schema['description']}"
    return str(error.message)
