"""`gpu-webhook serve --prometheus URL`: the dashboard's "Allocated but idle" card reads
utilisation there; a Prometheus that fails or hangs (each query bounded by a timeout) leaves the
dashboard up, with the error shown; without the option the card says how to get the figure."""

from __future__ import annotations

import calendar
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.report.test_prometheus_answers import Odd
from webhook.cli import main
from webhook.report.files import StaticUsageInventorySource
from webhook.report.utilisation import GPU_UTIL
from webhook.server import gunicorn_app
from webhook.sources import CatalogSource, InventorySource, StaticCatalogSource

NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
IDLE = {"Hostname": "h100-whole-0", "gpu": "1", "UUID": "GPU-h1", "modelName": "NVIDIA H100 80GB HBM3"}
IDLE |= {"namespace": "notebooks", "pod": "notebook-h100"}


def _answer(query: str) -> dict[str, Any]:
    result = [{"metric": IDLE, "value": [0, "1"]}] if GPU_UTIL in query else []
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


ASKED: list[str] = []


def _prometheus(delay: float) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            ASKED.append(self.path)
            time.sleep(delay)
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
            body = json.dumps(_answer(query)).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up waiting

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@pytest.fixture
def prometheus(request: pytest.FixtureRequest) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _prometheus(getattr(request, "param", 0.0)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _sources() -> tuple[CatalogSource, InventorySource]:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory = StaticUsageInventorySource(NODES, PODS)
    catalog.start()
    inventory.start()
    return catalog, inventory


def _idle_card(url: str | None) -> tuple[str, str]:
    app = gunicorn_app._webhook_app(_sources, prometheus_url=url)
    response = app.test_client().get("/dashboard")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    card = re.search(r'<div class="card[^"]*" id="card-idle">(.*?)</div>\s*</div>', page, re.S)
    assert card is not None
    return card.group(1), page


def test_the_idle_card_reads_the_prometheus_serve_was_given(prometheus: str) -> None:
    card, page = _idle_card(prometheus)
    assert "idle-hint" not in card and "1 device under" in card
    assert "Prometheus:" not in page


def test_without_prometheus_the_card_says_how_to_get_the_figure() -> None:
    card, _ = _idle_card(None)
    assert "--prometheus URL" in card


def test_a_prometheus_that_cannot_be_reached_leaves_the_dashboard_up() -> None:
    card, page = _idle_card("http://127.0.0.1:9")  # discard: nothing listens
    assert 'id="idle-hint">no utilisation read from Prometheus' in card
    assert "Prometheus: http://127.0.0.1:9" in page


@pytest.mark.parametrize("mode", ["list", "error-list", "deep", "metric-string"])
def test_a_prometheus_answering_oddly_is_named_on_the_dashboard(mode: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/{mode}"
        card, page = _idle_card(url)
    finally:
        server.shutdown()
        server.server_close()
    assert 'id="idle-hint">no utilisation read from Prometheus' in card
    assert f"Prometheus: {url}" in page


@pytest.mark.parametrize("prometheus", [3.0], indirect=True)
def test_a_prometheus_that_hangs_is_waited_for_only_so_long(
    prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gunicorn_app, "PROMETHEUS_TIMEOUT_SECONDS", 0.3)
    started = time.monotonic()
    _, page = _idle_card(prometheus)
    assert time.monotonic() - started < 2.5
    assert f"Prometheus: {prometheus}" in page


def _timed_get(client: Any, path: str) -> tuple[float, str]:
    started = time.monotonic()
    response = client.get(path)
    assert response.status_code == 200, path
    return time.monotonic() - started, response.get_data(as_text=True)


@pytest.mark.parametrize("prometheus", [3.0], indirect=True)
def test_while_a_dashboard_waits_on_prometheus_the_rest_answers_at_once(
    prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gunicorn_app, "PROMETHEUS_TIMEOUT_SECONDS", 2.0)
    app = gunicorn_app._webhook_app(_sources, prometheus_url=prometheus)
    first: list[tuple[float, str]] = []
    ASKED.clear()
    refresh = threading.Thread(target=lambda: first.append(_timed_get(app.test_client(), "/dashboard")))
    refresh.start()
    asked_by = time.monotonic() + 10
    while not ASKED and time.monotonic() < asked_by:  # the first dashboard is reading Prometheus now
        time.sleep(0.01)  # (a fixed pause lost that race on a loaded machine)
    assert ASKED
    client = app.test_client()
    for path in ("/metrics", "/dashboard", "/report", "/metrics"):
        took, text = _timed_get(client, path)
        assert took < 0.5, path
        if path == "/dashboard":
            assert 'id="idle-hint">no utilisation read from Prometheus yet' in text
    assert "gpu_webhook_devices_allocatable" in text
    refresh.join()
    took, page = first[0]
    assert 1.5 < took < 2.8
    assert f"Prometheus: {prometheus}" in page and "no whole answer in time" in page


def test_metrics_never_ask_prometheus(prometheus: str) -> None:
    app = gunicorn_app._webhook_app(_sources, prometheus_url=prometheus)
    ASKED.clear()
    for _ in range(3):
        assert "gpu_webhook_devices_allocatable" in app.test_client().get("/metrics").get_data(as_text=True)
    assert ASKED == []
    _idle_card(prometheus)
    assert ASKED  # the dashboard does


@pytest.mark.parametrize("url", ["file:///etc/passwd", "prometheus:9090", "http://", "http://u:s3cret@prom"])
def test_serve_refuses_a_url_that_is_not_prometheus(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--bind", "127.0.0.1:0", "--prometheus", url]) == 2
    err = capsys.readouterr().err
    assert "--prometheus" in err and "Traceback" not in err and "s3cret" not in err
    assert not (tmp_path / ".gpu-webhook").exists()  # refused before any certificate is made


def test_the_report_json_says_when_its_reading_was_taken_and_that_prometheus_failed_since() -> None:
    """A failed read keeps the last reading: the dashboard named the error, but /report's JSON
    showed the old idle list as current (found by review)."""
    from flask import Flask

    from webhook.report.service import ReportService
    from webhook.server.report_routes import report_blueprint

    server = ThreadingHTTPServer(("127.0.0.1", 0), _prometheus(0.0))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    catalog, inventory = _sources()
    url = f"http://127.0.0.1:{server.server_port}"
    service = ReportService(inventory, catalog, prometheus_url=url, refresh_seconds=0, timeout=2)
    app = Flask("test")
    app.register_blueprint(report_blueprint(inventory, catalog, service))
    client = app.test_client()
    read = client.get("/report").get_json()
    assert read["prometheus"]["error"] is None and len(read["idle"]) == 1
    taken = calendar.timegm(time.strptime(read["prometheus"]["readAt"], "%Y-%m-%dT%H:%M:%SZ"))
    assert abs(time.time() - taken) < 60
    server.shutdown()
    server.server_close()
    stale = client.get("/report").get_json()
    assert stale["prometheus"]["error"] and stale["prometheus"]["readAt"] == read["prometheus"]["readAt"]
    assert stale["idle"] == read["idle"]


def test_without_prometheus_the_report_json_has_no_reading() -> None:
    app = gunicorn_app._webhook_app(_sources, prometheus_url=None)
    assert app.test_client().get("/report").get_json()["prometheus"] is None
