"""`report --idle-below` and `--window`: a value that is no percentage or duration is refused (exit
2, naming the option), with or without --prometheus, and either without --prometheus, which they
apply to, is refused rather than ignored."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import ROOT
from webhook.cli import main

NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
FILES = ["report", "--inventory", str(NODES), "--pods", str(PODS)]
UNREACHABLE = "http://127.0.0.1:9"


class NoReadings(BaseHTTPRequestHandler):
    """A Prometheus that knows no series: an empty vector for every query."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def prometheus() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NoReadings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "-0.001", "100.5", "1e400"])
@pytest.mark.parametrize("prometheus_given", [True, False], ids=["with-prometheus", "without"])
def test_an_idle_bar_that_is_no_percentage_is_refused(
    value: str, prometheus_given: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*FILES, f"--idle-below={value}", "-o", "json"]
    assert main([*argv, "--prometheus", UNREACHABLE] if prometheus_given else argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--idle-below" in err and "Traceback" not in err


@pytest.mark.parametrize("window", ["1 hour", "0s", "00m"])
@pytest.mark.parametrize("prometheus_given", [True, False], ids=["with-prometheus", "without"])
def test_a_window_that_is_no_duration_is_refused(
    prometheus_given: bool, window: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zero window is refused here too: Prometheus answers it 400, duration must be greater than 0."""
    argv = [*FILES, "--window", window]
    assert main([*argv, "--prometheus", UNREACHABLE] if prometheus_given else argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--window" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--window", "24h"], ["--window"]),
        (["--idle-below", "10"], ["--idle-below"]),
        (["--window", "24h", "--idle-below", "10"], ["--window", "--idle-below"]),
    ],
)
def test_utilisation_options_without_prometheus_are_refused_not_ignored(
    options: list[str], named: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*FILES, *options]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--prometheus" in err
    assert all(option in err for option in named)


@pytest.mark.parametrize("value", ["0", "100", "2.5"])
def test_an_idle_bar_from_0_to_100_is_taken(
    value: str, prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*FILES, "--prometheus", prometheus, "--window", "30m", "--idle-below", value, "-o", "json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["window"], report["idleThresholdPercent"]) == ("30m", float(value))


def test_the_defaults_apply_with_prometheus_alone(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*FILES, "--prometheus", prometheus, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["window"], report["idleThresholdPercent"]) == ("1h", 5.0)


def test_without_prometheus_nor_its_options_the_report_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*FILES, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"] is None


def test_a_context_without_a_kubeconfig_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """--context names a kubeconfig context: with a node file it would be ignored."""
    assert main(["report", "--inventory", str(NODES), "--context", "prod-cluster"]) == 2
    assert "--context goes with --kubeconfig" in capsys.readouterr().err
