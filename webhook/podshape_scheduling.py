"""Where a pod spec says where it may run, of types the API server would refuse to decode.

The decision reads `nodeSelector`, node affinity and tolerations to tell the nodes a pod may
run on; read leniently, a requirement with `operator: []` would be dropped and the pod decided
as if it could run anywhere. Each such value is named at its field, as `podshape` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from webhook.podshape_types import Problem, member_path, type_name

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_TOLERATION_STRINGS = ("key", "operator", "value", "effect")


def scheduling_problems(spec: Mapping[str, Any], base: str) -> Iterator[Problem]:
    yield from _string_map(spec.get("nodeSelector"), f"{base}.nodeSelector")
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        node_affinity = affinity.get("nodeAffinity")
        if isinstance(node_affinity, Mapping):
            yield from _node_affinity(node_affinity, f"{base}.affinity.nodeAffinity")
        else:
            yield from _not_object(node_affinity, f"{base}.affinity.nodeAffinity")
    else:
        yield from _not_object(affinity, f"{base}.affinity")
    yield from _tolerations(spec.get("tolerations"), f"{base}.tolerations")


def _node_affinity(node_affinity: Mapping[str, Any], path: str) -> Iterator[Problem]:
    problems: list[Problem] = []
    required = node_affinity.get(_REQUIRED)
    if isinstance(required, Mapping):
        terms = required.get("nodeSelectorTerms")
        for where, term in _array(terms, f"{path}.{_REQUIRED}.nodeSelectorTerms", problems):
            yield from _term(term, where)
    else:
        yield from _not_object(required, f"{path}.{_REQUIRED}")
    preferred = node_affinity.get(_PREFERRED)
    for where, item in _array(preferred, f"{path}.{_PREFERRED}", problems):
        weight = item.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)):
            yield f"{where}.weight", f"must be an integer, not {type_name(weight)}"
        preference = item.get("preference")
        if isinstance(preference, Mapping):
            yield from _term(preference, f"{where}.preference")
        else:
            yield from _not_object(preference, f"{where}.preference")
    yield from problems


def _term(term: Mapping[str, Any], path: str) -> Iterator[Problem]:
    problems: list[Problem] = []
    for member in ("matchExpressions", "matchFields"):
        for where, requirement in _array(term.get(member), f"{path}.{member}", problems):
            for key in ("key", "operator"):
                yield from _string(requirement.get(key), f"{where}.{key}")
            values = requirement.get("values")
            if values is not None and not isinstance(values, list):
                yield f"{where}.values", f"must be a list, not {type_name(values)}"
            for index, value in enumerate(values if isinstance(values, list) else ()):
                yield from _string(value, f"{where}.values[{index}]")
    yield from problems


def _tolerations(tolerations: object, path: str) -> Iterator[Problem]:
    problems: list[Problem] = []
    for where, toleration in _array(tolerations, path, problems):
        for key in _TOLERATION_STRINGS:
            yield from _string(toleration.get(key), f"{where}.{key}")
        seconds = toleration.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            yield f"{where}.tolerationSeconds", f"must be an integer, not {type_name(seconds)}"
    yield from problems


def _array(value: object, path: str, problems: list[Problem]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object item of an optional array with its path; what is not one goes to `problems`."""
    if value is None:
        return
    if not isinstance(value, list):
        problems.append((path, f"must be a list, not {type_name(value)}"))
        return
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            yield f"{path}[{index}]", item
        else:
            problems.append((f"{path}[{index}]", f"must be an object, not {type_name(item)}"))


def _string_map(value: object, path: str) -> Iterator[Problem]:
    if not isinstance(value, Mapping):
        yield from _not_object(value, path)
        return
    for key, text in value.items():
        yield from _string(text, member_path(path, key))


def _string(value: object, path: str) -> Iterator[Problem]:
    if value is not None and not isinstance(value, str):
        yield path, f"must be a string, not {type_name(value)}"


def _not_object(value: object, path: str) -> Iterator[Problem]:
    """The problem of an optional member that is not an object; none when it is absent."""
    if value is not None and not isinstance(value, Mapping):
        yield path, f"must be an object, not {type_name(value)}"
