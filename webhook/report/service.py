"""The report of the current snapshot, built once per snapshot and shared by /report, /dashboard and
the Prometheus gauges. A source that also knows its pods (`pod_usage()`) gets the waste list."""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

from webhook.core.model import Catalog, Inventory
from webhook.inventory.usage import PodUsage
from webhook.report.build import build_report
from webhook.report.model import Report
from webhook.report.utilisation import (
    GpuUtilisation,
    PrometheusError,
    check_url,
    check_window,
    query_utilisation,
)
from webhook.report.waste import WasteFinder
from webhook.sources import CatalogSource, InventorySource

_Built = tuple[Inventory, Catalog, tuple[GpuUtilisation, ...] | None, Report]


@runtime_checkable
class PodUsageSource(Protocol):
    def pod_usage(self) -> tuple[PodUsage, ...]: ...


class ReportService:
    """With `prometheus_url`, utilisation is read at most every `refresh_seconds`, each query
    waiting at most `timeout` seconds; a failed read keeps the last one and is shown as
    `prometheus_error`."""

    def __init__(
        self,
        inventory_source: InventorySource,
        catalog_source: CatalogSource,
        *,
        prometheus_url: str | None = None,
        window: str = "1h",
        refresh_seconds: float = 60.0,
        timeout: float = 10.0,
    ) -> None:
        self.inventory_source = inventory_source
        self.catalog_source = catalog_source
        self.prometheus_url = None if prometheus_url is None else check_url(prometheus_url)
        self.window = check_window(window)
        self.prometheus_error: str | None = None
        self._refresh_seconds = refresh_seconds
        self._timeout = timeout
        self._lock = threading.Lock()
        self._finder = WasteFinder()
        self._utilisation: tuple[GpuUtilisation, ...] | None = None
        self._read_at = float("-inf")
        self._last: _Built | None = None

    def ready(self) -> bool:
        return self.inventory_source.ready() and self.catalog_source.ready()

    def current(self) -> Report:
        """The report of the sources' current snapshots (call only when ready())."""
        inventory, catalog = self.inventory_source.current(), self.catalog_source.current()
        with self._lock:
            utilisation = self._read_utilisation()
            last = self._last
            if last is not None and last[0] is inventory and last[1] is catalog and last[2] is utilisation:
                return last[3]
            source = self.inventory_source
            usages = source.pod_usage() if isinstance(source, PodUsageSource) else ()
            window = self.window if self.prometheus_url else None
            report = build_report(
                inventory, catalog, usages, utilisation, window=window, waste_finder=self._finder
            )
            self._last = (inventory, catalog, utilisation, report)
            return report

    def _read_utilisation(self) -> tuple[GpuUtilisation, ...] | None:
        if self.prometheus_url is None or time.monotonic() - self._read_at < self._refresh_seconds:
            return self._utilisation
        self._read_at = time.monotonic()
        try:
            self._utilisation = tuple(query_utilisation(self.prometheus_url, self.window, self._timeout))
            self.prometheus_error = None
        except PrometheusError as exc:
            self.prometheus_error = str(exc)
        return self._utilisation
