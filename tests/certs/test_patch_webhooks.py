"""--patch-webhooks and --apply through the real `kubernetes` client against a loopback API server."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.certs.conftest import TOKEN, write_kubeconfig
from tests.certs.fake_apiserver import ADMISSION, FakeApiServer, path_of
from tests.certs.helpers import SERVICE_NAMES, verify_chain
from webhook.cli import main
from webhook.tls.bundle import secret_manifest, service_hosts
from webhook.tls.certgen import make_ca, make_serving

MUTATING = f"{ADMISSION}/mutatingwebhookconfigurations/gpu-webhook"
VALIDATING = f"{ADMISSION}/validatingwebhookconfigurations/gpu-webhook"
SECRET = "/api/v1/namespaces/gpu-webhook/secrets/gpu-webhook-tls"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["certs", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _second_webhook(fake_api: FakeApiServer) -> None:
    """Give the mutating configuration one more entry, with an old bundle of its own."""
    configuration = copy.deepcopy(fake_api.get(MUTATING))
    extra = copy.deepcopy(configuration["webhooks"][0])
    extra["name"] = "mutate-again.gpu.aethervirt.io"
    extra["clientConfig"]["caBundle"] = base64.b64encode(b"an old bundle").decode()
    configuration["webhooks"].append(extra)
    fake_api.add(configuration)


def test_patch_sets_the_bundle_on_every_webhook_entry(
    fake_api: FakeApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _second_webhook(fake_api)
    code, bundle, err = _run(
        capsys, "--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig)
    )
    assert code == 0, err
    expected = base64.b64encode(bundle.encode()).decode()
    patches = {r.path: r for r in fake_api.requests_of("PATCH")}
    assert set(patches) == {MUTATING, VALIDATING}
    for path, request in patches.items():
        assert request.content_type == "application/json-patch+json"
        webhooks = fake_api.get(path)["webhooks"]
        adds = [op for op in request.body if op["op"] == "add"]
        tests = [op for op in request.body if op["op"] == "test"]
        assert [op["path"] for op in adds] == [
            f"/webhooks/{i}/clientConfig/caBundle" for i in range(len(webhooks))
        ]
        assert all(op["value"] == expected for op in adds)
        assert [op["value"] for op in tests] == [w["name"] for w in webhooks]
        assert all(w["clientConfig"]["caBundle"] == expected for w in webhooks)
    shipped = yaml.safe_load_all((Path(__file__).parents[2] / "deploy/base/webhooks.yaml").read_text())
    entries = next(doc for doc in shipped if doc["kind"] == "MutatingWebhookConfiguration")["webhooks"]
    assert len(fake_api.get(MUTATING)["webhooks"]) == len(entries) + 1


def test_patching_again_sends_no_patch(
    fake_api: FakeApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig))
    assert _run(capsys, *args)[0] == 0
    fake_api.requests.clear()
    code, _, err = _run(capsys, *args)
    assert code == 0 and "nothing changed" in err
    assert fake_api.requests_of("PATCH") == [] and len(fake_api.requests_of("GET")) == 2


def test_webhooks_under_other_names(
    fake_api: FakeApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        renamed = copy.deepcopy(fake_api.get(MUTATING if kind.startswith("Mutating") else VALIDATING))
        renamed["metadata"]["name"] = "gpu-webhook-staging"
        fake_api.add(renamed)
    code, _, err = _run(
        capsys,
        *("--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig)),
        *("--mutating-webhook", "gpu-webhook-staging", "--validating-webhook", "gpu-webhook-staging"),
    )
    assert code == 0, err
    assert {r.path.rsplit("/", 1)[1] for r in fake_api.requests_of("PATCH")} == {"gpu-webhook-staging"}


def test_a_missing_configuration_is_named_and_nothing_is_written(
    fake_api: FakeApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        capsys,
        *("--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig)),
        *("--validating-webhook", "absent"),
    )
    assert code == 1 and out == "" and "ValidatingWebhookConfiguration absent" in err and "404" in err
    assert "Traceback" not in err and not (tmp_path / "tls").exists()


def test_a_rejected_token_is_a_clear_error(
    fake_api: FakeApiServer, api_tls: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kc", fake_api.url, api_tls["ca"].read_bytes())
    config.write_text(config.read_text().replace(TOKEN, "wrong-token"))
    code, _, err = _run(capsys, "--secret", "gpu-webhook-tls", "--apply", "--kubeconfig", str(config))
    assert code == 1 and "401" in err and "Traceback" not in err


def test_an_untrusted_api_server_certificate_is_refused(
    fake_api: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kc", fake_api.url, make_ca("someone-else").certificate_pem())
    code, _, err = _run(capsys, "--secret", "gpu-webhook-tls", "--apply", "--kubeconfig", str(config))
    assert code == 1 and "cannot reach the API server" in err and fake_api.requests == []


def _secret(fake_api: FakeApiServer) -> dict[str, bytes]:
    data: dict[str, Any] = fake_api.get(SECRET)["data"]
    return {key: base64.b64decode(value) for key, value in data.items()}


def test_apply_creates_the_secret_then_leaves_it_alone(
    fake_api: FakeApiServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--secret", "gpu-webhook-tls", "--apply", "--patch-webhooks", "--kubeconfig", str(kubeconfig))
    code, bundle, err = _run(capsys, *args)
    assert code == 0, err
    (created,) = fake_api.requests_of("POST")
    kubernetes_validate.validate(created.body, "1.33", strict=True)
    assert created.body["type"] == "kubernetes.io/tls"
    files = _secret(fake_api)
    assert files["ca.crt"].decode() == bundle
    verify_chain(files["tls.crt"], files["ca.crt"], SERVICE_NAMES[2])
    fake_api.requests.clear()
    code, again, err = _run(capsys, *args)
    assert code == 0 and again == bundle and "nothing changed" in err
    assert [r.method for r in fake_api.requests] == ["GET", "GET", "GET"]


def test_apply_renews_with_the_read_version_and_patches_before_writing(
    fake_api: FakeApiServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = make_ca(days=60)
    serving = make_serving(ca, service_hosts("gpu-webhook", "gpu-webhook"), days=10)
    files = {"ca.crt": ca.certificate_pem(), "ca.key": ca.key_pem()}
    files |= {"tls.crt": serving.certificate_pem(), "tls.key": serving.key_pem()}
    fake_api.add(secret_manifest("gpu-webhook-tls", "gpu-webhook", files))
    version = fake_api.get(SECRET)["metadata"]["resourceVersion"]
    code, bundle, err = _run(
        capsys, "--secret", "gpu-webhook-tls", "--apply", "--patch-webhooks", "--kubeconfig", str(kubeconfig)
    )
    assert code == 0, err
    methods = [(r.method, r.path) for r in fake_api.requests if r.method != "GET"]
    assert methods == [("PATCH", MUTATING), ("PATCH", VALIDATING), ("PUT", SECRET)], "trust first, then serve"
    (put,) = fake_api.requests_of("PUT")
    assert put.body["metadata"]["resourceVersion"] == version
    renewed = _secret(fake_api)
    assert renewed["ca.crt"].decode() == bundle and bundle.count("BEGIN CERTIFICATE") == 2
    verify_chain(renewed["tls.crt"], renewed["ca.crt"], SERVICE_NAMES[1])
    verify_chain(serving.certificate_pem(), renewed["ca.crt"], SERVICE_NAMES[1])


def test_a_secret_of_another_type_is_not_overwritten(
    fake_api: FakeApiServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opaque = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {}}
    opaque["metadata"] = {"name": "gpu-webhook-tls", "namespace": "gpu-webhook"}
    fake_api.add(opaque)
    code, _, err = _run(capsys, "--secret", "gpu-webhook-tls", "--apply", "--kubeconfig", str(kubeconfig))
    assert code == 2 and "Opaque" in err and fake_api.requests_of("PUT") == []


def test_seeded_configurations_are_the_shipped_ones(fake_api: FakeApiServer) -> None:
    shipped = list(yaml.safe_load_all((Path(__file__).parents[2] / "deploy/base/webhooks.yaml").read_text()))
    assert {path_of(doc) for doc in shipped} == {MUTATING, VALIDATING}
