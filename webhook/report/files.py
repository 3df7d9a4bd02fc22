"""Read an inventory with pod usage from files: a node list and a pod list (`kubectl get -o yaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from webhook.core.model import Inventory
from webhook.inventory.files import InventoryError, read_inventory_objects
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import PodUsage, pod_usage
from webhook.server.pod_list import PodListError, read_pod_list


def load_pods(path: str | Path) -> list[dict[str, Any]]:
    """Every Pod in the file (a List, multi-document YAML or JSON), checked as `serve --pods` checks
    them (webhook/server/pod_list.py): InventoryError names file, pod and field of every problem."""
    try:
        return read_pod_list(Path(path))
    except PodListError as exc:
        raise InventoryError(f"--pods: {exc}".replace("\n", "\n  ")) from exc


def load_with_pods(nodes_path: str | Path, pods_path: str | Path | None) -> tuple[Inventory, list[PodUsage]]:
    """The inventory of the node list, with usage when a pod list is given."""
    found = read_inventory_objects(Path(nodes_path))
    if pods_path is None:
        inventory = build_inventory(
            found.nodes,
            device_classes=found.device_classes,
            quotas=found.quotas,
            limit_ranges=found.limit_ranges,
        )
        return inventory, []
    pods = load_pods(pods_path)
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_inventory(found.nodes, pods, found.device_classes, found.quotas, found.limit_ranges), usages


class StaticUsageInventorySource:
    """An InventorySource read once from a node list and a pod list (`serve --inventory --pods`)."""

    def __init__(self, nodes_path: str | Path, pods_path: str | Path | None) -> None:
        self._nodes_path, self._pods_path = Path(nodes_path), pods_path
        self._loaded: tuple[Inventory, tuple[PodUsage, ...]] | None = None

    def start(self) -> None:
        """Reads the files the first time only (serve reads them in the master, before the fork)."""
        if self._loaded is None:
            inventory, usages = load_with_pods(self._nodes_path, self._pods_path)
            self._loaded = (inventory, tuple(usages))

    def stop(self) -> None:
        return None

    def current(self) -> Inventory:
        if self._loaded is None:
            raise RuntimeError("inventory not loaded yet")
        return self._loaded[0]

    def pod_usage(self) -> tuple[PodUsage, ...]:
        return self._loaded[1] if self._loaded else ()

    def ready(self) -> bool:
        return self._loaded is not None

    def status(self) -> dict[str, Any]:
        nodes = len(self._loaded[0].nodes) if self._loaded else 0
        pods = len(self._loaded[1]) if self._loaded else 0
        source = {"nodes": str(self._nodes_path), "pods": str(self._pods_path) if self._pods_path else None}
        return {"source": source, "synced": self.ready(), "gpuNodes": nodes, "acceleratorPods": pods}
