"""A fake API server on loopback with real TLS, seeded with deploy/'s webhook configurations."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.certs.fake_apiserver import FakeApiServer
from tests.conftest import ROOT
from webhook.tls.certgen import make_ca, make_serving

TOKEN = "test-token-for-the-fake-api-server"
WEBHOOKS = ROOT / "deploy" / "base" / "webhooks.yaml"


@pytest.fixture(scope="session")
def api_tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("fake-api-tls")
    ca = make_ca("fake-apiserver-ca")
    serving = make_serving(ca, ["localhost", "127.0.0.1"])
    files = {"ca": ca.certificate_pem(), "cert": serving.certificate_pem(), "key": serving.key_pem()}
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return {name: directory / name for name in files}


@pytest.fixture
def fake_api(api_tls: dict[str, Path]) -> Iterator[FakeApiServer]:
    server = FakeApiServer(api_tls["cert"], api_tls["key"], TOKEN)
    for document in yaml.safe_load_all(WEBHOOKS.read_text(encoding="utf-8")):
        server.add(document)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(tmp_path: Path, fake_api: FakeApiServer, api_tls: dict[str, Path]) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", fake_api.url, api_tls["ca"].read_bytes())


def write_kubeconfig(path: Path, server: str, ca_pem: bytes) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "fake",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": "fake", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path
