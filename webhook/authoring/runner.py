"""Run test suites: each resource of each case through the same decide_object the webhook uses.

A resource the shipped webhook configurations do not send (webhook/sent.py, as `check` marks it)
is admitted unchanged by the API server without a call, so its expectations are judged against
that, unless the case says `asIfSent`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.authoring.expectations import Mismatch, admitted_unchanged, compare, compare_sent, never_sent
from webhook.authoring.suite import Case, Expectation, Suite, load_suites, resource_key
from webhook.catalog import Problem
from webhook.core.model import Context, Decision
from webhook.core.workloads import decide_object
from webhook.manifests import Manifest
from webhook.sent import not_sent

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_SUITE = 0, 1, 2


@dataclass(frozen=True)
class ResourceResult:
    suite: str
    case: str
    resource: str
    source: str
    line: int | None
    mismatches: tuple[Mismatch, ...] = ()
    error: str | None = None
    """The webhook raised instead of deciding (a bug in the core, reported, not hidden)."""
    seconds: float = 0.0
    got: str = ""
    """What the webhook decided, in one line, shown with a failure."""
    not_sent: str | None = None
    """Why the shipped webhook configurations do not send the resource; None when they do."""
    as_if_sent: bool = False
    """The case judged the webhook's decision all the same (`asIfSent`)."""

    @property
    def passed(self) -> bool:
        return not self.mismatches and self.error is None


@dataclass
class Run:
    suites: list[Suite] = field(default_factory=list)
    results: list[ResourceResult] = field(default_factory=list)
    broken: dict[str, list[Problem]] = field(default_factory=dict)
    """Problems by suite file that did not load."""

    @property
    def problems(self) -> list[Problem]:
        return [problem for problems in self.broken.values() for problem in problems]

    @property
    def failed(self) -> list[ResourceResult]:
        return [r for r in self.results if not r.passed]

    @property
    def exit_code(self) -> int:
        if self.problems:
            return EXIT_BAD_SUITE
        return EXIT_FAILED if self.failed else EXIT_PASSED


def run_paths(paths: Sequence[str | Path]) -> Run:
    loaded = load_suites(paths)
    run = Run(suites=loaded.suites, broken=loaded.broken)
    for suite in loaded.suites:
        run.results.extend(run_suite(suite))
    return run


def run_suite(suite: Suite) -> list[ResourceResult]:
    return [
        run_resource(suite, case, manifest, expectation)
        for case in suite.cases
        for manifest, expectation in case.resources
    ]


def run_resource(suite: Suite, case: Case, manifest: Manifest, expectation: Expectation) -> ResourceResult:
    started = time.perf_counter()
    result = ResourceResult(suite.name, case.name, resource_key(manifest), suite.source, expectation.line)
    skip = not_sent(manifest.obj, namespace_of(case, manifest), case.extra_resources)
    result = replace(result, not_sent=None if skip is None else str(skip), as_if_sent=case.as_if_sent)
    try:
        decision = decide(case, manifest)
    except Exception as exc:  # a core bug: one failed case, not a crashed run
        return _with(result, started, error=f"{type(exc).__name__}: {exc}")
    checks = expectation.checks
    mismatches = compare_sent(checks.get("sent"), skip)
    if skip is None or case.as_if_sent:
        mismatches += compare(checks, decision, manifest.obj)
        got = _got(decision) + ("" if skip is None else f" (as if sent; {skip})")
        return _with(result, started, mismatches=tuple(mismatches), got=got)
    judged = compare(checks, admitted_unchanged(decision), manifest.obj)
    if judged and "sent" not in checks:
        judged.insert(0, never_sent(skip))
    got = f"admitted unchanged, never sent (if sent: {_got(decision)})"
    return _with(result, started, mismatches=tuple(mismatches + judged), got=got)


def namespace_of(case: Case, manifest: Manifest) -> str:
    """The namespace the resource is created in: its own, else the case's, else default."""
    return str(manifest.namespace or case.namespace or "default")


def decide(case: Case, manifest: Manifest) -> Decision:
    context = Context(
        catalog=case.catalog,
        inventory=case.inventory,
        namespace=namespace_of(case, manifest),
        mutate_templates=case.mutate_templates,
    )
    return decide_object(manifest.obj, context)


def _got(decision: Decision) -> str:
    verdict = "allowed" if decision.allowed else "denied"
    codes = ", ".join(decision.codes) or "no codes"
    return f"{verdict}, template {decision.template or '-'}, policy {decision.policy}: {codes}"


def _with(
    result: ResourceResult,
    started: float,
    mismatches: tuple[Mismatch, ...] = (),
    error: str | None = None,
    got: str = "",
) -> ResourceResult:
    return replace(result, mismatches=mismatches, error=error, seconds=time.perf_counter() - started, got=got)
