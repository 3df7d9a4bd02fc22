"""The text report of a test run: a pass/fail table, then each failure with its diff."""

from __future__ import annotations

from collections.abc import Iterator

from webhook.authoring.runner import ResourceResult, Run
from webhook.terminal import showable


def render(run: Run, show_passed: bool = True) -> str:
    return "\n".join(showable(line) for line in _lines(run, show_passed)).lstrip("\n")


def _lines(run: Run, show_passed: bool) -> Iterator[str]:
    rows = [r for r in run.results if show_passed or not r.passed]
    if rows:
        yield from _table(rows)
    for result in run.failed:
        yield ""
        yield from _failure(result)
    for source, problems in run.broken.items():
        yield ""
        yield f"BAD SUITE  {source}"
        yield from (f"  {problem}" for problem in problems)
    yield ""
    yield _summary(run)


def _table(rows: list[ResourceResult]) -> Iterator[str]:
    header = ("SUITE", "CASE", "RESOURCE", "RESULT")
    cells = [(showable(r.suite), showable(r.case), showable(r.resource), _verdict(r)) for r in rows]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(3)]
    for row in [header, *cells]:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[3]


def _verdict(result: ResourceResult) -> str:
    """PASS, FAIL or ERROR; marked NOT SENT, as `check` marks it, when the shipped webhook
    configurations skip the resource (and `as if sent` when the case judged the decision anyway)."""
    verdict = "ERROR" if result.error is not None else "PASS" if result.passed else "FAIL"
    if result.not_sent is None:
        return verdict
    return f"{verdict} (NOT SENT, as if sent)" if result.as_if_sent else f"{verdict} (NOT SENT)"


def _failure(result: ResourceResult) -> Iterator[str]:
    where = f"{result.source}:{result.line}" if result.line else result.source
    yield f"{_verdict(result)}  {result.suite} / {result.case} / {result.resource}  ({where})"
    if result.error is not None:
        yield f"  the webhook raised: {result.error}"
    if result.got:
        yield f"  got: {result.got}"
    for mismatch in result.mismatches:
        yield f"  {mismatch.check}: {mismatch.message}"
        yield from (f"    {line}" for line in mismatch.detail)


def _summary(run: Run) -> str:
    failed = len(run.failed)
    passed = len(run.results) - failed
    text = f"{passed} passed, {failed} failed in {len(run.suites)} suite(s)"
    if run.broken:
        text += f"; {len(run.broken)} suite file(s) do not load"
    return text
