"""A GPU that changed hands within the window has a dcgm-exporter series per pod that held it:
the idle list reads the current holder's, whichever Prometheus answers first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.conftest import ROOT
from tests.report.test_prometheus_answers import serving
from webhook.cli import main
from webhook.report.utilisation import GPU_UTIL

NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
GPU_0 = {"Hostname": "h100-whole-0", "gpu": "0", "UUID": "GPU-h0", "modelName": "NVIDIA H100 80GB HBM3"}
SERIES = [
    # held GPU 0 earlier in the window, busy; finished since (no longer bound)
    {"metric": GPU_0 | {"namespace": "default", "pod": "finished-job"}, "value": [0, "60"]},
    # holds GPU 0 now (examples/inventories/mixed-cluster-pods.yaml), idle
    {"metric": GPU_0 | {"namespace": "default", "pod": "smoke-test"}, "value": [0, "1"]},
]


class HandedOver(BaseHTTPRequestHandler):
    """GPU_UTIL answers SERIES, in reverse under /reversed; engine-active answers nothing."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        query = parse_qs(urlparse(self.path).query)["query"][0]
        result = (SERIES[::-1] if self.path.startswith("/reversed") else SERIES) if GPU_UTIL in query else []
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def prometheus() -> Iterator[str]:
    with serving(HandedOver) as url:
        yield url


@pytest.mark.parametrize("order", ["", "/reversed"])
def test_the_current_holders_reading_decides_in_any_answer_order(
    prometheus: str, order: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--inventory", str(NODES), "--pods", str(PODS), "--prometheus", prometheus + order]
    assert main([*argv, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    idle = [(i["node"], i["gpu"], i["namespace"], i["pod"]) for i in report["idle"]]
    assert idle == [("h100-whole-0", "0", "default", "smoke-test")]
    assert report["costs"]["idle"]["perHour"] == pytest.approx(4.916)
