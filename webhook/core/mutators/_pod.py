"""Small helpers to reach into a pod dict for writing, creating what is missing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from webhook.core.model import MAPPINGS, Pod

RESOURCES: Final = "a container's resources"
LIMITS: Final = "a container's resources.limits"
REQUESTS: Final = "a container's resources.requests"
ANNOTATIONS: Final = "metadata.annotations"
"""What `strict_object` calls the members mutators read, when one is not an object."""


def child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] as a dict, created (or replaced when null) if needed."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def child_list(parent: dict[str, Any], key: str) -> list[Any]:
    value = parent.get(key)
    if not isinstance(value, list):
        value = []
        parent[key] = value
    return value


def spec(pod: Pod) -> dict[str, Any]:
    return child(pod, "spec")


def containers(
    pod: Pod, groups: tuple[str, ...] = ("initContainers", "containers")
) -> Iterator[tuple[str, dict[str, Any]]]:
    pod_spec = spec(pod)
    for group in groups:
        for item in pod_spec.get(group) or ():
            if isinstance(item, dict):
                yield group, item


def has_gpu(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources")
    if not isinstance(resources, MAPPINGS):
        return False
    names = [*(resources.get("limits") or {}), *(resources.get("requests") or {})]
    return any(n == "nvidia.com/gpu" or n.startswith("nvidia.com/mig-") for n in names)


def require_node_expressions(pod: Pod, expressions: list[dict[str, Any]]) -> bool:
    """AND the expressions into every required node-selector term; True when anything changed."""
    affinity = child(child(spec(pod), "affinity"), "nodeAffinity")
    required = child(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    terms = child_list(required, "nodeSelectorTerms")
    if not terms:
        terms.append({})
    changed = False
    for term in terms:
        if not isinstance(term, dict):
            continue
        existing = child_list(term, "matchExpressions")
        for expression in expressions:
            if expression not in existing:
                existing.append(dict(expression))
                changed = True
    return changed


def name_of(container: dict[str, Any]) -> str:
    return str(container.get("name", ""))
