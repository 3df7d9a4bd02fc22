"""Create a CA and serving certificates with `cryptography`.

Used by `gpu-webhook serve` (a self-signed set for the embedded default), by
`gpu-webhook certs` (the in-cluster bootstrap) and by tests.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.tls.files import PRIVATE_MODE, PUBLIC_MODE, write_atomically

CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "tls.crt", "tls.key"
CA_KEY_FILE = "ca.key"


@dataclass(frozen=True)
class KeyPair:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def make_ca(
    common_name: str = "gpu-webhook-ca", days: int = 3650, not_before: dt.datetime | None = None
) -> KeyPair:
    """A self-signed CA valid for `days`, from `not_before` (default: five minutes ago, for clock skew)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    start = not_before or now - dt.timedelta(minutes=5)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(certificate, key)


def make_serving(
    ca: KeyPair,
    hosts: Sequence[str],
    days: int = 365,
    not_after: dt.datetime | None = None,
    not_before: dt.datetime | None = None,
) -> KeyPair:
    """A serving certificate for DNS names and IP addresses, signed by the CA.

    `not_after`, when given, caps the validity (a certificate should not outlive its CA);
    `not_before` defaults to five minutes ago (for clock skew).
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    start = not_before or now - dt.timedelta(minutes=5)
    expires = now + dt.timedelta(days=days)
    if not_after is not None:
        expires = min(expires, not_after)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(expires)
        .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(certificate, key)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_pair(directory: Path, ca: KeyPair, serving: KeyPair) -> None:
    """Write ca.crt, tls.crt and tls.key (key files 0600 from the start), each replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(directory / CA_FILE, ca.certificate_pem(), PUBLIC_MODE)
    write_atomically(directory / KEY_FILE, serving.key_pem(), PRIVATE_MODE)
    write_atomically(directory / CERT_FILE, serving.certificate_pem(), PUBLIC_MODE)


def ensure_self_signed(directory: Path, hosts: Sequence[str]) -> bool:
    """Create a CA and serving set in `directory` when neither tls.crt nor tls.key is there; True if
    created. A symlink is there even when its target is missing (a Secret volume before the kubelet
    has made its ..data): a set renamed over the links would be served for good and the Secret's
    never read. What is there is left as it is, for the caller to check."""
    if any(os.path.lexists(directory / name) for name in (CERT_FILE, KEY_FILE)):
        return False
    ca = make_ca()
    write_pair(directory, ca, make_serving(ca, hosts))
    write_atomically(directory / CA_KEY_FILE, ca.key_pem(), PRIVATE_MODE)
    return True
