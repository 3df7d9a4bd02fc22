"""The webhook's certificate set and its renewal rules, independent of where it is stored.

A set is the trusted CA bundle (`ca.crt`, one or more CA certificates), the key of the CA
that signs (`ca.key`) and the serving pair (`tls.crt`, `tls.key`). `renew()` returns the
set to store and what changed; nothing changes when nothing is due, so a run is idempotent.

CA rotation takes two runs without any state besides the files: when the signing CA comes
within `ca_renew_before` of its end, a new CA joins the bundle while the serving certificate
stays signed by the old one; the serving certificate moves to the new CA when it is next due,
which is at the latest `renew_before` before the old CA ends (serving certificates never
outlive their CA). The old CA leaves the bundle once it has expired.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes

from webhook.tls.certgen import CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE, KeyPair, make_ca, make_serving

FILES = (CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE)


class BundleError(ValueError):
    """Existing certificate material that cannot be read; the message names the file."""


@dataclass(frozen=True)
class CertSet:
    authorities: tuple[x509.Certificate, ...] = ()
    ca_key: ec.EllipticCurvePrivateKey | None = None
    serving: KeyPair | None = None
    missing: str = ""
    """The file of the serving pair that was missing while the other one was there."""

    def bundle_pem(self) -> bytes:
        return b"".join(_cert_pem(c) for c in self.authorities)

    def signer(self) -> x509.Certificate | None:
        """The CA certificate in the bundle that belongs to `ca_key` (a non-CA one never signs)."""
        certificate = self.key_certificate()
        return certificate if certificate is not None and is_ca(certificate) else None

    def key_certificate(self) -> x509.Certificate | None:
        """The certificate in the bundle that belongs to `ca_key`, CA or not."""
        if self.ca_key is None:
            return None
        wanted = _public_der(self.ca_key.public_key())
        return next((c for c in self.authorities if _public_der(c.public_key()) == wanted), None)

    def serving_issuer(self) -> x509.Certificate | None:
        """The CA in the bundle that signed the serving certificate."""
        return _issuer(self.serving.certificate, self.authorities) if self.serving else None

    def files(self) -> dict[str, bytes]:
        signer = self.signer()
        if self.serving is None or self.ca_key is None or signer is None:
            raise ValueError("an incomplete certificate set cannot be stored")
        return {
            CA_FILE: self.bundle_pem(),
            CA_KEY_FILE: KeyPair(signer, self.ca_key).key_pem(),
            CERT_FILE: self.serving.certificate_pem(),
            KEY_FILE: self.serving.key_pem(),
        }


@dataclass(frozen=True)
class Renewal:
    hosts: tuple[str, ...]
    days: int = 365
    ca_days: int = 3650
    renew_before: dt.timedelta = dt.timedelta(days=30)
    ca_renew_before: dt.timedelta = dt.timedelta(days=90)


@dataclass(frozen=True)
class Outcome:
    certs: CertSet
    changes: tuple[str, ...]


def service_hosts(service: str, namespace: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The names the API server may use for an in-cluster Service, then any extra names or IPs."""
    names = [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]
    names.append(f"{service}.{namespace}.svc.cluster.local")
    return tuple(dict.fromkeys([*names, *extra]))


def renew(current: CertSet, plan: Renewal, now: dt.datetime) -> Outcome:
    changes: list[str] = []
    authorities = tuple(c for c in current.authorities if c.not_valid_after_utc > now)
    expired = tuple(c for c in current.authorities if c not in authorities)
    changes += [f"dropped expired CA {_describe(c)}" for c in expired]
    certs = replace(current, authorities=authorities)
    ca_reason = _ca_due(certs, plan, now, expired)
    if ca_reason:
        certs = _add_new_ca(certs, plan, now)
        changes.append(f"created CA {_describe(certs.authorities[-1])} ({ca_reason})")
    serving_reason = _serving_due(certs, plan, now, expired)
    if serving_reason:
        serving = _issue_serving(certs, plan)
        certs = replace(certs, serving=serving, missing="")
        changes.append(f"issued serving certificate {_describe(serving.certificate)} ({serving_reason})")
    return Outcome(certs, tuple(changes))


def _ca_due(certs: CertSet, plan: Renewal, now: dt.datetime, expired: Sequence[x509.Certificate]) -> str:
    signer = certs.signer()
    if signer is None:
        return _why_no_signer(certs, expired)
    if signer.not_valid_before_utc > now:
        return f"the CA is {_not_valid_yet(signer)}; it stays in the bundle"
    if signer.not_valid_after_utc - now <= plan.ca_renew_before:
        return f"the CA expires {signer.not_valid_after_utc:%Y-%m-%d}; the old CA stays in the bundle"
    return ""


def _not_valid_yet(certificate: x509.Certificate) -> str:
    """`not valid yet (notBefore ...)`, as `serve` words it when it refuses such a certificate."""
    return f"not valid yet (notBefore {certificate.not_valid_before_utc:%Y-%m-%d %H:%M:%S} UTC)"


def _why_no_signer(certs: CertSet, expired: Sequence[x509.Certificate]) -> str:
    lost = CertSet(tuple(expired), certs.ca_key).signer()
    if lost is not None:
        return f"the CA of {CA_KEY_FILE} expired {lost.not_valid_after_utc:%Y-%m-%d}"
    if certs.authorities:
        return "no usable CA key"
    return "every CA in the bundle has expired" if expired else "no CA yet"


def _add_new_ca(certs: CertSet, plan: Renewal, now: dt.datetime) -> CertSet:
    ca = make_ca(common_name=f"gpu-webhook-ca-{now:%Y%m%d%H%M%S}", days=plan.ca_days)
    return replace(certs, authorities=(*certs.authorities, ca.certificate), ca_key=ca.key)


def _serving_due(certs: CertSet, plan: Renewal, now: dt.datetime, expired: Sequence[x509.Certificate]) -> str:
    serving = certs.serving
    if serving is None:
        return f"{certs.missing} is missing" if certs.missing else "no serving certificate yet"
    certificate = serving.certificate
    if _public_der(serving.key.public_key()) != _public_der(certificate.public_key()):
        return "tls.key does not belong to tls.crt"
    issuer = _issuer(certificate, certs.authorities)
    if issuer is None:
        lost = _issuer(certificate, expired)
        return (
            f"its CA expired {lost.not_valid_after_utc:%Y-%m-%d}"
            if lost
            else "not signed by a CA in the bundle"
        )
    if set(hosts_of(certificate)) != set(plan.hosts):
        return "the host names changed"
    return _serving_time_due(certificate, issuer, plan, now)


def _serving_time_due(
    certificate: x509.Certificate, issuer: x509.Certificate, plan: Renewal, now: dt.datetime
) -> str:
    """Why a serving certificate signed by a CA of the bundle is due by its dates, or ""."""
    if certificate.not_valid_before_utc > now:
        return f"it is {_not_valid_yet(certificate)}"
    if issuer.not_valid_before_utc > now:
        return f"its CA is {_not_valid_yet(issuer)}"
    if certificate.not_valid_after_utc <= now:
        return f"it expired {certificate.not_valid_after_utc:%Y-%m-%d}"
    ends = min(certificate.not_valid_after_utc, issuer.not_valid_after_utc)
    if ends - now <= plan.renew_before:
        return f"it or its CA expires {ends:%Y-%m-%d}"
    return ""


def _issue_serving(certs: CertSet, plan: Renewal) -> KeyPair:
    signer = certs.signer()
    if signer is None or certs.ca_key is None:
        raise ValueError("no signing CA")
    ca = KeyPair(signer, certs.ca_key)
    return make_serving(ca, plan.hosts, plan.days, not_after=signer.not_valid_after_utc)


def _issuer(
    certificate: x509.Certificate, authorities: Sequence[x509.Certificate]
) -> x509.Certificate | None:
    for authority in authorities:
        try:
            certificate.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return authority
    return None


def hosts_of(certificate: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses a certificate is valid for."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    ips = [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]
    return [*names.get_values_for_type(x509.DNSName), *ips]


def from_files(files: Mapping[str, bytes], where: str) -> CertSet:
    """Read a stored set (any part may be missing); BundleError names the unreadable file."""
    authorities = tuple(_load_certs(files[CA_FILE], f"{where}/{CA_FILE}")) if CA_FILE in files else ()
    ca_key = _load_key(files[CA_KEY_FILE], f"{where}/{CA_KEY_FILE}") if CA_KEY_FILE in files else None
    serving, missing = None, ""
    if CERT_FILE in files and KEY_FILE in files:
        certificates = _load_certs(files[CERT_FILE], f"{where}/{CERT_FILE}")
        serving = KeyPair(certificates[0], _load_key(files[KEY_FILE], f"{where}/{KEY_FILE}"))
    elif CERT_FILE in files or KEY_FILE in files:
        missing = KEY_FILE if CERT_FILE in files else CERT_FILE
    certs = CertSet(authorities, ca_key, serving, missing)
    _check_signer(certs, where)
    return certs


def is_ca(certificate: x509.Certificate) -> bool:
    """basicConstraints CA:TRUE and, when keyUsage is present, keyCertSign."""
    try:
        if not certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            return False
    except x509.ExtensionNotFound:
        return False
    try:
        return certificate.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    except x509.ExtensionNotFound:
        return True


def _check_signer(certs: CertSet, where: str) -> None:
    """BundleError when ca.key belongs to a certificate that may not sign others (a leaf), or
    when there is no ca.crt at all beside it: a renewal would start a new CA and write its key
    over this one, the only copy of a key whose certificate the webhook configurations' caBundle
    may still trust. (A ca.crt of other CAs, as cert-manager leaves in the Secret when an install
    goes back to the certs Job, gets a new CA beside them, as before.)"""
    certificate = certs.key_certificate()
    if certs.ca_key is not None and not certs.authorities:
        raise BundleError(
            f"{where}/{CA_KEY_FILE}: there is no {CA_FILE} holding its certificate; restore "
            f"{CA_FILE}, or remove {CA_KEY_FILE} to start a new CA"
        )
    if certificate is not None and not is_ca(certificate):
        raise BundleError(
            f"{where}/{CA_FILE}: the certificate of {CA_KEY_FILE} ({_describe(certificate)}) is not a CA "
            "(no basicConstraints CA:TRUE with keyCertSign); put a CA certificate and its key there"
        )


def _load_certs(data: bytes, where: str) -> list[x509.Certificate]:
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise BundleError(f"{where}: not a PEM certificate ({exc})") from exc
    return certificates


def _load_key(data: bytes, where: str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise BundleError(f"{where}: not an unencrypted PEM private key ({exc})") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise BundleError(f"{where}: an {type(key).__name__}; gpu-webhook certs manages EC keys only")
    return key


def _public_der(key: CertificatePublicKeyTypes) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _cert_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _describe(certificate: x509.Certificate) -> str:
    names = certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    name = str(names[0].value) if names else "(no name)"
    return f"{name} valid until {certificate.not_valid_after_utc:%Y-%m-%d}"


def secret_manifest(name: str, namespace: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    """A kubernetes.io/tls Secret holding tls.crt and tls.key, plus ca.crt and ca.key for renewal."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "gpu-webhook", "app.kubernetes.io/component": "tls"},
        },
        "type": "kubernetes.io/tls",
        "data": {key: base64.b64encode(files[key]).decode("ascii") for key in FILES},
    }


def files_from_secret(secret: Mapping[str, Any], where: str) -> dict[str, bytes]:
    """The decoded data of a Secret (a manifest or an API object); BundleError if it is not one.

    A manifest may give keys as plain text under stringData; like the API server, which merges
    stringData into data, a key there wins over the same key under data."""
    data = secret.get("data") or {}
    text = secret.get("stringData") or {}
    if secret.get("kind", "Secret") != "Secret" or not isinstance(data, dict):
        raise BundleError(f"{where}: not a Secret with a data map")
    if not isinstance(text, dict):
        raise BundleError(f"{where}: stringData is not a map")
    files: dict[str, bytes] = {}
    for key in FILES:
        if key in text:
            files[key] = _string_data(text[key], key, where)
        elif key in data:
            files[key] = _data(data[key], key, where)
    return files


def _string_data(value: Any, key: str, where: str) -> bytes:
    if not isinstance(value, str):
        raise BundleError(f"{where}: stringData.{key} is not a string")
    return value.encode("utf-8")


def _data(value: Any, key: str, where: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except ValueError as exc:
        raise BundleError(f"{where}: data.{key} is not base64 ({exc})") from exc
