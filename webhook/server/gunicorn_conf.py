"""gunicorn settings and hooks for gpu-webhook (`gpu-webhook serve` loads this module).

- `gthread` (webhook/server/worker.py's subclass: a new connection waits for its first bytes in
  the poller, for --io-timeout at most; a stopping worker closes its listening socket at once):
  a few threads per worker keep the API server's connections alive and overlap TLS I/O. The sync
  worker closes every connection, so every review pays a TLS handshake, which costs more than
  the decision: benchmarks/bench_server.py measured 4.0-4.4 times as many reviews under gthread
  (README, "Performance"); 1, 2 or 4 threads made no difference to it.
- Workers default to the CPU count's worth of processes, at most 4 (the decision is CPU-bound
  Python; more processes than that hold more memory and inventory watches for little gain).
- Sources start in each worker (`post_worker_init`): threads started before the fork do not
  run in the workers, so nothing is preloaded. Then what exists is frozen out of later garbage
  collections (`freeze_start_up`: the longest pause 16 ms to 0.6 ms, benchmarks/bench_gc.py).
- Metrics: the master prepares PROMETHEUS_MULTIPROC_DIR before any worker exists; `child_exit`
  marks a dead worker's live gauges gone; `/metrics` merges every worker's files.
- `reuse_port`: with one shared socket, the worker that wakes first accepts every connection a
  client opens at once, and kept-alive connections never move: measured, one worker served all
  of a load test's requests. With SO_REUSEPORT each worker listens on its own socket and the
  kernel spreads connections over them. The price: connections still queued on a worker that
  dies are reset (one that stops, on SIGHUP or SIGTERM, accepts its queue and closes its socket
  once another worker listens, webhook/server/worker.py, so the kernel queues no more there),
  and a second server started on the same port by the same user would join the group, so
  `serve` first binds the address without SO_REUSEPORT and refuses a port in use.
- A worker that exits before it has booted (its socket could not be bound, its app not built)
  exits with gunicorn's WORKER_BOOT_ERROR (`worker_exit`), so the master stops with exit code 3
  instead of starting another worker that fails the same way, forever.
- `keepalive` outlasts the API server's idle-connection timeout (90 s), so the client, not the
  server, closes idle connections: a POST on a connection the server just closed would fail.
- TLS: `WebhookServer` (gunicorn_app.py) sets `certfile`/`keyfile` and the `ssl_context` hook to
  a `ReloadingContext` (webhook/tls/reload.py): TLS 1.2+, reload on file change, client CA.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from gunicorn import glogging

from webhook.server.logs import JsonLineFormatter, configure_logging
from webhook.server.slow_clients import QuietTimeouts

METRICS_DIR_PREFIX = "gpu-webhook-metrics-"

worker_class = "webhook.server.worker.WebhookThreadWorker"  # gthread's, see webhook/server/worker.py
reuse_port = True  # each worker its own listening socket: the kernel spreads kept-alive connections
workers = min(os.cpu_count() or 1, 4)
threads = 4
keepalive = 120
timeout = 30
# On SIGTERM the workers finish what they serve within this, then are killed. The Deployment
# (deploy/base/deployment.yaml) pauses 10 s in preStop first; its terminationGracePeriodSeconds
# (40) must cover both, or the kubelet kills the pod in the middle of requests.
graceful_timeout = 20
preload_app = False
errorlog = "-"
loglevel = "info"
accesslog = None
proc_name = "gpu-webhook"
control_socket_disable = True  # one fixed path per user: a second server would take it over


class JsonErrorLogger(glogging.Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's own lines (a worker booted, killed for its memory, timed out; signals; shutdown)
    as JSON lines like the webhook's, not `[time] [pid] [LEVEL] text`: the lines an operator
    searches for after a crash. Set up again whenever gunicorn sets up its logging (SIGHUP)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.setFormatter(JsonLineFormatter())


logger_class = JsonErrorLogger


def on_starting(server: Any) -> None:
    configure_logging()
    prepare_metrics_dir()
    load_tls = getattr(server.app, "load_tls", None)
    if callable(load_tls):
        load_tls()
    log = logging.getLogger("gunicorn.error")
    addresses = ",".join(f"https://{bind}" for bind in server.cfg.bind)
    for log_filter in (_NameTheListeners(addresses), QuietTimeouts()):
        set_filter(log, log_filter)


class _NameTheListeners(logging.Filter):
    """With reuse_port the workers bind their own sockets and the master holds none, so gunicorn
    logged `Listening at:  (pid)`, an empty address: the address every worker binds goes there."""

    def __init__(self, addresses: str) -> None:
        super().__init__()
        self.addresses = addresses

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg == "Listening at: %s (%s)" and isinstance(args, tuple) and args and not args[0]:
            record.args = (self.addresses, *args[1:])
        return True


def set_filter(log: logging.Logger, log_filter: logging.Filter) -> None:
    """Add `log_filter` in place of any of its class (gunicorn's on_starting may run again)."""
    for old in [f for f in log.filters if type(f) is type(log_filter)]:
        log.removeFilter(old)
    log.addFilter(log_filter)


def when_ready(server: Any) -> None:
    announce = getattr(server.app, "announce", None)
    if callable(announce):
        announce([listener.sock.getsockname() for listener in server.LISTENERS])


def post_worker_init(worker: Any) -> None:
    from webhook.server.app import start_sources

    start_sources(worker.wsgi)
    freeze_start_up()


def freeze_start_up() -> None:
    """Leave the objects that exist once the worker has started (the libraries, the catalog, a
    file inventory) out of every later garbage collection. They live as long as the worker, and
    each full collection walked them all again: benchmarks/bench_gc.py. Garbage is collected
    first, so none is kept for good; frozen objects are still freed by reference counting."""
    gc.collect()
    gc.freeze()


WORKER_BOOT_ERROR = 3
"""gunicorn's Arbiter.WORKER_BOOT_ERROR: the master halts with it instead of respawning."""


def worker_exit(server: Any, worker: Any) -> None:
    if getattr(worker, "wsgi", None) is not None:
        from webhook.server.app import stop_sources

        stop_sources(worker.wsgi)
    if failed_to_boot(worker):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(WORKER_BOOT_ERROR)


def failed_to_boot(worker: Any) -> bool:
    """The worker is leaving before it booted, and not because it was told to stop. gunicorn
    itself halts only when booting raised an exception; a worker that could not bind its socket
    (reuse_port) exits with code 1 and was started again, forever."""
    return not getattr(worker, "booted", True) and bool(getattr(worker, "alive", False))


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def on_exit(server: Any) -> None:
    directory = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR", ""))
    if directory.name.startswith(METRICS_DIR_PREFIX) and directory.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(directory, ignore_errors=True)


def prepare_metrics_dir() -> Path:
    """Use PROMETHEUS_MULTIPROC_DIR if set (emptied: old files would add stale counts), else a new
    temporary folder, removed on exit. Runs in the master before the first fork."""
    configured = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not configured:
        directory = Path(tempfile.mkdtemp(prefix=METRICS_DIR_PREFIX))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
        return directory
    directory = Path(configured)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    return directory
