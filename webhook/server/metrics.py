"""Prometheus metrics, correct across gunicorn workers.

Under gunicorn, `PROMETHEUS_MULTIPROC_DIR` is set by the config module before any worker
starts: every worker writes its samples to files there and `/metrics` merges them, whichever
worker answers. Without it (tests, the flask test client) each app counts in its own registry.

Reviews are tallied in memory and added to the metrics in batches (`Metrics.flush`): by the
worker's flusher thread every `FLUSH_SECONDS`, before this worker's own exposition, and when the
worker stops. In multiprocess mode each increment takes a lock, checks the pid and writes the
mmaped file; a typical /mutate made eight of them, about a sixth of its extra time over a
trivial app. A tally is one dictionary update. So another worker's reviews reach /metrics within
`FLUSH_SECONDS`; a worker killed outright loses at most that much of its counts.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile
import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

from webhook.admission import ReviewError
from webhook.core.model import Decision, Violation
from webhook.server.decision_cache import Outcome

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
FLUSH_SECONDS = 1.0
PROBE_BYTES = 1 << 16
"""Written to the metrics folder to check it: what a worker's files hold before they grow (its
first samples wrote 16 KiB; with a page or two free it started, and died writing the next)."""
LOG = logging.getLogger("gpu_webhook.metrics")

ReviewShape = tuple[str, str, bool, bool, int, tuple[str, ...] | None, tuple[tuple[str, str], ...], Outcome]
"""What the metrics record of one review: endpoint, kind, allowed, dry run, latency bucket,
the templates of a patch /mutate made (else None), each violation's (code, outcome), and whether
the decision came from the decision cache (hit, miss or bypass)."""

M = TypeVar("M", Counter, Histogram)


class Tally:
    """Reviews counted by shape, and the latency summed per (endpoint, dry run), until taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[ReviewShape, int] = {}
        self._seconds: dict[tuple[str, bool], float] = {}

    def add(self, shape: ReviewShape, seconds: float) -> None:
        where = (shape[0], shape[3])
        with self._lock:
            self._counts[shape] = self._counts.get(shape, 0) + 1
            self._seconds[where] = self._seconds.get(where, 0.0) + seconds

    def take(self) -> tuple[dict[ReviewShape, int], dict[tuple[str, bool], float]]:
        with self._lock:
            counts, seconds = self._counts, self._seconds
            self._counts, self._seconds = {}, {}
        return counts, seconds


@dataclass(frozen=True)
class Metrics:
    registry: CollectorRegistry
    reviews: Counter
    violations: Counter
    patched: Counter
    latency: Histogram
    bad_requests: Counter
    internal_errors: Counter
    decision_cache: Counter
    children: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)
    """Each metric's labelled children, by (metric, *labels): `labels()` validates and locks on
    every call, and costs as much as the increment. Racing threads store the same child."""

    tally: Tally = field(default_factory=Tally, compare=False, repr=False)

    def review(
        self,
        endpoint: str,
        kind: str,
        dry_run: bool,
        decision: Decision,
        seconds: float,
        cache: Outcome = "bypass",
        reported: Sequence[Violation] | None = None,
    ) -> None:
        """Tally one answered review; `flush` adds it to the metrics. `reported`: the violations
        the answer reports, the ones counted (default: all the decision's)."""
        made_patch = endpoint == "mutate" and decision.allowed and bool(decision.patch)
        patched = templates_of(decision) if made_patch else None
        violations = decision.outcomes if reported is None else tuple([(v.code, v.outcome) for v in reported])
        bucket = bisect_left(LATENCY_BUCKETS, seconds)  # the first bound >= seconds, as observe() picks
        shape = (endpoint, kind, decision.allowed, dry_run, bucket, patched, violations, cache)
        self.tally.add(shape, seconds)

    def flush(self) -> None:
        """Add the reviews tallied so far to the metrics (thread-safe; each review once)."""
        counts, seconds = self.tally.take()
        for (endpoint, kind, allowed, dry_run, bucket, patched, violations, cache), count in counts.items():
            dry = _flag(dry_run)
            self._child(self.decision_cache, endpoint, cache, dry).inc(count)
            self._child(self.reviews, endpoint, kind, _flag(allowed), dry).inc(count)
            _observe_in_bucket(self._child(self.latency, endpoint, dry), bucket, count)
            for code, outcome in violations:
                self._child(self.violations, endpoint, code, outcome, dry).inc(count)
            for template in patched or ():
                self._child(self.patched, template, dry).inc(count)
        for (endpoint, dry_run), total in seconds.items():
            _add_to_sum(self._child(self.latency, endpoint, _flag(dry_run)), total)

    def bad_request(self, endpoint: str, error: ReviewError | str) -> None:
        code = error if isinstance(error, str) else error.code
        self._child(self.bad_requests, endpoint, code).inc()

    def internal_error(self, endpoint: str, dry_run: bool) -> None:
        self._child(self.internal_errors, endpoint, _flag(dry_run)).inc()

    def _child(self, metric: M, *labels: str) -> M:
        key = (metric, *labels)
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = metric.labels(*labels)
        return cast(M, child)

    def exposition(self) -> bytes:
        """The text format, merged over every worker when running under gunicorn."""
        self.flush()
        directory = os.environ.get(MULTIPROC_ENV)
        if not directory:
            return generate_latest(self.registry)
        try:
            merged = CollectorRegistry()
            MultiProcessCollector(merged, path=directory)  # type: ignore[no-untyped-call]
            return generate_latest(merged)
        except (OSError, ValueError, RuntimeError, struct.error) as exc:
            return self._own_exposition(directory, exc)

    def _own_exposition(self, directory: str, exc: Exception) -> bytes:
        """This worker's metrics alone, when the shared files cannot be merged: the folder is gone
        (a cleaner emptied /tmp) or holds a file that is no metrics file. Every scrape was a 500
        and a traceback in the log, with the counts there to serve."""
        fields = {"folder": directory, "error": f"{type(exc).__name__}: {exc}"}
        LOG.error("metrics_merge_failed", extra={"fields": fields})
        return generate_latest(self.registry)


def templates_of(decision: Decision) -> tuple[str, ...]:
    """The templates a decision applied, each a `template` label of its own ("none": no template).
    A workload's decision names its pod templates' joined by ", " in the order met (template names
    are DNS labels, never holding a comma): as one label value, every order and subset of the
    catalog's templates was a series of its own, as many as the pod templates of a JobSet or
    Volcano Job an author writes make, each kept in every worker's metrics file for good."""
    return tuple(decision.template.split(", ")) if decision.template else ("none",)


def create_metrics() -> Metrics:
    """Fresh metric objects in their own registry, so several apps can live in one process."""
    _use_multiprocess_values_if_configured()
    registry = CollectorRegistry()
    return Metrics(
        registry=registry,
        reviews=Counter(
            "gpu_webhook_reviews_total",
            "AdmissionReviews answered with an AdmissionResponse.",
            ["endpoint", "kind", "allowed", "dry_run"],
            registry=registry,
        ),
        violations=Counter(
            "gpu_webhook_violations_total",
            "Violations found, by reason code and outcome.",
            ["endpoint", "code", "outcome", "dry_run"],
            registry=registry,
        ),
        patched=Counter(
            "gpu_webhook_mutations_total",
            "Objects patched by /mutate, by template.",
            ["template", "dry_run"],
            registry=registry,
        ),
        latency=Histogram(
            "gpu_webhook_review_duration_seconds",
            "Time from the request body read to the response built.",
            ["endpoint", "dry_run"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        bad_requests=Counter(
            "gpu_webhook_bad_requests_total",
            "Requests refused with a 4xx (not a usable AdmissionReview).",
            ["endpoint", "reason"],
            registry=registry,
        ),
        internal_errors=Counter(
            "gpu_webhook_internal_errors_total",
            "Unexpected exceptions while deciding (see the log line with the uid).",
            ["endpoint", "dry_run"],
            registry=registry,
        ),
        decision_cache=Counter(
            "gpu_webhook_decision_cache_total",
            "Reviews by where their decision came from: hit (the decision cache), miss (decided and"
            " kept), bypass (decided, not cacheable: dry run, not a CREATE, too large, cache off).",
            ["endpoint", "result", "dry_run"],
            registry=registry,
        ),
    )


def certificate_expiry_gauge(registry: CollectorRegistry | None = None) -> Gauge:
    """gpu_webhook_tls_certificate_not_after_seconds, for `ReloadingContext.watch` in each worker;
    in the worker's `registry` (its Metrics'), which /metrics serves when the shared files cannot
    be written or merged.

    `livemostrecent`: every worker serves the same files and reloads them at its next handshake
    once they change, so the value last set is the certificate a client gets next (`livemax`
    would show an old, longer one until each idle worker had a handshake, after a switch to a
    shorter one; `livemin` would show the old one until then after every renewal). `live`: a dead
    worker's value goes with it (`child_exit`). Made once a certificate is served, not with the
    other metrics: a gauge without labels exists at 0 from its creation, which reads as expired."""
    _use_multiprocess_values_if_configured()
    return Gauge(
        "gpu_webhook_tls_certificate_not_after_seconds",
        "Unix time the served TLS certificate ends (the earliest notAfter of tls.crt's chain).",
        multiprocess_mode="livemostrecent",
        registry=registry,
    )


def _use_multiprocess_values_if_configured() -> None:
    """prometheus-client picks its value store when first imported; if that happened before the
    gunicorn config set the directory (e.g. another module imported it in the master), pick again.
    A folder this process cannot write PROBE_BYTES to counts in its own memory (see below)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        return
    try:
        probe_folder(Path(directory))
    except OSError as exc:
        _count_in_memory(directory, exc)
        return
    if values.ValueClass is values.MutexValue:
        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def probe_folder(directory: Path) -> None:
    """Write PROBE_BYTES to a file in `directory` and remove it; OSError when that fails."""
    with tempfile.TemporaryFile(dir=directory) as probe:
        probe.write(bytes(PROBE_BYTES))
        probe.flush()


def _count_in_memory(directory: str, exc: OSError) -> None:
    """This worker's metrics in its own memory, and /metrics from it alone, logged as an error.
    `serve` checks the folder at start; gone, read-only or full since, a worker gunicorn started
    again failed to boot, which stopped the whole server (exit code 3), and one writing its first
    sample to a full tmpfs through mmap was killed by SIGBUS, again and again: a metrics folder
    must not stop the reviews."""
    os.environ.pop(MULTIPROC_ENV, None)
    values.ValueClass = values.MutexValue
    fields = {"folder": directory, "error": f"{type(exc).__name__}: {exc.strerror or exc}"}
    LOG.error("metrics_folder_unwritable", extra={"fields": fields})


def _observe_in_bucket(child: Histogram, bucket: int, count: int) -> None:
    """What `count` calls of `observe` with a value in `bucket` add to the bucket counts.
    prometheus-client has no public call for it; tests/server/test_metrics_tally.py checks that
    a flushed tally exposes exactly what the same observations through `observe` do."""
    child._buckets[bucket].inc(count)


def _add_to_sum(child: Histogram, total: float) -> None:
    child._sum.inc(total)


def _flag(value: bool) -> str:
    return "true" if value else "false"
