"""Idle allocated GPUs from dcgm-exporter metrics, read through a REAL Prometheus (Debian's package).

The test serves dcgm-style text exposition on loopback, starts Prometheus scraping it every
second, waits for samples, then asks through the HTTP API as `gpu-webhook report --prometheus`
does.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from webhook.catalog import load_catalog
from webhook.cli import main
from webhook.report.build import build_report
from webhook.report.files import load_with_pods
from webhook.report.utilisation import ENGINE_ACTIVE, GPU_UTIL, query_utilisation, reading_from_series

PROMETHEUS = shutil.which("prometheus")
NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
PODS = ROOT / "examples" / "inventories" / "mixed-cluster-pods.yaml"
H100 = {"modelName": "NVIDIA H100 80GB HBM3", "Hostname": "h100-whole-0"}
A100 = {"modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "a100-mig-0"}
SERIES: list[tuple[str, dict[str, str], float]] = [
    (GPU_UTIL, {"gpu": "0", "UUID": "GPU-h0", **H100, "namespace": "default", "pod": "smoke-test"}, 9),
    (GPU_UTIL, {"gpu": "1", "UUID": "GPU-h1", **H100, "namespace": "notebooks", "pod": "notebook-h100"}, 1),
    (GPU_UTIL, {"gpu": "2", "UUID": "GPU-h2", **H100, "namespace": "prod-chat", "pod": "vllm-70b-tp4"}, 87),
    (GPU_UTIL, {"gpu": "7", "UUID": "GPU-h7", **H100}, 0),
    (
        ENGINE_ACTIVE,
        {"gpu": "0", "UUID": "GPU-h0", **H100, "namespace": "default", "pod": "smoke-test"},
        0.02,
    ),
    (
        ENGINE_ACTIVE,
        {"gpu": "0", "UUID": "GPU-a0", **A100, "GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "9"}
        | {"namespace": "research-nlp", "pod": "notebook-0"},
        0.01,
    ),
    (
        ENGINE_ACTIVE,
        {"gpu": "0", "UUID": "GPU-a0", **A100, "GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "2"}
        | {"namespace": "prod-chat", "pod": "vllm-small-0"},
        0.64,
    ),
]


def exposition() -> bytes:
    """The series in dcgm-exporter's text format (each labelled container main where a pod holds it)."""
    lines: list[str] = []
    for metric, labels, value in sorted(SERIES, key=lambda s: s[0]):
        if f"# TYPE {metric} gauge" not in lines:
            lines.append(f"# TYPE {metric} gauge")
        extra = {"container": "main"} if "pod" in labels else {}
        text = ",".join(
            f'{k}="{v}"' for k, v in {**labels, **extra, "device": "nvidia" + labels["gpu"]}.items()
        )
        lines.append(f"{metric}{{{text}}} {value}")
    return ("\n".join(lines) + "\n").encode()


pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="prometheus is not installed (scripts/setup-system.sh installs it)"
)


class Exporter(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body = exposition()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


def wait_for_samples(url: str, timeout: float = 60.0) -> None:
    """Until Prometheus answers and holds at least three scrapes of each series."""
    query = f"{url}/api/v1/query?query=min(count_over_time({ENGINE_ACTIVE}[1m]))"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = get_json(query)["data"]["result"]
            if result and float(result[0]["value"][1]) >= 3:
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise AssertionError("Prometheus did not scrape the exporter in time")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("prometheus")
    exporter = ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "dcgm", "static_configs": [{"targets": [f"127.0.0.1:{exporter.server_port}"]}]}
        ],
    }
    (directory / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    address = f"127.0.0.1:{free_port()}"
    command = [
        str(PROMETHEUS),
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'data'}",
        f"--web.listen-address={address}",
        "--log.level=warn",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_samples(f"http://{address}")
        yield f"http://{address}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        exporter.shutdown()


def test_utilisation_per_gpu_and_mig_device_prefers_engine_active(prometheus: str) -> None:
    readings = {(r.hostname, r.gpu, r.instance): r for r in query_utilisation(prometheus, "1m")}
    smoke = readings["h100-whole-0", "0", ""]
    assert (smoke.metric, smoke.percent, smoke.pod) == (ENGINE_ACTIVE, pytest.approx(2.0), "smoke-test")
    notebook = readings["h100-whole-0", "1", ""]
    assert (notebook.metric, notebook.percent) == (GPU_UTIL, pytest.approx(1.0))
    mig = readings["a100-mig-0", "0", "9"]
    assert (mig.profile, mig.namespace, mig.percent) == ("1g.10gb", "research-nlp", pytest.approx(1.0))
    assert readings["h100-whole-0", "7", ""].pod == ""


def test_idle_allocated_gpus_and_their_cost(prometheus: str) -> None:
    inventory, usages = load_with_pods(NODES, PODS)
    catalog = load_catalog([ROOT / "templates", ROOT / "policies"])
    report = build_report(inventory, catalog, usages, query_utilisation(prometheus, "1m"), window="1m")
    assert report.idle is not None
    idle = {(i.node, i.gpu, i.profile): i for i in report.idle}
    # busy (87%, 64%) and unallocated (no pod) devices are not listed
    assert set(idle) == {
        ("h100-whole-0", "0", "gpu"),
        ("h100-whole-0", "1", "gpu"),
        ("a100-mig-0", "0", "1g.10gb"),
    }
    assert idle["h100-whole-0", "0", "gpu"].cost_per_hour == pytest.approx(4.916)
    assert idle["a100-mig-0", "0", "1g.10gb"].cost_per_hour is None  # A100-80GB is not priced
    assert report.costs.idle_per_hour == pytest.approx(2 * 4.916)


def test_cli_report_with_prometheus(prometheus: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", "--inventory", str(NODES), "--pods", str(PODS), "--prometheus", prometheus]
    assert main([*argv, "--window", "1m", "--idle-below", "1.5", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["window"] == "1m"
    assert [(i["node"], i["pod"]) for i in data["idle"]] == [
        ("a100-mig-0", "notebook-0"),
        ("h100-whole-0", "notebook-h100"),
    ]
    assert data["costs"]["idle"]["perHour"] == pytest.approx(4.916)


def test_a_query_prometheus_rejects_is_a_clear_error(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--inventory", str(NODES), "--prometheus", f"{prometheus}/not-prometheus"]
    assert main(argv) == 2
    assert "not-prometheus" in capsys.readouterr().err


def test_readings_prefer_the_workload_labels_over_the_scrape_target() -> None:
    series = {
        "metric": {
            "Hostname": "n",
            "gpu": "0",
            "pod": "dcgm-exporter-x",
            "exported_pod": "trainer",
            "exported_namespace": "ml",
        },
        "value": [0, "0.5"],
    }
    reading = reading_from_series(series, ENGINE_ACTIVE, 100.0)
    assert reading is not None
    assert (reading.pod, reading.namespace, reading.percent) == ("trainer", "ml", 50.0)
