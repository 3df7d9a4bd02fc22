"""The metrics' tally: what a flush exposes is what counting each review at once would have."""

from __future__ import annotations

import logging
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import generate_latest, values

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import metric_value
from webhook.core.model import Decision, Violation
from webhook.server.decision_cache import Outcome
from webhook.server.metrics import FLUSH_SECONDS, LATENCY_BUCKETS, Metrics, create_metrics
from webhook.server.runtime import Runtime
from webhook.sources import FileInventorySource, StaticCatalogSource

PATCH = ({"op": "add", "path": "/metadata/labels", "value": {}},)


def decision(allowed: bool, *violations: tuple[str, str], patch: bool = True) -> Decision:
    found = tuple(Violation(code, "spec", "message", outcome) for code, outcome in violations)  # type: ignore[arg-type]
    return Decision(allowed, "training", "default", "enforce", found, (), None, PATCH if patch else ())


REVIEWS = [
    ("mutate", "Pod", False, decision(True, ("RewrittenToMig", "info")), 0.0004, "miss"),
    ("mutate", "Pod", True, decision(True, ("RewrittenToMig", "info")), 0.001, "bypass"),  # on a bound
    ("mutate", "Pod", False, decision(False, ("MigProfileUnknown", "deny")), 0.0031, "hit"),
    ("validate", "Pod", False, decision(True, ("GpuLimitMissing", "warn"), patch=False), 0.2, "hit"),
    (
        "validate",
        "Deployment",
        False,
        decision(False, ("GpuFraction", "deny"), ("GpuLimitMissing", "warn")),
        11.0,
        "miss",
    ),
    ("mutate", "Pod", False, decision(True, patch=False), 0.0004, "hit"),
]


def count_at_once(
    metrics: Metrics,
    endpoint: str,
    kind: str,
    dry_run: bool,
    made: Decision,
    seconds: float,
    cache: Outcome = "bypass",
) -> None:
    """Each metric's own call for one review: what the tally stands in for."""
    dry = "true" if dry_run else "false"
    metrics.decision_cache.labels(endpoint, cache, dry).inc()
    metrics.reviews.labels(endpoint, kind, "true" if made.allowed else "false", dry).inc()
    metrics.latency.labels(endpoint, dry).observe(seconds)
    for violation in made.violations:
        metrics.violations.labels(endpoint, violation.code, violation.outcome, dry).inc()
    if endpoint == "mutate" and made.allowed and made.patch:
        for template in (made.template or "none").split(", "):
            metrics.patched.labels(template, dry).inc()


def samples(metrics: Metrics) -> list[str]:
    """The exposition without `_created` lines, which say when each child was made."""
    text = generate_latest(metrics.registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]


def test_a_flushed_tally_exposes_what_counting_each_review_does() -> None:
    tallied, direct = create_metrics(), create_metrics()
    for _ in range(3):
        for review in REVIEWS:
            tallied.review(*review)
            count_at_once(direct, *review)
    assert samples(tallied) != samples(direct), "nothing is counted before the flush"
    tallied.flush()
    assert samples(tallied) == samples(direct)


def test_a_workload_patched_under_several_templates_counts_once_under_each() -> None:
    """A workload's decision names its templates joined in the order its pod templates meet
    them: as one label value, each order and subset an author wrote (a JobSet's replicatedJobs)
    was a series of its own, kept in every worker's metrics file (found by QA)."""
    metrics = create_metrics()
    for template in ("fine-tuning, notebook", "notebook, fine-tuning", "notebook"):
        made = Decision(True, template, "default", "enforce", (), (), None, PATCH)
        metrics.review("mutate", "JobSet", False, made, 0.001)
    text = metrics.exposition().decode()
    assert metric_value(text, "gpu_webhook_mutations_total", template="fine-tuning") == 2
    assert metric_value(text, "gpu_webhook_mutations_total", template="notebook") == 3
    assert metric_value(text, "gpu_webhook_mutations_total") == 5
    assert sorted(re.findall(r'gpu_webhook_mutations_total\{[^}]*template="([^"]*)"', text)) == [
        "fine-tuning",
        "notebook",
    ]


@pytest.mark.parametrize("seconds", [0.0, *LATENCY_BUCKETS, 0.00099, 0.0011, 10.5, 1e9])
def test_every_latency_lands_in_the_bucket_observe_picks(seconds: float) -> None:
    tallied, direct = create_metrics(), create_metrics()
    tallied.review("mutate", "Pod", False, decision(True), seconds)
    count_at_once(direct, "mutate", "Pod", False, decision(True), seconds)
    tallied.flush()
    assert samples(tallied) == samples(direct)


def test_the_exposition_flushes_first() -> None:
    metrics = create_metrics()
    metrics.review("mutate", "Pod", False, decision(True, ("RewrittenToMig", "info")), 0.002)
    text = metrics.exposition().decode()
    assert metric_value(text, "gpu_webhook_reviews_total", endpoint="mutate", allowed="true") == 1
    assert metric_value(text, "gpu_webhook_violations_total", code="RewrittenToMig") == 1
    assert metric_value(text, "gpu_webhook_review_duration_seconds_count", endpoint="mutate") == 1


def test_concurrent_reviews_and_flushes_count_each_review_once() -> None:
    metrics, threads, per_thread = create_metrics(), 4, 2000
    stop = threading.Event()

    def review() -> None:
        for _ in range(per_thread):
            metrics.review("mutate", "Pod", False, decision(True, ("RewrittenToMig", "info")), 0.0004)

    def flush() -> None:
        while not stop.is_set():
            metrics.flush()

    flusher = threading.Thread(target=flush)
    flusher.start()
    workers = [threading.Thread(target=review) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    flusher.join()
    text = metrics.exposition().decode()
    assert metric_value(text, "gpu_webhook_reviews_total") == threads * per_thread
    assert metric_value(text, "gpu_webhook_violations_total") == threads * per_thread
    assert metric_value(text, "gpu_webhook_review_duration_seconds_sum") == pytest.approx(
        threads * per_thread * 0.0004
    )


def registry_total(metrics: Metrics, name: str) -> float:
    """Read the registry itself: the exposition would flush."""
    return sum(s.value for m in metrics.registry.collect() for s in m.samples if s.name == name)


def test_a_started_runtime_flushes_on_its_own_and_on_stop() -> None:
    metrics = create_metrics()
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory = FileInventorySource(INVENTORIES / "mixed-cluster.yaml")
    runtime = Runtime(catalog, inventory, metrics, logging.getLogger("test"))
    runtime.start()
    try:
        metrics.review("mutate", "Pod", False, decision(True), 0.001)
        deadline = time.monotonic() + 10 * FLUSH_SECONDS
        while registry_total(metrics, "gpu_webhook_reviews_total") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert registry_total(metrics, "gpu_webhook_reviews_total") == 1
        metrics.review("mutate", "Pod", False, decision(True), 0.001)
    finally:
        runtime.stop()
    assert registry_total(metrics, "gpu_webhook_reviews_total") == 2


def test_a_metrics_folder_that_cannot_be_written_counts_in_this_workers_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker started while PROMETHEUS_MULTIPROC_DIR is gone, read-only or full (serve checked
    it at start): its first sample raised, so it failed to boot and the master stopped every
    worker (exit code 3), or died of SIGBUS writing to a full tmpfs, again and again."""
    blocked = tmp_path / "prometheus"
    blocked.write_text("")  # the folder made impossible: a file where it should be
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(blocked))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)  # restored after the test
    with caplog.at_level(logging.ERROR, logger="gpu_webhook.metrics"):
        metrics = create_metrics()
    metrics.review("mutate", "Pod", False, decision(True, ("RewrittenToMig", "info")), 0.001)
    exposition = metrics.exposition().decode()
    assert metric_value(exposition, "gpu_webhook_reviews_total", endpoint="mutate", allowed="true") == 1
    assert [r.fields["folder"] for r in caplog.records if r.msg == "metrics_folder_unwritable"] == [  # type: ignore[attr-defined]
        str(blocked)
    ]


@pytest.mark.parametrize("broken", ["gone", "a file that is no metrics file"])
def test_shared_metrics_that_cannot_be_merged_expose_this_workers_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, broken: str
) -> None:
    """/metrics was a 500 (and a traceback in the log) on every scrape."""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)  # restored after the test
    metrics = create_metrics()
    metrics.review("mutate", "Pod", False, decision(True, ("RewrittenToMig", "info")), 0.001)
    metrics.flush()
    if broken == "gone":
        shutil.rmtree(folder)
    else:
        (folder / "counter_1.db").write_bytes(b"\xff\xff")
    with caplog.at_level(logging.ERROR, logger="gpu_webhook.metrics"):
        exposition = metrics.exposition().decode()
    assert metric_value(exposition, "gpu_webhook_reviews_total", endpoint="mutate", allowed="true") == 1
    assert [r.msg for r in caplog.records] == ["metrics_merge_failed"]


@pytest.mark.parametrize("broken", ["unwritable", "cannot be merged"])
def test_a_worker_whose_metrics_folder_fails_still_exports_the_certificate_s_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """The app a worker loads (WebhookServer.load, run here in-process): when the shared folder
    cannot be written or merged its /metrics shows its own registry, which left the expiry gauge
    out, so the certificate alerts had nothing to read."""
    from tests.server.support import write_serving_set
    from tests.server.test_tls_reload import ends
    from webhook.server.gunicorn_app import ServerSettings, WebhookServer
    from webhook.tls.reload import TLSFiles

    folder = tmp_path / "prometheus"
    if broken == "unwritable":
        folder.write_text("")  # a file where the folder should be
    else:
        folder.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)  # restored after the test
    write_serving_set(tmp_path / "certs")

    def sources() -> tuple[StaticCatalogSource, FileInventorySource]:
        catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
        return catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml")

    settings = ServerSettings("127.0.0.1:0", TLSFiles.in_directory(tmp_path / "certs"), workers=1)
    server = WebhookServer(settings, sources)
    server.load_tls()
    app = server.load()
    if broken == "cannot be merged":
        (folder / "counter_1.db").write_bytes(b"\xff\xff")
    exposition = app.test_client().get("/metrics").get_data(as_text=True)
    served = ends(tmp_path / "certs" / "tls.crt")
    assert metric_value(exposition, "gpu_webhook_tls_certificate_not_after_seconds") == served


@pytest.mark.parametrize("broken", ["unwritable", "cannot be merged"])
def test_a_worker_whose_metrics_folder_fails_still_exports_the_catalog_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """The reload metrics were registered nowhere (only the shared files had them), so a worker
    answering /metrics from its own registry left them out: GpuWebhookCatalogReloadFailing had
    nothing to read while its catalog failed to load."""
    from webhook.catalog.reload import ReloadingCatalogSource
    from webhook.server.app import start_sources, stop_sources
    from webhook.server.gunicorn_app import _webhook_app

    folder = tmp_path / "prometheus"
    if broken == "unwritable":
        folder.write_text("")  # a file where the folder should be
    else:
        folder.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)  # restored after the test

    def sources() -> tuple[ReloadingCatalogSource, FileInventorySource]:
        catalog = ReloadingCatalogSource([ROOT / "templates", tmp_path / "no-policies"], interval=3600)
        return catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml")

    app = _webhook_app(sources)
    start_sources(app)
    try:
        if broken == "cannot be merged":
            (folder / "counter_1.db").write_bytes(b"\xff\xff")
        exposition = app.test_client().get("/metrics").get_data(as_text=True)
    finally:
        stop_sources(app)
    assert "gpu_webhook_catalog_last_reload_success 0.0" in exposition.splitlines()
    assert metric_value(exposition, "gpu_webhook_catalog_reloads_total", result="failure") == 1
