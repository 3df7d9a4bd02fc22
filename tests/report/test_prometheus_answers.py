"""What `report --prometheus` and serve make of odd Prometheus answers, from a fake Prometheus on
loopback: readings out of range are ignored; an answer that is not a Prometheus vector, too big or
too slow is a clear error naming the URL, never a traceback."""

from __future__ import annotations

import contextlib
import json
import math
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.server.support import write_serving_set
from webhook.cli import main
from webhook.report.utilisation import (
    ENGINE_ACTIVE,
    GPU_UTIL,
    MAX_ANSWER_BYTES,
    PrometheusError,
    query_utilisation,
    reading_from_series,
)

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
    with serving(Odd) as url:
        yield url


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A fake Prometheus on a free loopback port, over TLS with `tls`; its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{'https://localhost' if tls else 'http://127.0.0.1'}:{server.server_port}"
    finally:
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


EMPTY = b'{"status":"success","data":{"resultType":"vector","result":[]}}'


class Trickling(BaseHTTPRequestHandler):
    """/drip: headers at once, then the body a byte every 0.2 s (each read well within any socket
    timeout); /drip-headers: the status line that slowly too; /big: a vector over the size cap."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        with contextlib.suppress(OSError):  # the client hung up
            getattr(self, "_" + self.path.split("/")[1].replace("-", "_"))()

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(EMPTY)))
        self.end_headers()
        self._slowly(EMPTY)

    def _silent(self) -> None:
        time.sleep(1.0)  # nothing at all until well past the client's deadline

    def _drip_headers(self) -> None:
        self._slowly(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(EMPTY) + EMPTY)

    def _slowly(self, data: bytes) -> None:
        for byte in data:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.2)

    def _big(self) -> None:
        sample = b'{"metric":{"Hostname":"n","gpu":"0"},"value":[0,"50"]},'
        self.send_response(200)
        self.end_headers()  # no length: the body ends when the connection closes
        self.wfile.write(b'{"status":"success","data":{"resultType":"vector","result":[')
        for _ in range(MAX_ANSWER_BYTES // (len(sample) * 1000) + 2):
            self.wfile.write(sample * 1000)
        self.wfile.write(sample[:-1] + b"]}}")

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def trickling() -> Iterator[str]:
    with serving(Trickling) as url:
        yield url


@pytest.mark.parametrize("path", ["drip", "drip-headers"])
def test_a_trickling_prometheus_is_given_up_at_the_deadline(trickling: str, path: str) -> None:
    started = time.monotonic()
    with pytest.raises(PrometheusError, match="no whole answer in time") as caught:
        query_utilisation(f"{trickling}/{path}", "1h", timeout=1.0)
    assert time.monotonic() - started < 1.8
    assert f"{trickling}/{path}" in str(caught.value)


def test_a_silent_prometheus_is_given_up_at_the_deadline_however_the_timeout_trips(trickling: str) -> None:
    """The socket's own timeout ends at the deadline too and may fire before the watch marks it
    expired: a quarter of such reads said "cannot reach Prometheus: timed out" instead."""
    for _ in range(20):
        with pytest.raises(PrometheusError, match="no whole answer in time"):
            query_utilisation(f"{trickling}/silent", "1h", timeout=0.1)


def test_an_answer_over_the_cap_is_an_error_not_read_whole(trickling: str) -> None:
    with pytest.raises(PrometheusError, match=r"the answer is over 16 MiB") as caught:
        query_utilisation(f"{trickling}/big", "1h", timeout=30.0)
    assert f"{trickling}/big" in str(caught.value)


class Answering(BaseHTTPRequestHandler):
    """One GPU's engine activity, for every query."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        sample = {"metric": {"Hostname": "a100-0", "gpu": "0", "UUID": "GPU-1"}, "value": [1, "0.25"]}
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [sample]}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_prometheus_over_https_is_read_under_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watched HTTPS connection attaches the TLS socket; the system's trust is used
    (SSL_CERT_FILE here names the test CA)."""
    write_serving_set(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.crt"))
    with serving(Answering, context) as url:
        (reading,) = query_utilisation(url, "1h", timeout=5.0)
    assert reading.hostname == "a100-0"
