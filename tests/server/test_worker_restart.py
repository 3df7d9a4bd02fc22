"""Workers gunicorn starts again (after a crash, an out-of-memory kill, or all of them on SIGHUP)
while the catalog and inventory files are broken serve what the others served: the last good
catalog and the inventory the master read, never "not ready" (which `/validate` answers with a
503, refusing every GPU pod under `failurePolicy: Fail`)."""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import Client, WebhookProcess, served

REVIEW = json.loads((ROOT / "examples" / "admission" / "pod-review.json").read_text(encoding="utf-8"))


def workers(master: int) -> set[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return {int(pid) for pid in children}


def decisions(client: Client, count: int) -> list[tuple[int, bool | None]]:
    """(HTTP status, allowed) of `count` /validate reviews, each on a new connection (a new
    connection may reach either worker)."""
    found = []
    for _ in range(count):
        reply = client.post("/validate", REVIEW)
        found.append((reply.status, reply.json()["response"]["allowed"] if reply.status == 200 else None))
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[WebhookProcess, Client, Path]]:
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    shutil.copy(INVENTORIES / "mixed-cluster.yaml", tmp_path / "nodes.yaml")
    args = ["--workers", "2", "--threads", "1", "--reload-seconds", "1"]
    args += ["--templates", str(tmp_path / "templates"), "--policies", str(tmp_path / "policies")]
    with served(tmp_path, [*args, "--inventory", str(tmp_path / "nodes.yaml")]) as (process, client):
        yield process, client, tmp_path


def test_workers_started_while_the_files_are_broken_serve_what_the_others_served(
    server: tuple[WebhookProcess, Client, Path],
) -> None:
    process, client, folder = server
    before = decisions(client, 10)
    assert {status for status, _ in before} == {200}
    (folder / "templates" / "notebook.yaml").write_text("spec: [broken\n", encoding="utf-8")
    (folder / "nodes.yaml").write_text("items: [broken\n", encoding="utf-8")
    time.sleep(2.5)  # every worker has polled the broken catalog and kept the last good one

    old = workers(process.process.pid)
    process.process.send_signal(signal.SIGHUP)  # gunicorn starts every worker again
    deadline = time.monotonic() + 30
    while (workers(process.process.pid) & old or len(workers(process.process.pid)) < 2) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert not workers(process.process.pid) & old, "gunicorn did not start new workers"
    time.sleep(1)  # both new workers have loaded (or failed to load) their sources

    assert decisions(client, 20) == [before[0]] * 20
    readiness = client.get("/readyz")
    assert readiness.status == 200, readiness.body
    catalog = readiness.json()["catalog"]
    assert catalog["servingLastGood"] and catalog["lastError"]["problems"]
