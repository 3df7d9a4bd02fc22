"""Load node lists from YAML or JSON files (`kubectl get nodes -o yaml|json`: a `List` with `items`,
multi-document or a single Node), refusing what would be misread, with file and field path."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from webhook.core.model import Inventory
from webhook.core.quantity import parse_quantity
from webhook.inventory.nodes import build_inventory
from webhook.yamlio import YamlError, read_text

_COUNTED_PREFIX = "nvidia.com/"


class InventoryError(ValueError):
    """A node list that cannot be read; the message names the file, the document and the field."""


def load_inventory(path: str | Path) -> Inventory:
    return build_inventory(iter_nodes(Path(path)))


def iter_nodes(path: Path) -> Iterator[Mapping[str, Any]]:
    """Every Node of the file, each checked: a name, unique, and whole device counts."""
    seen: dict[str, str] = {}
    for index, document in enumerate(_documents(path)):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            kind = type(document).__name__
            raise InventoryError(
                f"{path}: document {index + 1} is not a mapping (a {kind}), expected a Node or List"
            )
        for where, node in _nodes_in(path, index, document):
            _check_node(path, where, node, seen)
            yield node


def _documents(path: Path) -> list[Any]:
    try:
        text = read_text(path)
    except YamlError as exc:  # unreadable, or not UTF-8 (then at its line and column)
        raise InventoryError(str(exc)) from exc
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise InventoryError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc


def _nodes_in(path: Path, index: int, document: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    kind = document.get("kind")
    where = f"document {index + 1}"
    if kind in ("List", "NodeList"):
        items = document.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise InventoryError(f"{path}: {where}: items is not a list (a {type(items).__name__})")
        for position, item in enumerate(items):
            if not isinstance(item, Mapping) or item.get("kind", "Node") != "Node":
                raise InventoryError(f"{path}: {where} items[{position}] is not a Node")
            yield f"{where} items[{position}]", item
    elif kind == "Node":
        yield where, document
    else:
        raise InventoryError(f"{path}: {where} has kind {kind!r}, expected Node or List")


def _check_node(path: Path, where: str, node: Mapping[str, Any], seen: dict[str, str]) -> None:
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InventoryError(f"{path}: {where}: metadata.name: missing, a Node needs a name")
    if name in seen:
        raise InventoryError(
            f"{path}: {where}: metadata.name: duplicate node {name!r} (first at {seen[name]})"
        )
    seen[name] = where
    status = node.get("status")
    for section in ("capacity", "allocatable"):
        counts = status.get(section) if isinstance(status, Mapping) else None
        for resource, value in counts.items() if isinstance(counts, Mapping) else ():
            if str(resource).startswith(_COUNTED_PREFIX) and not _whole(value):
                raise InventoryError(
                    f'{path}: {where} ({name}): status.{section}["{resource}"]: {value!r} is not a whole '
                    "number of devices"
                )


def _whole(value: object) -> bool:
    try:
        number = parse_quantity(value)
    except ValueError:
        return False
    return number >= 0 and number == number.to_integral_value()
