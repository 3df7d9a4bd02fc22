"""The API server's own validation of what a template injects into pods.

A template that injects a label, annotation, toleration, node-affinity expression or class name
the API server refuses would make every create of a matching pod fail, after the webhook said
yes. These are the rules of k8s.io/apimachinery (IsQualifiedName, IsValidLabelValue,
IsDNS1123Subdomain) and of the pod validation (ValidateTolerations, ValidateAnnotations,
ValidateNodeSelectorRequirement), each returning (path under the checked value, message), and
the API types' integers as Go's JSON decoder reads them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any, Final

from webhook.core.catalog_index import glob_tokens
from webhook.core.model import ANNOTATIONS_MAX_BYTES
from webhook.yamlio import excerpt

Found = list[tuple[list[str | int], str]]

NAME_MAX: Final = 63
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
SUBDOMAIN_MAX: Final = 253
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
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in values.items())  # bytes, as Go counts
    if size > ANNOTATIONS_MAX_BYTES:
        found.append(([], f"annotations total {size} bytes, over the API server's {ANNOTATIONS_MAX_BYTES}"))
    return found


def int64(value: object) -> str | None:
    """Why `value` is not an int64 as Go's JSON decoder reads one, else None. It refuses a number
    written with a fraction or an exponent (YAML's `30.0` or `1e20` goes into the patch as
    `30.0`, `1e+20`) and one beyond the int64 range, so the pod's create would fail."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{excerpt(value)} is not an integer"
    if not INT64_MIN <= value <= INT64_MAX:
        return f"{excerpt(value)} is beyond an int64 ({INT64_MIN} to {INT64_MAX})"
    if isinstance(value, float):
        written = f": write {int(value)}" if value.is_integer() else ""
        why = "written with a fraction or exponent, which the API server refuses for an int64"
        return f"{excerpt(value)} is {why}{written}"
    return None


def toleration(item: Mapping[str, Any]) -> Found:
    found: Found = []
    seconds_problem = int64(item["tolerationSeconds"]) if "tolerationSeconds" in item else None
    if seconds_problem is not None:
        found.append((["tolerationSeconds"], seconds_problem))
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


def label_selector_requirement(item: Mapping[str, Any]) -> Found:
    """A LabelSelector's matchExpressions item, as ValidateLabelSelectorRequirement checks it:
    the key a qualified name, values for In/NotIn and none for Exists/DoesNotExist, each value a
    label value (the operator itself is the schema's)."""
    found = node_selector_requirement(item)
    values = item.get("values")
    if isinstance(values, list):
        for index, value in enumerate(values):
            problem = label_value(value) if isinstance(value, str) else None
            if problem is not None:
                found.append((["values", index], problem))
    return found


LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_LABEL_RULE: Final = "lower-case letters, digits and '-', starting and ending with a letter or digit"


def namespace_pattern(value: str) -> str | None:
    """Why `value`, a namespace name or glob pattern (fnmatch: `*`, `?`, `[...]`, `[!...]`), could
    never match a namespace name (a DNS-1123 label: 1-63 of LABEL_CHARS), else None."""
    tokens = glob_tokens(value)
    for token in tokens:
        if token == "[" or (len(token) == 1 and token not in LABEL_CHARS and token not in "*?"):
            if token == "[":
                why = "its '[' opens no character class (no ']' closes it), so it is a literal '['"
            else:
                why = f"{token!r} is not in a namespace name"
            return f"{excerpt(value)} can never match a namespace name: {why} ({_LABEL_RULE})"
        if len(token) > 1 and token[1] == "^":
            return (
                f"{excerpt(value)}: the class {token} matches '^' itself, which no namespace name has"
                " (a glob, not a regular expression): write [!...] for the characters to leave out"
            )
        if len(token) > 1 and not any(_class_admits(token, char) for char in LABEL_CHARS):
            return (
                f"{excerpt(value)} can never match a namespace name: the class {token} admits no"
                " lower-case letter, digit or '-'"
            )
    if tokens and (tokens[0] == "-" or tokens[-1] == "-"):
        why = f"it would start or end with '-' ({_LABEL_RULE})"
        return f"{excerpt(value)} can never match a namespace name: {why}"
    fixed = sum(1 for token in tokens if token != "*")
    if fixed > NAME_MAX:
        why = f"it needs {fixed} characters, a namespace name at most {NAME_MAX}"
        return f"{excerpt(value)} can never match a namespace name: {why}"
    return None


def _class_admits(token: str, char: str) -> bool:
    return fnmatchcase(char, token)
