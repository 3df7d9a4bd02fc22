"""Requests that are not usable AdmissionReviews get a 4xx with a JSON error, from the real server."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import INVENTORIES, ROOT
from tests.server.conftest import Served
from tests.server.support import Reply, metric_value, scrape_when, vector
from webhook import admission
from webhook.server.app import LARGE_BODY, MAX_BODY, create_app, start_sources, stop_sources
from webhook.sources import FileInventorySource, StaticCatalogSource


def check_error(reply: Reply, status: int, code: str) -> dict[str, Any]:
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    assert b"Traceback" not in reply.body
    body: dict[str, Any] = reply.json()
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body


def configmap_review() -> dict[str, Any]:
    document = vector("create-pod-gpu.json")
    document["request"]["uid"] = "configmap-review"
    document["request"]["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
    document["request"]["resource"] = {"group": "", "version": "v1", "resource": "configmaps"}
    document["request"]["object"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"nvidia.com/gpu": "1"},
    }
    return document


ENVELOPE = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}


@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        (b"this is not json", "NotJson", ""),
        (json.dumps(ENVELOPE).encode()[:-1] + b', "request": ', "NotJson", ""),
        (b"[1, 2, 3]", "NotAdmissionReview", ""),
        (json.dumps({**ENVELOPE, "apiVersion": "v1"}).encode(), "NotAdmissionReview", "apiVersion"),
        (json.dumps({**ENVELOPE, "request": {}}).encode(), "MissingField", "request.uid"),
    ],
)
def test_malformed_reviews_are_400(served: Served, endpoint: str, body: bytes, code: str, field: str) -> None:
    error = check_error(served.client.post(f"/{endpoint}", body), 400, code)
    assert error["error"]["field"] == field


@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_an_object_that_is_not_a_pod_is_4xx_with_the_uid(served: Served, endpoint: str) -> None:
    body = check_error(served.client.post(f"/{endpoint}", configmap_review()), 422, "UnsupportedKind")
    assert body["uid"] == "configmap-review"
    assert body["error"]["field"] == "request.kind.kind"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_declared_json_is_415(served: Served, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    body = json.dumps(vector("create-pod-gpu.json")).encode()
    reply = served.client.request("POST", "/mutate", body, headers)
    assert check_error(reply, 415, "UnsupportedMediaType")["error"]["field"] == "Content-Type"


def test_json_with_a_charset_is_fine(served: Served) -> None:
    body = json.dumps(vector("create-pod-gpu.json")).encode()
    headers = {"Content-Type": "application/json; charset=utf-8"}
    reply = served.client.request("POST", "/mutate", body, headers)
    assert reply.status == 200


def test_a_declared_oversize_body_is_413_before_it_is_sent(served: Served) -> None:
    """Only the headers and 1 KiB go out: the answer cannot depend on reading the other 7 MiB."""
    conn = served.client.connection()
    try:
        conn.putrequest("POST", "/mutate")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(MAX_BODY + 1))
        conn.endheaders(message_body=b"{" + b" " * 1023)
        response = conn.getresponse()
        reply = Reply(response.status, dict(response.getheaders()), response.read())
    finally:
        conn.close()
    check_error(reply, 413, "BodyTooLarge")


def test_a_chunked_body_over_the_cap_is_413(served: Served) -> None:
    def chunks() -> Iterator[bytes]:
        """Just over the cap: what the server does not read fits in what gunicorn drains."""
        for _ in range(MAX_BODY // 65536):
            yield b" " * 65536
        yield b"[]" + b" " * 100

    # http.client sends an iterable without Content-Length as Transfer-Encoding: chunked
    reply = served.client.request("POST", "/mutate", chunks(), {"Content-Type": "application/json"})
    check_error(reply, 413, "BodyTooLarge")


def test_a_large_body_under_the_cap_is_read(served: Served) -> None:
    document = vector("create-pod-gpu.json")
    document["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * (3 * 1024 * 1024)}
    reply = served.client.post("/validate", document)
    assert reply.status == 200
    assert reply.json()["response"]["uid"] == document["request"]["uid"]


def test_wrong_method_and_unknown_path_are_json(served: Served) -> None:
    check_error(served.client.get("/mutate"), 405, "MethodNotAllowed")
    check_error(served.client.get("/nope"), 404, "NotFound")


def test_bad_requests_are_counted_by_reason(served: Served) -> None:
    before = served.client.get("/metrics").body.decode()
    served.client.post("/validate", b"nope")
    after = served.client.get("/metrics").body.decode()
    labels = {"endpoint": "validate", "reason": "NotJson"}
    name = "gpu_webhook_bad_requests_total"
    assert metric_value(after, name, **labels) - metric_value(before, name, **labels) == 1


def raw_exchange(served: Served, data: bytes, close_after_send: bool = False) -> bytes:
    """Bytes sent as they are over TLS; what came back before the server closed (or 5 s)."""
    plain = socket.create_connection(("127.0.0.1", served.process.port), timeout=5)
    with served.client.context.wrap_socket(plain, server_hostname="127.0.0.1") as tls:
        tls.sendall(data)
        if close_after_send:
            return b""
        answer = b""
        try:
            while chunk := tls.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and answer.rstrip().endswith(b"}"):
                    break
        except (TimeoutError, ssl.SSLError):
            pass
        return answer


def test_a_malformed_chunked_body_is_400_and_counted(served: Served) -> None:
    """gunicorn's own parse error for a chunk size was a flask 500, counted nowhere."""
    before = served.client.get("/metrics").body.decode()
    head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    answer = raw_exchange(served, head + b"zz\r\n{}\r\n0\r\n\r\n")
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 400"), answer
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["code"] == "UnreadableBody"
    after = scrape_when(
        served.client,
        lambda text: metric_value(text, "gpu_webhook_bad_requests_total", reason="UnreadableBody") > 0,
    )
    name, labels = "gpu_webhook_bad_requests_total", {"endpoint": "mutate", "reason": "UnreadableBody"}
    assert metric_value(after, name, **labels) - metric_value(before, name, **labels) == 1


def test_a_body_shorter_than_its_length_is_not_decided(served: Served) -> None:
    document = vector("create-pod-gpu.json")
    document["request"]["uid"] = "cut-short"
    body = json.dumps(document).encode()
    head = "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body) + 50}\r\n\r\n"
    raw_exchange(served, head.encode() + body, close_after_send=True)
    check_error(served.client.post("/validate", b"nope"), 400, "NotJson")  # a later request is served
    time.sleep(0.5)
    assert not [line for line in served.process.log_lines() if line.get("uid") == "cut-short"]


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_a_compressed_body_is_415_naming_the_encoding(served: Served, encoding: str) -> None:
    body = json.dumps(vector("create-pod-gpu.json")).encode()
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    reply = served.client.request("POST", "/mutate", body, headers)
    assert check_error(reply, 415, "UnsupportedMediaType")["error"]["field"] == "Content-Encoding"


def test_options_is_a_json_405(served: Served) -> None:
    check_error(served.client.request("OPTIONS", "/mutate"), 405, "MethodNotAllowed")


def test_a_body_of_more_values_than_any_object_holds_is_413_before_it_is_parsed(served: Served) -> None:
    """7 MiB of `[{},{},...]` is 2.4 million objects, 170 MB in a worker: a few at once had it
    killed for its memory, and every GPU pod refused (validation fails closed)."""
    document = vector("create-pod-gpu.json")
    document["request"]["object"]["spec"]["x"] = [{}] * 1_100_000
    reply = served.client.post("/mutate", json.dumps(document, separators=(",", ":")).encode())
    check_error(reply, 413, "TooManyValues")


def test_large_bodies_are_parsed_and_decided_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker holds what Python makes of one large body at a time; small ones never wait."""
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    app = create_app(catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml"))
    start_sources(app)
    running, most = [0], [0]
    guard = threading.Lock()
    parse = admission.parse_body

    def slow_parse(body: bytes) -> admission.Review:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with guard:
            running[0] -= 1
        return parse(body)

    monkeypatch.setattr(admission, "parse_body", slow_parse)
    document = vector("create-pod-gpu.json")
    document["request"]["object"]["metadata"]["annotations"] = {"example.com/notes": "x" * LARGE_BODY}
    body = json.dumps(document)

    def send() -> None:
        reply = app.test_client().post("/mutate", data=body, content_type="application/json")
        assert reply.status_code == 200

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    stop_sources(app)
    assert most[0] == 1
