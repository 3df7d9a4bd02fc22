"""GET /report (JSON, or ?format=text|csv) and GET /dashboard (a server-rendered page).

Register on the app: `app.register_blueprint(report_blueprint(inventory_source, catalog_source))`;
serve the inventory gauges with `report_metrics(...).exposition()` on /metrics. Pass one
ReportService to both to build each snapshot's report once.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, render_template, request

from webhook.admission import as_status
from webhook.report.metrics import InventoryRegistry, inventory_registry
from webhook.report.model import HOURS_PER_MONTH, UNACCOUNTED_WHY, Report
from webhook.report.render import render
from webhook.report.service import ReportService
from webhook.sources import CatalogSource, InventorySource

TEMPLATES = Path(__file__).resolve().parent.parent / "report" / "templates"
_TYPES = {"json": "application/json", "text": "text/plain; charset=utf-8", "csv": "text/csv; charset=utf-8"}
PAGE_POLICY = "; ".join(
    (
        "default-src 'none'",
        "style-src 'unsafe-inline'",
        "base-uri 'none'",
        "form-action 'none'",
    )
)
"""The pages' Content-Security-Policy: they are styled inline and load nothing else, and show text
anyone who can create a pod or label a node controls, so no script runs even if some escaped
the template's escaping. They may be framed (a portal's): they have nothing to click."""


def report_blueprint(
    inventory_source: InventorySource, catalog_source: CatalogSource, service: ReportService | None = None
) -> Blueprint:
    service = service or ReportService(inventory_source, catalog_source)
    blueprint = Blueprint("gpu_report", __name__, template_folder=str(TEMPLATES))

    bodies = _Reports(service)

    @blueprint.get("/report")
    def report() -> Response:
        output = request.args.get("format", "json").lower()
        if output not in _TYPES:
            message = f"format must be one of {', '.join(_TYPES)}, not {output!r}"
            return _error(400, "BadFormat", "format", message)
        if not service.ready():
            return _error(503, "NotReady", "", "the inventory or catalog has not loaded yet; see /readyz")
        return Response(bodies.body(output), 200, content_type=_TYPES[output])

    pages = _Dashboard(service)

    @blueprint.get("/dashboard")
    def dashboard() -> Response:
        if not service.ready():
            return _html(render_template("report/not_ready.html", status=inventory_source.status()), 503)
        return _html(pages.page(), 200)

    @blueprint.after_request
    def no_sniffing(response: Response) -> Response:
        """Browsers take the report's text and CSV for what they say they are, never for HTML."""
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    return blueprint


def report_metrics(
    inventory_source: InventorySource, catalog_source: CatalogSource, service: ReportService | None = None
) -> InventoryRegistry:
    """A registry with the inventory gauges (allocatable/allocated/free devices, idle cost per hour)."""
    return inventory_registry(service or ReportService(inventory_source, catalog_source))


class _Reports:
    """/report's answers, rendered once for each report (one per snapshot: ReportService) and
    Prometheus reading's state (the JSON's `prometheus`) in each format asked: at 4,000 nodes the
    JSON takes up to a quarter of a second, the text and the CSV up to a tenth, and a request
    against the same snapshot is answered with the body rendered."""

    def __init__(self, service: ReportService) -> None:
        self._service = service
        self._last: tuple[Report | None, dict[str, Any] | None, dict[str, str]] = (None, None, {})

    def body(self, output: str) -> str:
        report = self._service.current()
        reading = self._service.reading()
        last = self._last
        if last[0] is not report or last[1] != reading:
            last = self._last = (report, reading, {})
        if output not in last[2]:
            extra = {"prometheus": reading} if output == "json" else None
            last[2][output] = render(report, output, extra)
        return last[2][output]


class _Dashboard:
    """The dashboard page, rendered once for each report (a report is built once per snapshot of
    inventory, catalog, utilisation and pods: ReportService) and what else the page shows: the
    minute it says it was generated, the accelerator pod count and the Prometheus error. Rendering
    takes a third of a second at 4,000 nodes; a request against the same of all these is answered
    with the page already rendered, and one after any of them changed renders a new one."""

    def __init__(self, service: ReportService) -> None:
        self._service = service
        self._last: tuple[Report, tuple[Any, ...], str] | None = None

    def page(self) -> str:
        report = self._service.current()
        status = self._service.inventory_source.status()
        generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        error = self._service.prometheus_error
        shown = (
            generated,
            "acceleratorPods" in status,
            status.get("acceleratorPods"),
            error,
        )
        last = self._last
        if last is not None and last[0] is report and last[1] == shown:
            return last[2]
        page = render_template(
            "report/dashboard.html", **_page(self._service, report, status, generated, error)
        )
        self._last = (report, shown, page)
        return page


def _page(
    service: ReportService, report: Report, status: dict[str, Any], generated: str, error: str | None
) -> dict[str, Any]:
    return {
        "report": report,
        "data": report.to_dict(),
        "generated": generated,
        "status": status,
        "prometheus": service.prometheus_url,
        "prometheus_error": error,
        "money": _money,
        "pct": _pct,
        "hours_per_month": HOURS_PER_MONTH,
        "unaccounted_why": UNACCOUNTED_WHY,
    }


def _money(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"${value:,.{digits}f}"


def _pct(part: float, whole: float) -> float:
    """`part` as a percentage of `whole`; anything held of nothing allocatable is all over (100%)."""
    if whole <= 0:
        return 100.0 if part > 0 else 0.0
    return round(100.0 * part / whole, 1)


def _html(page: str, status: int) -> Response:
    response = Response(page, status, content_type="text/html; charset=utf-8")
    response.headers["Content-Security-Policy"] = PAGE_POLICY
    return response


def _error(status: int, code: str, field: str, message: str) -> Response:
    """The error body every endpoint answers with (webhook/admission.py ReviewError.body), as a
    metav1.Status too (`admission.as_status`)."""
    body = {"error": {"code": code, "field": field, "message": message}}
    return Response(json.dumps(as_status(body, status)), status, content_type="application/json")
