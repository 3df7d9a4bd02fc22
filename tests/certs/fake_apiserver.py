"""Just enough of the Kubernetes API, over real TLS on loopback, to drive the real `kubernetes` client.

Serves GET and PATCH (JSON Patch, applied with `jsonpatch`, `test` operations honoured) on
mutating/validating webhook configurations, and GET/POST/PUT on Secrets (PUT checks the
resourceVersion like the real server). Answers errors as `Status` objects, requires a bearer
token, and records every request so tests can assert what the client sent.
"""

from __future__ import annotations

import copy
import json
import re
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonpatch

from tests.http_support import send_json

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
PLURALS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}
_SECRETS = re.compile(r"^/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?$")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    content_type: str
    body: Any


class FakeApiServer:
    def __init__(self, cert_file: Path, key_file: Path, token: str) -> None:
        self.token = token
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[Recorded] = []
        self._version = 100
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def add(self, obj: dict[str, Any]) -> None:
        self.objects[path_of(obj)] = self._stamp(copy.deepcopy(obj))

    def get(self, obj_path: str) -> dict[str, Any]:
        return self.objects[obj_path]

    def requests_of(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        return obj

    def handle(self, method: str, path: str, content_type: str, body: Any) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(Recorded(method, path, content_type, copy.deepcopy(body)))
            secret = _SECRETS.match(path)
            if method == "POST" and secret and secret.group(2) is None:
                return self._create(f"{path}/{body['metadata']['name']}", body)
            if path not in self.objects:
                return 404, status(404, "NotFound", f"{path} not found")
            if method == "GET":
                return 200, self.objects[path]
            if method == "PATCH":
                return self._patch(path, content_type, body)
            if method == "PUT":
                return self._replace(path, body)
            return 405, status(405, "MethodNotAllowed", f"{method} not supported")

    def _create(self, obj_path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if obj_path in self.objects:
            return 409, status(409, "AlreadyExists", f"{obj_path} already exists")
        self.objects[obj_path] = self._stamp(body)
        return 201, self.objects[obj_path]

    def _patch(self, obj_path: str, content_type: str, body: Any) -> tuple[int, dict[str, Any]]:
        if content_type != "application/json-patch+json":
            return 415, status(415, "UnsupportedMediaType", f"{content_type} is not handled here")
        try:
            patched = jsonpatch.apply_patch(self.objects[obj_path], body)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            return 422, status(422, "Invalid", f"the patch does not apply: {exc}")
        self.objects[obj_path] = self._stamp(patched)
        return 200, patched

    def _replace(self, obj_path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        current = self.objects[obj_path]["metadata"]["resourceVersion"]
        if body.get("metadata", {}).get("resourceVersion") != current:
            return 409, status(409, "Conflict", "the object has been modified")
        self.objects[obj_path] = self._stamp(body)
        return 200, self.objects[obj_path]


def path_of(obj: dict[str, Any]) -> str:
    name = obj["metadata"]["name"]
    if obj["kind"] == "Secret":
        return f"/api/v1/namespaces/{obj['metadata']['namespace']}/secrets/{name}"
    return f"{ADMISSION}/{PLURALS[obj['kind']]}/{name}"


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _handler_for(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {api.token}":
                self._reply(401, status(401, "Unauthorized", "Unauthorized"))
                return
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            content_type = (self.headers.get("Content-Type") or "").split(";")[0]
            path = self.path.split("?")[0]
            self._reply(*api.handle(self.command, path, content_type, body))

        def _reply(self, code: int, body: dict[str, Any]) -> None:
            send_json(self, code, body)

        do_GET = do_POST = do_PUT = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
