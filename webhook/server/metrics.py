"""Prometheus metrics, correct across gunicorn workers.

Under gunicorn, `PROMETHEUS_MULTIPROC_DIR` is set by the config module before any worker
starts: every worker writes its samples to files there and `/metrics` merges them, whichever
worker answers. Without it (tests, the flask test client) each app counts in its own registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

from webhook.admission import ReviewError
from webhook.core.model import Decision

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

M = TypeVar("M", Counter, Histogram)


@dataclass(frozen=True)
class Metrics:
    registry: CollectorRegistry
    reviews: Counter
    violations: Counter
    patched: Counter
    latency: Histogram
    bad_requests: Counter
    internal_errors: Counter
    children: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)
    """Each metric's labelled children, by (metric, *labels): `labels()` validates and locks on
    every call, and costs as much as the increment. Racing threads store the same child."""

    def review(self, endpoint: str, kind: str, dry_run: bool, decision: Decision, seconds: float) -> None:
        dry = _flag(dry_run)
        allowed = _flag(decision.allowed)
        self._child(self.reviews, endpoint, kind, allowed, dry).inc()
        self._child(self.latency, endpoint, dry).observe(seconds)
        for violation in decision.violations:
            self._child(self.violations, endpoint, violation.code, violation.outcome, dry).inc()
        if endpoint == "mutate" and decision.allowed and decision.patch:
            self._child(self.patched, decision.template or "none", dry).inc()

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
        directory = os.environ.get(MULTIPROC_ENV)
        if not directory:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=directory)  # type: ignore[no-untyped-call]
        return generate_latest(merged)


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
    )


def _use_multiprocess_values_if_configured() -> None:
    """prometheus-client picks its value store when first imported; if that happened before the
    gunicorn config set the directory (e.g. another module imported it in the master), pick again."""
    if os.environ.get(MULTIPROC_ENV) and values.ValueClass is values.MutexValue:
        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def _flag(value: bool) -> str:
    return "true" if value else "false"
