"""A ReportService stand-in for the report tests: always ready, always this report."""

from __future__ import annotations

from webhook.report.model import Report


class FixedReport:
    def __init__(self, report: Report) -> None:
        self._report = report

    def ready(self) -> bool:
        return True

    def current(self, refresh: bool = True) -> Report:
        return self._report
