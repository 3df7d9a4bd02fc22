"""Per-GPU utilisation from dcgm-exporter metrics, averaged over a window, via the Prometheus HTTP API.

dcgm-exporter labels each series with `Hostname`, `gpu` (index), `UUID` and `modelName`; MIG
devices add `GPU_I_PROFILE` and `GPU_I_ID`; with its Kubernetes mapping on (the GPU Operator's
default) it adds the `pod`, `namespace` and `container` holding the device. When Prometheus
scrapes the exporter through a ServiceMonitor, its own target labels take `pod`/`namespace` (the
exporter's) and the device's move to `exported_pod`/`exported_namespace`, which win here.
`DCGM_FI_PROF_GR_ENGINE_ACTIVE` (a 0..1 ratio, per MIG device too) is preferred where present;
`DCGM_FI_DEV_GPU_UTIL` (percent) fills in the rest.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
MAX_ANSWER_BYTES = 16 * 2**20
"""The most of one answer read: 5,000 GPUs each split into 7 MIG devices are 35,000 series of
~330 bytes with the labels asked for (`by` below), ~11.5 MiB; whole GPUs a seventh of that. A
bigger answer is refused as an error, not read whole (300 MB took 1.5 GB of a 512Mi worker)."""
LABELS = (
    "Hostname", "kubernetes_node", "gpu", "UUID", "modelName", "GPU_I_PROFILE", "GPU_I_ID",
    "exported_namespace", "namespace", "exported_pod", "pod",
)  # fmt: skip
"""The labels a reading is made of; the query keeps only these (dcgm-exporter sends ~20)."""
_ERROR_BYTES = 64 * 1024
"""How much of an HTTP error's body is read for Prometheus's message."""
_USERINFO = re.compile(r"//[^/?#]*@")
_WINDOW = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


class PrometheusError(RuntimeError):
    """Prometheus could not be asked or answered something unusable; the message says which."""


@dataclass(frozen=True, slots=True)
class GpuUtilisation:
    hostname: str
    gpu: str
    uuid: str
    model: str
    profile: str
    """The MIG profile for a MIG device; empty for a whole GPU."""
    instance: str
    namespace: str
    pod: str
    percent: float
    metric: str


def check_window(window: str) -> str:
    if not _WINDOW.match(window):
        raise PrometheusError(f"--window {window!r} is not a Prometheus duration such as 1h, 30m or 7d")
    if not any(digit in "123456789" for digit in window):  # Prometheus: "duration must be greater than 0"
        raise PrometheusError(f"--window {window!r} is no time at all; give one such as 1h, 30m or 7d")
    return window


def check_url(url: str) -> str:
    """An http(s) URL with a host (and a path prefix if Prometheus is served under one); nothing else
    reaches the HTTP library, which would open `file:` URLs or fail with a traceback."""
    problem = _url_problem(url)
    if problem:
        raise PrometheusError(
            f"--prometheus {_without_credentials(url)!r} is not a Prometheus URL such as "
            f"http://prometheus:9090: {problem}"
        )
    return url


def _without_credentials(url: str) -> str:
    """The URL with any user:password@ masked, for messages (they reach an unauthenticated page)."""
    return _USERINFO.sub("//***@", url)


def _url_problem(url: str) -> str:
    if not url or any(c.isspace() or ord(c) < 32 for c in url):
        return "it is empty or holds spaces or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return f"the scheme is {parts.scheme or 'missing'}, not http or https"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0"
    if "@" in parts.netloc:
        return (
            "it holds credentials (user:password@), which are never sent and would show in errors; "
            "Prometheus is read without authentication"
        )
    if parts.query or parts.fragment:
        return "it has a query or fragment; give the server's base URL"
    return ""


def query_utilisation(url: str, window: str, timeout: float = 10.0) -> list[GpuUtilisation]:
    """Average utilisation per GPU or MIG device and pod over the window, engine-active first; the
    whole read (both queries, from connecting to the last byte) is given up after `timeout` seconds.
    A device that changed hands within the window has a series per pod that held it: each is kept,
    for the report to read the current holder's (build._idle), whichever Prometheus answers first."""
    check_url(url)
    check_window(window)
    deadline = time.monotonic() + timeout
    found: dict[tuple[str, ...], GpuUtilisation] = {}
    for metric, scale in ((ENGINE_ACTIVE, 100.0), (GPU_UTIL, 1.0)):
        for series in _query(url, f"avg_over_time({metric}[{window}])", deadline):
            reading = reading_from_series(series, metric, scale)
            if reading is not None:
                found.setdefault((*device_key(reading), reading.namespace, reading.pod), reading)
    return sorted(found.values(), key=lambda r: (r.hostname, r.gpu, r.instance, r.namespace, r.pod))


def device_key(reading: GpuUtilisation) -> tuple[str, str, str, str]:
    """The GPU or MIG device a reading is of."""
    return reading.hostname, reading.gpu, reading.uuid, reading.instance


def _query(url: str, promql: str, deadline: float) -> list[Mapping[str, Any]]:
    """The vector `promql` (named so in errors) gives, averaged by the LABELS a reading takes."""
    grouped = f"avg by ({', '.join(LABELS)}) ({promql})"
    endpoint = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": grouped})
    watch = _Watch(deadline)
    try:
        body = json.loads(_read(endpoint, watch, deadline))
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"{url}: {promql}: HTTP {exc.code}: {_error_text(exc)}") from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        if watch.expired or time.monotonic() >= deadline:  # the socket's own timeout may fire first
            raise PrometheusError(f"{url}: {promql}: no whole answer in time") from exc
        raise PrometheusError(f"{url}: cannot reach Prometheus: {getattr(exc, 'reason', exc)!s}") from exc
    except _TooBig as exc:
        raise PrometheusError(
            f"{url}: {promql}: the answer is over {MAX_ANSWER_BYTES // 2**20} MiB, more than "
            "dcgm-exporter's series of 35,000 GPUs or MIG devices; not read"
        ) from exc
    except ValueError as exc:
        raise PrometheusError(f"{url}: the answer to {promql} is not JSON") from exc
    except RecursionError as exc:
        raise PrometheusError(f"{url}: the answer to {promql} is JSON nested too deep") from exc
    finally:
        watch.cancel()
    problem = _vector_problem(body)
    if problem:
        raise PrometheusError(f"{url}: {promql}: {problem}")
    result: list[Mapping[str, Any]] = body["data"]["result"]
    return result


class _TooBig(Exception):
    pass


def _read(endpoint: str, watch: _Watch, deadline: float) -> bytes:
    """The answer's body, at most MAX_ANSWER_BYTES; the watch cuts the connection at the deadline
    (a socket timeout bounds each read only, and one byte a second would never trip it)."""
    opener = urllib.request.build_opener(_HTTPHandler(watch), _HTTPSHandler(watch))
    timeout = max(deadline - time.monotonic(), 0.001)
    with opener.open(endpoint, timeout=timeout) as response:
        body: bytes = response.read(MAX_ANSWER_BYTES + 1)
    if watch.expired:
        raise TimeoutError  # what was read before the cut is not the whole answer
    if len(body) > MAX_ANSWER_BYTES:
        raise _TooBig
    return body


class _Watch:
    """Shuts down the sockets handed to it when the deadline passes, so a read blocked on them
    ends at once (in connect or the TLS handshake the socket timeout, at most the time left, does)."""

    def __init__(self, deadline: float) -> None:
        self.expired = False
        self._done = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _cut(sock)

    def cancel(self) -> None:
        """Called before the sockets are closed: the watch never touches a closed one."""
        with self._lock:
            self._done = True
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _cut(sock)


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain call: TLS sockets keep their state


class _WatchedHTTP(http.client.HTTPConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watch = watch

    def connect(self) -> None:
        super().connect()
        self._watch.attach(self.sock)


class _WatchedHTTPS(_WatchedHTTP, http.client.HTTPSConnection):
    """_WatchedHTTP's watch over HTTPSConnection's connect: the socket attached is the TLS one."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTP, watch=self._watch), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTPS, watch=self._watch), req)


def _vector_problem(body: object) -> str:
    """What keeps `body` from being a successful instant-query answer with a vector result:
    Prometheus's own error, or where the answer differs from what Prometheus sends."""
    if not isinstance(body, dict):
        return f"the answer is {_json_kind(body)}, not a Prometheus answer (an object)"
    if body.get("status") != "success":
        return _clip(str(body.get("error") or f"the answer's status is {_clip(repr(body.get('status')))}"))
    data = body.get("data")
    if not isinstance(data, dict):
        return f"the answer's data is {_json_kind(data)}, not an object"
    if data.get("resultType") != "vector":
        return f"the answer's data.resultType is {_clip(repr(data.get('resultType')))}, not 'vector'"
    result = data.get("result")
    if not isinstance(result, list):
        return f"the answer's data.result is {_json_kind(result)}, not a list"
    for index, item in enumerate(result):
        if not _is_sample(item):
            sample = '{"metric": {labels}, "value": [time, "number"]}'
            return f"the answer's data.result[{index}] is not a sample {sample}"
    return ""


def _is_sample(item: object) -> bool:
    if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
        return False
    value = item.get("value")
    return isinstance(value, list) and len(value) == 2


def _json_kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def reading_from_series(series: Mapping[str, Any], metric: str, scale: float) -> GpuUtilisation | None:
    labels = series.get("metric") or {}
    try:
        value = float(series["value"][1]) * scale
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    hostname = str(labels.get("Hostname") or labels.get("kubernetes_node") or "")
    if not hostname or not 0.0 <= value <= 100.0:  # NaN (no samples in the window), +-Inf, out of range
        return None
    return GpuUtilisation(
        hostname=hostname,
        gpu=str(labels.get("gpu") or ""),
        uuid=str(labels.get("UUID") or ""),
        model=str(labels.get("modelName") or ""),
        profile=str(labels.get("GPU_I_PROFILE") or ""),
        instance=str(labels.get("GPU_I_ID") or ""),
        namespace=str(labels.get("exported_namespace") or labels.get("namespace") or ""),
        pod=str(labels.get("exported_pod") or labels.get("pod") or ""),
        percent=round(value, 3),
        metric=metric,
    )


def _error_text(exc: urllib.error.HTTPError) -> str:
    """Prometheus's `error` when the body is its JSON error answer, else the HTTP reason."""
    try:
        body = json.loads(exc.read(_ERROR_BYTES))
    except (ValueError, RecursionError, OSError, http.client.HTTPException):
        return str(exc.reason)
    error = body.get("error") if isinstance(body, dict) else None
    return _clip(str(error)) if error else str(exc.reason)
