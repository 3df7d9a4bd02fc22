"""`serve --reload-seconds 0` reads the catalog once, in the master: a worker gunicorn starts again
(after a crash, or all of them on SIGHUP) serves that catalog, not what the folders hold by then.
Each worker read the folders itself: after an edit some workers injected the new memory limit and
some the old one, and after a broken edit a new worker had no catalog at all ("not ready", which
`/validate` answers with a 503 and `failurePolicy: Fail` turns into refused GPU pods)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import Client, WebhookProcess, served

REVIEW = json.loads((ROOT / "examples" / "admission" / "pod-review.json").read_text(encoding="utf-8"))


def workers(master: int) -> set[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return {int(pid) for pid in children}


def review() -> dict[str, Any]:
    """The example review with a new uid (the same review again would be answered from the cache)."""
    return {**REVIEW, "request": {**REVIEW["request"], "uid": str(uuid.uuid4())}}


def memory_limits(client: Client, count: int) -> list[object]:
    """The memory limits /mutate injects into the example pod, for `count` reviews each on a new
    connection (a new connection may reach either worker); None where no patch came back."""
    found: list[object] = []
    for _ in range(count):
        reply = client.post("/mutate", review())
        assert reply.status == 200, reply.body
        patch = reply.json()["response"].get("patch")
        operations = json.loads(base64.b64decode(patch)) if patch else []
        limits = [op["value"] for op in operations if "limits" in op["path"] and "value" in op]
        found.append(json.dumps(limits, sort_keys=True) if limits else None)
    return found


def validations(client: Client, count: int) -> list[tuple[int, bool | None]]:
    found = []
    for _ in range(count):
        reply = client.post("/validate", review())
        found.append((reply.status, reply.json()["response"]["allowed"] if reply.status == 200 else None))
    return found


def wait_for_new_workers(process: WebhookProcess, old: set[int]) -> None:
    """Until gunicorn has replaced every worker in `old`, the new ones booted and listening."""
    master = process.process.pid
    deadline = time.monotonic() + 30
    while (workers(master) & old or len(workers(master)) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    new = workers(master) - old
    assert new and not workers(master) & old, "gunicorn did not start new workers"
    while time.monotonic() < deadline:
        booted = {line.get("pid") for line in process.log_lines() if "Booting worker" in line["event"]}
        if new <= booted:
            break
        time.sleep(0.1)
    time.sleep(1)  # the new workers have bound their sockets and built their apps


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[WebhookProcess, Client, Path]]:
    shutil.copytree(ROOT / "templates", tmp_path / "templates", ignore=shutil.ignore_patterns("tests"))
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    args = ["--workers", "2", "--threads", "1", "--reload-seconds", "0"]
    args += ["--templates", str(tmp_path / "templates"), "--policies", str(tmp_path / "policies")]
    with served(tmp_path, [*args, "--inventory", str(INVENTORIES / "mixed-cluster.yaml")]) as (
        process,
        client,
    ):
        yield process, client, tmp_path


def test_a_worker_started_again_after_a_crash_serves_the_catalog_the_master_read(
    server: tuple[WebhookProcess, Client, Path],
) -> None:
    process, client, folder = server
    before = memory_limits(client, 6)
    assert before[0] is not None and "1Gi" in str(before[0]) and before == [before[0]] * 6
    smoke_test = folder / "templates" / "cuda-smoke-test.yaml"
    text = smoke_test.read_text(encoding="utf-8")
    assert "limits: {memory: 1Gi}" in text
    smoke_test.write_text(text.replace("limits: {memory: 1Gi}", "limits: {memory: 3Gi}"), encoding="utf-8")

    old = workers(process.process.pid)
    os.kill(min(old), signal.SIGKILL)
    wait_for_new_workers(process, {min(old)})
    assert memory_limits(client, 20) == [before[0]] * 20


def test_workers_started_again_on_sighup_while_the_folders_are_broken_serve_the_catalog_the_master_read(
    server: tuple[WebhookProcess, Client, Path],
) -> None:
    """SIGHUP does not read the catalog again with --reload-seconds 0 (restart serve for that), so
    a broken file cannot leave the new workers without one."""
    process, client, folder = server
    before = validations(client, 4)
    assert before == [(200, True)] * 4
    (folder / "templates" / "zz.yaml").write_text("garbage: [\n", encoding="utf-8")

    old = workers(process.process.pid)
    process.process.send_signal(signal.SIGHUP)  # gunicorn starts every worker again
    wait_for_new_workers(process, old)
    assert validations(client, 20) == [(200, True)] * 20
    readiness = client.get("/readyz")
    assert readiness.status == 200, readiness.body
    assert not [line for line in process.log_lines() if "not ready" in json.dumps(line)]
