"""The dashboard in a real headless browser (Debian's chromium): the DOM it builds and a screenshot,
kept as artifacts/dashboard.png for a person to look at."""

from __future__ import annotations

import shutil
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

from tests.conftest import ROOT
from tests.report.test_routes import Rows, sources
from webhook.server.report_routes import report_blueprint

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "artifacts"
WIDTH, HEIGHT = 1400, 1720

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/setup-system.sh installs it)"
)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = Flask("dashboard-test")
    app.register_blueprint(report_blueprint(*sources()))
    server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/dashboard"
    server.shutdown()


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, timeout=120, check=True)


def test_the_browser_builds_a_row_per_node_and_the_waste_list(tmp_path: Path, url: str) -> None:
    dom = chromium(tmp_path, "--dump-dom", url).stdout.decode()
    rows = Rows()
    rows.feed(dom)
    assert rows.nodes == [
        "a100-mig-0",
        "a100-mig-1",
        "a100-whole-0",
        "h100-1g-0",
        "h100-3g-0",
        "h100-whole-0",
        "gke-l4-0",
    ]
    assert rows.waste == 5
    assert "<style>" in dom  # styled without fetching anything


def test_screenshot_is_kept_as_an_artifact(tmp_path: Path, url: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / "dashboard.png"
    target.unlink(missing_ok=True)
    chromium(tmp_path, f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={target}", url)
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (WIDTH, HEIGHT)
    assert len(data) > 50_000  # a blank or error page compresses to a few KB
