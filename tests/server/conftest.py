"""One real `gpu-webhook serve` (gunicorn, 2 workers, TLS) shared by the protocol, bad-input and
metrics tests; modules that need other flags start their own. `shipped_app`: the flask app on the
shipped catalog and mixed-cluster.yaml, in process, one per module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import Client, WebhookProcess, write_serving_set
from webhook.core.model import Inventory
from webhook.report.files import load_with_pods
from webhook.server.app import create_app, start_sources, stop_sources
from webhook.sources import FileInventorySource, StaticCatalogSource
from webhook.tls.certgen import KeyPair


@dataclass
class Served:
    process: WebhookProcess
    client: Client
    ca: KeyPair
    cert_dir: Path


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("webhook")
    cert_dir = workdir / "certs"
    ca = write_serving_set(cert_dir)
    process = WebhookProcess(workdir, ["--cert-dir", str(cert_dir), "--workers", "2", "--threads", "2"])
    try:
        client = Client(process.port, cert_dir / "ca.crt")
        process.wait_ready(client)
        yield Served(process, client, ca, cert_dir)
    finally:
        process.stop()


@pytest.fixture(scope="session")
def mixed_cluster() -> Inventory:
    """The inventory `serve` uses by default: the example nodes with the pods bound to them."""
    inventory, _ = load_with_pods(INVENTORIES / "mixed-cluster.yaml", INVENTORIES / "mixed-cluster-pods.yaml")
    return inventory


@pytest.fixture(scope="module")
def shipped_app() -> Iterator[Any]:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    served = create_app(catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml"))
    start_sources(served)
    yield served
    stop_sources(served)
