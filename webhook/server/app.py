"""The flask app: /mutate, /validate, /healthz, /readyz and /metrics (/report and /dashboard are a
blueprint registered on it, webhook/server/report_routes.py).

HTTP only; the AdmissionReview rules live in `webhook.admission`. Once a review parses the
answer is HTTP 200 with an AdmissionResponse; a request that is not a usable AdmissionReview
gets a 4xx with a JSON error body (415 wrong Content-Type, 413 body over 7 MiB, 422 a kind
the webhook does not handle, 400 anything else).

Internal errors (an exception while deciding, or no catalog loaded yet) are logged as one
JSON line with the uid and the traceback, counted in `gpu_webhook_internal_errors_total`,
and never shown to the client:
- `/mutate` answers 200 `allowed: true`, no patch, one warning: a bug in a mutation must
  never block pods (the same outcome as `failurePolicy: Ignore`).
- `/validate` answers 500 (503 when not ready) with a JSON error, so the API server applies
  the webhook's `failurePolicy` (Fail by default: the pod is refused, the error is visible).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge, UnsupportedMediaType
from werkzeug.wsgi import get_content_length

from webhook import admission, jsoncodec
from webhook.admission import Review, ReviewError
from webhook.core.model import Catalog, Decision, Inventory, Violation
from webhook.server.decision_cache import DEFAULT_CAPACITY, DecisionCache, Outcome
from webhook.server.logs import LOGGER, bounded, write_line
from webhook.server.metrics import Metrics, create_metrics
from webhook.server.runtime import DEFAULT_RETRY_SECONDS, NotReady, Runtime
from webhook.sources import CatalogSource, InventorySource

EXTENSION = "gpu_webhook"
MAX_BODY = 7 * 1024 * 1024
"""What controller-runtime accepts: an old and a new object of up to 3 MiB each, and 1 MiB more."""
LARGE_BODY = 1024 * 1024
"""A review body larger than this waits for the worker's other large one (see Routes._review)."""
MAX_LOGGED_CODES = 100
"""A review's log line lists at most this many violations' codes, one each; `codesNotListed`
counts the others by code. A pod of 10,000 misspelt resources had a 290 KB line (container
runtimes split lines over 16 KiB)."""
MAX_LOGGED_TEXT = 253
"""Characters of a request's own text (name, namespace, uid, kind) a log line holds: a Kubernetes
name's limit. A name the API server would refuse reaches /mutate at any length, and a line over
16 KiB is split by container runtimes into pieces that are no JSON (a 40,000-character
generateName made a 40 KB line)."""
MAX_LOGGED_MESSAGE = 1000
"""Characters of a bad request's message a log line holds (a message may quote what was sent)."""

Respond = Callable[[Review, Decision], dict[str, Any]]
Reported = Callable[[Decision], tuple[Violation, ...]]
Judged = Callable[[Review, Decision, Catalog, Inventory], Decision]
"""The decision an endpoint answers with, from the one its review got."""


def _as_decided(review: Review, decision: Decision, catalog: Catalog, inventory: Inventory) -> Decision:
    return decision


@runtime_checkable
class Exposed(Protocol):
    """A registry that makes its own text (webhook.report.metrics.InventoryRegistry: kept from the
    last scrape until its snapshot changes), served instead of `generate_latest` of it."""

    def exposition(self) -> bytes: ...


def create_app(
    catalog_source: CatalogSource,
    inventory_source: InventorySource,
    *,
    metrics: Metrics | None = None,
    retry_seconds: float = DEFAULT_RETRY_SECONDS,
    extra_metrics: Sequence[CollectorRegistry] = (),
    decision_cache: int = DEFAULT_CAPACITY,
) -> Flask:
    """A new app around the sources; they are started by `start_sources` (gunicorn: post_worker_init).

    `extra_metrics`: registries appended to /metrics as they are (e.g. gauges of this worker's
    inventory, their text made once per snapshot: `Exposed`); blueprints (e.g. /report) register
    on the returned app.
    `decision_cache`: how many decisions to remember (`webhook.server.decision_cache`; 0: none).
    """
    app = Flask("gpu_webhook")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY + 1  # werkzeug stops a chunked body there, silently
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False  # flask's OPTIONS answer is an empty HTML page
    log = logging.getLogger(f"{LOGGER}.server")
    runtime = Runtime(catalog_source, inventory_source, metrics or create_metrics(), log, retry_seconds)
    app.extensions[EXTENSION] = runtime
    routes = Routes(runtime, tuple(extra_metrics), DecisionCache(decision_cache))
    app.add_url_rule("/mutate", "mutate", routes.mutate, methods=["POST"])
    app.add_url_rule("/validate", "validate", routes.validate, methods=["POST"])
    app.add_url_rule("/healthz", "healthz", routes.healthz, methods=["GET"])
    app.add_url_rule("/readyz", "readyz", routes.readyz, methods=["GET"])
    app.add_url_rule("/metrics", "metrics", routes.metrics, methods=["GET"])
    app.register_error_handler(HTTPException, _http_error)
    return app


def runtime_of(app: Flask) -> Runtime:
    runtime: Runtime = app.extensions[EXTENSION]
    return runtime


def start_sources(app: Flask) -> None:
    """Start the app's sources in this process (gunicorn: each worker); other apps are left alone."""
    if EXTENSION in app.extensions:
        runtime_of(app).start()


def stop_sources(app: Flask) -> None:
    if EXTENSION in app.extensions:
        runtime_of(app).stop()


class Routes:
    def __init__(
        self,
        runtime: Runtime,
        extra_metrics: tuple[CollectorRegistry, ...],
        decisions: DecisionCache,
    ) -> None:
        self._runtime = runtime
        self._decisions = decisions
        self._extra_metrics = extra_metrics
        self._metrics = runtime.metrics
        self._log = runtime.log
        self._large_bodies = threading.Lock()

    def mutate(self) -> Response:
        return self._review("mutate", admission.mutation_response, admission.mutation_reported)

    def validate(self) -> Response:
        return self._review(
            "validate",
            admission.validation_response,
            admission.validation_reported,
            admission.decided_as_it_stands,
        )

    def healthz(self) -> Response:
        return _json({"alive": True}, 200)

    def readyz(self) -> Response:
        report = self._runtime.readiness()
        return _json(report, 200 if report["ready"] else 503)

    def metrics(self) -> Response:
        body = self._metrics.exposition() + b"".join(_exposition(r) for r in self._extra_metrics)
        return Response(body, 200, content_type=CONTENT_TYPE_LATEST)

    def _review(
        self, endpoint: str, respond: Respond, reported: Reported, judged: Judged = _as_decided
    ) -> Response:
        """Answer a review; log and count the violations the answer reports, no others. Large
        bodies are answered one at a time: what Python makes of one can take a hundred times its
        size, and a few at once on a worker's threads could have it killed for its memory."""
        started = time.perf_counter()
        try:
            body = _read_body()
        except HTTPException as error:
            return self._refuse(endpoint, _as_review_error(error))
        except ReviewError as error:
            return self._refuse(endpoint, error)
        if len(body) <= LARGE_BODY:
            return self._answer(endpoint, body, started, respond, reported, judged)
        with self._large_bodies:
            return self._answer(endpoint, body, started, respond, reported, judged)

    def _answer(
        self, endpoint: str, body: bytes, started: float, respond: Respond, reported: Reported, judged: Judged
    ) -> Response:
        try:
            review = admission.parse_body(body)
        except ReviewError as error:
            return self._refuse(endpoint, error)
        try:
            catalog, inventory = self._runtime.snapshot()
            decision, cache = self._decisions.decide(review, catalog, inventory)
            decision = judged(review, decision, catalog, inventory)
            answer = respond(review, decision)
            violations = reported(decision)
        except Exception as exc:  # the documented internal-error answer; see the module docstring
            return self._internal_error(endpoint, review, exc)
        seconds = time.perf_counter() - started
        self._metrics.review(endpoint, review.kind, review.dry_run, decision, seconds, cache, violations)
        fields = _review_fields(endpoint, review, decision, violations, answer, seconds, cache)
        write_line(self._log, "review", fields)
        return _json(answer, 200)

    def _refuse(self, endpoint: str, error: ReviewError) -> Response:
        self._metrics.bad_request(endpoint, error)
        body = error.body()
        fields = {"endpoint": endpoint, "status": error.status, "uid": bounded(error.uid, MAX_LOGGED_TEXT)}
        fields.update({key: bounded(value, MAX_LOGGED_MESSAGE) for key, value in body["error"].items()})
        self._log.warning("bad request", extra={"fields": fields})
        return _json(admission.as_status(body, error.status), error.status)

    def _internal_error(self, endpoint: str, review: Review, exc: Exception) -> Response:
        self._metrics.internal_error(endpoint, review.dry_run)
        not_ready = isinstance(exc, NotReady)
        fields = {**_identity(endpoint, review), "error": f"{type(exc).__name__}: {exc}"}
        if not_ready:
            self._log.error("not ready", extra={"fields": fields})
        else:
            self._log.exception("internal error", extra={"fields": fields})
        what = "is not ready" if not_ready else "hit an internal error"
        if endpoint == "mutate":
            return _json(admission.unchanged_response(review, f"gpu-webhook {what}; admitted unchanged"), 200)
        code = "NotReady" if not_ready else "InternalError"
        message = f"gpu-webhook {what}; see its log for uid {review.uid}"
        body = {"error": {"code": code, "message": message}, "uid": review.uid}
        status = 503 if not_ready else 500
        return _json(admission.as_status(body, status), status)


def _read_body() -> bytes:
    """The raw body, refusing before reading when it is too large or not declared as JSON.

    Straight from the WSGI environ: `request.content_length` and `request.mimetype` parse the
    headers again on each access, and `request.get_data` reads through a limiting stream in
    64 KiB buffers; together they cost more than the read itself. Chunked bodies still go
    through werkzeug, which stops them at MAX_CONTENT_LENGTH.
    """
    environ = request.environ
    length = get_content_length(environ)
    if length is not None and length > MAX_BODY:
        raise RequestEntityTooLarge()
    if _mimetype(environ) != "application/json":
        raise UnsupportedMediaType()
    _refuse_encoded(environ)
    try:
        body = request.get_data(cache=False) if length is None else _read_declared(environ, length)
    except HTTPException as error:
        timed_out = _timed_out(error)
        if timed_out is None:
            raise
        message = f"the body could not be read: {type(timed_out).__name__}: {timed_out}"
        raise ReviewError("UnreadableBody", "", message) from error
    except Exception as error:  # gunicorn's own body errors (a bad chunk size), a read that timed out
        message = f"the body could not be read: {type(error).__name__}: {error}"
        raise ReviewError("UnreadableBody", "", message) from error
    if len(body) > MAX_BODY:  # a chunked body (no Content-Length), cut at MAX_BODY + 1
        raise RequestEntityTooLarge()
    return body


def _timed_out(error: BaseException) -> TimeoutError | None:
    """The --io-timeout behind werkzeug's disconnect, if that is what it was: werkzeug's stream
    turns a chunked body's read that timed out into a generic 400 BadRequest."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TimeoutError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _refuse_encoded(environ: dict[str, Any]) -> None:
    """A compressed body is not JSON to the parser: refused for what it is (the API server sends
    none), not as `NotJson`, nor decided when it is labelled compressed but is not."""
    encoding = environ.get("HTTP_CONTENT_ENCODING", "").strip(" \t").lower()
    if encoding not in ("", "identity"):
        message = f"Content-Encoding is {encoding!r}; send the body uncompressed"
        status = UnsupportedMediaType.code
        raise ReviewError("UnsupportedMediaType", "Content-Encoding", message, status=status)


def _mimetype(environ: dict[str, Any]) -> str:
    """`request.mimetype` without its parameter parsing: the type before any `;`, lowercase."""
    content_type: str = environ.get("CONTENT_TYPE", "")
    return content_type.partition(";")[0].strip(" \t").lower()


def _read_declared(environ: dict[str, Any], length: int) -> bytes:
    """A body of known length, read as PEP 3333 allows: exactly that many bytes of wsgi.input.
    A short read is a client that went away: refused, never decided on part of a body (gunicorn
    ends the input at the length declared, so reading on gives nothing more)."""
    try:
        body: bytes = environ["wsgi.input"].read(length)
    except TimeoutError:
        raise  # --io-timeout: UnreadableBody, saying so, not werkzeug's disconnect
    except (OSError, ValueError) as error:  # what werkzeug's stream turns into a disconnect
        raise ClientDisconnected() from error
    if len(body) < length:
        body += request.get_data(cache=False)
    if len(body) < length:
        declared = f"the body ended after {len(body)} of the {length} bytes its Content-Length declares"
        raise ClientDisconnected(declared)
    return body


def _as_review_error(error: HTTPException) -> ReviewError:
    if isinstance(error, RequestEntityTooLarge):
        message = f"the body is larger than {MAX_BODY} bytes"
        return ReviewError("BodyTooLarge", "", message, status=RequestEntityTooLarge.code)
    if isinstance(error, UnsupportedMediaType):
        message = f"Content-Type is {_mimetype(request.environ) or 'missing'!r}; send application/json"
        return ReviewError("UnsupportedMediaType", "Content-Type", message, status=UnsupportedMediaType.code)
    return ReviewError("BadRequest", "", error.description or error.name, status=error.code or 400)


def _http_error(error: HTTPException) -> Response:
    """Routing errors (404, 405...) as JSON, like every other answer."""
    body = {"error": {"code": error.name.replace(" ", ""), "message": error.description or error.name}}
    status = error.code or 500
    return _json(admission.as_status(body, status), status)


def _identity(endpoint: str, review: Review) -> dict[str, Any]:
    return {
        "uid": bounded(review.uid, MAX_LOGGED_TEXT),
        "endpoint": endpoint,
        "kind": bounded(review.kind, MAX_LOGGED_TEXT),
        "namespace": bounded(review.namespace, MAX_LOGGED_TEXT),
        "name": bounded(review.name, MAX_LOGGED_TEXT),
        "operation": bounded(review.operation, MAX_LOGGED_TEXT),
        "dryRun": review.dry_run,
    }


def _review_fields(
    endpoint: str,
    review: Review,
    decision: Decision,
    violations: tuple[Violation, ...],
    answer: dict[str, Any],
    seconds: float,
    cache: Outcome,
) -> dict[str, Any]:
    fields = _identity(endpoint, review)  # filled in place: one dict per review, not two
    fields["template"] = decision.template
    fields["codes"] = [v.code for v in violations[:MAX_LOGGED_CODES]]
    if len(violations) > MAX_LOGGED_CODES:
        fields["codesNotListed"] = dict(Counter([v.code for v in violations[MAX_LOGGED_CODES:]]))
    fields["allowed"] = decision.allowed
    fields["patchBytes"] = len(answer["response"].get("patch", ""))
    fields["cache"] = cache
    fields["latencyMs"] = round(seconds * 1_000_000) / 1000  # to the microsecond; round(x, 3) is slower
    return fields


def _exposition(registry: CollectorRegistry) -> bytes:
    return registry.exposition() if isinstance(registry, Exposed) else generate_latest(registry)


def _json(body: dict[str, Any], status: int) -> Response:
    return Response(jsoncodec.encode(body), status, content_type="application/json")
