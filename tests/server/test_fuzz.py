"""Fuzz the flask app with malformed, truncated and mutated AdmissionReviews (hypothesis).

Whatever arrives: never a 5xx (an exception on user input would be an internal error), never a
traceback in the answer, always JSON, and the request's uid echoed whenever it had one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import INVENTORIES, ROOT, needs_shared
from tests.server.support import VECTORS
from webhook.server.app import create_app, runtime_of, start_sources, stop_sources
from webhook.sources import FileInventorySource, StaticCatalogSource

FUZZ = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DOCUMENTS = {path.name: json.loads(path.read_bytes()) for path in sorted(VECTORS.glob("*.json"))}
ODD_QUANTITIES = ["1", "0", "-1", "0.5", "1e309", "1Ki", "2Gi", "", "NaN", "1m", "+1", "9" * 40, "0x10", "½"]
ENTRY_POINTS = (
    (),
    ("request",),
    ("request", "object"),
    ("request", "object", "metadata"),
    ("request", "object", "spec"),
    ("request", "object", "spec", "containers"),
    ("request", "object", "spec", "containers", 0),
    ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "resources", "limits"),
    ("request", "object", "spec", "template", "spec", "containers", 0, "resources", "limits"),
)


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(ODD_QUANTITIES)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
hostile = (
    json_values
    | st.integers(min_value=10_000, max_value=300_000).map(lambda n: "é" * n)
    | st.integers(min_value=20, max_value=120).map(nested)
)


@pytest.fixture(scope="module")
def client() -> Iterator[FlaskClient]:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    app: Flask = create_app(catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml"))
    start_sources(app)
    yield app.test_client()
    stop_sources(app)


def check(client: FlaskClient, endpoint: str, body: bytes, document: Any = None) -> None:
    reply = client.post(f"/{endpoint}", data=body, content_type="application/json")
    assert reply.status_code < 500, reply.data[:500]
    assert b"Traceback" not in reply.data
    assert _internal_errors(client) == 0, "/mutate admits unchanged on an internal error: none may happen"
    answer = json.loads(reply.data)
    uid = _uid(document)
    if uid is not None:
        echoed = answer["response"]["uid"] if reply.status_code == 200 else answer.get("uid")
        assert echoed == uid
    if reply.status_code == 200:
        response = answer["response"]
        assert ("patch" in response) == ("patchType" in response)
        assert endpoint == "mutate" or "patch" not in response


def _internal_errors(client: FlaskClient) -> float:
    registry = runtime_of(client.application).metrics.registry
    return sum(
        sample.value
        for metric in registry.collect()
        if metric.name == "gpu_webhook_internal_errors"
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


def _uid(document: Any) -> str | None:
    request = document.get("request") if isinstance(document, dict) else None
    uid = request.get("uid") if isinstance(request, dict) else None
    return uid if isinstance(uid, str) and uid else None


endpoints = st.sampled_from(["mutate", "validate"])


@FUZZ
@given(endpoint=endpoints, body=st.binary(max_size=2000))
def test_random_bytes(client: FlaskClient, endpoint: str, body: bytes) -> None:
    check(client, endpoint, body)


@FUZZ
@given(endpoint=endpoints, document=json_values)
def test_random_json(client: FlaskClient, endpoint: str, document: Any) -> None:
    check(client, endpoint, json.dumps(document).encode(), document)


@needs_shared("reference")
@FUZZ
@given(endpoint=endpoints, name=st.sampled_from(sorted(DOCUMENTS)), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_reviews(client: FlaskClient, endpoint: str, name: str, cut: float) -> None:
    body = json.dumps(DOCUMENTS[name]).encode()
    check(client, endpoint, body[: int(len(body) * cut)])


@needs_shared("reference")
@settings(FUZZ, max_examples=250)
@given(endpoint=endpoints, name=st.sampled_from(sorted(DOCUMENTS)), data=st.data())
def test_mutated_reviews(client: FlaskClient, endpoint: str, name: str, data: st.DataObject) -> None:
    document = copy.deepcopy(DOCUMENTS[name])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        _mutate(document, data)
    check(client, endpoint, json.dumps(document).encode(), document)


def _mutate(document: dict[str, Any], data: st.DataObject) -> None:
    parent, key = _pick(document, data)
    if parent is None:
        return
    action = data.draw(st.sampled_from(["replace", "delete", "add"]), label="action")
    if action == "delete" and isinstance(parent, dict):
        parent.pop(key, None)
    elif action == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=20), label="new key")] = data.draw(hostile, label="new value")
    else:
        parent[key] = data.draw(hostile, label="value")


def _pick(document: dict[str, Any], data: st.DataObject) -> tuple[Any, Any]:
    """A container and a key in it: from one of the interesting places, then a random walk."""
    node: Any = document
    for step in data.draw(st.sampled_from(ENTRY_POINTS), label="entry"):
        if not _has(node, step):
            break
        node = node[step]
    parent, key = None, None
    while isinstance(node, dict | list) and node:
        keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, data.draw(st.sampled_from(keys), label="key")
        node = node[key]
        if not data.draw(st.booleans(), label="deeper"):
            break
    return parent, key


def _has(node: Any, step: Any) -> bool:
    if isinstance(node, dict):
        return step in node
    return isinstance(node, list) and isinstance(step, int) and step < len(node)
