"""The flask app in-process: readiness gating, start-up retry, and the internal-error answers."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry, Gauge

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import metric_value, vector
from webhook import admission
from webhook.server.app import create_app, start_sources, stop_sources
from webhook.server.logs import JsonLineFormatter
from webhook.sources import FileInventorySource, StaticCatalogSource

UID = vector("create-pod-gpu.json")["request"]["uid"]


def make_app(inventory: Path, retry_seconds: float = 5.0) -> Flask:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    return create_app(catalog, FileInventorySource(inventory), retry_seconds=retry_seconds)


def post(app: Flask, endpoint: str, document: Any) -> tuple[int, dict[str, Any]]:
    reply = app.test_client().post(f"/{endpoint}", data=json.dumps(document), content_type="application/json")
    assert b"Traceback" not in reply.data
    return reply.status_code, reply.get_json()


def test_not_started_is_not_ready_and_says_what_is_missing() -> None:
    app = make_app(INVENTORIES / "mixed-cluster.yaml")
    reply = app.test_client().get("/readyz")
    assert reply.status_code == 503
    report = reply.get_json()
    assert report["ready"] is False
    assert report["catalog"]["ready"] is False and report["catalog"]["error"] == "not started"
    start_sources(app)
    reply = app.test_client().get("/readyz")
    assert reply.status_code == 200 and reply.get_json()["ready"] is True
    assert app.test_client().get("/healthz").status_code == 200
    stop_sources(app)


def test_without_a_catalog_mutate_admits_unchanged_and_validate_fails() -> None:
    app = make_app(INVENTORIES / "mixed-cluster.yaml")
    status, body = post(app, "mutate", vector("create-pod-gpu.json"))
    assert status == 200
    assert body["response"]["uid"] == UID and body["response"]["allowed"] is True
    assert "patch" not in body["response"] and len(body["response"]["warnings"]) == 1
    status, body = post(app, "validate", vector("create-pod-gpu.json"))
    assert (status, body["error"]["code"], body["uid"]) == (503, "NotReady", UID)


def test_an_unsynced_inventory_gates_readiness_until_a_retry_succeeds(tmp_path: Path) -> None:
    inventory = tmp_path / "nodes.yaml"
    app = make_app(inventory, retry_seconds=0.05)
    start_sources(app)
    try:
        reply = app.test_client().get("/readyz")
        assert reply.status_code == 503
        report = reply.get_json()
        assert report["catalog"]["ready"] is True
        assert report["inventory"]["ready"] is False and report["inventory"]["error"]
        status, body = post(app, "mutate", vector("create-pod-gpu.json"))
        assert status == 200 and body["response"]["allowed"] is True  # decided without node knowledge
        shutil.copy(INVENTORIES / "mixed-cluster.yaml", inventory)
        deadline = time.monotonic() + 10
        while app.test_client().get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert app.test_client().get("/readyz").get_json()["inventory"]["ready"] is True
    finally:
        stop_sources(app)


@pytest.fixture
def broken_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the decision raises, as a bug in a check or mutator would."""

    def explode(*args: Any) -> Any:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(admission, "decide_review", explode)


@pytest.mark.usefixtures("broken_decide")
def test_an_internal_error_admits_on_mutate_and_fails_on_validate(caplog: pytest.LogCaptureFixture) -> None:
    app = make_app(INVENTORIES / "mixed-cluster.yaml")
    start_sources(app)
    caplog.set_level(logging.ERROR, logger="gpu_webhook")
    status, body = post(app, "mutate", vector("create-pod-gpu.json"))
    assert status == 200
    response = body["response"]
    assert response["allowed"] is True and response["uid"] == UID
    assert "patch" not in response and "patchType" not in response and len(response["warnings"]) == 1
    status, body = post(app, "validate", vector("create-pod-gpu.json"))
    assert (status, body["error"]["code"], body["uid"]) == (500, "InternalError", UID)
    assert "injected fault" not in json.dumps(body)
    records = [r for r in caplog.records if getattr(r, "fields", {}).get("uid") == UID]
    assert {r.fields["endpoint"] for r in records} == {"mutate", "validate"}  # type: ignore[attr-defined]
    line = json.loads(JsonLineFormatter().format(records[0]))
    assert line["uid"] == UID and "RuntimeError: injected fault" in line["traceback"]
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    for endpoint in ("mutate", "validate"):
        assert metric_value(metrics, "gpu_webhook_internal_errors_total", endpoint=endpoint) == 1
    stop_sources(app)


def test_extra_registries_are_served_on_metrics() -> None:
    extra = CollectorRegistry()
    Gauge("gpu_webhook_test_extra", "An extra gauge.", registry=extra).set(7)
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory = FileInventorySource(INVENTORIES / "mixed-cluster.yaml")
    app = create_app(catalog, inventory, extra_metrics=[extra])
    text = app.test_client().get("/metrics").get_data(as_text=True)
    assert metric_value(text, "gpu_webhook_test_extra") == 7
    assert "gpu_webhook_reviews_total" in text


def _shown_to_the_user(status: int, body: dict[str, Any]) -> str:
    """What the API server puts in the error the user sees of a failed call: the body's message
    when it decodes as a metav1.Status that failed (client-go `Result.Error`), else a generic text."""
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == status
    message: str = body["message"]
    return message


@pytest.mark.usefixtures("broken_decide")
def test_a_failed_validation_tells_the_user_the_uid_to_look_up() -> None:
    """The API server shows a non-200 answer's message only from a Status body: ours had it said
    `an error on the server ("unknown") has prevented the request from succeeding` (found by QA)."""
    app = make_app(INVENTORIES / "mixed-cluster.yaml")
    start_sources(app)
    try:
        status, body = post(app, "validate", vector("create-pod-gpu.json"))
    finally:
        stop_sources(app)
    assert UID in _shown_to_the_user(status, body) and "InternalError" in body["message"]
    assert (body["error"]["code"], body["uid"]) == ("InternalError", UID)


def test_not_ready_and_a_refused_review_are_statuses_the_user_is_shown() -> None:
    app = make_app(INVENTORIES / "mixed-cluster.yaml")
    status, body = post(app, "validate", vector("create-pod-gpu.json"))
    assert status == 503 and UID in _shown_to_the_user(status, body)
    document = vector("create-pod-gpu.json")
    document["request"]["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
    status, body = post(app, "validate", document)
    assert status == 422 and "request.kind.kind" in _shown_to_the_user(status, body)
    reply = app.test_client().get("/mutate")
    assert reply.status_code == 405 and _shown_to_the_user(405, reply.get_json())
