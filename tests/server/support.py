"""Run the real `gpu-webhook serve` (gunicorn) on a free loopback port and talk to it over TLS."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import re
import resource
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import ROOT, SHARED, shared_path
from webhook.server.metrics import FLUSH_SECONDS
from webhook.tls.certgen import KeyPair, make_ca, make_serving, write_pair

VECTORS = SHARED / "reference" / "admission"
START_TIMEOUT = 60.0
_SERVING = re.compile(r"gpu-webhook serving (https://\S+)")


def vector(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(vector_bytes(name))
    return document


def vector_bytes(name: str) -> bytes:
    """A real kube-apiserver's request from the reference material beside the checkout; the test,
    or the module that reads it at import, is skipped where that material is absent."""
    return shared_path("reference", "admission", name).read_bytes()


def make_client_pair(ca: KeyPair, name: str = "kube-apiserver") -> KeyPair:
    """A client certificate (extended key usage clientAuth) signed by `ca`, as the API server presents."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(certificate, key)


def write_client_pair(directory: Path, pair: KeyPair) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    certificate, key = directory / "client.crt", directory / "client.key"
    certificate.write_bytes(pair.certificate_pem())
    key.write_bytes(pair.key_pem())
    return certificate, key


def write_serving_set(directory: Path, ca: KeyPair | None = None) -> KeyPair:
    """ca.crt, tls.crt and tls.key for 127.0.0.1 and localhost; returns the CA used."""
    ca = ca or make_ca()
    write_pair(directory, ca, make_serving(ca, ["127.0.0.1", "localhost"]))
    return ca


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    """HTTPS to the webhook, trusting `ca`; optionally with a client certificate."""

    def __init__(
        self, port: int, ca: Path, cert: tuple[Path, Path] | None = None, timeout: float = 20
    ) -> None:
        self.port = port
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(ca))
        if cert is not None:
            self.context.load_cert_chain(str(cert[0]), str(cert[1]))

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=self.timeout)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Iterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
        connection: http.client.HTTPSConnection | None = None,
    ) -> Reply:
        conn = connection or self.connection()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return Reply(response.status, dict(response.getheaders()), response.read())
        finally:
            if connection is None:
                conn.close()

    def post(self, path: str, body: bytes | dict[str, Any], **kwargs: Any) -> Reply:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.request("POST", path, data, {"Content-Type": "application/json"}, **kwargs)

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def served_serial(self) -> int:
        """The serial number of the certificate the server presents on a new connection."""
        conn = self.connection()
        try:
            conn.connect()
            assert conn.sock is not None
            der = conn.sock.getpeercert(binary_form=True)  # type: ignore[attr-defined]
        finally:
            conn.close()
        return int(x509.load_der_x509_certificate(der).serial_number)


def _limit_open_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


class WebhookProcess:
    """`python -m webhook serve` in a child process; stdout and stderr go to files in `workdir`."""

    def __init__(
        self, workdir: Path, args: Sequence[str] = (), cwd: Path = ROOT, open_files: int | None = None
    ) -> None:
        """`open_files`: the process's limit on file descriptors (`ulimit -n`), inherited by its workers."""
        self.workdir = workdir
        self.stdout = workdir / "stdout.log"
        self.stderr = workdir / "stderr.log"
        command = [sys.executable, "-m", "webhook", "serve", "--bind", "127.0.0.1:0", *args]
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        limit = None if open_files is None else partial(_limit_open_files, open_files)
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(
                command, cwd=cwd, stdout=out, stderr=err, env=env, preexec_fn=limit
            )
        self.port = self._wait_for_port()

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            found = _SERVING.search(self.stdout.read_text(errors="replace"))
            if found:
                return int(found.group(1).rsplit(":", 1)[1])
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"gpu-webhook serve did not start:\n{self.output()}")

    def wait_ready(self, client: Client, path: str = "/readyz") -> None:
        """Until `path` answers 200; /healthz for a server that is alive but meant to be unready."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                if client.get(path).status == 200:
                    return
            except ConnectionRefusedError:
                pass  # the workers bind their sockets (reuse_port) a moment after the announcement
            time.sleep(0.05)
        raise RuntimeError(f"gpu-webhook serve did not answer 200 on {path}:\n{self.output()}")

    def output(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON lines the webhook logged (gunicorn's own lines are skipped)."""
        lines = []
        for line in self.stderr.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                lines.append(json.loads(line))
        return lines

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def served(
    workdir: Path, args: Sequence[str] = (), timeout: float = 20, open_files: int | None = None
) -> Iterator[tuple[WebhookProcess, Client]]:
    """`serve` with a serving set written to `workdir/certs`, ready; stopped on leaving."""
    cert_dir = workdir / "certs"
    write_serving_set(cert_dir)
    process = WebhookProcess(workdir, ["--cert-dir", str(cert_dir), *args], open_files=open_files)
    try:
        client = Client(process.port, cert_dir / "ca.crt", timeout=timeout)
        process.wait_ready(client)
        yield process, client
    finally:
        process.stop()


def scrape_when(client: Client, settled: Callable[[str], bool]) -> str:
    """/metrics once `settled(text)` holds, or the last scrape after 10 FLUSH_SECONDS: another
    worker's reviews reach the exposition when its flusher adds its tally."""
    deadline = time.monotonic() + 10 * FLUSH_SECONDS
    text = client.get("/metrics").body.decode()
    while not settled(text) and time.monotonic() < deadline:
        time.sleep(FLUSH_SECONDS / 10)
        text = client.get("/metrics").body.decode()
    return text


TALLIED = ("gpu_webhook_reviews_total", "gpu_webhook_violations_total", "gpu_webhook_mutations_total")


def scrape_settled(client: Client) -> str:
    """/metrics once every worker has flushed its tally: two scrapes 1.5 FLUSH_SECONDS apart agree
    on the tallied counters (with no reviews sent meanwhile)."""

    def tallied(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(TALLIED)]

    text = client.get("/metrics").body.decode()
    for _ in range(10):
        time.sleep(1.5 * FLUSH_SECONDS)
        again = client.get("/metrics").body.decode()
        if tallied(again) == tallied(text):
            return again
        text = again
    raise AssertionError("the tallied counters kept changing with no reviews sent")


def metric_value(exposition: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels` (0 when there are none)."""
    total = 0.0
    for line in exposition.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        sample, _, value = line.rpartition(" ")
        found = dict(re.findall(r'(\w+)="([^"]*)"', sample))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total
