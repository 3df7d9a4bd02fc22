"""Pod specs that the API server would refuse to decode, told before an offline decision.

The API server decodes a Pod (or a workload's pod template) before any webhook sees it, so the
webhook itself never meets `spec: 7`. The offline commands (`check`, `krm`) read files, where
it can be there; deciding such a file leniently would call it ALLOWED, so these name what is
wrong instead, with its field path: what strict decoding and the required fields would refuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from webhook.core.workloads import ShapeRoute, group_kind, pod_sites, shape_routes
from webhook.podshape_scheduling import scheduling_problems
from webhook.podshape_types import Problem, member_path, type_name


def identity_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """`apiVersion` or `kind` that is not a string: what the object is cannot be told, so it can
    be neither decided nor skipped as another kind (the API server refuses to decode it)."""
    return [
        (key, f"must be a string, not {type_name(obj[key])}")
        for key in ("apiVersion", "kind")
        if obj.get(key) is not None and not isinstance(obj[key], str)
    ]


def metadata_problems(metadata: object, base: str) -> Iterator[Problem]:
    """An object's (or a pod template's) metadata of the wrong type: read leniently, its name,
    namespace, labels and annotations would be taken as absent and the object decided anyway."""
    if metadata is None:
        return
    if not isinstance(metadata, Mapping):
        yield base, f"must be an object, not {type_name(metadata)}"
        return
    for key in ("name", "generateName", "namespace"):
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            yield f"{base}.{key}", f"must be a string, not {type_name(value)}"
    for key in ("labels", "annotations"):
        value = metadata.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            yield f"{base}.{key}", f"must be an object, not {type_name(value)}"
            continue
        for name, text in value.items():
            if not isinstance(text, str):
                yield member_path(f"{base}.{key}", name), f"must be a string, not {type_name(text)}"


def shape_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Every problem of the object's identity, metadata and pod specs; none for a well-formed one."""
    problems: list[Problem] = [*identity_problems(obj), *metadata_problems(obj.get("metadata"), "metadata")]
    if obj.get("apiVersion") in (None, ""):
        problems.insert(0, ("apiVersion", "missing: the API server refuses an object without one"))
    if problems:
        return problems
    group, kind = group_kind(obj)
    if (group, kind) == ("", "Pod"):
        return list(spec_problems(obj.get("spec"), "spec"))
    found: dict[str, str] = {}  # routes share their first steps: each problem once, in order
    for route in shape_routes((group, kind)):
        for path, problem in _route_problems(obj, route):
            found.setdefault(path, problem)
    problems.extend(found.items())
    for site in pod_sites(obj, (group, kind)):  # only the templates that are objects, with a spec
        if found and not site.writable:
            continue  # a synthetic pod of what is malformed (KServe's containers) would say it again
        base = f"{site.path}.spec" if site.writable else site.path
        if site.writable:
            template = _at(obj, site.pointer)
            problems.extend(metadata_problems(_mapping_member(template, "metadata"), f"{site.path}.metadata"))
        problems.extend(
            (_renamed(path, site.renames), p) for path, p in spec_problems(site.pod.get("spec"), base)
        )
    return problems


def _at(obj: Any, pointer: Sequence[str | int]) -> Any:
    for step in pointer:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def _mapping_member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _renamed(path: str, renames: Sequence[tuple[str, str]]) -> str:
    """A synthetic pod's path (KServe's framework blocks, TrainJob's trainer) where it really is."""
    for old, new in renames:
        if path.startswith(old):
            return new + path[len(old) :]
    return path


def _route_problems(obj: Mapping[str, Any], route: ShapeRoute) -> Iterator[Problem]:
    """Each value on the way to the kind's pod templates that is missing or not what the CRD's
    schema says (an object, or an array of objects): read leniently, it would hide the templates
    in it and the object would be decided ALLOWED with nothing checked."""
    steps, is_template = route
    places: list[tuple[str, Any]] = [("", obj)]
    for step in steps:
        following: list[tuple[str, Any]] = []
        for path, value in places:
            yield from _step(path, value, step, following)
        places = following
    for path, value in places:
        if not isinstance(value, Mapping):
            yield path, f"must be an object, not {type_name(value)}"
        elif is_template and not isinstance(value.get("spec"), Mapping):
            yield f"{path}.spec", _object_or_missing(value.get("spec"))


def _step(path: str, value: Any, step: str, following: list[tuple[str, Any]]) -> Iterator[Problem]:
    """One step of a route from the value at `path`: what it leads to goes to `following`."""
    if step.startswith("["):
        if isinstance(value, list):
            following.extend(_items(value, path, step[1:-1]))
        else:
            yield path, f"must be an array, not {type_name(value)}"
    elif not isinstance(value, Mapping):
        yield path, f"must be an object, not {type_name(value)}"
    elif step == "*":
        following.extend((f"{path}.{key}", member) for key, member in value.items())
    else:
        key = step.rstrip("?")
        member_path = f"{path}.{key}" if path else key
        if value.get(key) is not None:
            following.append((member_path, value[key]))
        elif not step.endswith("?"):
            yield member_path, "missing: it is required"


def _items(items: list[Any], path: str, name_key: str) -> Iterator[tuple[str, Any]]:
    """Each item of an array with its path: `[name=x]` where it has a name, as pod_sites says."""
    for index, item in enumerate(items):
        name = item.get(name_key) if name_key and isinstance(item, Mapping) else None
        selector = f"{name_key}={name}" if isinstance(name, str) and name else str(index)
        yield f"{path}[{selector}]", item


def spec_problems(spec: object, base: str) -> Iterator[Problem]:
    """What is wrong with one pod spec at `base`: its type, its containers, their resources, the
    pod-level resources and overhead the CPU and memory it requests are counted with, and where
    it says it may run."""
    if not isinstance(spec, Mapping):
        yield base, _object_or_missing(spec)
        return
    containers = spec.get("containers")
    if not containers:
        yield f"{base}.containers", "missing: a pod needs at least one container"
    yield from _containers(containers, f"{base}.containers")
    yield from _containers(spec.get("initContainers"), f"{base}.initContainers")
    yield from _resources(spec.get("resources"), f"{base}.resources")
    overhead = spec.get("overhead")
    if overhead is not None and not isinstance(overhead, Mapping):
        yield f"{base}.overhead", f"must be an object, not {type_name(overhead)}"
    for key in ("schedulingGates", "resourceClaims"):
        yield from _object_list(spec.get(key), f"{base}.{key}")
    yield from scheduling_problems(spec, base)


def _containers(items: object, path: str) -> Iterator[Problem]:
    if items is None:
        return
    if not isinstance(items, list):
        yield path, f"must be a list, not {type_name(items)}"
        return
    for index, container in enumerate(items):
        if not isinstance(container, Mapping):
            yield f"{path}[{index}]", f"must be an object, not {type_name(container)}"
            continue
        name = container.get("name")
        where = container_path(path, index, container)
        if not isinstance(name, str) or not name:
            yield f"{where}.name", "missing: every container needs a name"
        policy = container.get("restartPolicy")  # `Always` makes an init container a sidecar
        if policy is not None and not isinstance(policy, str):
            yield f"{where}.restartPolicy", f"must be a string, not {type_name(policy)}"
        yield from _resources(container.get("resources"), f"{where}.resources")


def _object_list(value: object, path: str) -> Iterator[Problem]:
    """An optional list of objects: `schedulingGates`, `resourceClaims`. The decision reads them by
    their presence alone (a pod with gates keeps its whole GPU, one with claims is not mutated), so
    a gate or claim written as an object, without its list's dash, would decide the pod as held."""
    if value is None:
        return
    if not isinstance(value, list):
        yield path, f"must be a list, not {type_name(value)}"
        return
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            yield f"{path}[{index}]", f"must be an object, not {type_name(item)}"


def container_path(path: str, index: int, container: Mapping[str, Any]) -> str:
    """`spec.containers[name=c]`, as violations name containers; by index when it has no name."""
    name = container.get("name")
    return f"{path}[name={name}]" if isinstance(name, str) and name else f"{path}[{index}]"


def _resources(resources: object, path: str) -> Iterator[Problem]:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        yield path, f"must be an object, not {type_name(resources)}"
        return
    for section in ("limits", "requests"):
        value = resources.get(section)
        if value is not None and not isinstance(value, Mapping):
            yield f"{path}.{section}", f"must be an object, not {type_name(value)}"


def _object_or_missing(value: object) -> str:
    return "missing: it is required" if value is None else f"must be an object, not {type_name(value)}"
