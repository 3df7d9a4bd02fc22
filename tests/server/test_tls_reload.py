"""ReloadingContext with real TLS handshakes on loopback (no gunicorn): reload, SNI, bad files."""

from __future__ import annotations

import base64
import datetime as dt
import logging
import os
import signal
import socket
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.conftest import ROOT
from tests.server.support import Client, WebhookProcess, write_serving_set
from tests.server.test_serve_command import run_to_exit
from webhook.shared_copy import make_shared_folder
from webhook.tls.certgen import CA_FILE, KeyPair, make_ca, make_serving, write_pair
from webhook.tls.reload import ReloadingContext, TLSFiles, TLSFilesError, server_context


def serial_of(path: Path) -> int:
    return int(x509.load_pem_x509_certificate(path.read_bytes()).serial_number)


def handshake(server: ssl.SSLContext, ca_file: Path, sni: str | None) -> int:
    """One real handshake against `server`; the serial of the certificate the client saw."""
    client = ssl.create_default_context(cafile=str(ca_file))
    client.check_hostname = sni is not None
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def accept() -> None:
            connection, _ = listener.accept()
            with server.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client.wrap_socket(raw, server_hostname=sni) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            assert der is not None
        thread.join(timeout=10)
    return int(x509.load_der_x509_certificate(der).serial_number)


def renew(directory: Path, ca: KeyPair) -> int:
    write_pair(directory, ca, make_serving(ca, ["127.0.0.1", "localhost"]))
    return serial_of(directory / "tls.crt")


@pytest.mark.parametrize("sni", ["localhost", None], ids=["with-sni", "without-sni"])
def test_a_context_built_once_serves_the_renewed_certificate(tmp_path: Path, sni: str | None) -> None:
    """The sni_callback runs for every ClientHello, with or without SNI, and swaps the context."""
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    built_once = reloading.current()
    first = serial_of(tmp_path / "tls.crt")
    assert handshake(built_once, tmp_path / CA_FILE, sni) == first
    renewed = renew(tmp_path, ca)
    assert renewed != first
    assert handshake(built_once, tmp_path / CA_FILE, sni) == renewed
    assert reloading.current() is not built_once


def kubelet_layout(root: Path, version: str, ca: KeyPair | None = None) -> KeyPair:
    """A Secret volume as the kubelet writes it: files in ..<version>, reached through ..data."""
    ca = write_serving_set(root / f"..{version}", ca)
    staging = root / "..data_tmp"
    staging.symlink_to(f"..{version}")
    os.replace(staging, root / "..data")
    for name in ("tls.crt", "tls.key", "ca.crt"):
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")
    return ca


def test_a_data_symlink_swap_is_picked_up(tmp_path: Path) -> None:
    ca = kubelet_layout(tmp_path, "v1")
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    first = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    kubelet_layout(tmp_path, "v2", ca)
    second = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    assert first == serial_of(tmp_path / "..v1" / "tls.crt")
    assert second == serial_of(tmp_path / "..v2" / "tls.crt") != first


def test_a_mismatched_pair_keeps_the_last_good_certificate(tmp_path: Path) -> None:
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    good = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    other = make_serving(ca, ["127.0.0.1", "localhost"])
    (tmp_path / "tls.crt").write_bytes(other.certificate_pem())  # the key is still the old one
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == good
    (tmp_path / "tls.key").write_bytes(other.key_pem())
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == serial_of(tmp_path / "tls.crt")


def test_a_restarted_worker_serves_the_certificate_the_others_renewed_to_when_the_files_break(
    tmp_path: Path,
) -> None:
    """A worker gunicorn starts again holds the master's certificate from the start (`started`,
    loaded before the renewal). When the files are broken by then, it serves the renewed one the
    other workers loaded and kept in the folder they share, not its own older one."""
    files, shared = tmp_path / "tls", tmp_path / "shared"
    shared.mkdir()
    ca = write_serving_set(files)
    started = ReloadingContext(TLSFiles.in_directory(files), interval=0, last_good=shared)
    first = handshake(started.current(), files / CA_FILE, "localhost")
    running = ReloadingContext(TLSFiles.in_directory(files), interval=0, last_good=shared)
    running.current()
    renewed = renew(files, ca)
    assert handshake(running.current(), files / CA_FILE, "localhost") == renewed != first
    (files / "tls.key").write_bytes(make_serving(ca, ["localhost"]).key_pem())  # a mismatched pair
    assert handshake(started.current(), files / CA_FILE, "localhost") == renewed
    kept = (shared / "tls-current").resolve()
    assert (kept / "tls.key").stat().st_mode & 0o777 == 0o600


def test_the_folder_workers_share_is_private_and_in_memory_where_it_can_be() -> None:
    folder = make_shared_folder("gpu-webhook-test-")
    try:
        assert folder.stat().st_mode & 0o777 == 0o700
        assert folder.parent == Path("/dev/shm") or not os.access("/dev/shm", os.W_OK)
    finally:
        folder.rmdir()


def test_files_are_checked_at_most_every_interval(tmp_path: Path) -> None:
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=3600)
    first = reloading.current()
    renew(tmp_path, ca)
    assert reloading.current() is first


def test_only_tls_1_2_and_later(tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    context = server_context(TLSFiles.in_directory(tmp_path))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.verify_mode == ssl.CERT_NONE


def test_a_client_ca_makes_client_certificates_required(tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(make_ca("clients").certificate_pem())
    context = server_context(TLSFiles.in_directory(tmp_path, client_ca))
    assert context.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize("broken", ["tls.key", "tls.crt"])
def test_unusable_files_are_named(tmp_path: Path, broken: str) -> None:
    write_serving_set(tmp_path)
    (tmp_path / broken).write_text("not PEM")
    with pytest.raises(TLSFilesError, match=broken):
        server_context(TLSFiles.in_directory(tmp_path))


def _double_encoded(path: Path) -> None:
    """The PEM as a Secret's `data` holds it: base64, as when a manifest base64-encodes it again."""
    path.write_bytes(base64.b64encode(path.read_bytes()))


def _a_folder(path: Path) -> None:
    """A folder in its place, as a volume mounted at the file's path makes one."""
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("spoil", [_double_encoded, _a_folder])
@pytest.mark.parametrize(("broken", "intact"), [("tls.key", "tls.crt"), ("tls.crt", "tls.key")])
def test_the_file_that_cannot_be_used_is_the_one_named(
    tmp_path: Path, broken: str, intact: str, spoil: Any
) -> None:
    """Both were named, with OpenSSL's reason alone (`[SSL] PEM lib`, `Is a directory`): the user
    could not tell which of the Secret's two keys to fix."""
    write_serving_set(tmp_path)
    spoil(tmp_path / broken)
    with pytest.raises(TLSFilesError) as caught:
        server_context(TLSFiles.in_directory(tmp_path))
    assert str(tmp_path / broken) in str(caught.value)
    assert str(tmp_path / intact) not in str(caught.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TLSFilesError, match="tls.crt"):
        TLSFiles.in_directory(tmp_path).digest()


def test_a_missing_certificate_is_logged_once_while_it_stays_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    served = reloading.current()
    (tmp_path / "tls.crt").unlink()
    with caplog.at_level(logging.WARNING, logger="gpu_webhook.tls"):
        for _ in range(5):
            assert reloading.current() is served
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "tls.crt" in warnings[0]


def write_dated_pair(directory: Path, ca: KeyPair, not_before: dt.datetime, not_after: dt.datetime) -> int:
    """tls.crt and tls.key for localhost valid from `not_before` to `not_after`; the serial."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "localhost")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    pair = KeyPair(certificate, key)
    (directory / "tls.key").write_bytes(pair.key_pem())
    (directory / "tls.crt").write_bytes(pair.certificate_pem())
    return int(certificate.serial_number)


NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
EXPIRED = (NOW - dt.timedelta(days=30), NOW - dt.timedelta(days=1))
NOT_YET_VALID = (NOW + dt.timedelta(days=1), NOW + dt.timedelta(days=30))


@pytest.mark.parametrize(
    ("window", "says"), [(EXPIRED, "expired (notAfter"), (NOT_YET_VALID, "not valid yet (notBefore")]
)
def test_a_certificate_outside_its_validity_is_refused_naming_file_and_date(
    tmp_path: Path, window: tuple[dt.datetime, dt.datetime], says: str
) -> None:
    write_dated_pair(tmp_path, make_ca(), *window)
    with pytest.raises(TLSFilesError) as refused:
        server_context(TLSFiles.in_directory(tmp_path))
    message = str(refused.value)
    assert str(tmp_path / "tls.crt") in message and says in message
    assert f"{window[1 if window is EXPIRED else 0]:%Y-%m-%d %H:%M:%S} UTC" in message


def test_serve_refuses_to_start_with_an_expired_certificate(tmp_path: Path) -> None:
    """The real command exits with code 2 naming the file and its notAfter, before it serves."""
    ca = write_serving_set(tmp_path)
    write_dated_pair(tmp_path, ca, *EXPIRED)
    command = [sys.executable, "-m", "webhook", "serve", "--bind", "127.0.0.1:0", "--workers", "1"]
    result = run_to_exit([*command, "--cert-dir", str(tmp_path)], ROOT, timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(tmp_path / "tls.crt") in result.stderr and f"notAfter {EXPIRED[1]:%Y-%m-%d}" in result.stderr
    assert f"delete {tmp_path / 'tls.crt'} and {tmp_path / 'tls.key'}" in result.stderr  # how to go on


@pytest.mark.parametrize("window", [EXPIRED, NOT_YET_VALID], ids=["expired", "not-yet-valid"])
def test_a_renewal_outside_its_validity_keeps_the_last_good_certificate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, window: tuple[dt.datetime, dt.datetime]
) -> None:
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    good = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    write_dated_pair(tmp_path, ca, *window)
    with caplog.at_level(logging.WARNING, logger="gpu_webhook.tls"):
        for _ in range(3):
            assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == good
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "tls.crt" in warnings[0]


def test_a_certificate_that_becomes_valid_is_picked_up_without_changing(tmp_path: Path) -> None:
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    good = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    starts = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=2)
    renewed = write_dated_pair(tmp_path, ca, starts, starts + dt.timedelta(days=1))
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == good
    time.sleep((starts - dt.datetime.now(dt.UTC)).total_seconds() + 0.2)
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == renewed


def test_a_restarted_worker_keeps_serving_the_certificate_that_went_bad_meanwhile(tmp_path: Path) -> None:
    """Each worker starts from the context the master loaded: a worker gunicorn starts again
    after the files went bad serves the last good certificate instead of failing handshakes."""
    cert_dir = tmp_path / "certs"
    ca = write_serving_set(cert_dir)
    args = ["--cert-dir", str(cert_dir), "--workers", "2", "--threads", "1", "--cert-check-seconds", "0.1"]
    process = WebhookProcess(tmp_path, args)
    try:
        client = Client(process.port, cert_dir / CA_FILE, timeout=10)
        process.wait_ready(client)
        good = client.served_serial()
        write_dated_pair(cert_dir, ca, *EXPIRED)
        first = worker_pids(process)
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while len(worker_pids(process) - first) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(worker_pids(process) - first) == 2, process.output()
        time.sleep(0.3)  # past the check interval: the expired files are looked at and refused
        assert [client.get("/healthz").status for _ in range(20)] == [200] * 20
        assert client.served_serial() == good
    finally:
        process.stop()


def worker_pids(process: WebhookProcess) -> set[int]:
    """The workers that have started: each logs its catalog once."""
    return {line["pid"] for line in process.log_lines() if line["event"] == "catalog_loaded"}


def encrypt_key(path: Path, passphrase: bytes) -> None:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(passphrase),
    )
    path.write_bytes(encrypted)


def test_an_encrypted_key_is_refused_naming_it_without_asking_for_a_passphrase(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """OpenSSL asks on the terminal for a passphrase unless told otherwise: a server started from
    one hung every handshake on the prompt, and without one a bare prompt line went to stderr."""
    write_serving_set(tmp_path)
    encrypt_key(tmp_path / "tls.key", b"secret")
    with pytest.raises(TLSFilesError) as raised:
        server_context(TLSFiles.in_directory(tmp_path))
    assert str(tmp_path / "tls.key") in str(raised.value) and "encrypted" in str(raised.value)
    assert capfd.readouterr().err == ""


def test_a_renewal_to_an_encrypted_key_keeps_the_last_good_certificate(tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    good = handshake(reloading.current(), tmp_path / CA_FILE, "localhost")
    encrypt_key(tmp_path / "tls.key", b"secret")
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == good


def ends(path: Path) -> float:
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc.timestamp()


def test_a_watcher_is_told_when_the_served_certificate_ends_and_when_another_is_served(
    tmp_path: Path,
) -> None:
    """The expiry gauge's listener: the served certificate's notAfter at once, the renewed one's
    after a swap, and nothing new while a renewal that cannot be used keeps the last good one."""
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    reloading.current()
    told: list[float] = []
    reloading.watch(told.append)
    assert told == [ends(tmp_path / "tls.crt")]
    ending = NOW + dt.timedelta(days=3)
    renewed = write_dated_pair(tmp_path, ca, NOW - dt.timedelta(days=1), ending)
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == renewed
    assert told[-1] == ending.timestamp()
    write_dated_pair(tmp_path, ca, *EXPIRED)
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == renewed
    assert told[-1] == ending.timestamp()


def test_a_watcher_in_a_worker_started_after_a_renewal_is_told_the_renewed_certificate(
    tmp_path: Path,
) -> None:
    """A worker gunicorn starts again holds the master's context: the files are checked before
    the watcher is told, or the gauge would say the master's certificate until a handshake."""
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    reloading.current()
    ending = NOW + dt.timedelta(days=3)
    write_dated_pair(tmp_path, ca, NOW - dt.timedelta(days=1), ending)
    told: list[float] = []
    reloading.watch(told.append)
    assert told == [ending.timestamp()]


def test_a_watcher_that_fails_does_not_fail_the_handshake(tmp_path: Path) -> None:
    """A full metrics folder makes the gauge's set raise: the renewed certificate is served still."""
    ca = write_serving_set(tmp_path)
    reloading = ReloadingContext(TLSFiles.in_directory(tmp_path), interval=0)
    reloading.current()

    def full(_: float) -> None:
        raise OSError(28, "No space left on device")

    reloading.watch(full)
    renewed = renew(tmp_path, ca)
    assert handshake(reloading.current(), tmp_path / CA_FILE, "localhost") == renewed
