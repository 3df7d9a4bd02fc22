"""/metrics under gunicorn with 2 workers: whichever worker answers, it counts every worker's reviews
(the other worker's within FLUSH_SECONDS, when its flusher adds its tally)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.builders import make_pod
from tests.server.conftest import Served
from tests.server.support import metric_value, scrape_settled, scrape_when, vector

BATCH = 16
MAX_BATCHES = 20


def post_review(served: Served, uid: str) -> int:
    document = vector("create-pod-gpu.json")
    document["request"]["uid"] = uid
    return served.client.post("/mutate", document).status


def pids_that_served(served: Served, uids: set[str]) -> set[int]:
    return {line["pid"] for line in served.process.log_lines() if line.get("uid") in uids}


def test_counts_from_every_worker_are_merged(served: Served) -> None:
    name, labels = "gpu_webhook_reviews_total", {"endpoint": "mutate", "dry_run": "false"}
    before = metric_value(scrape_settled(served.client), name, **labels)
    sent: set[str] = set()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for batch in range(MAX_BATCHES):
            uids = [f"metrics-{batch}-{i}" for i in range(BATCH)]
            assert set(pool.map(lambda uid: post_review(served, uid), uids)) == {200}
            sent.update(uids)
            if len(pids_that_served(served, sent)) >= 2:
                break
    assert len(pids_that_served(served, sent)) == 2, "both workers should have answered some reviews"
    scrape_when(served.client, lambda text: metric_value(text, name, **labels) - before >= len(sent))
    scrapes = [served.client.get("/metrics").body.decode() for _ in range(8)]
    totals = {metric_value(text, name, **labels) - before for text in scrapes}
    assert totals == {float(len(sent))}


def test_the_exposition_names_every_metric(served: Served) -> None:
    """After a review of its own that is rewritten (a patch, info outcomes), not whatever other
    tests happened to send before."""
    pod = make_pod("cuda").container("cuda", gpu=1, image="nvidia/cuda:12.4.1-base-ubuntu22.04").build()
    request = {
        "uid": "exposition",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    assert "patch" in served.client.post("/mutate", review).json()["response"]
    names = (
        "gpu_webhook_reviews_total",
        "gpu_webhook_violations_total",
        "gpu_webhook_review_duration_seconds_bucket",
        "gpu_webhook_mutations_total",
    )
    reply = served.client.get("/metrics")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/plain")
    text = scrape_when(served.client, lambda text: all(f"\n{name}{{" in text for name in names))
    for name in names:
        assert f"\n{name}{{" in text


def test_every_review_metric_says_whether_the_review_was_a_dry_run(served: Served) -> None:
    """Each review counted per (endpoint, dry run) in gpu_webhook_reviews_total is counted once in
    the latency histogram and once in gpu_webhook_decision_cache_total under the same labels: a
    dry run (`kubectl apply --dry-run=server`) is never counted as real, in the cache's counter
    neither (it was counted there as a real review's bypass)."""
    names = (
        "gpu_webhook_reviews_total",
        "gpu_webhook_review_duration_seconds_count",
        "gpu_webhook_decision_cache_total",
    )

    def counts(text: str) -> dict[tuple[str, str, str], float]:
        return {
            (name, endpoint, dry): metric_value(text, name, endpoint=endpoint, dry_run=dry)
            for name in names
            for endpoint in ("mutate", "validate")
            for dry in ("true", "false")
        }

    before = counts(scrape_settled(served.client))
    sent = {("mutate", "true"): 3, ("validate", "true"): 2, ("mutate", "false"): 1}
    for (endpoint, dry), count in sent.items():
        for n in range(count):
            document = vector("create-pod-gpu.json")
            document["request"].update(uid=f"dry-run-{endpoint}-{dry}-{n}", dryRun=dry == "true")
            assert served.client.post(f"/{endpoint}", document).status == 200
    after = counts(scrape_settled(served.client))
    for name in names:
        moved = {(e, d): after[name, e, d] - before[name, e, d] for e, d in sent}
        assert moved == {key: float(count) for key, count in sent.items()}, name


def test_what_the_monitoring_component_is_checked_against_is_what_a_scrape_serves(served: Served) -> None:
    """tests/deploy/test_monitoring.py checks the alerts' and dashboard's PromQL against the metric
    definitions; a real scrape (gunicorn, multiprocess) serves no series or label they leave out."""
    from prometheus_client.parser import text_string_to_metric_families

    from tests.deploy.test_monitoring import exported_metrics

    assert post_review(served, "monitoring-names") == 200
    served.client.post("/validate", b"not json")  # a refused request: gpu_webhook_bad_requests_total
    exported = exported_metrics()
    text = scrape_when(served.client, lambda text: "\ngpu_webhook_reviews_total{" in text)
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert samples
    for sample in samples:
        assert sample.name in exported, sample.name
        assert set(sample.labels) <= exported[sample.name], f"{sample.name}: {sample.labels}"
