"""Clients that start a TLS handshake or a request and then stall do not take the webhook down.

gunicorn's gthread worker served each connection on a thread with no timeout: as many stalled
clients as threads (2 workers x 2 threads here) and nobody was answered, /healthz included.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.support import Client, WebhookProcess, served, vector, vector_bytes
from webhook.server.slow_clients import bounded_io

IO_TIMEOUT = 1.0
STALLED = 6  # more than the 4 threads


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebhookProcess, Client]]:
    args = ["--workers", "2", "--threads", "2", "--io-timeout", str(IO_TIMEOUT)]
    with served(tmp_path_factory.mktemp("slow"), args) as running:
        yield running


def half_hello(port: int) -> socket.socket:
    """A TLS record header of a ClientHello and nothing more."""
    stalled = socket.create_connection(("127.0.0.1", port))
    stalled.sendall(b"\x16\x03\x01")
    return stalled


def half_request(port: int, ca: Path) -> socket.socket:
    """A finished handshake, then the headers of a review and one byte of its body."""
    context = ssl.create_default_context(cafile=str(ca))
    stalled = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    head = (
        b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    )
    stalled.sendall(head)
    return stalled


def dripping_headers(port: int, ca: Path, stop: threading.Event) -> socket.socket:
    """A finished handshake, then a header line every half second, for ever: each read gets
    something within the timeout, the request never ends."""
    context = ssl.create_default_context(cafile=str(ca))
    dripping = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    dripping.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")

    def drip() -> None:
        number = 0
        while not stop.wait(IO_TIMEOUT / 2):
            number += 1
            try:
                dripping.sendall(f"X-Drip-{number}: 1\r\n".encode())
            except OSError:
                return  # the server closed it

    threading.Thread(target=drip, daemon=True).start()
    return dripping


@pytest.mark.parametrize("stall", ["handshake", "body", "dripping headers"])
def test_stalled_clients_do_not_starve_the_others(server: tuple[WebhookProcess, Client], stall: str) -> None:
    process, client = server
    ca = process.workdir / "certs" / "ca.crt"
    stop = threading.Event()
    opened = {
        "handshake": lambda: half_hello(process.port),
        "body": lambda: half_request(process.port, ca),
        "dripping headers": lambda: dripping_headers(process.port, ca, stop),
    }[stall]
    stalled = [opened() for _ in range(STALLED)]
    try:
        time.sleep(0.5)  # the stalled connections reach the worker threads first
        started = time.monotonic()
        assert client.post("/mutate", vector("create-pod-gpu.json")).status == 200
        assert client.get("/healthz").status == 200
        assert time.monotonic() - started < 15  # each stalled connection goes within 2 s; before, never
    finally:
        stop.set()
        for connection in stalled:
            connection.close()
    assert "Traceback" not in process.stderr.read_text(errors="replace")


def test_a_read_never_waits_longer_than_its_caller_set() -> None:
    """gunicorn drains a connection it closes with settimeout(2) on the worker's main thread; a
    read there waited the whole --io-timeout, and a few stalled clients blocked the worker's loop
    until gunicorn killed it, resetting every connection it held."""
    context = bounded_io(lambda conf, factory: ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), 20.0)(None, None)
    ours, theirs = socket.socketpair()
    with ours, theirs, context.wrap_socket(ours, server_side=True, do_handshake_on_connect=False) as tls:
        tls.setblocking(True)  # as gunicorn does before each request and before draining
        tls.settimeout(2.0)
        started = time.monotonic()
        with pytest.raises((TimeoutError, ssl.SSLError)):
            tls.recv(1)
        assert time.monotonic() - started < 5


@pytest.fixture(scope="module")
def two_threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebhookProcess, Client]]:
    """One worker of two threads: every connection reaches the same worker's pool."""
    args = ["--workers", "1", "--threads", "2", "--io-timeout", str(IO_TIMEOUT)]
    with served(tmp_path_factory.mktemp("silent"), args, timeout=30) as running:
        yield running


def seconds_until_closed(connections: list[socket.socket], opened: float, limit: float) -> list[float]:
    """For each connection, the seconds from `opened` until the server closed it (inf if it
    was still open `limit` seconds after `opened`)."""
    closed = [float("inf")] * len(connections)
    waiting = dict(enumerate(connections))
    while waiting and time.monotonic() < opened + limit:
        for number, connection in list(waiting.items()):
            connection.settimeout(0.02)
            try:
                data = connection.recv(1)
            except TimeoutError:
                continue
            except ConnectionResetError:
                data = b""
            assert data == b"", "the server sent something to a client that sent nothing"
            closed[number] = time.monotonic() - opened
            del waiting[number]
    return closed


def test_connections_that_send_nothing_hold_no_thread_and_go_after_the_io_timeout(
    two_threads: tuple[WebhookProcess, Client],
) -> None:
    """gthread gave each new connection a thread that waited 5 s for its first bytes, then kept it
    for the 120 s keepalive: with 2 threads, 2 silent connections delayed /healthz by 5 s and 6
    by 15 s, and none was closed within 20 s."""
    process, client = two_threads
    opened = time.monotonic()
    silent = [socket.create_connection(("127.0.0.1", process.port)) for _ in range(STALLED)]
    try:
        time.sleep(0.2)  # the worker has accepted them
        started = time.monotonic()
        assert client.get("/healthz").status == 200
        assert time.monotonic() - started < 1.0  # 5 s and more before
        closed = seconds_until_closed(silent, opened, IO_TIMEOUT + 5)
    finally:
        for connection in silent:
            connection.close()
    assert max(closed) < IO_TIMEOUT + 1, closed  # none within 20 s before
    assert "Traceback" not in process.stderr.read_text(errors="replace")


def test_a_client_that_sends_its_hello_within_the_io_timeout_is_served(
    two_threads: tuple[WebhookProcess, Client],
) -> None:
    """The wait for the first bytes is --io-timeout, not less: a client slow to start is served."""
    process, client = two_threads
    late = socket.create_connection(("127.0.0.1", process.port))
    time.sleep(IO_TIMEOUT / 2)
    connection = client.connection()
    connection.sock = client.context.wrap_socket(late, server_hostname="127.0.0.1")
    try:
        assert client.request("GET", "/healthz", connection=connection).status == 200
    finally:
        connection.close()


def answered_and_held(port: int, ca: Path) -> tuple[ssl.SSLSocket, bytes]:
    """An HTTP/1.0 /healthz whose answer is read whole, and a socket the client then keeps open."""
    context = ssl.create_default_context(cafile=str(ca))
    held = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    held.settimeout(20)
    held.sendall(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = held.recv(65536)
        if not chunk:
            break
        answer += chunk
    return held, answer


def test_clients_that_keep_a_closed_connection_open_do_not_hold_up_the_worker(
    server: tuple[WebhookProcess, Client],
) -> None:
    """gunicorn closes a connection after its answer as RFC 9112 9.6 asks, waiting up to 2 s for
    the client to close too, on the worker's main thread, one connection after another: each
    client that kept it open stopped the worker for 2 s (no accept, no heartbeat), so 60 of them
    kept /healthz waiting 30-40 s and gunicorn killed the worker. They now linger in the poller,
    side by side: every one has the server's end of file at once, not the last of 16 after 8 s."""
    process, client = server
    ca = process.workdir / "certs" / "ca.crt"
    held: list[tuple[ssl.SSLSocket, bytes]] = []
    clients = [
        threading.Thread(target=lambda: held.append(answered_and_held(process.port, ca))) for _ in range(16)
    ]
    started = time.monotonic()
    for thread in clients:
        thread.start()
    try:
        for thread in clients:
            thread.join(timeout=30)
        assert len(held) == 16
        assert all(b" 200 " in answer.split(b"\r\n")[0] for _, answer in held)  # not cut by a reset
        for connection, _ in held:
            assert connection.recv(1) == b""  # the server's close reached the client
        assert time.monotonic() - started < 4.0  # 8 s before; 1 s here, the rest is the machine's slack
        assert client.get("/healthz").status == 200
    finally:
        for connection, _ in held:
            connection.close()
    assert "WORKER TIMEOUT" not in process.stderr.read_text(errors="replace")


@pytest.mark.parametrize("body_bytes", [5_000, 12_000, 60_000])
def test_a_pipelined_request_in_the_tls_record_of_the_body_before_it_is_answered(
    server: tuple[WebhookProcess, Client], body_bytes: int
) -> None:
    """A body over 8 KiB is read to its length, which leaves the rest of its TLS record (the next
    request) decrypted in OpenSSL, where the poller does not see it: it waited for the keepalive
    and was never answered."""
    process, _ = server
    review = vector_bytes("create-pod-gpu.json")
    body = review + b" " * (body_bytes - len(review))
    context = ssl.create_default_context(cafile=str(process.workdir / "certs" / "ca.crt"))
    raw = socket.create_connection(("127.0.0.1", process.port))
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as connection:
        connection.settimeout(10)
        head = (
            "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n"
        )
        connection.sendall(head.format(len(body)).encode())
        time.sleep(0.2)  # the headers are read on their own
        connection.sendall(body + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # one TLS record
        answers = b""
        while answers.count(b"HTTP/1.1 200") < 2 or not answers.endswith(b"}"):
            chunk = connection.recv(65536)  # a timeout here is the bug
            assert chunk, answers[-200:]
            answers += chunk


STALLED_BODIES = {
    "content-length": b"Content-Length: 5000\r\n\r\n{" + b" " * 99,
    "chunked": b"Transfer-Encoding: chunked\r\n\r\n64\r\n{" + b" " * 50,
}


@pytest.mark.parametrize("framing", STALLED_BODIES)
def test_a_body_that_stalls_past_the_io_timeout_is_unreadable_and_the_connection_closed(
    server: tuple[WebhookProcess, Client], framing: str
) -> None:
    """werkzeug turned the read's timeout into a disconnect: a generic 400 BadRequest ("The
    browser (or proxy) sent a request..."), logged as such. The connection is closed after it
    (the loop below ends), though gunicorn, which owns that header, still says keep-alive."""
    process, _ = server
    context = ssl.create_default_context(cafile=str(process.workdir / "certs" / "ca.crt"))
    raw = socket.create_connection(("127.0.0.1", process.port))
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as connection:
        connection.settimeout(IO_TIMEOUT + 10)
        head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        connection.sendall(head + STALLED_BODIES[framing])
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head_lines, _, body = answer.partition(b"\r\n\r\n")
    assert head_lines.startswith(b"HTTP/1.1 400"), answer
    error = json.loads(body)["error"]
    assert error["code"] == "UnreadableBody" and "TimeoutError" in error["message"]


def test_a_worker_out_of_file_descriptors_pauses_accepting_and_lives(tmp_path: Path) -> None:
    """accept(2)'s EMFILE went through gunicorn's loop and killed the worker, dropping every
    connection it held; it now stops accepting for a moment and serves what it has."""
    args = ["--workers", "1", "--threads", "2", "--io-timeout", "2"]
    with served(tmp_path, args, open_files=64) as (process, client):
        flood = [socket.create_connection(("127.0.0.1", process.port)) for _ in range(80)]
        time.sleep(1)  # the worker meets EMFILE
        for connection in flood:
            connection.close()
        assert client.get("/healthz").status == 200
        log = process.stderr.read_text(errors="replace")
        assert "Exception in worker process" not in log and "exited with code" not in log
        assert "pausing accepts" in log  # it did run out
