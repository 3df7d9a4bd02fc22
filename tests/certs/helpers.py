"""Chain verification (cryptography's RFC 5280 verifier) and a real TLS handshake on loopback."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

SERVICE_NAMES = (
    "gpu-webhook",
    "gpu-webhook.gpu-webhook",
    "gpu-webhook.gpu-webhook.svc",
    "gpu-webhook.gpu-webhook.svc.cluster.local",
)


def verify_chain(leaf_pem: bytes, bundle_pem: bytes, host: str, when: dt.datetime | None = None) -> None:
    """Raise unless the leaf chains to a CA of the bundle and is valid for `host` at `when`."""
    leaf = x509.load_pem_x509_certificate(leaf_pem)
    store = Store(x509.load_pem_x509_certificates(bundle_pem))
    name = _general_name(host)
    builder = PolicyBuilder().store(store).time(when or dt.datetime.now(dt.UTC))
    builder.build_server_verifier(name).verify(leaf, [])


def _general_name(host: str) -> x509.DNSName | x509.IPAddress:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def handshake(
    cert: Path, key: Path, cafile: Path, hostname: str, maximum: ssl.TLSVersion | None = None
) -> tuple[str, bytes]:
    """Serve one TLS connection with cert/key on 127.0.0.1 and connect to it verifying against cafile.

    Returns the negotiated protocol version and what the server sent; raises ssl.SSLError
    (e.g. SSLCertVerificationError) when the client does not trust the server.
    """
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.minimum_version = ssl.TLSVersion.TLSv1_2
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(cafile))
    client_context.minimum_version = ssl.TLSVersion.TLSv1_2
    if maximum is not None:
        client_context.maximum_version = maximum
    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(target=_serve_once, args=(listener, server_context), daemon=True)
        thread.start()
        try:
            with (
                socket.create_connection(listener.getsockname(), timeout=10) as raw,
                client_context.wrap_socket(raw, server_hostname=hostname) as tls,
            ):
                version = str(tls.version())
                data = tls.recv(16)
        finally:
            thread.join(timeout=10)
    return version, data


def _serve_once(listener: socket.socket, context: ssl.SSLContext) -> None:
    connection, _ = listener.accept()
    connection.settimeout(10)
    try:
        with context.wrap_socket(connection, server_side=True) as tls:
            tls.sendall(b"ok")
    except (ssl.SSLError, OSError):
        connection.close()
