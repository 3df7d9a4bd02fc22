"""Where the server gets its catalog and inventory: interfaces and the static (file) sources.

A source hands out an immutable snapshot; a live source (a cluster watch, a directory
reload) swaps in a new snapshot atomically, so a request always sees one whole snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from webhook.catalog import load_catalog
from webhook.core.model import Catalog, GpuNode, Inventory
from webhook.inventory.files import load_inventory
from webhook.inventory.nodes import with_node_templates
from webhook.inventory.usage import PodUsage


class InventorySource(Protocol):
    def current(self) -> Inventory: ...

    def ready(self) -> bool:
        """True once the first full node list is in (the inventory has synced)."""
        ...

    def status(self) -> dict[str, Any]:
        """What /readyz reports about this source (what is missing, last error)."""
        ...

    def start(self) -> None:
        """Begin syncing (called in each gunicorn worker after fork)."""
        ...

    def stop(self) -> None: ...


class CatalogSource(Protocol):
    def current(self) -> Catalog: ...

    def ready(self) -> bool: ...

    def status(self) -> dict[str, Any]: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class FileInventorySource:
    """An inventory read once from a node-list file (`--inventory`)."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._inventory: Inventory | None = None

    def start(self) -> None:
        """Reads the file the first time only (serve reads it in the master, before the fork)."""
        if self._inventory is None:
            self._inventory = load_inventory(self._path)

    def stop(self) -> None:
        return None

    def current(self) -> Inventory:
        if self._inventory is None:
            raise RuntimeError("inventory not loaded yet")
        return self._inventory

    def ready(self) -> bool:
        return self._inventory is not None

    def status(self) -> dict[str, Any]:
        nodes = len(self._inventory.nodes) if self._inventory else 0
        return {"source": str(self._path), "synced": self.ready(), "gpuNodes": nodes}


class NodeTemplatesSource:
    """Another inventory source's snapshots with node templates of pools that autoscale from zero
    (`--node-templates`). Each snapshot is combined once and kept while the source hands out the
    same one, so what belongs to a snapshot (the decision cache) lives as long as it does."""

    def __init__(self, source: InventorySource, templates: tuple[GpuNode, ...]) -> None:
        self._source = source
        self._templates = templates
        self._combined: tuple[Inventory, Inventory] | None = None

    def start(self) -> None:
        self._source.start()

    def stop(self) -> None:
        self._source.stop()

    def current(self) -> Inventory:
        inventory = self._source.current()
        combined = self._combined
        if combined is None or combined[0] is not inventory:
            combined = (inventory, with_node_templates(inventory, self._templates))
            self._combined = combined
        return combined[1]

    def pod_usage(self) -> tuple[PodUsage, ...]:
        """The pod records of the source the templates join (a watched cluster, `--pods`), the
        same object it hands out, which the report reads and is keyed on (its waste list and
        unaccounted pods, webhook/report/service.py); none where that source keeps none. Without
        it the report over a watched cluster with `--node-templates` listed no pod at all."""
        pod_usage = getattr(self._source, "pod_usage", None)
        return pod_usage() if callable(pod_usage) else ()

    def ready(self) -> bool:
        return self._source.ready()

    def status(self) -> dict[str, Any]:
        return {**self._source.status(), "nodeTemplates": [n.name for n in self._templates]}


class StaticCatalogSource:
    """Templates and policies loaded once from folders (`serve --reload-seconds 0`)."""

    def __init__(self, paths: Sequence[str | Path], catalog: Catalog | None = None) -> None:
        self._paths = [Path(p) for p in paths]
        self._catalog = catalog

    def start(self) -> None:
        """Reads the folders the first time only. serve hands in the catalog the master loaded
        before the fork: a worker gunicorn starts later (after a crash, on SIGHUP) reading them
        itself served whatever they held then, another catalog or, broken, none at all."""
        if self._catalog is None:
            self._catalog = load_catalog(self._paths)

    def stop(self) -> None:
        return None

    def current(self) -> Catalog:
        if self._catalog is None:
            raise RuntimeError("catalog not loaded yet")
        return self._catalog

    def ready(self) -> bool:
        return self._catalog is not None

    def status(self) -> dict[str, Any]:
        templates = len(self._catalog.templates) if self._catalog else 0
        return {"paths": [str(p) for p in self._paths], "loaded": self.ready(), "templates": templates}
