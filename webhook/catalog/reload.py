"""A catalog source that reloads templates and policies when their files change.

Mounted ConfigMaps change by an atomic swap of the `..data` symlink and send no reliable
file events, so a daemon thread polls a digest of the resolved files' contents. A changed
digest loads a new catalog; a load that fails keeps serving the last good one and says so in
a log line, the metrics and `status()`. `current()` hands out one immutable Catalog, so a
request in flight never sees half of two versions.

The thread starts in `start()`: gunicorn forks after the app is built and threads do not
survive a fork, so the server calls `start()` in each worker. Given a folder the workers share
(`last_good`), each keeps a copy of the files it loaded there, and a worker started while the
files are broken serves that copy (see webhook/catalog/last_good.py) instead of nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from webhook.catalog.last_good import LastGoodCatalog, digest_of
from webhook.catalog.loader import CatalogError, Problem, load_catalog
from webhook.core.model import Catalog
from webhook.server.logs import bounded
from webhook.yamlio import iter_yaml_files

LOG = logging.getLogger("webhook.catalog.reload")
DEFAULT_INTERVAL = 10.0
MAX_LOGGED_PROBLEMS = 10
"""Problems a `catalog_reload_failed` line lists; `problemsNotListed` counts the others (status()'s
lastError, /readyz, has them all). 200 templates failing one check made a 60 KB line, and
container runtimes split lines over 16 KiB into pieces that are no JSON."""
MAX_LOGGED_TEXT = 300
"""Characters of a logged problem's source, path and message (a path may hold a key of any length)."""


@dataclass(frozen=True)
class CatalogMetrics:
    """Reload counters and gauges; pass a registry to export them (the server registers them in its
    own, `ReloadingCatalogSource.export_metrics`)."""

    reloads: Counter
    last_success: Gauge
    last_success_time: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry | None) -> CatalogMetrics:
        """Metrics registered in `registry`; None keeps them unregistered (nothing is exported)."""
        return cls(
            reloads=Counter(
                "gpu_webhook_catalog_reloads",
                "Catalog loads by result (the first load counts too).",
                ["result"],
                registry=registry,
            ),
            last_success=Gauge(
                "gpu_webhook_catalog_last_reload_success",
                "1 when the last catalog load succeeded, 0 when it failed and an older catalog is served.",
                registry=registry,
                multiprocess_mode="livemin",
            ),
            last_success_time=Gauge(
                "gpu_webhook_catalog_last_reload_success_timestamp_seconds",
                "Unix time the catalog being served was loaded.",
                registry=registry,
                multiprocess_mode="livemax",
            ),
        )

    def register(self, registry: CollectorRegistry) -> None:
        """Export them in `registry` too: a worker's own, which /metrics serves when the shared
        files cannot be written or merged (else GpuWebhookCatalogReloadFailing has nothing to read)."""
        for metric in (self.reloads, self.last_success, self.last_success_time):
            registry.register(metric)


@dataclass(frozen=True)
class LoadFailure:
    at: float
    digest: str
    problems: tuple[Problem, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": _iso(self.at),
            "digest": self.digest,
            "problems": [
                {"source": p.source, "line": p.line, "path": p.path, "message": p.message}
                for p in self.problems
            ],
        }

    def as_log_fields(self) -> dict[str, Any]:
        """`as_dict` bounded for one log line: the first MAX_LOGGED_PROBLEMS problems, each text
        cut at MAX_LOGGED_TEXT characters."""
        fields = self.as_dict()
        problems: list[dict[str, Any]] = fields["problems"]
        listed = problems[:MAX_LOGGED_PROBLEMS]
        fields["problems"] = [{k: bounded(v, MAX_LOGGED_TEXT) for k, v in p.items()} for p in listed]
        if len(problems) > MAX_LOGGED_PROBLEMS:
            fields["problemsNotListed"] = len(problems) - MAX_LOGGED_PROBLEMS
        return fields


@dataclass(frozen=True)
class _State:
    """Everything current() and status() read, replaced as one value."""

    catalog: Catalog | None = None
    digest: str = ""
    loaded_at: float | None = None
    attempted_digest: str = ""
    last_failure: LoadFailure | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"success": 0, "failure": 0})


class ReloadingCatalogSource:
    """Implements webhook.sources.CatalogSource for folders (or files) that may change."""

    def __init__(
        self,
        paths: Sequence[str | Path],
        interval: float = DEFAULT_INTERVAL,
        registry: CollectorRegistry | None = None,
        last_good: Path | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self._paths = tuple(Path(p) for p in paths)
        self._interval = interval
        self._metrics = CatalogMetrics.create(registry)
        self._last_good = LastGoodCatalog(last_good) if last_good is not None else None
        self._state = _State()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def export_metrics(self, registry: CollectorRegistry) -> None:
        """Register the reload metrics in `registry` (the server's, made after this source)."""
        self._metrics.register(registry)

    def start(self) -> None:
        """Load now, then poll in a daemon thread; safe to call again in a forked worker."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._lock = threading.Lock()  # a lock copied through fork may be held by a dead thread
        self._stop = threading.Event()
        self.check_now()
        self._thread = threading.Thread(target=self._poll, name="catalog-reload", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self._interval + 5)

    def current(self) -> Catalog:
        catalog = self._state.catalog
        if catalog is None:
            raise RuntimeError("catalog not loaded yet: " + self._failure_text())
        return catalog

    def ready(self) -> bool:
        return self._state.catalog is not None

    def status(self) -> dict[str, Any]:
        state = self._state
        catalog = state.catalog
        return {
            "paths": [str(p) for p in self._paths],
            "loaded": catalog is not None,
            "templates": len(catalog.templates) if catalog else 0,
            "policies": len(catalog.policies) if catalog else 0,
            "digest": state.digest or None,
            "loadedAt": _iso(state.loaded_at) if state.loaded_at else None,
            "reloads": dict(state.counts),
            "lastError": state.last_failure.as_dict() if state.last_failure else None,
            "servingLastGood": state.last_failure is not None and catalog is not None,
        }

    def check_now(self) -> bool:
        """Reload if the files changed since the last attempt; True when a new catalog is served."""
        with self._lock:
            digest = files_digest(self._paths)
            if digest == self._state.attempted_digest:
                return False
            try:
                catalog: Catalog | None = load_catalog(catalog_files(self._paths))
                problems: tuple[Problem, ...] = ()
            except CatalogError as exc:
                catalog, problems = None, exc.problems
            except Exception as exc:  # a loader bug, or a file swapped away mid-read
                catalog, problems = None, (Problem("<loader>", None, "", f"{type(exc).__name__}: {exc}"),)
            if files_digest(self._paths) != digest:
                return False  # changed while loading: the next poll loads the settled files
            if catalog is None:
                if self._state.catalog is None:
                    self._serve_last_good()
                return self._failed(digest, problems)
            if self._last_good is not None:
                self._last_good.keep(digest, catalog_files(self._paths))
            return self._loaded(digest, catalog)

    def _serve_last_good(self) -> None:
        """A first load that failed: the catalog another worker loaded, when there is one. Its
        `loadedAt` and last success time are when that worker loaded it, not now: a worker started
        again each day on files broken for days would otherwise look freshly loaded (and, the
        gauge left at 0, one started on them looked loaded in 1970)."""
        kept = self._last_good.load() if self._last_good is not None else None
        if kept is not None:
            digest, catalog, loaded_at = kept
            self._state = replace(self._state, catalog=catalog, digest=digest, loaded_at=loaded_at)
            self._metrics.last_success_time.set(loaded_at)
            counts = {"templates": len(catalog.templates), "policies": len(catalog.policies)}
            fields = {"digest": digest, "loadedAt": _iso(loaded_at), **counts}
            LOG.info("catalog_last_good_served", extra={"fields": fields})

    def _loaded(self, digest: str, catalog: Catalog) -> bool:
        now = time.time()
        counts = {**self._state.counts, "success": self._state.counts["success"] + 1}
        self._state = _State(catalog, digest, now, digest, None, counts)
        self._metrics.reloads.labels(result="success").inc()
        self._metrics.last_success.set(1)
        self._metrics.last_success_time.set(now)
        fields = {"digest": digest, "templates": len(catalog.templates), "policies": len(catalog.policies)}
        LOG.info("catalog_loaded", extra={"fields": fields})
        return True

    def _failed(self, digest: str, problems: Sequence[Problem], exc: Exception | None = None) -> bool:
        """Keep what is served and say so; `exc`, an exception nothing expected, logs its traceback."""
        failure = LoadFailure(time.time(), digest, tuple(problems))
        counts = {**self._state.counts, "failure": self._state.counts["failure"] + 1}
        self._state = replace(self._state, attempted_digest=digest, last_failure=failure, counts=counts)
        self._metrics.reloads.labels(result="failure").inc()
        self._metrics.last_success.set(0)
        kept = "keeping the last good catalog" if self._state.catalog else "no catalog to serve yet"
        fields = {"action": kept, **failure.as_log_fields()}
        LOG.error("catalog_reload_failed", exc_info=exc, extra={"fields": fields})
        return False

    def _poll(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check_now()
            except Exception as exc:  # e.g. a file that cannot be looked at (a folder without x)
                self._poll_failed(exc)

    def _poll_failed(self, exc: Exception) -> None:
        """A poll that raised is a failed reload (status, metrics, log): it was only logged, and
        /readyz showed a catalog no longer followed as current, its lastError null. Tried again
        at the next poll (no digest is kept), which loads the files once they can be read."""
        problem = Problem("<poll>", None, "", f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._failed("", (problem,), exc)

    def _failure_text(self) -> str:
        failure = self._state.last_failure
        if failure is None:
            return "start() was not called"
        return "; ".join(str(p) for p in failure.problems[:5])


def catalog_files(paths: Sequence[Path]) -> list[Path]:
    """The YAML files a catalog is built from: given files, and those under given folders except in
    tests/ and hidden folders (a ConfigMap mount's `..data` and `..<timestamp>` copies). Missing
    paths are kept, and so are folders that hold no file or cannot be listed: the loader reports them."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            found.append(path)
            continue
        unreadable: list[OSError] = []
        files = list(iter_yaml_files(path, unreadable))
        found.extend(files)
        if unreadable or not files:  # the loader reads the folder again and reports what it cannot
            found.append(path)  # list, or that it holds no file
    return found


def files_digest(paths: Sequence[Path]) -> str:
    """sha256 over the names and contents of the resolved catalog files (symlinks followed)."""
    return digest_of(_contents(paths))


def _contents(paths: Sequence[Path]) -> Iterator[tuple[str, bytes]]:
    for file in catalog_files(paths):
        try:
            yield str(file), file.read_bytes()
        except OSError as exc:  # missing, or swapped away between listing and reading
            yield str(file), f"<unreadable: {exc.strerror}>".encode()


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
