"""Where `gpu-webhook certs` keeps a certificate set: a directory, a Secret manifest, a Secret.

Each store reads what it holds (an absent store is an empty set) and writes a renewed set
back. Write errors surface as OSError or ClusterError naming the file or object.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import yaml
from kubernetes.client import ApiClient

from webhook.tls import cluster
from webhook.tls.bundle import FILES, BundleError, CertSet, files_from_secret, from_files, secret_manifest
from webhook.tls.certgen import CA_KEY_FILE, KEY_FILE
from webhook.tls.files import PRIVATE_MODE, PUBLIC_MODE, write_atomically, write_stdout
from webhook.yamlio import stat_problem

_PRIVATE = (CA_KEY_FILE, KEY_FILE)


class CertStore(Protocol):
    @property
    def prints_bundle(self) -> bool:
        """True when stdout is free for the CA bundle (the set does not go to stdout itself)."""
        ...

    def load(self) -> CertSet: ...

    def save(self, certs: CertSet) -> None: ...

    def describe(self) -> str: ...


class DirStore:
    """ca.crt, ca.key, tls.crt, tls.key in one directory; keys 0600, each file replaced atomically."""

    prints_bundle = True

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)

    def describe(self) -> str:
        return str(self.directory)

    def load(self) -> CertSet:
        if self.directory.exists() and not self.directory.is_dir():
            raise BundleError(f"{self.directory}: not a directory")
        files: dict[str, bytes] = {}
        for name in FILES:
            path = self.directory / name
            try:
                files[name] = path.read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                continue  # nothing there yet; save() says if the directory cannot be made
            except OSError as exc:
                raise BundleError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        return from_files(files, str(self.directory))

    def save(self, certs: CertSet) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"cannot create {self.directory}: {exc.strerror or exc}") from exc
        for name, data in certs.files().items():
            write_atomically(self.directory / name, data, PRIVATE_MODE if name in _PRIVATE else PUBLIC_MODE)


class ManifestStore:
    """A Secret manifest in a YAML file, or printed to stdout when there is no file."""

    def __init__(self, name: str, namespace: str, path: str | None) -> None:
        self.name, self.namespace = name, namespace
        self.path = Path(path) if path else None

    @property
    def prints_bundle(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        return f"Secret {self.namespace}/{self.name} in {self.path or 'stdout'}"

    def load(self) -> CertSet:
        if self.path is None:
            return CertSet()
        if not self.path.exists():
            problem = stat_problem(self.path)  # a symlink loop, renamed over as no Secret yet
            if problem is not None:
                raise BundleError(f"{self.path}: {problem}")
            return CertSet()
        try:
            secret = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise BundleError(f"{self.path}: cannot read the Secret manifest: {exc}") from exc
        if secret is None:  # empty (as `mktemp` makes it) or only comments: no Secret yet
            return CertSet()
        if not isinstance(secret, dict):
            raise BundleError(f"{self.path}: not a Secret manifest")
        self._check_identity(secret)
        return from_files(files_from_secret(secret, str(self.path)), str(self.path))

    def _check_identity(self, secret: dict[str, Any]) -> None:
        """The file must hold this Secret, of type kubernetes.io/tls, as the cluster store insists."""
        metadata = secret.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        held = _held(metadata.get("namespace"), metadata.get("name"))
        if (metadata.get("namespace"), metadata.get("name")) != (self.namespace, self.name):
            raise BundleError(
                f"{self.path} holds Secret {held}, not {self.namespace}/{self.name} (--namespace, --secret); "
                "use another --secret-file or remove it"
            )
        if secret.get("type") != "kubernetes.io/tls":
            kind = secret.get("type") or "Opaque (no type)"
            raise BundleError(
                f"{self.path}: Secret {held} has type {kind}, not kubernetes.io/tls; remove it first"
            )

    def save(self, certs: CertSet) -> None:
        text = yaml.safe_dump(secret_manifest(self.name, self.namespace, certs.files()), sort_keys=False)
        if self.path is None:
            write_stdout(text, "the Secret manifest")
        else:
            write_atomically(_through_symlink(self.path), text.encode("utf-8"), PRIVATE_MODE)


def _through_symlink(path: Path) -> Path:
    """The file a symlink names, which a Secret read through it is written back to: renamed over,
    the link became a file of its own and the file it named (in a shared secrets folder, say)
    kept the old Secret."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _held(namespace: object, name: object) -> str:
    """`namespace/name` of a manifest's Secret, saying which of the two it lacks."""
    if namespace in (None, "") and name in (None, ""):
        return "with no name and no namespace"
    if name in (None, ""):
        return f"with no name in namespace {namespace}"
    if namespace in (None, ""):
        return f"{name} with no namespace"
    return f"{namespace}/{name}"


class ClusterStore:
    """The Secret in the cluster; replaced only if nobody changed it since it was read."""

    prints_bundle = True

    def __init__(self, api: ApiClient, name: str, namespace: str) -> None:
        self.api, self.name, self.namespace = api, name, namespace
        self.resource_version: str | None = None

    def describe(self) -> str:
        return f"Secret {self.namespace}/{self.name}"

    def load(self) -> CertSet:
        secret = cluster.read_secret(self.api, self.namespace, self.name)
        if secret is None:
            return CertSet()
        self.resource_version = str(secret["metadata"]["resourceVersion"])
        where = f"Secret {self.namespace}/{self.name}"
        if secret.get("type") != "kubernetes.io/tls":
            kind = secret.get("type")
            raise BundleError(f"{where} has type {kind}, not kubernetes.io/tls; delete it first")
        return from_files(files_from_secret(secret, where), where)

    def save(self, certs: CertSet) -> None:
        manifest: dict[str, Any] = secret_manifest(self.name, self.namespace, certs.files())
        cluster.write_secret(self.api, manifest, self.resource_version)
