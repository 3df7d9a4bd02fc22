"""What one worker holds: its catalog and inventory sources, their start-up, and readiness.

Sources start in the worker (after gunicorn forks: threads started before the fork would not
run there). A source whose start fails is retried in the background; until every source is
ready `/readyz` says what is missing, while reviews are still answered (see `snapshot`).
Its metrics' tally is flushed every FLUSH_SECONDS on a daemon thread, and once more on stop.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Inventory
from webhook.server.metrics import FLUSH_SECONDS, Metrics
from webhook.sources import CatalogSource, InventorySource

DEFAULT_RETRY_SECONDS = 5.0


class NotReady(Exception):
    """No catalog yet: nothing can be decided."""


class Source(Protocol):
    def ready(self) -> bool: ...

    def status(self) -> dict[str, Any]: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Runtime:
    def __init__(
        self,
        catalog_source: CatalogSource,
        inventory_source: InventorySource,
        metrics: Metrics,
        log: logging.Logger,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self.catalog_source = catalog_source
        self.inventory_source = inventory_source
        self.metrics = metrics
        self.log = log
        self.retry_seconds = retry_seconds
        self._errors: dict[str, str] = {}
        self._started = False
        self._stopping = threading.Event()

    def sources(self) -> dict[str, Source]:
        return {"catalog": self.catalog_source, "inventory": self.inventory_source}

    def start(self) -> None:
        """Start every source once; retry the ones that fail on a daemon thread."""
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._flush_metrics, name="metrics-flush", daemon=True).start()
        failed = [name for name, source in self.sources().items() if not self._try_start(name, source)]
        if failed:
            threading.Thread(target=self._retry, args=(failed,), name="source-retry", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        for source in self.sources().values():
            source.stop()
        self.metrics.flush()

    def _flush_metrics(self) -> None:
        while not self._stopping.wait(FLUSH_SECONDS):
            try:
                self.metrics.flush()
            except Exception as exc:  # a bug here must not stop the counting: say so, go on
                self.log.exception("metrics flush failed", extra={"fields": {"error": repr(exc)}})

    def _try_start(self, name: str, source: Source) -> bool:
        try:
            source.start()
        except Exception as exc:  # any failure of a source: report it, keep serving, retry
            self._errors[name] = f"{type(exc).__name__}: {exc}"
            self.log.error("%s source failed to start", name, extra={"fields": {"error": self._errors[name]}})
            return False
        self._errors.pop(name, None)
        return True

    def _retry(self, failed: list[str]) -> None:
        sources = self.sources()
        while failed and not self._stopping.wait(self.retry_seconds):
            failed = [name for name in failed if not self._try_start(name, sources[name])]

    def readiness(self) -> dict[str, Any]:
        """`{"ready": bool, "catalog": {...}, "inventory": {...}}`; each part says what is missing."""
        report: dict[str, Any] = {}
        for name, source in self.sources().items():
            part = {"ready": source.ready(), **source.status()}
            if not self._started:
                part["error"] = "not started"
            elif name in self._errors:
                part["error"] = self._errors[name]
            report[name] = part
        return {"ready": all(part["ready"] for part in report.values()), **report}

    def snapshot(self) -> tuple[Catalog, Inventory]:
        """The catalog (required) and the inventory, unknown until synced: node checks are skipped."""
        if not self.catalog_source.ready():
            raise NotReady("the catalog is not loaded")
        catalog = self.catalog_source.current()
        inventory = self.inventory_source.current() if self.inventory_source.ready() else UNKNOWN_INVENTORY
        return catalog, inventory
