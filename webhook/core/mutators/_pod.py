"""Small helpers to reach into a pod dict: read without creating, write creating what is missing.

Reading never creates a member: a mutator that changes nothing leaves the copy equal to the
original, so there is no patch. Writing creates a member only where it is absent (or null, which
Kubernetes reads as absent). A member that is there but of another type than Kubernetes gives it
(a container's `resources` that is a string, `tolerations` that is an object...) is never read
as empty nor written over: the helpers raise `MalformedMember` with its field path, and the
mutation of the pod stops there (MutationSkipped at that path; the pod is left unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from webhook.core.model import MAPPINGS, Pod
from webhook.core.placement import REQUIRED
from webhook.core.quantity import parse_quantity

CONTAINER_GROUPS: Final = ("initContainers", "containers")
_EMPTY: Final[dict[str, Any]] = {}
"""What reading an absent member gives; never written to (writes go through `child`)."""


class MalformedMember(Exception):
    """A member neither absent nor of its Kubernetes type. args: (field path, message).
    (An Exception, not a TypeError: mypyc compiles no other builtin exception subclasses.)"""

    def __init__(self, path: str, value: object, expected: str) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        super().__init__(path, f"{path} is {type(value).__name__} {shown}, not {expected}")


def path_of(exc: MalformedMember) -> str:
    return str(exc.args[0])


def message_of(exc: MalformedMember) -> str:
    return str(exc.args[1])


def read(parent: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """parent[key] to read members from: itself, or empty (never created) when absent or null.
    `where` is the path of `parent`, used to name a malformed member."""
    return _read_at(parent, key, _join(where, key))


def _read_at(parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    """parent[key] to read, never created; `path` is the member's own path."""
    value = parent.get(key)
    if isinstance(value, dict):
        return value
    if value is None:
        return _EMPTY
    raise MalformedMember(path, value, "an object")


def read_list(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """parent[key] to read items from: itself, or empty (never created) when absent or null."""
    value = parent.get(key)
    if isinstance(value, list):
        return value
    if value is None:
        return []
    raise MalformedMember(_join(where, key), value, "an array")


def child(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """parent[key] as a dict to write into, created when absent or null."""
    return _child_at(parent, key, _join(where, key))


def _child_at(parent: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """parent[key] to write into, created when absent or null; `path` is the member's own path."""
    value = parent.get(key)
    if isinstance(value, dict):
        return value
    if value is not None:
        raise MalformedMember(path, value, "an object")
    created: dict[str, Any] = {}
    parent[key] = created
    return created


def child_list(parent: dict[str, Any], key: str, where: str) -> list[Any]:
    """parent[key] as a list to append to, created when absent or null."""
    value = parent.get(key)
    if isinstance(value, list):
        return value
    if value is not None:
        raise MalformedMember(_join(where, key), value, "an array")
    created: list[Any] = []
    parent[key] = created
    return created


def read_spec(pod: Pod, base: str) -> dict[str, Any]:
    """The pod spec to read, never created; `base` is its path."""
    return _read_at(pod, "spec", base)


def spec(pod: Pod, base: str) -> dict[str, Any]:
    """The pod spec to write into, created when absent or null; `base` is its path."""
    return _child_at(pod, "spec", base)


def read_metadata(pod: Pod, meta: str) -> dict[str, Any]:
    """The pod metadata to read, never created; `meta` is its path."""
    return _read_at(pod, "metadata", meta)


def metadata(pod: Pod, meta: str) -> dict[str, Any]:
    """The pod metadata to write into, created when absent or null; `meta` is its path."""
    return _child_at(pod, "metadata", meta)


def containers(
    pod: Pod, base: str, groups: tuple[str, ...] = CONTAINER_GROUPS
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(group, index, container) of every container object, read without creating anything."""
    pod_spec = read_spec(pod, base)
    for group in groups:
        items = pod_spec.get(group)
        if isinstance(items, list):
            for index, item in enumerate(items):
                if isinstance(item, dict):
                    yield group, index, item


def container_path(base: str, group: str, index: int, container: Mapping[str, Any]) -> str:
    """The path the checks give a container: by name, by index when it has none."""
    name = container.get("name")
    selector = f"name={name}" if isinstance(name, str) and name else str(index)
    return f"{base}.{group}[{selector}]"


def resources_of(container: dict[str, Any], base: str, group: str, index: int) -> dict[str, Any]:
    """The container's `resources` to read; its path is built only to name it when malformed."""
    value = container.get("resources")
    if isinstance(value, dict):
        return value
    if value is None:
        return _EMPTY
    raise MalformedMember(f"{container_path(base, group, index, container)}.resources", value, "an object")


def section_of(container: dict[str, Any], section: str, base: str, group: str, index: int) -> dict[str, Any]:
    """`resources.limits` or `resources.requests` of the container, to read."""
    value = resources_of(container, base, group, index).get(section)
    if isinstance(value, dict):
        return value
    if value is None:
        return _EMPTY
    where = f"{container_path(base, group, index, container)}.resources.{section}"
    raise MalformedMember(where, value, "an object")


def has_gpu(container: Mapping[str, Any]) -> bool:
    """Whether the container asks for an NVIDIA GPU or MIG slice: a count of 0 is none (a
    LimitRange whose default is `nvidia.com/gpu: 0` gives one to every container, sidecars too)."""
    resources = container.get("resources")
    if not isinstance(resources, MAPPINGS):
        return False
    for section in (resources.get("limits"), resources.get("requests")):
        if not isinstance(section, MAPPINGS):
            continue
        for name in _keys(section):
            if (name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")) and not _zero(section[name]):
                return True
    return False


def _zero(value: object) -> bool:
    try:
        return parse_quantity(value) == 0
    except ValueError:
        return False


def _keys(value: object) -> list[str]:
    return [k for k in value if isinstance(k, str)] if isinstance(value, MAPPINGS) else []


def node_affinity(pod: Pod, base: str) -> dict[str, Any]:
    """spec.affinity.nodeAffinity to write into."""
    return child(child(spec(pod, base), "affinity", base), "nodeAffinity", f"{base}.affinity")


def require_node_expressions(pod: Pod, base: str, expressions: list[dict[str, Any]]) -> bool:
    """AND the expressions into every required node-selector term; True when anything changed."""
    return any(append_node_expressions(pod, base, expressions))


def append_node_expressions(
    pod: Pod, base: str, expressions: list[dict[str, Any]]
) -> list[tuple[int, int] | None]:
    """AND the expressions into every required node-selector term, appending those a term lacks;
    per term, where the appended ones start in its matchExpressions and how many (None: none).

    A term with no requirements matches no node (Kubernetes' NodeSelector): it stays empty, since
    the expressions would turn it into one that matches many, and the pod the scheduler places
    would not be the one slice choice read (webhook/core/placement.py reads it so too)."""
    where = f"{base}.affinity.nodeAffinity"
    required = child(node_affinity(pod, base), REQUIRED, where)
    terms = child_list(required, "nodeSelectorTerms", f"{where}.{REQUIRED}")
    fresh = not terms
    if fresh:
        terms.append({})
    added: list[tuple[int, int] | None] = []
    for index, term in enumerate(terms):
        if not isinstance(term, dict) or (not fresh and _matches_no_node(term)):
            added.append(None)
            continue
        existing = child_list(term, "matchExpressions", f"{where}.{REQUIRED}.nodeSelectorTerms[{index}]")
        start = len(existing)
        existing.extend(_own_copy(e) for e in expressions if e not in existing)
        added.append((start, len(existing) - start) if len(existing) > start else None)
    return added


def _own_copy(expression: dict[str, Any]) -> dict[str, Any]:
    """The expression with its own `values` list: terms that share one would be written out as
    YAML aliases (`&id001`, `*id001`) where the mutated pod is printed."""
    return {k: list(v) if isinstance(v, list) else v for k, v in expression.items()}


def _matches_no_node(term: dict[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def name_of(container: dict[str, Any]) -> str:
    return str(container.get("name", ""))


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
