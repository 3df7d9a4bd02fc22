"""Serve the newest certificate from files that may change under a running server.

A mounted Secret is renewed by swapping the `..data` symlink; file events are not reliable,
so the files' digest is compared, at most every `interval` seconds, when a TLS handshake
starts. Every context this module builds carries an `sni_callback` (OpenSSL calls it for
every ClientHello, with or without SNI) that moves the connection to the newest context, so
a server that built its SSLContext once still serves the renewed certificate, and no
connection in flight is touched. A half-written or mismatched pair, or a certificate that has
expired or is not valid yet, keeps the last good one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from webhook.shared_copy import SharedCopy
from webhook.tls.certgen import CERT_FILE, KEY_FILE

DEFAULT_INTERVAL = 10.0
ExpiryListener = Callable[[float], None]
"""Called with the Unix time the served certificate ends (`not_after`)."""


class TLSFilesError(Exception):
    """The certificate, key or client CA files cannot be used; the message names the file."""


@dataclass(frozen=True)
class TLSFiles:
    certificate: Path
    key: Path
    client_ca: Path | None = None

    @classmethod
    def in_directory(cls, directory: str | Path, client_ca: str | Path | None = None) -> TLSFiles:
        """tls.crt and tls.key in a folder, as a mounted kubernetes.io/tls Secret provides them."""
        folder = Path(directory)
        return cls(folder / CERT_FILE, folder / KEY_FILE, Path(client_ca) if client_ca else None)

    def paths(self) -> tuple[Path, ...]:
        return (self.certificate, self.key) + ((self.client_ca,) if self.client_ca else ())

    def digest(self) -> str:
        """One digest over every file's content (read through symlinks, so `..data` swaps count)."""
        contents = []
        for path in self.paths():
            try:
                contents.append(path.read_bytes())
            except OSError as exc:
                raise TLSFilesError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return _digest(contents)


def _digest(contents: list[bytes]) -> str:
    hasher = hashlib.sha256()
    for content in contents:
        hasher.update(content)
        hasher.update(b"\0")
    return hasher.hexdigest()


def server_context(files: TLSFiles, now: dt.datetime | None = None) -> ssl.SSLContext:
    """A TLS 1.2+ server context; with a client CA, clients must present a certificate it signed.

    A serving certificate that has expired or is not yet valid at `now` is refused: every
    handshake with it would fail."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(
            certfile=str(files.certificate), keyfile=str(files.key), password=_no_passphrase(files.key)
        )
    except (OSError, ssl.SSLError) as exc:
        why = _unusable(files) or f"cannot load {files.certificate} with {files.key}: {_reason(exc)}"
        raise TLSFilesError(why) from exc
    check_validity(files.certificate, now or dt.datetime.now(dt.UTC))
    if files.client_ca is not None:
        try:
            context.load_verify_locations(cafile=str(files.client_ca))
        except (OSError, ssl.SSLError) as exc:
            raise TLSFilesError(f"cannot load client CA {files.client_ca}: {_reason(exc)}") from exc
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _unusable(files: TLSFiles) -> str:
    """Which of the pair OpenSSL refused, and why; "" when each file is fine alone (a key that does
    not match the certificate). OpenSSL's reason (`[SSL] PEM lib`, `Is a directory`) names neither,
    and a Secret mounted wrong, or with a value base64-encoded twice, breaks just one of them."""
    for path, load in ((files.certificate, x509.load_pem_x509_certificates), (files.key, _private_key)):
        try:
            load(path.read_bytes())
        except OSError as exc:
            return f"cannot read {path}: {exc.strerror or exc}"
        except ValueError:
            what = "certificate" if path == files.certificate else "private key"
            return f"{path}: holds no usable PEM {what}"
    return ""


def _private_key(data: bytes) -> object:
    """The key in `data`; ValueError when there is none. An encrypted one, or one of a type this
    `cryptography` does not read, counts as one here: load_cert_chain's own reason says more."""
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (TypeError, UnsupportedAlgorithm):
        return None


def _no_passphrase(key: Path) -> Callable[[], str]:
    """The `password` callback for a key that should need none. Without one, OpenSSL asks for a
    passphrase on the terminal: a server started from one hung every handshake on the prompt
    (holding the context's lock), and without a terminal a bare prompt line went to stderr."""

    def refuse() -> str:
        raise TLSFilesError(
            f"cannot load {key}: the key is encrypted (passphrase-protected); the webhook cannot ask for"
            " a passphrase, give it an unencrypted key (openssl pkey -in KEY -out KEY.plain)"
        )

    return refuse


def check_validity(path: Path, now: dt.datetime) -> None:
    """TLSFilesError naming `path` and the date unless every certificate in it is valid at `now`."""
    try:
        certificates = x509.load_pem_x509_certificates(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TLSFilesError(f"cannot read {path}: {exc}") from exc
    for index, certificate in enumerate(certificates):
        problem = _outside_validity(certificate, now)
        if problem:
            which = (
                "the certificate"
                if index == 0
                else f"the chain certificate {certificate.subject.rfc4514_string()}"
            )
            raise TLSFilesError(f"{path}: {which} {problem}")


def _outside_validity(certificate: x509.Certificate, now: dt.datetime) -> str:
    if certificate.not_valid_after_utc <= now:
        return f"expired (notAfter {certificate.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC); renew it"
    if certificate.not_valid_before_utc > now:
        return f"is not valid yet (notBefore {certificate.not_valid_before_utc:%Y-%m-%d %H:%M:%S} UTC)"
    return ""


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc)
    return str(exc.strerror or exc)


class ReloadingContext:
    """Hands out the SSLContext for the newest good certificate files.

    Builds nothing until first asked, so it can be created before gunicorn forks and each
    worker loads its own. Thread-safe: handshakes run on gunicorn's worker threads.
    """

    def __init__(
        self,
        files: TLSFiles,
        interval: float = DEFAULT_INTERVAL,
        logger: logging.Logger | None = None,
        last_good: Path | None = None,
    ) -> None:
        self._files = files
        self._interval = interval
        self._log = logger or logging.getLogger("gpu_webhook.tls")
        self._shared = SharedCopy(last_good, "tls") if last_good is not None else None
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._digest = ""
        self._rejected = ""
        self._checked = 0.0
        self._not_after: float | None = None
        self._listeners: list[ExpiryListener] = []

    def current(self) -> ssl.SSLContext:
        """The newest context, checking the files first when `interval` has passed."""
        with self._lock:
            if self._context is None:
                self._load(self._files.digest())
            elif time.monotonic() - self._checked >= self._interval:
                self._reload_if_changed()
            assert self._context is not None
            return self._context

    def watch(self, listener: ExpiryListener) -> None:
        """Call `listener` with the served certificate's end now (if one is served), and whenever
        another is served. The files are checked first when `interval` has passed: a worker
        gunicorn starts again holds the master's certificate, renewed since, until it checks."""
        with self._lock:
            if self._context is not None:
                if time.monotonic() - self._checked >= self._interval:
                    self._reload_if_changed()
                self._tell(listener)
            self._listeners.append(listener)

    def gunicorn_hook(self, conf: Any, default_ssl_context_factory: Any) -> ssl.SSLContext:
        """gunicorn's `ssl_context(conf, default_ssl_context_factory)` setting."""
        return self.current()

    def _on_client_hello(self, connection: Any, server_name: str | None, context: ssl.SSLContext) -> None:
        newest = self.current()
        if connection.context is not newest:
            connection.context = newest

    def _reload_if_changed(self) -> None:
        """Load files that differ from the ones served; unusable ones are retried every interval
        (a certificate that is not valid yet becomes usable without changing) but logged once."""
        self._checked = time.monotonic()
        digest = ""
        try:
            digest = self._files.digest()
            if digest == self._digest:
                self._rejected = ""
                return
            self._load(digest)
        except TLSFilesError as exc:
            self._refuse(f"{digest}\0{exc}", exc)
            self._serve_shared()

    def _serve_shared(self) -> None:
        """Files that cannot be used: the certificate another worker loaded last, when it is not
        the one served. A worker gunicorn started again holds the master's certificate from the
        start, which may have been renewed since, and expired."""
        found = self._shared.current() if self._shared is not None else None
        if found is None or found[0] == self._digest:
            return
        digest, folder = found
        shared = TLSFiles(folder / CERT_FILE, folder / KEY_FILE, self._files.client_ca)
        try:
            self._use(server_context(shared), digest, shared.certificate)
        except TLSFilesError:
            return
        described = describe_certificate(shared.certificate)
        self._log.info("serving certificate %s, which another worker loaded last", described)

    def _refuse(self, key: str, exc: TLSFilesError) -> None:
        if key != self._rejected:
            self._rejected = key
            self._log.warning("certificate reload failed; serving the previous certificate: %s", exc)

    def _load(self, digest: str) -> None:
        """Build from the files; `digest` was taken before, so a change while loading is seen next time."""
        self._use(server_context(self._files), digest, self._files.certificate)
        self._log.info("serving certificate %s", describe_certificate(self._files.certificate))
        if self._shared is not None:
            self._keep(digest)

    def _use(self, context: ssl.SSLContext, digest: str, certificate: Path) -> None:
        context.sni_callback = self._on_client_hello
        self._context, self._digest, self._checked = context, digest, time.monotonic()
        self._rejected = ""
        self._not_after = not_after(certificate)
        for listener in self._listeners:
            self._tell(listener)

    def _tell(self, listener: ExpiryListener) -> None:
        """Give `listener` the served certificate's end; its failure (a full metrics folder) is
        logged, never raised: it would fail the handshake that found the renewed certificate."""
        if self._not_after is None:
            return
        try:
            listener(self._not_after)
        except Exception as exc:  # a listener's own error must not stop TLS
            self._log.error("certificate expiry not recorded: %r", exc)

    def _keep(self, digest: str) -> None:
        """Copy the pair just loaded for the other workers, unless the files changed since."""
        try:
            contents = [path.read_bytes() for path in self._files.paths()]
        except OSError:
            return
        if _digest(contents) == digest and self._shared is not None:
            self._shared.keep(digest, [(CERT_FILE, contents[0]), (KEY_FILE, contents[1])])


def not_after(path: Path) -> float | None:
    """Unix time the certificates in `path` stop being served: the earliest notAfter of the chain
    (the serving certificate's, unless an intermediate ends first); None if it cannot be parsed."""
    try:
        certificates = x509.load_pem_x509_certificates(path.read_bytes())
    except (OSError, ValueError):
        return None
    return min(c.not_valid_after_utc for c in certificates).timestamp()


def describe_certificate(path: Path) -> str:
    """`path (serial 0x..., expires ...)` for the log; the path alone if it cannot be parsed."""
    try:
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return str(path)
    expires = certificate.not_valid_after_utc.isoformat()
    return f"{path} (serial {certificate.serial_number:#x}, expires {expires})"
