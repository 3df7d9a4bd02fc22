"""Load node lists from YAML files (`kubectl get nodes -o yaml`, multi-document or a single Node)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from webhook.core.model import Inventory
from webhook.inventory.nodes import build_inventory


class InventoryError(ValueError):
    """A node list that cannot be read; the message names the file and the document."""


def load_inventory(path: str | Path) -> Inventory:
    return build_inventory(iter_nodes(Path(path)))


def iter_nodes(path: Path) -> Iterator[Mapping[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read node list: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise InventoryError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    for index, document in enumerate(documents):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            raise InventoryError(f"{path}: document {index + 1} is not a mapping")
        yield from _nodes_in(path, index, document)


def _nodes_in(path: Path, index: int, document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    kind = document.get("kind")
    if kind in ("List", "NodeList"):
        for position, item in enumerate(document.get("items") or ()):
            if not isinstance(item, Mapping) or item.get("kind", "Node") != "Node":
                raise InventoryError(f"{path}: document {index + 1} items[{position}] is not a Node")
            yield item
    elif kind == "Node":
        yield document
    else:
        raise InventoryError(f"{path}: document {index + 1} has kind {kind!r}, expected Node or List")
