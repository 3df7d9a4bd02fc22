"""Load node lists from YAML or JSON files (`kubectl get nodes -o yaml|json`: a `List` with `items`,
multi-document or a single Node), refusing what would be misread, with file and field path. DRA
DeviceClasses, ResourceQuotas and LimitRanges may come with them (`kubectl get nodes,deviceclasses
-o yaml`, then `kubectl get resourcequotas,limitranges -A -o yaml`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.core.model import GpuNode, Inventory
from webhook.core.quantity import parse_quantity
from webhook.inventory.dra import is_device_class
from webhook.inventory.limit_ranges import is_limit_range
from webhook.inventory.nodes import build_inventory, parse_gpu_nodes
from webhook.inventory.quotas import is_resource_quota
from webhook.yamlio import YamlError, load_documents, read_text

_COUNTED_PREFIX = "nvidia.com/"


class InventoryError(ValueError):
    """A node list that cannot be read; the message names the file, the document and the field."""


@dataclass(frozen=True, slots=True)
class InventoryObjects:
    nodes: tuple[Mapping[str, Any], ...]
    device_classes: tuple[Mapping[str, Any], ...]
    """DRA DeviceClasses (`kubectl get nodes,deviceclasses -o yaml`): the extended resources they
    serve are valid names no node counts (webhook/inventory/dra.py)."""
    quotas: tuple[Mapping[str, Any], ...] = ()
    """ResourceQuotas (`kubectl get nodes -o yaml; kubectl get resourcequotas -A -o yaml`): what
    they leave of NVIDIA devices per namespace (webhook/inventory/quotas.py)."""
    limit_ranges: tuple[Mapping[str, Any], ...] = ()
    """LimitRanges (`kubectl get limitranges -A -o yaml`): what each namespace allows a container
    and a pod (webhook/inventory/limit_ranges.py)."""


def load_inventory(path: str | Path) -> Inventory:
    found = read_inventory_objects(Path(path))
    return build_inventory(
        found.nodes,
        device_classes=found.device_classes,
        quotas=found.quotas,
        limit_ranges=found.limit_ranges,
    )


def load_node_templates(path: str | Path) -> tuple[GpuNode, ...]:
    """Node templates of pools that autoscale from zero (see `with_node_templates`): Nodes as
    `kubectl get node -o yaml` prints one of the pool's nodes; at least one must have GPUs."""
    found = parse_gpu_nodes(read_inventory_objects(Path(path)).nodes)
    if not found:
        raise InventoryError(f"{path}: no node template with NVIDIA devices in its allocatable")
    return found


def iter_nodes(path: Path) -> Iterator[Mapping[str, Any]]:
    """Every Node of the file, each checked: a name, unique, and whole device counts."""
    return iter(read_inventory_objects(path).nodes)


def read_inventory_objects(path: Path) -> InventoryObjects:
    """The file's Nodes, each checked (a name, unique, whole device counts), DeviceClasses and
    ResourceQuotas and LimitRanges."""
    seen: dict[str, str] = {}
    nodes, classes, quotas, limit_ranges = [], [], [], []
    documents = _documents(path)
    if all(document is None for document in documents):
        raise InventoryError(
            f"{path}: empty, expected a Node or a List (`kind: List` with `items: []` for none)"
        )
    for index, document in enumerate(documents):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            kind = type(document).__name__
            raise InventoryError(
                f"{path}: document {index + 1} is not a mapping (a {kind}), expected a Node or a List"
            )
        for where, obj in _objects_in(path, index, document):
            if is_device_class(obj):
                classes.append(obj)
                continue
            if is_resource_quota(obj):
                quotas.append(obj)
                continue
            if is_limit_range(obj):
                limit_ranges.append(obj)
                continue
            _check_node(path, where, obj, seen)
            nodes.append(obj)
    return InventoryObjects(tuple(nodes), tuple(classes), tuple(quotas), tuple(limit_ranges))


def _documents(path: Path) -> list[Any]:
    """The file's documents by position (None for an empty one); a duplicate key is an error at
    its line, as in manifests and the catalog: a repeated label would silently win."""
    try:
        loaded = load_documents(read_text(path), str(path))
    except YamlError as exc:  # unreadable, not UTF-8, not YAML, a duplicate key: with where
        raise InventoryError(str(exc)) from exc
    documents: list[Any] = [None] * (loaded[-1].index + 1 if loaded else 0)
    for document in loaded:
        documents[document.index] = document.data
    return documents


def _objects_in(
    path: Path, index: int, document: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    kind = document.get("kind")
    where = f"document {index + 1}"
    if kind in ("List", "NodeList", *_ITEM_KINDS):
        items = document.get("items")
        if not isinstance(items, list):
            raise InventoryError(f"{path}: {where}: items is not a list (a {type(items).__name__})")
        for position, item in enumerate(items):
            if kind in _ITEM_KINDS and isinstance(item, Mapping) and "kind" not in item:
                item = {"apiVersion": document.get("apiVersion"), "kind": _ITEM_KINDS[kind], **item}
            if not isinstance(item, Mapping) or not _readable(item):
                raise InventoryError(
                    f"{path}: {where} items[{position}] is not a Node, a DeviceClass, a ResourceQuota"
                    " or a LimitRange"
                )
            yield f"{where} items[{position}]", item
    elif kind == "Node" or _other_kind(document):
        yield where, document
    else:
        raise InventoryError(
            f"{path}: {where} has kind {kind!r}, expected Node, DeviceClass, ResourceQuota,"
            " LimitRange or List"
        )


_ITEM_KINDS = {
    "DeviceClassList": "DeviceClass",
    "ResourceQuotaList": "ResourceQuota",
    "LimitRangeList": "LimitRange",
}
"""Lists whose items the API server writes without their kind (a NodeList's are Nodes)."""


def _readable(item: Mapping[str, Any]) -> bool:
    """A List's item; a Node's kind may be left out (in a NodeList, as the API server writes it)."""
    return item.get("kind", "Node") == "Node" or _other_kind(item)


def _other_kind(obj: Mapping[str, Any]) -> bool:
    """A DeviceClass, a ResourceQuota or a LimitRange: what may come with the nodes."""
    return is_device_class(obj) or is_resource_quota(obj) or is_limit_range(obj)


def _check_node(path: Path, where: str, node: Mapping[str, Any], seen: dict[str, str]) -> None:
    metadata = node.get("metadata")
    if not isinstance(metadata, Mapping):
        raise InventoryError(f"{path}: {where}: metadata: {_wrong(metadata, 'a mapping with a name')}")
    name = metadata.get("name")
    if name is None or name == "":
        raise InventoryError(f"{path}: {where}: metadata.name: missing, a Node needs a name")
    if not isinstance(name, str):
        raise InventoryError(f"{path}: {where}: metadata.name: {_wrong(name, 'a string')}")
    if name in seen:
        raise InventoryError(
            f"{path}: {where}: metadata.name: duplicate node {name!r} (first at {seen[name]})"
        )
    seen[name] = where
    _check_shapes(f"{path}: {where} ({name})", node)
    status = node.get("status") or {}
    for section in ("capacity", "allocatable"):
        for resource, value in (status.get(section) or {}).items():
            if str(resource).startswith(_COUNTED_PREFIX) and not _whole(value):
                raise InventoryError(
                    f'{path}: {where} ({name}): status.{section}["{resource}"]: {value!r} is not a whole '
                    "number of devices"
                )
            if resource in _ROOM and not _quantity(value):
                raise InventoryError(
                    f'{path}: {where} ({name}): status.{section}["{resource}"]: {value!r} is not a '
                    "quantity the node could have (such as 96, 7910m, 512Gi)"
                )
    _check_within_capacity(f"{path}: {where} ({name})", status)


def _check_within_capacity(where: str, status: Mapping[str, Any]) -> None:
    """Kubernetes never reports more of a device allocatable than the node's capacity (allocatable
    is capacity less what the node keeps back), nor a device in allocatable that its capacity
    lacks (the kubelet reports both from one list): a file that does was edited by hand, wrongly.
    A file without status.capacity at all is not checked."""
    capacity, allocatable = status.get("capacity"), status.get("allocatable") or {}
    if capacity is None:
        return
    for resource, value in allocatable.items():
        if not str(resource).startswith(_COUNTED_PREFIX):
            continue
        if parse_quantity(value) > parse_quantity(capacity.get(resource, 0)):
            raise InventoryError(
                f'{where}: status.allocatable["{resource}"]: {value!r} is more than its capacity '
                f"{_capacity_of(capacity, resource)}, which Kubernetes never reports"
            )


def _capacity_of(capacity: Mapping[str, Any], resource: str) -> str:
    if resource in capacity:
        return f"{capacity[resource]!r} (status.capacity)"
    return "0 (status.capacity does not list it)"


def _check_shapes(where: str, node: Mapping[str, Any]) -> None:
    """The fields a Node is read from have the API's types: the API server never sends others,
    but a file may, and they would be misread or fail far from their cause."""
    metadata = node["metadata"]
    for field in ("labels", "annotations"):
        values = _typed(where, f"metadata.{field}", metadata.get(field), Mapping, "a mapping of strings")
        for key, value in (values or {}).items():
            if not isinstance(value, str):  # null too: `key:` with nothing after it (an empty value is "")
                raise InventoryError(f'{where}: metadata.{field}["{key}"]: {_wrong(value, "a string")}')
    spec = _typed(where, "spec", node.get("spec"), Mapping, "a mapping") or {}
    taints = _typed(where, "spec.taints", spec.get("taints"), list, "a list of taints") or []
    for index, taint in enumerate(taints):
        _typed(where, f"spec.taints[{index}]", taint, Mapping, "a mapping")
        _check_taint(where, f"spec.taints[{index}]", taint)
    status = _typed(where, "status", node.get("status"), Mapping, "a mapping") or {}
    for member in ("capacity", "allocatable"):
        _typed(where, f"status.{member}", status.get(member), Mapping, "a mapping of counts")


def _check_taint(where: str, field: str, taint: Mapping[str, Any]) -> None:
    """A taint has a key (the API server requires one); its value and effect, when given, are strings."""
    key = taint.get("key")
    if not isinstance(key, str) or key == "":
        raise InventoryError(
            f"{where}: {field}.key: {_wrong(key, 'a non-empty string (a taint needs a key)')}"
        )
    for member in ("value", "effect"):
        _typed(where, f"{field}.{member}", taint.get(member), str, "a string")


def _typed(where: str, field: str, value: Any, kind: type, expected: str) -> Any:
    """`value` when it is None or of `kind`; else InventoryError naming the field."""
    if value is not None and not isinstance(value, kind):
        raise InventoryError(f"{where}: {field}: {_wrong(value, expected)}")
    return value


def _wrong(value: object, expected: str) -> str:
    return f"{value!r} ({type(value).__name__}), expected {expected}"


_ROOM = ("cpu", "memory")
"""What a pod's own CPU and memory are held against: a value that does not parse was read as no
room, and changed the decision without a word."""


def _quantity(value: object) -> bool:
    try:
        number = parse_quantity(value)
    except ValueError:
        return False
    return number >= 0


def _whole(value: object) -> bool:
    try:
        number = parse_quantity(value)
    except ValueError:
        return False
    return number >= 0 and number == number.to_integral_value()
