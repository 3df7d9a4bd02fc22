"""The report of the current snapshot, built once per snapshot and shared by /report, /dashboard and
the Prometheus gauges. A source that also knows its pods (`pod_usage()`) gets the waste list.

A snapshot is every input the report reads, each keyed by identity: the Inventory, the catalog,
the utilisation reading and the tuple of pod records. The live inventory keeps its Inventory
object while the snapshot compares equal (a pod replaced by one of the same shape on its node, a
label changed), but gives a new pod tuple whenever a record changes, so such a change is shown
at the next request, and a request when nothing changed builds nothing."""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol, runtime_checkable

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

_Built = tuple[Inventory, Catalog, tuple[GpuUtilisation, ...] | None, tuple[PodUsage, ...], Report]


@runtime_checkable
class PodUsageSource(Protocol):
    def pod_usage(self) -> tuple[PodUsage, ...]:
        """The pod records; the same object for as long as none of them changes."""
        ...


class ReportService:
    """With `prometheus_url`, utilisation is read at most every `refresh_seconds`, each read given
    up after `timeout` seconds; a failed read keeps the last one and is shown as `prometheus_error`.

    One read is in flight at a time, by the caller that found it due, and no lock is held while it
    waits on Prometheus: everyone else (reviews, /metrics, other dashboards) goes on at once with the
    last reading, or none yet."""

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
        self._utilisation_at: float | None = None
        self._read_at = float("-inf")
        self._reading = False
        self._last: _Built | None = None

    def ready(self) -> bool:
        return self.inventory_source.ready() and self.catalog_source.ready()

    def current(self, refresh: bool = True) -> Report:
        """The report of the sources' current snapshots (call only when ready()). With `refresh`
        False (the /metrics gauges, which need no utilisation) Prometheus is never asked."""
        source = self.inventory_source
        inventory, catalog = source.current(), self.catalog_source.current()
        usages = source.pod_usage() if isinstance(source, PodUsageSource) else ()
        utilisation = self._read_utilisation() if refresh else self._utilisation
        with self._lock:
            last = self._last
            if (
                last is not None
                and last[0] is inventory
                and last[1] is catalog
                and last[2] is utilisation
                and last[3] is usages
            ):
                return last[4]
            window = self.window if self.prometheus_url else None
            report = build_report(
                inventory, catalog, usages, utilisation, window=window, waste_finder=self._finder
            )
            self._last = (inventory, catalog, utilisation, usages, report)
            return report

    def reading(self) -> dict[str, Any] | None:
        """What /report's JSON says of the utilisation reading (None without Prometheus): the last
        read's error, and when the reading in use was taken. A failed read keeps the last reading,
        which the report goes on showing: without these a program reading the JSON took it for
        current."""
        if self.prometheus_url is None:
            return None
        with self._lock:
            error, taken = self.prometheus_error, self._utilisation_at
        read_at = None if taken is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(taken))
        return {"error": error, "readAt": read_at}

    def _read_utilisation(self) -> tuple[GpuUtilisation, ...] | None:
        """A fresh reading when one is due and none is in flight, else the last one at once."""
        url = self.prometheus_url
        with self._lock:
            due = time.monotonic() - self._read_at >= self._refresh_seconds
            if url is None or self._reading or not due:
                return self._utilisation
            self._reading = True
            self._read_at = time.monotonic()
        try:
            self._finish_read(tuple(query_utilisation(url, self.window, self._timeout)), None)
        except PrometheusError as exc:
            self._finish_read(None, str(exc))
        finally:
            with self._lock:
                self._reading = False
        return self._utilisation

    def _finish_read(self, utilisation: tuple[GpuUtilisation, ...] | None, error: str | None) -> None:
        with self._lock:
            if utilisation is not None:
                self._utilisation, self._utilisation_at = utilisation, time.time()
            self.prometheus_error = error
