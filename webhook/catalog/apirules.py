"""The API server's own validation of what a template injects into pods.

A template that injects a label, annotation, toleration, node-affinity expression or class name
the API server refuses would make every create of a matching pod fail, after the webhook said
yes. These are the rules of k8s.io/apimachinery (IsQualifiedName, IsValidLabelValue,
IsDNS1123Subdomain) and of the pod validation (ValidateTolerations, ValidateAnnotations,
ValidateNodeSelectorRequirement), each returning (path under the checked value, message).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from webhook.yamlio import excerpt

Found = list[tuple[list[str | int], str]]

NAME_MAX: Final = 63
SUBDOMAIN_MAX: Final = 253
ANNOTATIONS_MAX_BYTES: Final = 256 * 1024
_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_RULE: Final = "alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
_SUBDOMAIN_RULE: Final = "lower-case alphanumerics, '-' or '.', starting and ending with an alphanumeric"


def qualified_name(value: str) -> str | None:
    """Why `value` is not a qualified name (a label or annotation key), else None."""
    parts = value.split("/")
    if len(parts) > 2:
        return f"{excerpt(value)} is not a qualified name: at most one '/' ([prefix/]name)"
    if len(parts) == 2:
        prefix_problem = dns_subdomain(parts[0])
        if prefix_problem is not None:
            return f"the prefix of {excerpt(value)} is not valid: {prefix_problem}"
    name = parts[-1]
    if not name or len(name) > NAME_MAX or not _NAME.fullmatch(name):
        rule = f"the name part needs 1-{NAME_MAX} characters, {_NAME_RULE}"
        return f"{excerpt(value)} is not a qualified name: {rule}"
    return None


def label_value(value: str) -> str | None:
    if len(value) > NAME_MAX or (value and not _NAME.fullmatch(value)):
        return f"{excerpt(value)} is not a label value: at most {NAME_MAX} characters, {_NAME_RULE}"
    return None


def dns_subdomain(value: str) -> str | None:
    if not value or len(value) > SUBDOMAIN_MAX or not _SUBDOMAIN.fullmatch(value):
        return (
            f"{excerpt(value)} is not a DNS-1123 subdomain: 1-{SUBDOMAIN_MAX} characters, {_SUBDOMAIN_RULE}"
        )
    return None


def label_map(values: Mapping[str, Any]) -> Found:
    found: Found = []
    for key, value in values.items():
        for problem in (qualified_name(str(key)), label_value(str(value))):
            if problem is not None:
                found.append(([str(key)], problem))
    return found


def annotation_map(values: Mapping[str, Any]) -> Found:
    found: Found = []
    for key in values:
        problem = qualified_name(str(key).lower())
        if problem is not None:
            found.append(([str(key)], problem))
    size = sum(len(str(k)) + len(str(v)) for k, v in values.items())
    if size > ANNOTATIONS_MAX_BYTES:
        found.append(([], f"annotations total {size} bytes, over the API server's {ANNOTATIONS_MAX_BYTES}"))
    return found


def toleration(item: Mapping[str, Any]) -> Found:
    found: Found = []
    key, operator = str(item.get("key", "")), item.get("operator", "Equal")
    value = str(item.get("value", ""))
    key_problem = qualified_name(key) if key else None
    if key_problem is not None:
        found.append((["key"], key_problem))
    if not key and operator != "Exists":
        found.append((["operator"], "operator must be Exists when key is empty (tolerate every taint)"))
    if "tolerationSeconds" in item and item.get("effect") != "NoExecute":
        found.append((["effect"], "effect must be NoExecute when tolerationSeconds is set"))
    if operator == "Exists" and value:
        found.append((["value"], "value must be empty when operator is Exists"))
    value_problem = label_value(value) if operator != "Exists" else None
    if value_problem is not None:
        found.append((["value"], value_problem))
    return found


def node_selector_requirement(item: Mapping[str, Any]) -> Found:
    found: Found = []
    key_problem = qualified_name(str(item.get("key", "")))
    if key_problem is not None:
        found.append((["key"], key_problem))
    operator, values = item.get("operator"), item.get("values") or []
    if operator in ("In", "NotIn") and not values:
        found.append((["values"], f"values must be given when operator is {operator}"))
    if operator in ("Exists", "DoesNotExist") and values:
        found.append((["values"], f"values must be empty when operator is {operator}"))
    return found
