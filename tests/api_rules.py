"""Is an object one the API server would accept? The Kubernetes schema (kubernetes-validate)
plus the API server's rules a schema cannot say (ValidatePodSpec and friends), for every pod in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import jsonschema
from kubernetes.utils import parse_quantity
from kubernetes_validate.utils import latest_version, schema_contents
from referencing import Registry, Resource

from tests.corpus_pods import pods_in


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    version = latest_version()
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", version)
    except FileNotFoundError:
        return None
    definitions = schema_contents(f"{folder}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validity_problems(obj: Mapping[str, Any]) -> set[str]:
    """Every schema error and API-server rule broken, as `path: problem` (all of them, not the first)."""
    problems: set[str] = set()
    validator = _validator(str(obj.get("kind", "")), str(obj.get("apiVersion", "")))
    if validator is not None:
        for error in validator.iter_errors(obj):
            problems.add(f"{'.'.join(map(str, error.absolute_path))}: {error.message}")
    for where, pod in pods_in(dict(obj)):
        problems.update(f"{where}: {p}" if where else p for p in _api_rules(pod.get("spec") or {}))
    return problems


def _api_rules(spec: Mapping[str, Any]) -> Iterator[str]:
    containers = [
        c for g in ("initContainers", "containers") for c in spec.get(g) or () if isinstance(c, dict)
    ]
    volumes = [v.get("name") for v in spec.get("volumes") or () if isinstance(v, dict)]
    if len(volumes) != len(set(volumes)):
        yield "spec.volumes: duplicate volume name"
    names = [c.get("name") for c in containers]
    if len(names) != len(set(names)):
        yield "spec.containers: duplicate container name"
    for container in containers:
        yield from (
            f"containers[name={container.get('name')}].{p}" for p in _container_rules(container, volumes)
        )
    for toleration in spec.get("tolerations") or ():
        if (
            isinstance(toleration, dict)
            and toleration.get("operator") == "Exists"
            and toleration.get("value")
        ):
            yield "spec.tolerations: a value with operator Exists"
    yield from _affinity_rules(spec.get("affinity"))


def _container_rules(container: Mapping[str, Any], volumes: list[Any]) -> Iterator[str]:
    found = container.get("resources")
    resources: dict[str, Any] = found if isinstance(found, dict) else {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for name, value in requests.items():
        extended = "/" in str(name) and not str(name).startswith("kubernetes.io/")
        if extended and name not in limits:
            yield f"resources.requests[{name}]: limit must be set for non overcommitable resources"
        elif name in limits and _quantity(value) is not None and _quantity(limits[name]) is not None:
            if extended and _quantity(value) != _quantity(limits[name]):
                yield f"resources.requests[{name}]: must be equal to the limit"
            if not extended and _quantity(value) > _quantity(limits[name]):
                yield f"resources.requests[{name}]: must be less than or equal to the limit"
    mounts = [m for m in container.get("volumeMounts") or () if isinstance(m, dict)]
    paths = [m.get("mountPath") for m in mounts]
    if len(paths) != len(set(paths)):
        yield "volumeMounts: duplicate mountPath"
    for mount in mounts:
        if mount.get("name") not in volumes:
            yield f"volumeMounts[{mount.get('name')}]: not found in volumes"


def _affinity_rules(affinity: Any) -> Iterator[str]:
    """ValidateNodeSelectorTerm, for required and preferred terms alike."""
    node = (affinity or {}).get("nodeAffinity") if isinstance(affinity, dict) else None
    required = (node or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        yield from _term_rules(term or {}, "required")
    for preferred in (node or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        if not 1 <= (preferred or {}).get("weight", 0) <= 100:
            yield "affinity: a preferred term's weight must be in 1..100"
        yield from _term_rules((preferred or {}).get("preference") or {}, "preferred")


def _term_rules(term: Mapping[str, Any], kind: str) -> Iterator[str]:
    for expression in term.get("matchExpressions") or ():
        operator, values = expression.get("operator"), expression.get("values") or []
        if operator in ("In", "NotIn") and not values:
            yield f"affinity ({kind}): {expression.get('key')} {operator} must have values"
        if operator in ("Exists", "DoesNotExist") and values:
            yield f"affinity ({kind}): {expression.get('key')} {operator} may not have values"
        if operator in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
            yield f"affinity ({kind}): {expression.get('key')} {operator} must have one integer value"
    for field in term.get("matchFields") or ():
        if field.get("key") != "metadata.name":
            yield f"affinity ({kind}): matchFields key {field.get('key')} is not metadata.name"
        if field.get("operator") in ("In", "NotIn") and len(field.get("values") or []) != 1:
            yield f"affinity ({kind}): matchFields must be only one value when 'operator' is 'In' or 'NotIn'"


def _quantity(value: Any) -> Any:
    try:
        return parse_quantity(value)  # type: ignore[no-untyped-call]
    except (ValueError, TypeError, ArithmeticError):
        return None
