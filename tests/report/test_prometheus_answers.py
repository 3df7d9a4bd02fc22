"""What `report --prometheus` and serve make of odd Prometheus answers, from a fake Prometheus on
loopback: readings out of range are ignored; an answer that is not a Prometheus vector, too big or
too slow is a clear error naming the URL, never a traceback."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import ROOT
from webhook.cli import main
from webhook.report.utilisation import ENGINE_ACTIVE, GPU_UTIL, reading_from_series

NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
ODD: dict[str, tuple[int, bytes]] = {
    "list": (200, b"[]"),
    "null": (200, b"null"),
    "data-string": (200, b'{"status":"success","data":"x"}'),
    "result-number": (200, b'{"status":"success","data":{"resultType":"vector","result":5}}'),
    "result-string": (200, b'{"status":"success","data":{"resultType":"vector","result":"abc"}}'),
    "metric-string": (
        200,
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":"x","value":[1,"0"]}]}}',
    ),
    "value-missing": (200, b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}'),
    "matrix": (200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'),
    "deep": (200, b"[" * 100_000 + b"]" * 100_000),
    "deep-object": (200, b'{"status":"success","data":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "error-list": (500, b"[1,2]"),
    "error-deep": (500, b"[" * 100_000 + b"]" * 100_000),
    "error-html": (503, b"<html>bad gateway</html>"),
    "truncated": (200, b'{"status": "success", "data": {'),
}


class Odd(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        status, body = ODD[self.path.split("/")[1]]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def odd_prometheus() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", sorted(ODD))
def test_an_odd_answer_is_a_clear_error_naming_the_url(
    odd_prometheus: str, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{odd_prometheus}/{mode}/"
    argv = ["report", "--inventory", str(NODES), "--pods", str(PODS), "--prometheus", url]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert url in err and "Traceback" not in err
    assert len(err.splitlines()) == 1 and len(err) < 600


LABELS = {"Hostname": "h100-whole-0", "gpu": "0", "UUID": "GPU-h0"}


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-0.5", "1e400", "-1e-9"])
def test_a_reading_outside_0_to_100_percent_is_ignored(value: str) -> None:
    assert reading_from_series({"metric": LABELS, "value": [0, value]}, GPU_UTIL, 1.0) is None
    assert reading_from_series({"metric": LABELS, "value": [0, value]}, ENGINE_ACTIVE, 100.0) is None


def test_an_engine_ratio_above_1_is_ignored_and_the_bounds_are_kept() -> None:
    assert reading_from_series({"metric": LABELS, "value": [0, "1.5"]}, ENGINE_ACTIVE, 100.0) is None
    assert reading_from_series({"metric": LABELS, "value": [0, "150"]}, GPU_UTIL, 1.0) is None
    for value, scale, expected in (("0", 100.0, 0.0), ("1", 100.0, 100.0), ("100", 1.0, 100.0)):
        reading = reading_from_series({"metric": LABELS, "value": [0, value]}, GPU_UTIL, scale)
        assert reading is not None and reading.percent == expected
        assert math.isfinite(json.loads(json.dumps(reading.percent)))
