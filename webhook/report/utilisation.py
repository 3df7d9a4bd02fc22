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

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
_ERROR_BYTES = 64 * 1024
"""How much of an HTTP error's body is read for Prometheus's message."""
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
    return window


def check_url(url: str) -> str:
    """An http(s) URL with a host (and a path prefix if Prometheus is served under one); nothing else
    reaches the HTTP library, which would open `file:` URLs or fail with a traceback."""
    problem = _url_problem(url)
    if problem:
        raise PrometheusError(
            f"--prometheus {url!r} is not a Prometheus URL such as http://prometheus:9090: {problem}"
        )
    return url


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
    if parts.query or parts.fragment:
        return "it has a query or fragment; give the server's base URL"
    return ""


def query_utilisation(url: str, window: str, timeout: float = 10.0) -> list[GpuUtilisation]:
    """Average utilisation per GPU or MIG device over the window, engine-active first."""
    check_url(url)
    check_window(window)
    found: dict[tuple[str, str, str, str], GpuUtilisation] = {}
    for metric, scale in ((ENGINE_ACTIVE, 100.0), (GPU_UTIL, 1.0)):
        for series in _query(url, f"avg_over_time({metric}[{window}])", timeout):
            reading = reading_from_series(series, metric, scale)
            if reading is not None:
                found.setdefault((reading.hostname, reading.gpu, reading.uuid, reading.instance), reading)
    return sorted(found.values(), key=lambda r: (r.hostname, r.gpu, r.instance))


def _query(url: str, promql: str, timeout: float) -> list[Mapping[str, Any]]:
    endpoint = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as response:  # noqa: S310 - an http(s) URL
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"{url}: {promql}: HTTP {exc.code}: {_error_text(exc)}") from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise PrometheusError(f"{url}: cannot reach Prometheus: {getattr(exc, 'reason', exc)!s}") from exc
    except ValueError as exc:
        raise PrometheusError(f"{url}: the answer to {promql} is not JSON") from exc
    except RecursionError as exc:
        raise PrometheusError(f"{url}: the answer to {promql} is JSON nested too deep") from exc
    problem = _vector_problem(body)
    if problem:
        raise PrometheusError(f"{url}: {promql}: {problem}")
    result: list[Mapping[str, Any]] = body["data"]["result"]
    return result


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
