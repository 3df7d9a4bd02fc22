"""A small Kubernetes API server on loopback, enough of it for list and watch of Nodes and Pods.

It speaks HTTPS with a certificate from webhook.tls.certgen and checks a bearer token, so the
real `kubernetes` client talks to it through an ordinary kubeconfig. Lists are paginated
(`limit`/`continue`) and carry a resourceVersion; watches stream chunked JSON lines from a
resourceVersion, send BOOKMARK events when asked, and answer an expired resourceVersion with
410 Gone, either as an ERROR event in the stream or as the HTTP status. The test drives it:
add/modify/delete objects, gate or fail lists, expire or end the open watches.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from tests.http_support import send_json
from webhook.tls.certgen import make_ca, make_serving

TOKEN = "test-token"
PATHS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    "/api/v1/resourcequotas": "resourcequotas",
    "/api/v1/limitranges": "limitranges",
    "/apis/resource.k8s.io/v1/deviceclasses": "deviceclasses",
}
KINDS = {
    "nodes": ("Node", "NodeList"),
    "pods": ("Pod", "PodList"),
    "resourcequotas": ("ResourceQuota", "ResourceQuotaList"),
    "limitranges": ("LimitRange", "LimitRangeList"),
    "deviceclasses": ("DeviceClass", "DeviceClassList"),
}
API_VERSIONS = {"deviceclasses": "resource.k8s.io/v1"}


@dataclass
class Seen:
    kind: str
    watch: bool
    query: dict[str, str]


@dataclass
class _Kind:
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    oldest: int = 0
    """Watches from a resourceVersion below this are expired (history compacted)."""
    fail_lists: int = 0
    gate: threading.Event = field(default_factory=threading.Event)
    generation: int = 0
    """Bumped to end the open watches; `expire` says whether with an ERROR 410 event."""
    expire: bool = False


class FakeApiServer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.version = 100
        self.kinds = {name: _Kind() for name in KINDS}
        for kind in self.kinds.values():
            kind.gate.set()
        self.seen: list[Seen] = []
        self.gone_as_http = False
        self.refused: dict[str, int] = {}
        """Kinds answered with this HTTP status (404: an API the cluster lacks; 403: not granted)."""
        self.refused_watches: dict[str, int] = {}
        """Kinds whose watches alone are answered with this HTTP status (a role granting list, not watch)."""
        self.foreign: dict[tuple[str, bool], bytes] = {}
        """(kind, watch) answered 200 with this body, as another HTTP server would answer."""
        self.cond = threading.Condition()
        self.stopping = False
        ca = make_ca("fake-apiserver-ca")
        serving = make_serving(ca, ["127.0.0.1"])
        (directory / "tls.crt").write_bytes(serving.certificate_pem())
        (directory / "tls.key").write_bytes(serving.key_pem())
        self.ca_pem = ca.certificate_pem()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        for kind in self.kinds.values():
            kind.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self) -> Path:
        port = self.httpd.server_address[1]
        data = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "fake",
                    "cluster": {
                        "server": f"https://127.0.0.1:{port}",
                        "certificate-authority-data": base64.b64encode(self.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "tester", "user": {"token": TOKEN}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
            "current-context": "fake",
        }
        path = self.directory / "kubeconfig"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path

    # --- driving it ------------------------------------------------------------------------
    def put(self, kind: str, obj: dict[str, Any]) -> int:
        """Create or replace an object: an ADDED or MODIFIED event."""
        with self.cond:
            key = _key(obj)
            event = "MODIFIED" if key in self.kinds[kind].objects else "ADDED"
            return self._record(kind, event, obj)

    def delete(self, kind: str, obj: dict[str, Any]) -> int:
        with self.cond:
            current = self.kinds[kind].objects.pop(_key(obj))
            return self._record(kind, "DELETED", current, store=False)

    def bookmark(self, kind: str) -> int:
        with self.cond:
            self.version += 1
            marker = {"kind": KINDS[kind][0], "metadata": {"resourceVersion": str(self.version)}}
            self.kinds[kind].events.append((self.version, "BOOKMARK", marker))
            self.cond.notify_all()
            return self.version

    def expire_watches(self, kind: str) -> None:
        """Compact the history and end open watches with an ERROR 410 event (or end them plainly
        when gone_as_http: the client's next watch then gets HTTP 410)."""
        with self.cond:
            state = self.kinds[kind]
            self.version += 1
            state.oldest = self.version
            state.events.clear()
            state.generation += 1
            state.expire = not self.gone_as_http
            self.cond.notify_all()

    def end_watches(self, kind: str) -> None:
        """End open watches normally, as the API server does at timeoutSeconds."""
        with self.cond:
            self.kinds[kind].generation += 1
            self.kinds[kind].expire = False
            self.cond.notify_all()

    def requests(self, kind: str, watch: bool) -> list[Seen]:
        with self.cond:
            return [s for s in self.seen if s.kind == kind and s.watch == watch]

    def _record(self, kind: str, event: str, obj: dict[str, Any], store: bool = True) -> int:
        self.version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        stored.setdefault("kind", KINDS[kind][0])
        stored.setdefault("apiVersion", API_VERSIONS.get(kind, "v1"))
        if store:
            self.kinds[kind].objects[_key(stored)] = stored
        self.kinds[kind].events.append((self.version, event, stored))
        self.cond.notify_all()
        return self.version


def _key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata['name']}"


def _matches(obj: dict[str, Any], selector: str) -> bool:
    """The field selectors the watcher uses: `field!=value` and `field=value`, comma-separated."""
    for term in filter(None, selector.split(",")):
        negate = "!=" in term
        name, value = term.split("!=" if negate else "=", 1)
        actual: Any = obj
        for part in name.split("."):
            actual = actual.get(part) if isinstance(actual, dict) else None
        if (str(actual or "") == value) == negate:
            return False
    return True


def _handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"api": server})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api: FakeApiServer

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        url = urlparse(self.path)
        kind = PATHS.get(url.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._status(401, "Unauthorized", "no or wrong bearer token")
        if kind is None:
            return self._status(404, "NotFound", f"{url.path} is not served here")
        watching = query.get("watch") in ("true", "1")
        with self.api.cond:
            self.api.seen.append(Seen(kind, watching, query))
            refused = self.api.refused.get(kind) or (self.api.refused_watches.get(kind) if watching else None)
            foreign = self.api.foreign.get((kind, watching))
        if foreign is not None:
            return self._raw(foreign)
        if refused is not None:
            return self._refuse(refused, kind, "watch" if watching else "list")
        if watching:
            return self._watch(kind, query)
        return self._list(kind, query)

    def _refuse(self, status: int, kind: str, verb: str) -> None:
        """As kube-apiserver words it: an API it does not serve, or what RBAC does not allow."""
        if status == 404:
            return self._status(404, "NotFound", "the server could not find the requested resource")
        user = "system:serviceaccount:gpu-webhook:gpu-webhook"
        group = API_VERSIONS.get(kind, "v1").rpartition("/")[0]
        message = f'{kind} is forbidden: User "{user}" cannot {verb} resource "{kind}" in API group "{group}"'
        return self._status(status, "Forbidden", f"{message} at the cluster scope")

    def _list(self, kind: str, query: dict[str, str]) -> None:
        state = self.api.kinds[kind]
        state.gate.wait()
        with self.api.cond:
            if state.fail_lists > 0:
                state.fail_lists -= 1
                return self._status(500, "InternalError", "etcd is having a bad day")
            selector = query.get("fieldSelector", "")
            items = [o for _, o in sorted(state.objects.items()) if _matches(o, selector)]
            version = str(self.api.version)
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        metadata: dict[str, Any] = {"resourceVersion": version}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)
        body = {"apiVersion": "v1", "kind": KINDS[kind][1], "metadata": metadata, "items": page}
        self._json(200, body)

    def _watch(self, kind: str, query: dict[str, str]) -> None:
        state = self.api.kinds[kind]
        since = int(query.get("resourceVersion") or 0)
        with self.api.cond:  # one look: an expiry between the two would leave this watch waiting
            expired, generation = since < state.oldest, state.generation
        if expired:
            if self.api.gone_as_http:
                return self._status(410, "Expired", f"too old resource version: {since}")
            self._start_stream()
            self._chunk(_gone_event(since))
            return self._end_stream()
        self._start_stream()
        try:
            for line in self._events(kind, since, generation, query):
                self._chunk(line)
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return None

    def _events(self, kind: str, since: int, generation: int, query: dict[str, str]) -> Iterator[bytes]:
        state = self.api.kinds[kind]
        selector = query.get("fieldSelector", "")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        sent = since
        while True:
            with self.api.cond:
                woken = functools.partial(self._woken, state, generation, sent)
                self.api.cond.wait_for(woken, timeout=float(query.get("timeoutSeconds") or 30))
                if self.api.stopping:
                    return
                if state.generation != generation:
                    if state.expire:
                        yield _gone_event(sent)
                    return
                pending = [e for e in state.events if e[0] > sent]
                if not pending:
                    return  # timeoutSeconds passed
            for version, event, obj in pending:
                sent = version
                line = _event_line(event, obj, selector, bookmarks)
                if line is not None:
                    yield line

    def _woken(self, state: _Kind, generation: int, sent: int) -> bool:
        ended = self.api.stopping or state.generation != generation
        return ended or any(version > sent for version, _, _ in state.events)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _status(self, code: int, reason: str, message: str) -> None:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
        self._json(code, {**body, "reason": reason, "message": message})

    def _raw(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, body: dict[str, Any]) -> None:
        send_json(self, code, body)


def _event_line(event: str, obj: dict[str, Any], selector: str, bookmarks: bool) -> bytes | None:
    """A watch with a field selector sees an object that stops matching as DELETED."""
    if event == "BOOKMARK":
        return _line({"type": event, "object": obj}) if bookmarks else None
    if selector and not _matches(obj, selector):
        return _line({"type": "DELETED", "object": obj}) if event == "MODIFIED" else None
    return _line({"type": event, "object": obj})


def _gone_event(since: int) -> bytes:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired"}
    status["message"] = f"too old resource version: {since}"
    return _line({"type": "ERROR", "object": status})


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode() + b"\n"


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """Poll until the predicate holds; fail naming what never happened (a wait, not a timing test)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
