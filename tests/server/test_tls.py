"""The real server's TLS: client-certificate verification, TLS versions, and a certificate renewed
under load (the kubelet's `..data` symlink swap) without a single failed request."""

from __future__ import annotations

import copy
import os
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.server.support import (
    Client,
    WebhookProcess,
    make_client_pair,
    metric_value,
    scrape_when,
    vector,
    write_client_pair,
)
from tests.server.test_tls_reload import ends, kubelet_layout, serial_of
from webhook.tls.certgen import KeyPair, make_ca, make_serving, write_pair

CHECK_SECONDS = 0.2
SWAP_TIMEOUT = 20.0
EXPIRY = "gpu_webhook_tls_certificate_not_after_seconds"


@dataclass
class TlsServer:
    process: WebhookProcess
    cert_dir: Path
    serving_ca: KeyPair
    client: Client
    port: int
    client_files: tuple[Path, Path]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    workdir = tmp_path_factory.mktemp("tls")
    cert_dir = workdir / "certs"
    cert_dir.mkdir()
    serving_ca = kubelet_layout(cert_dir, "v1")
    client_ca = make_ca("apiserver-clients")
    (workdir / "client-ca.crt").write_bytes(client_ca.certificate_pem())
    client_files = write_client_pair(workdir / "client", make_client_pair(client_ca))
    args = ["--cert-dir", str(cert_dir), "--client-ca", str(workdir / "client-ca.crt")]
    args += ["--cert-check-seconds", str(CHECK_SECONDS), "--workers", "2", "--threads", "4"]
    process = WebhookProcess(workdir, args)
    try:
        client = Client(process.port, cert_dir / "ca.crt", client_files)
        process.wait_ready(client)
        yield TlsServer(process, cert_dir, serving_ca, client, process.port, client_files)
    finally:
        process.stop()


def test_a_client_without_a_certificate_is_refused(tls_server: TlsServer) -> None:
    anonymous = Client(tls_server.port, tls_server.cert_dir / "ca.crt")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        anonymous.get("/healthz")


def test_a_client_certificate_from_another_ca_is_refused(tls_server: TlsServer, tmp_path: Path) -> None:
    stranger = write_client_pair(tmp_path, make_client_pair(make_ca("someone-else")))
    client = Client(tls_server.port, tls_server.cert_dir / "ca.crt", stranger)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        client.get("/healthz")


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_clients_are_served(tls_server: TlsServer, version: ssl.TLSVersion) -> None:
    client = Client(tls_server.port, tls_server.cert_dir / "ca.crt", tls_server.client_files)
    client.context.minimum_version = client.context.maximum_version = version
    conn = client.connection()
    try:
        reply = client.request("GET", "/healthz", connection=conn)
        assert isinstance(conn.sock, ssl.SSLSocket)
        assert conn.sock.version() == version.name.replace("_", ".")
    finally:
        conn.close()
    assert reply.status == 200


@dataclass
class Load:
    """Threads posting `review`, each time with a uid of its own, until stopped: half on kept-alive
    connections, half on new ones. The review is read before: a thread cannot skip the test."""

    client: Client
    review: dict[str, Any]
    stop: threading.Event = field(default_factory=threading.Event)
    answered: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, index: int) -> None:
        keep_alive = self.client.connection() if index % 2 == 0 else None
        count = 0
        while not self.stop.is_set():
            document = copy.deepcopy(self.review)
            document["request"]["uid"] = uid = f"load-{index}-{count}"
            count += 1
            try:
                reply = self.client.post("/mutate", document, connection=keep_alive)
                ok = reply.status == 200 and reply.json()["response"]["uid"] == uid
                outcome = "" if ok else f"{uid}: HTTP {reply.status} {reply.body[:200]!r}"
            except Exception as exc:  # every failure is recorded and fails the test
                outcome = f"{uid}: {type(exc).__name__}: {exc}"
            with self.lock:
                (self.failures.append(outcome) if outcome else self.answered.append(index))
        if keep_alive is not None:
            keep_alive.close()

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + SWAP_TIMEOUT
        while len(self.answered) < count and time.monotonic() < deadline and not self.failures:
            time.sleep(0.01)


def test_a_renewed_certificate_is_served_without_failing_a_request(tls_server: TlsServer) -> None:
    old_serial = serial_of(tls_server.cert_dir / "tls.crt")
    assert tls_server.client.served_serial() == old_serial
    load = Load(tls_server.client, vector("create-pod-gpu.json"))
    threads = [threading.Thread(target=load.run, args=(i,), daemon=True) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        load.wait_for(40)
        kubelet_layout(tls_server.cert_dir, "v2", tls_server.serving_ca)
        new_serial = serial_of(tls_server.cert_dir / "tls.crt")
        deadline = time.monotonic() + SWAP_TIMEOUT
        while tls_server.client.served_serial() != new_serial and time.monotonic() < deadline:
            time.sleep(CHECK_SECONDS / 2)
        time.sleep(2 * CHECK_SECONDS)  # every worker has looked at the files by now
        served_after = {tls_server.client.served_serial() for _ in range(6)}
        load.wait_for(len(load.answered) + 40)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert load.failures == []
    assert new_serial != old_serial
    assert served_after == {new_serial}
    assert len(load.answered) >= 80 and set(load.answered) == {0, 1, 2, 3}


def swap_in(cert_dir: Path, version: str, ca: KeyPair, days: int) -> float:
    """A serving pair valid for `days` through the kubelet's ..data swap; its notAfter."""
    write_pair(cert_dir / f"..{version}", ca, make_serving(ca, ["127.0.0.1", "localhost"], days=days))
    (cert_dir / "..data_tmp").symlink_to(f"..{version}")
    os.replace(cert_dir / "..data_tmp", cert_dir / "..data")
    return ends(cert_dir / "tls.crt")


def test_metrics_say_when_the_served_certificate_ends_and_follow_a_renewal(tls_server: TlsServer) -> None:
    """The gauge the expiry alerts read, merged over both workers: the served certificate's
    notAfter, and the renewed one's once it is served (the renewal here ends sooner, as a switch
    to cert-manager's 90 days from 365 does)."""
    client = tls_server.client
    served = ends(tls_server.cert_dir / "tls.crt")
    assert metric_value(scrape_when(client, lambda text: EXPIRY in text), EXPIRY) == served
    renewed = swap_in(tls_server.cert_dir, "v3", tls_server.serving_ca, days=5)
    assert renewed < served
    text = scrape_when(client, lambda text: metric_value(text, EXPIRY) == renewed)
    assert metric_value(text, EXPIRY) == renewed
    time.sleep(2 * CHECK_SECONDS)
    for _ in range(6):  # whichever worker answers, after either looked at the files
        assert metric_value(client.get("/metrics").body.decode(), EXPIRY) == renewed
