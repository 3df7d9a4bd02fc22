"""SIGHUP, gunicorn's graceful reload, under traffic refuses no connection.

With reuse_port each worker listens on its own socket in the kernel's SO_REUSEPORT group. A
stopping gthread worker only stopped polling that socket while it finished its connections (a
kept-alive one for 2 s): the kernel kept queueing new connections there, and every one of them
was reset when the socket closed. Under failurePolicy Fail each reset is a refused pod.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.server.support import Client, WebhookProcess, write_serving_set

CONNECTIONS = 24  # each lands on the stopping worker's socket or the new one's: 1 in 2**24 misses it


def workers(master: int) -> set[int]:
    return {int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()}


@pytest.fixture
def one_worker(tmp_path: Path) -> Iterator[tuple[WebhookProcess, Client]]:
    write_serving_set(tmp_path / "certs")
    args = ["--cert-dir", str(tmp_path / "certs"), "--workers", "1", "--threads", "2"]
    process = WebhookProcess(tmp_path, args)
    try:
        client = Client(process.port, tmp_path / "certs" / "ca.crt", timeout=30)
        process.wait_ready(client)
        yield process, client
    finally:
        process.stop()


def healthz(client: Client) -> str:
    """/healthz on a new connection: its status, or the error the client got."""
    try:
        return str(client.get("/healthz").status)
    except OSError as error:
        return type(error).__name__


def test_connections_opened_while_a_worker_stops_on_sighup_are_served(
    one_worker: tuple[WebhookProcess, Client],
) -> None:
    process, client = one_worker
    master = process.process.pid
    (old,) = workers(master)
    kept_alive = client.connection()  # holds the old worker in its graceful stop for 2 s
    assert client.request("GET", "/healthz", connection=kept_alive).status == 200
    try:
        process.process.send_signal(signal.SIGHUP)  # a new worker, then SIGTERM to the old one
        deadline = time.monotonic() + 10
        while len(workers(master)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the old worker has its SIGTERM and is finishing the kept-alive connection
        assert old in workers(master), "the old worker was gone before the test's connections"
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            answers = list(pool.map(lambda _: healthz(client), range(CONNECTIONS)))
    finally:
        kept_alive.close()
    assert answers == ["200"] * CONNECTIONS  # before, about half: ConnectionResetError
    assert "Traceback" not in process.stderr.read_text(errors="replace")


def test_a_worker_told_to_stop_before_another_listens_serves_new_connections_meanwhile(
    one_worker: tuple[WebhookProcess, Client],
) -> None:
    """The only worker, stopped on its own (gunicorn replaces it only once it has exited): it keeps
    accepting until another worker listens, 2 s at most. Closing its socket at once refused
    these connections; leaving it open unwatched, as gunicorn did, reset them."""
    process, client = one_worker
    (old,) = workers(process.process.pid)
    kept_alive = client.connection()
    assert client.request("GET", "/healthz", connection=kept_alive).status == 200
    try:
        os.kill(old, signal.SIGTERM)
        time.sleep(0.3)
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            answers = list(pool.map(lambda _: healthz(client), range(CONNECTIONS)))
    finally:
        kept_alive.close()
    assert answers == ["200"] * CONNECTIONS
    assert "Traceback" not in process.stderr.read_text(errors="replace")
