"""Run the flask app under gunicorn from Python, with the settings in `gunicorn_conf`.

Imports nothing that creates metrics: the master must not load prometheus-client before the
config module has set PROMETHEUS_MULTIPROC_DIR. The app and its sources are built in each
worker (`load`), after the fork.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer

from webhook.server import gunicorn_conf
from webhook.server.decision_cache import DEFAULT_CAPACITY
from webhook.server.slow_clients import IO_TIMEOUT, bounded_io
from webhook.server.worker import worker_class
from webhook.sources import CatalogSource, InventorySource
from webhook.tls.reload import DEFAULT_INTERVAL, ReloadingContext, TLSFiles

PROMETHEUS_TIMEOUT_SECONDS = 5.0
"""How long one utilisation query may take; the report waits for it at most once a minute."""
SourcesFactory = Callable[[], tuple[CatalogSource, InventorySource]]
Announce = Callable[[Sequence[Any]], None]


@dataclass(frozen=True)
class ServerSettings:
    bind: str
    tls: TLSFiles
    workers: int | None = None
    threads: int | None = None
    cert_check_seconds: float = DEFAULT_INTERVAL
    worker_class: str | None = None
    """Override gunicorn_conf's worker class (the benchmark compares sync and gthread); gthread
    means webhook/server/worker.py's, with `io_timeout`."""
    decision_cache: int = DEFAULT_CAPACITY
    """Decisions each worker remembers (0: none)."""
    io_timeout: float = IO_TIMEOUT
    """Seconds a connection's handshake, read or write may stall (webhook/server/slow_clients.py)."""
    prometheus_url: str | None = None
    """Prometheus with dcgm-exporter metrics, for the report's idle devices (None: not read)."""
    shared_folder: Path | None = None
    """Where the workers keep the last good certificate for each other (webhook/shared_copy.py)."""


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's master process; `run()` returns only through SystemExit (a signal, an error)."""

    def __init__(
        self,
        settings: ServerSettings,
        sources: SourcesFactory,
        announce: Announce | None = None,
        app_factory: Callable[[SourcesFactory], Any] | None = None,
    ) -> None:
        self._settings = settings
        self._address = concrete_address(settings.bind)
        self._sources = sources
        self._announce = announce
        self._app_factory = app_factory or partial(
            _webhook_app, decision_cache=settings.decision_cache, prometheus_url=settings.prometheus_url
        )
        self._tls = ReloadingContext(
            settings.tls, settings.cert_check_seconds, last_good=settings.shared_folder
        )
        super().__init__(prog="gpu-webhook serve")

    def load_config(self) -> None:
        for name, value in vars(gunicorn_conf).items():
            if name in self.cfg.settings:
                self.cfg.set(name, value)
        settings = self._settings
        host, port = self._address
        self.cfg.set("bind", [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"])
        self.cfg.set("certfile", str(settings.tls.certificate))
        self.cfg.set("keyfile", str(settings.tls.key))
        self.cfg.set("ssl_context", bounded_io(self._tls.gunicorn_hook, settings.io_timeout))
        for name in ("workers", "threads"):
            if getattr(settings, name) is not None:
                self.cfg.set(name, getattr(settings, name))
        chosen = settings.worker_class or gunicorn_conf.worker_class
        self.cfg.set("worker_class", worker_class(chosen, settings.io_timeout))

    def load(self) -> Any:
        """The app, in each worker; then, for the webhook's app, the certificate's expiry gauge,
        which follows reloads (another app, as the benchmark's trivial one, has no metrics: its
        workers failed to boot)."""
        app = self._app_factory(self._sources)
        from webhook.server.app import EXTENSION, runtime_of
        from webhook.server.metrics import certificate_expiry_gauge

        if EXTENSION in getattr(app, "extensions", {}):
            self._tls.watch(certificate_expiry_gauge(runtime_of(app).metrics.registry).set)
        return app

    def run(self) -> None:
        """BaseApplication.run with the master below."""
        try:
            HaltingArbiter(self).run()
        except RuntimeError as exc:
            print(f"\nError: {exc}\n", file=sys.stderr, flush=True)
            sys.exit(1)

    def load_tls(self) -> None:
        """Load the certificate in the master (gunicorn_conf.on_starting), before any worker
        forks: each worker, a restarted one too, starts with this context as its last good one.
        Loaded first in each worker, a certificate that had since gone bad (expired, half
        written) left a new worker nothing to serve, and every handshake failed."""
        self._tls.current()

    def announce(self, addresses: Sequence[Any]) -> None:
        """Called by gunicorn_conf.when_ready; with reuse_port the workers bind, so none are known
        yet and the address this server chose is announced."""
        if self._announce is not None:
            self._announce(list(addresses) or [self._address])


class HaltingArbiter(Arbiter):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's master, except that a worker failing to boot while the master is already
    halting (the other workers fail the same way) does not interrupt the halt: in gunicorn that
    raised HaltServer out of `halt`, a traceback and exit code 1 instead of 3."""

    halting = False

    def halt(self, reason: str | None = None, exit_status: int = 0) -> None:
        self.halting = True
        super().halt(reason, exit_status)

    def reap_workers(self) -> None:
        try:
            super().reap_workers()
        except HaltServer:
            if not self.halting:
                raise


def concrete_address(bind: str) -> tuple[str, int]:
    """(host, port) of a HOST:PORT bind; port 0 becomes a free port now, because with reuse_port
    every worker binds on its own and must bind the same port."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    if int(port) != 0:
        return host, int(port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return host, int(probe.getsockname()[1])


def _webhook_app(
    sources: SourcesFactory, decision_cache: int = DEFAULT_CAPACITY, prometheus_url: str | None = None
) -> Any:
    """The webhook app with the report routes and inventory gauges, built in each worker; with
    `prometheus_url` the report reads utilisation there (the whole read, both queries from
    connecting to the last byte, within PROMETHEUS_TIMEOUT_SECONDS; one read at a time and no lock
    held while it waits; /metrics never reads; a failed read is shown on the dashboard, never an
    error)."""
    from webhook.catalog.reload import ReloadingCatalogSource
    from webhook.report.service import ReportService
    from webhook.server.app import create_app
    from webhook.server.metrics import create_metrics
    from webhook.server.report_routes import report_blueprint, report_metrics

    metrics = create_metrics()  # first: it points prometheus-client at the workers' shared files
    catalog, inventory = sources()
    if isinstance(catalog, ReloadingCatalogSource):
        catalog.export_metrics(metrics.registry)
    service = ReportService(
        inventory, catalog, prometheus_url=prometheus_url, timeout=PROMETHEUS_TIMEOUT_SECONDS
    )
    gauges = report_metrics(inventory, catalog, service)
    app = create_app(
        catalog, inventory, metrics=metrics, extra_metrics=[gauges], decision_cache=decision_cache
    )
    app.register_blueprint(report_blueprint(inventory, catalog, service))
    return app
