"""Check the pod list of `serve --inventory NODES --pods FILE` before gunicorn starts.

The workers read the file when they start, and what counts a pod's accelerators is lenient: a
field of the wrong type or a request that is not a quantity just makes the pod hold nothing. A
hand-edited list with such a mistake would serve a wrong picture of the cluster without a word,
and a file that does not parse would leave the server unready. So the master reads it first and
names every problem: the file, the document and item, and the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from webhook.core.quantity import parse_quantity
from webhook.manifests import Manifest, read_manifests
from webhook.podshape import container_path, spec_problems
from webhook.podshape_types import type_name

CONTAINER_GROUPS = ("initContainers", "containers")
STRING_FIELDS = (("metadata", "namespace"), ("spec", "nodeName"), ("status", "phase"))


class PodListError(ValueError):
    """The pod list cannot be used; the message names file, object and field of each problem."""


def check_pod_list(path: Path) -> int:
    """The number of pods in the file; PodListError listing every problem otherwise."""
    return len(read_pod_list(path))


def read_pod_list(path: Path) -> list[dict[str, Any]]:
    """The pods of the file (`serve --pods`, `report --pods`); PodListError listing every problem
    (file, document and item, field) otherwise."""
    manifests, errors = read_manifests([str(path)])
    problems = list(errors)
    for manifest in manifests:
        problems.extend(f"{_where(manifest)}: {problem}" for problem in pod_problems(manifest))
    if problems:
        raise PodListError("\n".join(problems))
    return [manifest.obj for manifest in manifests]


def _where(manifest: Manifest) -> str:
    """The file, document and item, and the pod's namespace/name where it has them."""
    metadata = manifest.obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return manifest.source
    return (
        f"{manifest.source} ({namespace}/{name})"
        if isinstance(namespace, str)
        else f"{manifest.source} ({name})"
    )


def pod_problems(manifest: Manifest) -> Iterator[str]:
    """What is wrong with one object of the list, as 'field: problem'."""
    pod = manifest.obj
    if manifest.kind != "Pod":
        yield f"kind: {manifest.kind or 'none'!r}, expected Pod"
        return
    for field in ("metadata", "status"):
        if field in pod and not isinstance(pod[field], Mapping):
            yield f"{field}: must be an object, not {type_name(pod[field])}"
    metadata = _mapping(pod, "metadata")
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        yield "metadata.name: a pod needs a name"
    for parent, field in STRING_FIELDS:
        value = _mapping(pod, parent).get(field)
        if value is not None and not isinstance(value, str):
            yield f"{parent}.{field}: must be a string, not {type_name(value)}"
    yield from (f"{path}: {problem}" for path, problem in spec_problems(pod.get("spec"), "spec"))
    yield from _quantities(_mapping(pod, "spec"))


def _quantities(spec: Mapping[str, Any]) -> Iterator[str]:
    """Requests and limits that are no quantity, where the spec's shape lets them be read."""
    for group in CONTAINER_GROUPS:
        containers = spec.get(group)
        for index, container in enumerate(containers if isinstance(containers, list) else ()):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            where = f"{container_path(f'spec.{group}', index, container)}.resources"
            for kind in ("limits", "requests"):
                quantities = resources.get(kind)
                if isinstance(quantities, Mapping):
                    yield from _quantity_problems(f"{where}.{kind}", quantities)


def _quantity_problems(path: str, quantities: Mapping[str, Any]) -> Iterator[str]:
    """Quantities the API server refuses: not a quantity, negative, or a fraction of an extended
    resource (a name with a domain, `nvidia.com/gpu`), which are counted in whole units."""
    for resource, value in quantities.items():
        where = f"{path}[{str(resource)!r}]"
        try:
            quantity = parse_quantity(value)
        except ValueError:
            yield f"{where}: {value!r} is not a quantity"
            continue
        if quantity < 0:
            yield f"{where}: {value!r} is negative"
        elif "/" in str(resource) and quantity != quantity.to_integral_value():
            yield f"{where}: {value!r} is not a whole number (an extended resource counts whole units)"


def _mapping(pod: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    value = pod.get(field)
    return value if isinstance(value, Mapping) else {}
