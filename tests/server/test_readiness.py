"""`serve --kubeconfig`: the real server watching a (loopback) cluster is not ready until its
inventory has synced; meanwhile it still answers, deciding without node knowledge."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.conftest import INVENTORIES
from tests.inventory.fake_apiserver import FakeApiServer
from tests.server.support import Client, WebhookProcess, vector, write_serving_set

SYNC_TIMEOUT = 30.0


@dataclass
class Watching:
    process: WebhookProcess
    client: Client
    cluster: FakeApiServer


@pytest.fixture(scope="module")
def watching(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watching]:
    workdir = tmp_path_factory.mktemp("watching")
    (workdir / "apiserver").mkdir()
    cluster = FakeApiServer(workdir / "apiserver").start()
    nodes = yaml.safe_load((INVENTORIES / "mixed-cluster.yaml").read_text())["items"]
    for node in nodes:
        cluster.put("nodes", node)
    cluster.kinds["nodes"].gate.clear()  # node lists hang until the test lets them through
    cert_dir = workdir / "certs"
    write_serving_set(cert_dir)
    args = ["--cert-dir", str(cert_dir), "--kubeconfig", str(cluster.kubeconfig()), "--workers", "1"]
    process = WebhookProcess(workdir, args)
    try:
        client = Client(process.port, cert_dir / "ca.crt")
        process.wait_ready(client, "/healthz")
        yield Watching(process, client, cluster)
    finally:
        cluster.kinds["nodes"].gate.set()
        process.stop()
        cluster.stop()


def mutate_codes(client: Client) -> list[str]:
    reply = client.post("/mutate", vector("create-pod-gpu.json"))
    assert reply.status == 200
    response: dict[str, Any] = reply.json()["response"]
    assert response["allowed"] is True
    return response["auditAnnotations"].get("codes", "").split(",")


def test_ready_only_once_the_cluster_inventory_has_synced(watching: Watching) -> None:
    assert watching.client.get("/healthz").status == 200
    waiting = watching.client.get("/readyz")
    assert waiting.status == 503
    report = waiting.json()
    assert report["ready"] is False
    assert report["catalog"]["ready"] is True
    assert report["inventory"]["ready"] is False and report["inventory"]["synced"] is False
    assert "RewrittenToMig" not in mutate_codes(watching.client)  # no node knowledge yet: no slice
    watching.cluster.kinds["nodes"].gate.set()
    deadline = time.monotonic() + SYNC_TIMEOUT
    while watching.client.get("/readyz").status != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    ready = watching.client.get("/readyz")
    assert ready.status == 200, ready.body
    assert ready.json()["inventory"]["gpuNodes"] > 0
    assert "RewrittenToMig" in mutate_codes(watching.client)
