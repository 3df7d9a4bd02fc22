"""What the garbage collector costs a webhook worker, with and without `gc.freeze()` after start-up.

A gunicorn worker imports flask, werkzeug, prometheus-client, the kubernetes client and the
catalog: tens of thousands of long-lived objects that every full collection walks again. In a
child process per variant, this builds the webhook's app as a worker does (sources started, the
decision cache off so that every review is decided), optionally freezes what exists then (as
`gunicorn_conf.post_worker_init` does), and sends reviews through flask, each pod different.
`gc.callbacks` time every collection. Prints, per variant: the objects the collector tracks
after start-up, collections by generation, the longest pause, and the collector's total time
per 1,000 reviews.

    python benchmarks/bench_gc.py [--reviews 30000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REVIEW = ROOT / "examples" / "admission" / "pod-review.json"
VARIANTS = ("as-is", "frozen")


def child(variant: str, reviews: int) -> dict[str, Any]:
    """Runs in its own process: start like a worker, then time every collection over `reviews`."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bench-gc-")
    from webhook.server.app import create_app, start_sources
    from webhook.server.gunicorn_conf import freeze_start_up
    from webhook.server.logs import configure_logging
    from webhook.sources import FileInventorySource, StaticCatalogSource

    configure_logging(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as this process
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory = FileInventorySource(ROOT / "examples" / "inventories" / "mixed-cluster.yaml")
    app = create_app(catalog, inventory, decision_cache=0)
    start_sources(app)
    if variant == "frozen":
        freeze_start_up()
    tracked = len(gc.get_objects())
    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started: list[float] = []

    def timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        else:
            pauses[info["generation"]].append(time.perf_counter() - started.pop())

    client = app.test_client()
    head, tail = _split(REVIEW.read_text())
    gc.callbacks.append(timer)
    for n in range(reviews):
        client.post("/mutate", data=f"{head}{n}{tail}", content_type="application/json")
    gc.callbacks.remove(timer)
    every = [p for found in pauses.values() for p in found]
    return {
        "tracked": tracked,
        "frozen": gc.get_freeze_count(),
        "collections": {generation: len(found) for generation, found in pauses.items()},
        "longest_ms": max(every, default=0.0) * 1000,
        "full_ms": [round(p * 1000, 2) for p in pauses[2]],
        "per_1000_ms": sum(every) * 1000 * 1000 / reviews,
    }


def _split(review: str) -> tuple[str, str]:
    """The review around a marker annotation, so each review's pod differs from the others."""
    document = json.loads(review)
    metadata = document["request"]["object"].setdefault("metadata", {})
    metadata.setdefault("annotations", {})["bench.gpu-webhook.io/sequence"] = "@@n@@"
    head, tail = json.dumps(document).split("@@n@@")
    return head, tail


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=30_000)
    args = parser.parse_args()
    results = {variant: _run(variant, args.reviews) for variant in VARIANTS}
    report(results, args.reviews)
    return 0


def _run(variant: str, reviews: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "child", variant, str(reviews)]
    output = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def report(results: dict[str, dict[str, Any]], reviews: int) -> None:
    from webhook.buildinfo import core_build

    print(f"garbage collection in a webhook worker over {reviews:,} /mutate reviews, each decided")
    print(f"(flask test client, one process per variant; webhook.core: {core_build()})")
    print(f"{'variant':<10}{'tracked':>10}{'frozen':>10}{'gen0':>7}{'gen1':>6}{'gen2':>6}", end="")
    print(f"{'longest ms':>12}{'ms per 1,000 reviews':>22}   full collections (ms)")
    for variant, found in results.items():
        collections = found["collections"]
        print(
            f"{variant:<10}{found['tracked']:>10,}{found['frozen']:>10,}{collections['0']:>7}"
            f"{collections['1']:>6}{collections['2']:>6}{found['longest_ms']:>12.2f}"
            f"{found['per_1000_ms']:>22.2f}   {', '.join(map(str, found['full_ms'][:8]))}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
