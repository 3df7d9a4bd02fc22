"""Prometheus gauges of the inventory, computed from the current report at scrape time.

Every gunicorn worker follows the cluster itself, so any worker's gauges are the whole truth:
serve them from a registry of their own, next to (not merged through) the multiprocess files.
Their text is made once for each report (one per snapshot: ReportService) and served as made
until the next: at 4,000 nodes it took a tenth of a second or more of a worker thread per scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from webhook.report.build import MIG_INVALID_SUFFIX
from webhook.report.model import Report
from webhook.report.prices import base_product
from webhook.report.service import ReportService

LABELS = ["node", "model", "profile", "resource"]
"""`resource` is the device plugin's resource name: a node may advertise one profile under two
(`nvidia.com/gpu` and its time-sliced `nvidia.com/gpu.shared`), and each is its own series."""


class InventoryCollector(Collector):
    """allocatable/allocated/free devices by node, model, profile and resource; idle cost per hour."""

    def __init__(self, service: ReportService) -> None:
        self._service = service

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ready = self._service.ready()
        yield _synced(ready)
        if ready:
            yield from _families(self._service.current(refresh=False))  # never waits on Prometheus

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


class _ReportCollector(Collector):
    """The gauges of one report, the sources being ready: what InventoryCollector yields for it."""

    def __init__(self, report: Report) -> None:
        self._report = report

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield _synced(True)
        yield from _families(self._report)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


def _synced(ready: bool) -> GaugeMetricFamily:
    synced = GaugeMetricFamily(
        "gpu_webhook_inventory_synced", "1 when the inventory and catalog are loaded, else 0."
    )
    synced.add_metric([], 1.0 if ready else 0.0)
    return synced


def _families(report: Report) -> Iterator[GaugeMetricFamily]:
    allocatable = GaugeMetricFamily(
        "gpu_webhook_devices_allocatable", "GPUs or MIG slices the node advertises.", labels=LABELS
    )
    allocated = GaugeMetricFamily(
        "gpu_webhook_devices_allocated", "GPUs or MIG slices requested by bound pods.", labels=LABELS
    )
    free = GaugeMetricFamily("gpu_webhook_devices_free", "GPUs or MIG slices not requested.", labels=LABELS)
    for node in report.nodes:
        for line in node.lines:
            labels = [node.name, base_product(node.product), line.profile, line.resource]
            allocatable.add_metric(labels, float(line.allocatable))
            if report.usage_known:
                allocated.add_metric(labels, float(line.allocated))
                free.add_metric(labels, float(line.free))
    cost = GaugeMetricFamily(
        "gpu_webhook_idle_cost_per_hour",
        "Estimated cost per hour of idle capacity: unallocated (on nodes taking new pods), unschedulable "
        "(free on cordoned, NotReady or unreachable nodes), or held by pods a slice would serve.",
        labels=["kind"],
    )
    for kind, hourly in (
        ("unallocated", report.costs.unallocated_per_hour),
        ("unschedulable", report.costs.unschedulable_per_hour),
        ("wasteful", report.costs.wasteful_per_hour),
    ):
        if hourly is not None:
            cost.add_metric([kind], hourly)
    state = GaugeMetricFamily(
        "gpu_webhook_node_state",
        "1 per GPU node, labelled with its state: ready, or why it takes no new pods "
        "(cordoned, not-ready, unreachable).",
        labels=["node", "model", "state"],
    )
    invalid = GaugeMetricFamily(
        "gpu_webhook_node_mig_config_invalid",
        "1 per GPU node whose MIG configuration is invalid (product label <model>-MIG-INVALID); "
        "none of its devices is counted.",
        labels=["node", "model"],
    )
    for node in report.nodes:
        state.add_metric([node.name, base_product(node.product), node.state], 1.0)
        if node.product.endswith(MIG_INVALID_SUFFIX):
            invalid.add_metric([node.name, base_product(node.product)], 1.0)
    yield from (allocatable, allocated, free, cost, state, invalid)


class InventoryRegistry(CollectorRegistry):
    """A registry holding only the inventory gauges, whose `exposition` is what /metrics serves."""

    def __init__(self, service: ReportService) -> None:
        super().__init__(auto_describe=False)
        self._service = service
        self._last: tuple[Report, bytes] | None = None
        self.register(InventoryCollector(service))

    def exposition(self) -> bytes:
        """`generate_latest(self)`, made once for each report and kept until the next one; before
        the sources are ready (the synced gauge at 0, nothing else) it is made and not kept."""
        if not self._service.ready():
            return generate_latest(self)
        report = self._service.current(refresh=False)
        last = self._last
        if last is None or last[0] is not report:
            last = self._last = (report, _text(report))
        return last[1]


def _text(report: Report) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ReportCollector(report))
    return generate_latest(registry)


def inventory_registry(service: ReportService) -> InventoryRegistry:
    """A registry holding only the inventory gauges: `registry.exposition()` on /metrics."""
    return InventoryRegistry(service)
