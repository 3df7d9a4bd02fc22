"""Check the pod list of `serve --inventory NODES --pods FILE` before gunicorn starts.

The workers read the file when they start, and what counts a pod's accelerators is lenient: a
field of the wrong type or a request that is not a quantity just makes the pod hold nothing. A
hand-edited list with such a mistake would serve a wrong picture of the cluster without a word,
and a file that does not parse would leave the server unready. So the master reads it first and
names every problem: the file, the document and item, and the field. An empty file (what
`kubectl get pods -A -o yaml > pods.yaml` leaves when kubectl fails) is refused too: read as no
pods, it showed every device free; `kind: List` with `items: []` says there are none.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from webhook.core.quantity import parse_quantity
from webhook.manifests import MAX_LIST_DEPTH, Manifest, expand_lists, is_list
from webhook.podshape import container_path, spec_problems
from webhook.podshape_types import type_name
from webhook.yamlio import Document, YamlError, decode_text, load_documents, read_text

CONTAINER_GROUPS = ("initContainers", "containers")
STRING_FIELDS = (("metadata", "namespace"), ("spec", "nodeName"), ("status", "phase"))
MISSING_KIND_FIX = (
    "give it `kind: Pod`, or make its list `kind: PodList`, whose items the API server writes "
    "without their kind"
)


class PodListError(ValueError):
    """The pod list cannot be used; the message names file, object and field of each problem."""


def check_pod_list(path: Path) -> int:
    """The number of pods in the file; PodListError listing every problem otherwise."""
    return len(read_pod_list(path))


def read_pod_list(path: Path) -> list[dict[str, Any]]:
    """The pods of the file (`serve --pods`, `report --pods`; `-` is stdin); PodListError listing
    every problem (file, document and item, field) otherwise."""
    documents, problems = _documents(path)
    if not documents and not problems:
        raise PodListError(
            f"{_name(path)}: empty, expected a Pod or a List (`kind: List` with `items: []` for none)"
        )
    manifests = [pod for document in documents for pod in _objects(document, problems)]
    for manifest in manifests:
        problems.extend(f"{_where(manifest)}: {problem}" for problem in pod_problems(manifest))
    problems.extend(_duplicates(manifests))
    if problems:
        raise PodListError("\n".join(problems))
    return [manifest.obj for manifest in manifests]


def _name(path: Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _documents(path: Path) -> tuple[list[Document], list[str]]:
    """The file's documents that are not empty, and the error that stopped reading them (those
    before a YAML syntax error are read, so that their problems are named with it)."""
    try:
        text = decode_text(sys.stdin.buffer.read(), "<stdin>") if str(path) == "-" else read_text(path)
        return load_documents(text, _name(path)), []
    except YamlError as exc:
        return list(exc.documents), [str(exc)]


def _objects(document: Document, problems: list[str]) -> Iterator[Manifest]:
    """The document's objects (a List's items, of Lists inside it too), as `file#document[item]`."""
    where = f"{document.source}#{document.index + 1}"
    if not isinstance(document.data, Mapping):
        problems.append(f"{where}: a manifest must be a mapping, got {type(document.data).__name__}")
        return
    yield from expand_lists(_pod_kinds_filled(document.data), where, problems)


def _duplicates(manifests: list[Manifest]) -> Iterator[str]:
    """A pod listed twice (the same namespace/name, a missing namespace being `default`, as the
    live watch keys pods): its devices would be counted twice, its node shown over-allocated."""
    first: dict[tuple[str, str], Manifest] = {}
    for manifest in manifests:
        metadata = manifest.metadata
        name, namespace = metadata.get("name"), metadata.get("namespace") or "default"
        if manifest.kind != "Pod" or not isinstance(name, str) or not name or not isinstance(namespace, str):
            continue
        seen = first.setdefault((namespace, name), manifest)
        if seen is not manifest:
            where = f"{manifest.source}: metadata.name"
            yield f"{where}: duplicate pod {namespace}/{name} (first at {seen.source}), it would count twice"


def _pod_kinds_filled(obj: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    """The object, with the items of every PodList in it given `kind: Pod` where they have no kind,
    as the API server writes them (`kubectl get --raw /api/v1/pods`); a NodeList's are read so."""
    if not is_list(obj) or depth > MAX_LIST_DEPTH:
        return obj
    items = [_item_kind_filled(obj, item, depth) for item in obj["items"]]
    return {**obj, "items": items}


def _item_kind_filled(parent: Mapping[str, Any], item: Any, depth: int) -> Any:
    if not isinstance(item, Mapping):
        return item  # expand_lists names it
    if parent.get("kind") == "PodList" and "kind" not in item:
        return {"apiVersion": parent.get("apiVersion"), "kind": "Pod", **item}
    return _pod_kinds_filled(item, depth + 1)


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
    if "kind" not in pod:
        yield f"kind: missing, expected Pod ({MISSING_KIND_FIX})"
        return
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
        where = f"{path}[{json.dumps(str(resource))}]"  # as every other field path writes a name
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
